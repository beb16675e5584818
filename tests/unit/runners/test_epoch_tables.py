"""`write_epochs`' table bookkeeping (`runners.spark.epoch_tables`) without Spark: what settling
publishes and deletes after a driver died at each point, and the refusal outside Spark's epochs."""

from __future__ import annotations

from pathlib import Path

import pytest

from jetspark import DAG, Edge, JobConfig
from jetspark import processors as P
from jetspark.core import ProcessingGuarantee
from jetspark.core.errors import JobFailedError
from jetspark.runners.local import LocalRunner
from jetspark.runners.spark.epoch_tables import STAGING, _Table, write_epochs


def staged(root: Path, job: str, epoch: int, *names: str) -> None:
    directory = root / STAGING / f"{job}-e{epoch:010d}"
    directory.mkdir(parents=True)
    (directory / "_SUCCESS").touch()
    for name in names:
        (directory / name).write_text(f"{job} {epoch} {name}")


def files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())


def test_settling_publishes_committed_epochs_and_deletes_later_ones_of_this_job_only(tmp_path: Path) -> None:
    table = _Table("t", write_epochs(str(tmp_path)), "job1")
    staged(
        tmp_path, "job1", 3, "part-0.parquet", "part-1.parquet"
    )  # committed, the driver died before moving
    staged(tmp_path, "job1", 4, "part-0.parquet")  # staged, never committed
    (tmp_path / f"part-job1-e{5:010d}-part-0.parquet").write_text("published, not recorded")
    (tmp_path / f"part-job1-e{2:010d}-part-0.parquet").write_text("published earlier")
    staged(tmp_path, "job0", 9, "part-0.parquet")  # another job's: left alone
    (tmp_path / f"part-job0-e{7:010d}-part-0.parquet").write_text("another job's")
    table.settle(committed=3)
    assert files(tmp_path) == [
        f"{STAGING}/job0-e{9:010d}/_SUCCESS",
        f"{STAGING}/job0-e{9:010d}/part-0.parquet",
        f"part-job0-e{7:010d}-part-0.parquet",
        f"part-job1-e{2:010d}-part-0.parquet",
        f"part-job1-e{3:010d}-part-0.parquet",
        f"part-job1-e{3:010d}-part-1.parquet",
    ]
    assert (tmp_path / f"part-job1-e{3:010d}-part-1.parquet").read_text() == "job1 3 part-1.parquet"


def test_a_publish_cut_short_is_finished_by_the_next_settle(tmp_path: Path) -> None:
    table = _Table("t", write_epochs(str(tmp_path)), "job1")
    staged(tmp_path, "job1", 3, "part-0.parquet", "part-1.parquet")
    moved = tmp_path / STAGING / f"job1-e{3:010d}" / "part-0.parquet"
    moved.rename(tmp_path / f"part-job1-e{3:010d}-part-0.parquet")  # the driver died after one move
    table.settle(committed=3)
    assert files(tmp_path) == [f"part-job1-e{3:010d}-part-0.parquet", f"part-job1-e{3:010d}-part-1.parquet"]


def test_write_epochs_is_refused_outside_the_spark_runner_naming_the_vertex() -> None:
    dag = DAG()
    numbers = dag.new_vertex("numbers", P.from_iterable(range(3)))
    dag.edge(Edge.between(numbers, dag.new_vertex("table", write_epochs("/tmp/never"))))
    config = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)
    with pytest.raises(JobFailedError, match="vertex 'table': write_epochs runs only on the Spark runner"):
        LocalRunner().run(dag, config)
