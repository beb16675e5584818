"""A job's durable identity in its checkpoint root, on the local runner (`runners.identity`): a
run that died before its first commit is settled by the next submit (same job id, so its sinks find
what the dead run left); a completed job submitted again does nothing unless started over."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import pytest

from examples.streaming_counts import expected_rows, streaming_dag
from jetspark.api import run
from jetspark.core import JobConfig, ProcessingGuarantee
from jetspark.processors.transactional import read_lines
from jetspark.runners.identity import CompletedBefore
from jetspark.runners.local import JobStatus, LocalJob, LocalRunner
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
COUNT = 2000


def config(root: Path, interval: int = 20) -> JobConfig:
    return JobConfig(
        name="counts",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=interval,
        checkpoint_root=str(root),
    )


def submit_gated(out: Path, root: Path, gate: Gate, members: int = 1, committed: bool = True) -> LocalJob:
    """The counts job on the local runner, its source held at `gate`; once it committed a
    snapshot of its own (`committed`), so that it can be suspended and resumed."""
    job = LocalRunner(members).submit(
        streaming_dag(str(out), None, source=gated_stream(gate, count=COUNT)), config(root)
    )
    if committed:
        wait_until(lambda: job.last_snapshot is not None, "a committed snapshot")
    return job


def temp_files(out: Path) -> list[str]:
    return sorted(name for name in os.listdir(out) if name.endswith(".tmp"))


def test_a_run_killed_before_its_first_commit_is_settled_by_the_next_submit(tmp_path: Path) -> None:
    """The dead run's sink left an uncommitted `.tmp` file under the job's id and no LATEST; the
    next submit takes over the same id, rolls the file back, and the output is exact."""
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    script = textwrap.dedent(f"""
        from examples.streaming_counts import streaming_dag
        from jetspark.runners.local import LocalRunner
        from tests.e2e.test_job_identity import COUNT, config
        from tests.gates import Gate, gated_stream
        from pathlib import Path
        dag = streaming_dag({str(out)!r}, None, source=gated_stream(Gate.at({gate.path!r}), count=COUNT))
        LocalRunner(2).run(dag, config(Path({str(root)!r}), interval=600_000), timeout=120)
    """)
    driver = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    try:  # the sink has written (a .tmp file exists); no snapshot is due for ten minutes
        wait_until(lambda: (out.is_dir() and temp_files(out)) or driver.poll() is not None, timeout=60)
        assert driver.poll() is None, "the driver ended before it was killed"
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
    record = json.loads((root / "counts" / "JOB").read_text())
    assert record["completed"] is None and not (root / "counts" / "LATEST").exists()
    left = temp_files(out)
    assert left and all(name.startswith(f".{record['job_id']}-") for name in left), left

    gate.open()
    job = LocalRunner(2).submit(
        streaming_dag(str(out), None, source=gated_stream(gate, count=COUNT)), config(root)
    )
    job.join(60)
    assert job.job_id == record["job_id"], "the job keeps its durable id"
    assert temp_files(out) == [], "what the dead run left is rolled back"
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)


def test_a_completed_job_submitted_again_does_nothing_unless_started_over(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    out, root = tmp_path / "out", tmp_path / "ck"
    first = LocalRunner(2).run(streaming_dag(str(out), COUNT), config(root), timeout=60)
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)
    files = sorted(os.listdir(out))

    with caplog.at_level(logging.WARNING, "jetspark.job"):
        again = LocalRunner(2).submit(streaming_dag(str(out), COUNT), config(root))
    assert isinstance(again, CompletedBefore) and again.status is JobStatus.COMPLETED
    assert again.join(1) is again and again.job_id == first.job_id
    assert again.metrics()["counts"]["received"] == first.metrics()["counts"]["received"] == COUNT
    assert "already completed at" in caplog.text and first.job_id in caplog.text
    assert sorted(os.listdir(out)) == files, "a completed job submitted again writes nothing"

    over = LocalRunner(2).run(streaming_dag(str(out), COUNT), attrs.evolve(config(root), start_over=True), 60)
    assert over.job_id != first.job_id
    assert set(files) < set(os.listdir(out)), "the run started over commits new names beside the old"
    assert sorted(read_lines(str(out))) == sorted(expected_rows(COUNT) * 2)


def test_a_completed_job_submitted_again_removes_what_a_cut_short_tidy_left(tmp_path: Path) -> None:
    """A driver killed while tidying its completed job leaves an empty `snapshots/` directory; the
    next submit (which runs nothing) deletes it, and the record keeps its commit mark."""
    out, root = tmp_path / "out", tmp_path / "ck"
    LocalRunner(2).run(streaming_dag(str(out), COUNT), config(root), timeout=60)
    job_dir = root / "counts"
    (job_dir / "snapshots").mkdir()
    (job_dir / "runs").mkdir()
    record = json.loads((job_dir / "JOB").read_text())
    assert record["committed"] is True and record["completed"] is not None

    again = run(streaming_dag(str(out), COUNT), config(root))  # read before any session
    assert isinstance(again, CompletedBefore)
    assert sorted(p.name for p in job_dir.iterdir()) == ["DRIVER", "JOB"]

    (job_dir / "snapshots").mkdir()
    again = LocalRunner(2).submit(streaming_dag(str(out), COUNT), config(root))  # under the lock
    assert isinstance(again, CompletedBefore)
    assert sorted(p.name for p in job_dir.iterdir()) == ["DRIVER", "JOB"]
    assert json.loads((job_dir / "JOB").read_text())["committed"] is True


def test_start_over_is_refused_for_a_job_that_has_not_completed(tmp_path: Path) -> None:
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    job = LocalRunner(2).submit(
        streaming_dag(str(out), None, source=gated_stream(gate, count=COUNT)), config(root)
    )
    wait_until(lambda: job.snapshot_count >= 1)
    job.suspend()
    with pytest.raises(
        ValueError, match=r"'counts' has not completed .* start_over applies to a completed job"
    ):
        LocalRunner(2).submit(streaming_dag(str(out), COUNT), attrs.evolve(config(root), start_over=True))
    gate.open()
    LocalRunner(2).run(
        streaming_dag(str(out), None, source=gated_stream(gate, count=COUNT)), config(root), 60
    )
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)
