"""A run on `local-cluster[2,1,1024]`: two executor JVMs, each with its own Python workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from jetspark.core.partitioner import default_partitioner
from tests.spark import dags
from tests.spark.processes import run_driver_script

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.timeout(420)
def test_members_run_in_separate_executors_with_the_same_partition_ownership() -> None:
    report = run_driver_script(Path(__file__).with_name("cluster_job.py"), timeout=400)
    assert report["executors"] == 2
    items = report["items"]
    assert sorted(n for n, *_ in items) == list(range(400))
    for n, member, index, _pid in items:
        partition = default_partitioner(dags.key_of(("n", n)), 271)
        assert index == (partition % 2) * 2 + (partition // 2) % 2  # the arrangement of planning.partitions
        assert member == index // 2
    pids_by_member: dict[int, set[int]] = {}
    for _n, member, _index, pid in items:
        pids_by_member.setdefault(member, set()).add(pid)
    assert len({pid for pids in pids_by_member.values() for pid in pids}) >= 2, "both executors did work"


@pytest.mark.timeout(600)
def test_an_epoch_whose_executor_jvm_was_killed_runs_again_and_the_output_stays_exact() -> None:
    report = run_driver_script(Path(__file__).with_name("epoch_cluster_job.py"), timeout=560)
    assert report["killed"] == 1, report
    assert report["aborted"] >= 1, report  # the kill hit an epoch, which did not commit
    assert report["exact"], report


@pytest.mark.timeout(600)
def test_a_stage_read_by_two_stages_is_computed_once_per_epoch_on_two_executors() -> None:
    report = run_driver_script(Path(__file__).with_name("epoch_fanout_cluster_job.py"), timeout=560)
    assert report["exact"] == [True, True], report
    assert report["committed"] >= 20, report  # many epochs: many chances for the race
    assert report["aborted"] == 0, report  # no fault: no epoch may abort
