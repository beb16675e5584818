"""Found by a kill probe of the local runner (SIGKILL of the driver at chosen points, then the same
job submitted again; /work/notes/s12/local_kill_report.md): a driver killed after the job's record
was marked completed and before the store deleted `LATEST` and the snapshots
(`CheckpointStore.finish`) leaves a completed job with a `LATEST`. Submitted again it runs nothing,
as documented; submitted with `start_over` it runs again from the beginning under a new id
(docs/fault-tolerance.md, "The job's record"). It used to write nothing: `where_to_start` read
the old `LATEST` before `identity.claim` started the job over, so the new run took the old
snapshot's job id (`committed_id`) and restored the old snapshot, whose sources are exhausted.
Now a submit first finishes a completed job's cut-short tidying (`CheckpointStore.finish`).

The kill is deterministic: the driver subprocess kills itself (SIGKILL) inside `finish`, right
after the completed record is written.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs

from examples.streaming_counts import expected_rows, streaming_dag
from jetspark.core import JobConfig, ProcessingGuarantee
from jetspark.processors.transactional import read_lines
from jetspark.runners.identity import CompletedBefore
from jetspark.runners.local import JobStatus, LocalRunner

ROOT = Path(__file__).resolve().parents[2]
COUNT = 500


def config(root: Path) -> JobConfig:
    return JobConfig(
        name="counts",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=20,
        checkpoint_root=str(root),
    )


def run_killed_after_the_completed_record(out: Path, root: Path) -> dict[str, object]:
    """Run the job to completion in a child process that SIGKILLs itself right after the store
    wrote the record marked completed, before it deleted LATEST; return that record."""
    script = textwrap.dedent(f"""
        import os, signal
        from pathlib import Path
        from examples.streaming_counts import streaming_dag
        from jetspark.checkpoint.store import CheckpointStore
        from jetspark.runners.local import LocalRunner
        from tests.e2e.test_local_kill_probe import COUNT, config

        def finish(self, record):
            self.write_record(record)  # the record says completed ...
            os.kill(os.getpid(), signal.SIGKILL)  # ... and the driver dies before LATEST goes

        CheckpointStore.finish = finish
        LocalRunner(2).run(streaming_dag({str(out)!r}, COUNT), config(Path({str(root)!r})), timeout=120)
    """)
    driver = subprocess.run([sys.executable, "-c", script], cwd=ROOT, timeout=180)
    assert driver.returncode == -9, "the driver was not killed in finish()"
    job_dir = root / "counts"
    record: dict[str, object] = json.loads((job_dir / "JOB").read_text())
    assert record["completed"] is not None, "the record is marked completed"
    assert (job_dir / "LATEST").exists(), "the kill came before LATEST was deleted"
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)
    return record


def test_a_job_killed_after_its_completed_record_runs_nothing_when_submitted_again(tmp_path: Path) -> None:
    """The plain resubmit at that point is right: nothing runs, nothing is written."""
    out, root = tmp_path / "out", tmp_path / "ck"
    record = run_killed_after_the_completed_record(out, root)
    files = sorted(os.listdir(out))
    again = LocalRunner(2).submit(streaming_dag(str(out), COUNT), config(root))
    assert isinstance(again, CompletedBefore) and again.status is JobStatus.COMPLETED
    assert again.job_id == record["job_id"]
    assert sorted(os.listdir(out)) == files


def test_start_over_after_a_kill_between_the_completed_record_and_latest_runs_from_the_beginning(
    tmp_path: Path,
) -> None:
    out, root = tmp_path / "out", tmp_path / "ck"
    record = run_killed_after_the_completed_record(out, root)
    over = LocalRunner(2).run(
        streaming_dag(str(out), COUNT), attrs.evolve(config(root), start_over=True), timeout=120
    )
    assert over.status is JobStatus.COMPLETED
    # docs/fault-tolerance.md: start_over "runs it again from the beginning under a new id, so
    # its committed files get new names beside the old ones"
    assert sorted(read_lines(str(out))) == sorted(expected_rows(COUNT) * 2)
    assert over.job_id != record["job_id"]
