"""One driver per job (`runners.driver_lock`): a second driver submitting a job that another one
runs is refused at submit, naming the running driver; once that driver is gone (even by SIGKILL,
which leaves no chance to clean up) the job can be submitted again and resumes exactly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import attrs
import pytest

from examples.streaming_counts import expected_rows, streaming_dag
from jetspark import api
from jetspark.core import JobAlreadyRunningError, JobCancelledError
from jetspark.processors.transactional import read_lines
from jetspark.runners.local import LocalRunner
from tests.e2e.test_job_identity import COUNT, config, submit_gated
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]


def test_a_second_driver_is_refused_while_the_first_runs_and_accepted_once_it_died(tmp_path: Path) -> None:
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    script = textwrap.dedent(f"""
        from examples.streaming_counts import streaming_dag
        from jetspark.runners.local import LocalRunner
        from tests.e2e.test_job_identity import COUNT, config
        from tests.gates import Gate, gated_stream
        from pathlib import Path
        dag = streaming_dag({str(out)!r}, None, source=gated_stream(Gate.at({gate.path!r}), count=COUNT))
        LocalRunner(2).run(dag, config(Path({str(root)!r})), timeout=300)
    """)
    first = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT)
    lock = root / "counts" / "DRIVER"
    try:
        wait_until(
            lambda: (lock.exists() and lock.read_text().startswith("{")) or first.poll() is not None,
            "the first driver to hold the job",
            timeout=120,
        )
        assert first.poll() is None, "the first driver ended before the second one submitted"
        assert json.loads(lock.read_text())["pid"] == first.pid
        dag = streaming_dag(str(out), None, source=gated_stream(gate, count=COUNT))
        with pytest.raises(
            JobAlreadyRunningError, match=rf"job 'counts' is running in another driver \(pid {first.pid} on "
        ):
            LocalRunner(2).submit(dag, config(root))
        with pytest.MonkeyPatch.context() as patch:  # `run` on Spark: refused before a session starts
            patch.setattr(api, "default_runner", lambda: pytest.fail("a Spark session was started"))
            patch.delenv(api.RUNNER_ENV, raising=False)
            with pytest.raises(
                JobAlreadyRunningError, match=rf"running in another driver \(pid {first.pid} on "
            ):
                api.run(dag, config(root))
        assert first.poll() is None, "the refused submit left the running driver alone"
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait()

    gate.open()
    job = LocalRunner(2).submit(
        streaming_dag(str(out), None, source=gated_stream(gate, count=COUNT)), config(root)
    )
    job.join(120)
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)
    assert json.loads((root / "counts" / "JOB").read_text())["completed"] is not None


def test_a_job_that_ended_lets_another_driver_run_it(tmp_path: Path) -> None:
    """The lock goes when the job ends in this process (here: cancelled), not when the process ends."""
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=10)
    job = LocalRunner(1).submit(
        streaming_dag(str(out), None, source=gated_stream(gate, count=COUNT)), config(root)
    )
    wait_until(lambda: (root / "counts" / "DRIVER").exists(), "the lock")
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(60)
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                from examples.streaming_counts import streaming_dag
                from jetspark.runners.local import LocalRunner
                from tests.e2e.test_job_identity import COUNT, config
                from pathlib import Path
                LocalRunner(1).run(streaming_dag({str(out)!r}, COUNT), config(Path({str(root)!r})), timeout=300)
            """),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert other.returncode == 0, other.stderr[-2000:]


def test_a_suspended_job_lets_another_driver_take_it_and_its_stale_handle_cannot_resume(
    tmp_path: Path,
) -> None:
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    job = submit_gated(out, root, gate, members=2)
    job.suspend()
    gate.open()
    other = subprocess.run(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
                from examples.streaming_counts import streaming_dag
                from jetspark.runners.local import LocalRunner
                from tests.e2e.test_job_identity import COUNT, config
                from tests.gates import Gate, gated_stream
                from pathlib import Path
                dag = streaming_dag({str(out)!r}, None, source=gated_stream(Gate.at({gate.path!r}), count=COUNT))
                LocalRunner(2).run(dag, config(Path({str(root)!r})), timeout=300)
            """),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert other.returncode == 0, other.stderr[-2000:]
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)  # the other driver finished the job
    with pytest.raises(JobAlreadyRunningError, match="taken over by another driver while it was suspended"):
        job.resume()
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)


def test_a_second_submit_in_the_process_that_runs_the_job_is_refused_and_the_job_goes_on(
    tmp_path: Path,
) -> None:
    """A notebook cell run twice: the second submit of a running job's name is refused naming
    why, deletes nothing, and the first run completes exactly; a suspended job (which lets go
    of the lock) may be submitted again from the same process."""
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    job = submit_gated(out, root, gate, members=2)
    with pytest.raises(JobAlreadyRunningError, match="'counts' is running in this process already"):
        LocalRunner(2).submit(streaming_dag(str(out), COUNT), config(root))
    job.suspend()
    again = submit_gated(out, root, gate, members=2, committed=False)
    gate.open()
    again.join(300)
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)


def test_a_submit_that_fails_after_claiming_the_job_lets_the_next_submit_run_it(tmp_path: Path) -> None:
    """`start_over` of a job that has not completed is refused after the job was claimed; the
    corrected submit from the same process runs it (the refusal let go of the lock)."""
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 2)
    job = submit_gated(out, root, gate)
    job.suspend()
    with pytest.raises(ValueError, match="start_over applies to a completed job"):
        LocalRunner(1).submit(streaming_dag(str(out), COUNT), attrs.evolve(config(root), start_over=True))
    gate.open()
    LocalRunner(1).run(
        streaming_dag(str(out), None, source=gated_stream(gate, count=COUNT)), config(root), timeout=300
    )
    assert sorted(read_lines(str(out))) == expected_rows(COUNT)
