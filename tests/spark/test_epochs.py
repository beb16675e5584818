"""Jobs with a processing guarantee on the Spark runner run in epochs (`runners.spark.epochs`):
each epoch one Spark job ending in a snapshot the driver commits; a failed epoch runs again from
the last committed snapshot, and what reaches the driver counts exactly once."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import pytest

from jetspark.checkpoint import CheckpointStore
from jetspark.core import JobConfig, ProcessingGuarantee
from jetspark.core.errors import JobFailedError
from jetspark.runners.identity import CompletedBefore
from jetspark.runners.job import JobStatus
from jetspark.runners.spark.runner import SparkRunner
from tests.e2e.test_snapshots import EXPECTED, counting_dag
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

T = TypeVar("T")


def epochs(root: Path, name: str = "counting", interval: int = 300) -> JobConfig:
    return JobConfig(
        name=name,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=interval,
        checkpoint_root=str(root),
    )


def failing_at(item: T, marker: Path) -> Callable[[T], T]:
    """A map step that raises once, on `item`, in whichever Python worker meets it first."""

    def step(x: T) -> T:
        if x == item and not os.path.exists(marker):
            marker.touch()
            raise RuntimeError(f"injected at {x}")
        return x

    return step


@pytest.mark.parametrize("interval", [200, 0])  # 0: epochs back to back, as Jet's 0 ms interval
def test_a_job_with_a_guarantee_runs_in_several_committed_epochs_and_counts_exactly(
    spark: Any, tmp_path: Path, interval: int
) -> None:
    """The source waits half-way at a gate until two epochs committed, so the stream spans epochs."""
    gate = Gate(tmp_path / "gate", hold_at=1500)
    job = SparkRunner(spark).submit(counting_dag(gate=gate), epochs(tmp_path / "ck", interval=interval))
    wait_until(lambda: job.epochs_committed >= 2 or job.status is not JobStatus.RUNNING, timeout=120)
    gate.open()
    job.join(180)
    assert sorted(job.result("sink")) == EXPECTED
    assert job.epochs_committed >= 2
    assert job.metrics()["source"]["emitted"] == 3000
    assert job.status is JobStatus.COMPLETED
    left = sorted(p.name for p in (tmp_path / "ck" / "counting").iterdir())
    assert left == ["DRIVER", "JOB"], (
        "a completed job keeps its record (marked completed) and its lock file, not its snapshots"
    )
    again = SparkRunner(spark).submit(counting_dag(), epochs(tmp_path / "ck", interval=interval))
    assert isinstance(again, CompletedBefore), "a completed job runs no more"
    assert again.metrics()["source"]["emitted"] == 3000, "it reports the figures it completed with"


def test_a_failed_epoch_runs_again_from_the_last_committed_snapshot(spark: Any, tmp_path: Path) -> None:
    """The source waits at a gate before the failing item until an epoch committed."""
    marker = tmp_path / "failed"
    gate = Gate(tmp_path / "gate", hold_at=1500)
    runner = SparkRunner(spark, restart_backoff=0.05)
    job = runner.submit(counting_dag(failing_at(1700, marker), gate=gate), epochs(tmp_path / "ck"))
    wait_until(lambda: job.epochs_committed >= 1 or job.status is not JobStatus.RUNNING, timeout=120)
    assert not marker.exists(), "the source went past its gate"
    gate.open()
    job.join(180)
    assert marker.exists(), "the failure was never injected"
    assert job.epochs_aborted == 1 and "injected at 1700" in str(job.last_abort)
    assert sorted(job.result("sink")) == EXPECTED
    assert job.metrics()["source"]["emitted"] == 3000, "items of the aborted epoch were counted"


def test_a_job_failing_in_every_epoch_fails_after_its_restarts_with_the_cause(
    spark: Any, tmp_path: Path
) -> None:
    def always(x: int) -> int:
        if x == 5:
            raise ValueError("bad item 5")
        return x

    runner = SparkRunner(spark, max_restarts=2, restart_backoff=0.01)
    job = runner.submit(counting_dag(always), epochs(tmp_path))
    with pytest.raises(JobFailedError, match=r"aborted 3 times in a row; last cause: .*bad item 5"):
        job.join(180)
    assert job.epochs_aborted == 3


def test_a_job_with_a_guarantee_needs_a_checkpoint_root_and_a_name(spark: Any, tmp_path: Path) -> None:
    runner = SparkRunner(spark)
    with pytest.raises(ValueError, match=r"set JobConfig\.checkpoint_root"):
        runner.submit(
            counting_dag(), JobConfig(name="x", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE)
        )
    unnamed = JobConfig(processing_guarantee=ProcessingGuarantee.AT_LEAST_ONCE, checkpoint_root=str(tmp_path))
    with pytest.raises(ValueError, match=r"set JobConfig\.name"):
        runner.submit(counting_dag(), unnamed)


def test_a_from_rdd_source_is_refused_in_epochs_naming_the_vertex(spark: Any, tmp_path: Path) -> None:
    from jetspark import processors as P
    from jetspark.core import DAG, Edge
    from jetspark.runners.spark import from_rdd

    dag = DAG()
    source = dag.new_vertex("numbers", from_rdd(spark.sparkContext.parallelize(range(10), 2)))
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.collect())))
    with pytest.raises(ValueError, match="vertex 'numbers': a from_rdd source cannot be replayed"):
        SparkRunner(spark).submit(dag, epochs(tmp_path))


@pytest.mark.parametrize("kind", ["files", "dataframe"])
def test_a_sink_that_publishes_at_the_end_is_refused_in_epochs_naming_the_vertex(
    spark: Any, tmp_path: Path, kind: str
) -> None:
    from jetspark import processors as P
    from jetspark.core import DAG, Edge
    from jetspark.runners.spark import write_dataframe

    dag = DAG()
    source = dag.new_vertex("numbers", P.from_iterable(range(10)))
    sink = P.files(str(tmp_path / "out")) if kind == "files" else write_dataframe(str(tmp_path / "out"))
    dag.edge(Edge.between(source, dag.new_vertex("out", sink)))
    with pytest.raises(ValueError, match="vertex 'out': this sink publishes its output when the job ends"):
        SparkRunner(spark).submit(dag, epochs(tmp_path / "ck"))


def test_suspend_then_resume_continues_from_the_committed_snapshot(spark: Any, tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=1500)
    job = SparkRunner(spark).submit(counting_dag(gate=gate), epochs(tmp_path / "ck", interval=150))
    store = CheckpointStore(str(tmp_path / "ck"), "counting", tidy=False)
    wait_until(lambda: store.latest_id() is not None, timeout=120)
    job.suspend()  # the source waits at the gate: the job is still running
    assert job.status is JobStatus.SUSPENDED
    suspended_at = store.latest_id()
    assert suspended_at is not None
    assert job.metrics()["source"]["emitted"] <= 1500, "the source went past its gate"
    gate.open()
    job.resume().join(180)
    assert sorted(job.result("sink")) == EXPECTED
    assert job.metrics()["source"]["emitted"] == 3000


@pytest.mark.timeout(300)
def test_ctrl_c_suspends_a_job_run_by_the_cli_and_running_it_again_finishes_it_exactly(
    tmp_path: Path,
) -> None:
    import json
    import signal
    import subprocess
    import sys
    import textwrap

    from examples.streaming_counts import expected_rows
    from jetspark.processors.transactional import read_lines
    from tests.spark.processes import ROOT, with_root_on_path

    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=3000)  # the first run waits half-way for Ctrl-C
    script = tmp_path / "job.py"
    script.write_text(
        textwrap.dedent(f"""
            import faulthandler, signal
            from examples.streaming_counts import streaming_dag
            from jetspark import JobConfig
            from jetspark.api import run
            from jetspark.core import ProcessingGuarantee
            from tests.gates import Gate, gated_stream

            faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test's dump if it hangs
            config = JobConfig(name="interrupted", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
                               snapshot_interval_millis=400, checkpoint_root={str(root)!r})
            source = gated_stream(Gate.at({gate.path!r}), count=6000)
            run(streaming_dag({str(out)!r}, 6000, source=source), config)
        """)
    )
    command = [sys.executable, "-m", "jetspark.cli.main", "run", str(script)]
    env = with_root_on_path(dict(os.environ))
    first = subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
    latest = root / "interrupted" / "LATEST"
    wait_until(lambda: latest.exists() or first.poll() is not None, timeout=120)
    assert first.poll() is None, "the job ended before it could be interrupted"
    first.send_signal(signal.SIGINT)
    try:
        _, stderr = first.communicate(timeout=150)
    except subprocess.TimeoutExpired:  # seen in CI, not reproduced: fail with every thread's stack
        first.send_signal(signal.SIGUSR1)
        try:
            first.communicate(timeout=10)
        except subprocess.TimeoutExpired as hung:
            dumped = hung.stderr.decode() if isinstance(hung.stderr, bytes) else (hung.stderr or "")
        else:
            dumped = "(it exited after the dump request)"
        first.kill()
        first.communicate()
        pytest.fail(f"jetspark run did not end within 150 s of Ctrl-C; its threads:\n{dumped[-20000:]}")
    assert first.returncode == 130, stderr[-3000:]
    assert "suspended" in stderr
    suspended_at = json.loads(latest.read_text())["snapshot_id"]
    assert len(read_lines(str(out))) <= 3000, "the source went past its gate"

    gate.open()
    second = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=240)
    assert second.returncode == 0, second.stderr[-3000:]
    assert sorted(read_lines(str(out))) == expected_rows(6000)
    assert suspended_at >= 0 and not latest.exists(), "a completed job leaves its snapshots behind"


def test_ctrl_c_while_run_waits_suspends_the_job_after_the_running_epoch_commits_whichever_thread_it_reaches(
    spark: Any, tmp_path: Path
) -> None:
    """The kernel hands a process's SIGINT to any of its threads. `run` used to wait in a bare
    `Event.wait()`, which such a signal does not wake: a Ctrl-C went unseen until the job ended (2
    runs in 14 here with the signal sent to the process, and `jetspark run` in CI). PySpark's own handler, which cancels every Spark
    job from inside the handler, is set aside while `run` waits and put back after."""
    import signal
    import threading

    from jetspark.api import run

    gate = Gate(tmp_path / "gate", hold_at=1500)
    handles: list[Any] = []
    running: list[int] = []

    class Recording:
        def submit(self, dag: Any, config: JobConfig) -> Any:
            handles.append(SparkRunner(spark).submit(dag, config))
            return handles[-1]

    pysparks = signal.getsignal(signal.SIGINT)
    assert str(getattr(pysparks, "__module__", "")).startswith("pyspark"), "the session set no handler"

    def interrupt() -> None:
        wait_until(lambda: handles and handles[0].epochs_committed >= 1, timeout=120)
        wait_until(lambda: main_thread_in("join"), timeout=60)  # `run` waits: the signal reaches it there
        running.append(handles[0].running_epoch[0])
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # to this thread, not the main one

    threading.Thread(target=interrupt, daemon=True).start()
    with pytest.raises(KeyboardInterrupt, match="suspended"):
        run(counting_dag(gate=gate), epochs(tmp_path / "ck", interval=200), runner=Recording())
    job = handles[0]
    assert job.status is JobStatus.SUSPENDED
    assert job.store.latest_id() >= running[0], "the epoch running at the Ctrl-C did not commit"
    assert signal.getsignal(signal.SIGINT) is pysparks
    gate.open()
    job.resume().join(180)
    assert sorted(job.result("sink")) == EXPECTED


def main_thread_in(function: str) -> bool:
    """Whether the main thread's stack holds a call of `function` now."""
    import sys
    import threading

    frame = sys._current_frames().get(threading.main_thread().ident or 0)
    while frame is not None:
        if frame.f_code.co_name == function:
            return True
        frame = frame.f_back
    return False


def slow_odd(x: int) -> int:
    """Source processor 1 (odd positions) is slow: it is still emitting when the epoch ends,
    long after processor 0 has completed."""
    if x % 2:
        import time

        time.sleep(0.0002)
    return x


def test_a_source_that_completes_while_another_takes_the_epochs_snapshot_loses_nothing(
    spark: Any, tmp_path: Path
) -> None:
    from examples.streaming_counts import expected_rows, streaming_dag
    from jetspark.processors.transactional import read_lines

    out = str(tmp_path / "out")
    dag = streaming_dag(out, 20_000, step=slow_odd)
    job = SparkRunner(spark).submit(dag, epochs(tmp_path / "ck", interval=400))
    job.join(180)
    assert job.epochs_committed >= 3, "processor 1 finished too soon: the test proves nothing"
    # processor 1's slice, handed to processor 0 by partition at restore, is adopted by processor 1
    assert sorted(read_lines(out)) == expected_rows(20_000)


def test_a_tailed_directory_reaches_transactional_files_exactly_once_across_a_failure(
    spark: Any, tmp_path: Path
) -> None:
    from collections import Counter

    from jetspark import processors as P
    from jetspark.core import DAG, Edge
    from jetspark.processors.transactional import read_lines

    source_dir, out = tmp_path / "in", tmp_path / "out"
    source_dir.mkdir()

    def append(first: int, last: int) -> None:
        for index in range(3):
            with (source_dir / f"f{index}.log").open("a") as file:
                file.write("".join(f"{index}-{n}\n" for n in range(first, last)))

    append(0, 300)
    dag = DAG()
    lines = dag.new_vertex("lines", P.directory_stream(str(source_dir), "*.log", poll_millis=20))
    step = dag.new_vertex("step", P.map(failing_at("1-400", tmp_path / "failed")))
    sink = dag.new_vertex("sink", P.transactional_files(str(out)))
    dag.edge(Edge.between(lines, step))
    dag.edge(Edge.between(step, sink).distributed())
    job = SparkRunner(spark, restart_backoff=0.05).submit(dag, epochs(tmp_path / "ck", name="tail"))
    wait_until(lambda: out.exists() and len(read_lines(str(out))) >= 900, timeout=120)
    append(300, 500)
    wait_until(lambda: len(read_lines(str(out))) >= 1500, timeout=120)
    job.suspend()
    assert (tmp_path / "failed").exists() and job.epochs_aborted >= 1
    counts = Counter(read_lines(str(out)))
    assert set(counts) == {f"{i}-{n}" for i in range(3) for n in range(500)}
    assert max(counts.values()) == 1


def test_a_broken_contract_fails_the_job_without_restarts(spark: Any, tmp_path: Path) -> None:
    from jetspark.core.errors import ProcessorContractError

    def broken(x: int) -> int:
        if x == 5:
            raise ProcessorContractError("broken on purpose")
        return x

    job = SparkRunner(spark, max_restarts=3, restart_backoff=0.01).submit(
        counting_dag(broken), epochs(tmp_path)
    )
    with pytest.raises(JobFailedError, match="broken on purpose") as failure:
        job.join(120)
    assert job.epochs_aborted == 0
    assert isinstance(failure.value.__cause__, ProcessorContractError)


def test_a_suspended_job_submitted_again_on_three_members_resumes_exactly(spark: Any, tmp_path: Path) -> None:
    import attrs

    from examples.streaming_counts import expected_rows, streaming_dag
    from jetspark.processors.transactional import read_lines

    out, root = str(tmp_path / "out"), tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=4500)
    config = attrs.evolve(epochs(root, name="rescaled", interval=300), member_count=2)
    job = SparkRunner(spark).submit(streaming_dag(out, 9000, source=gated_stream(gate, count=9000)), config)
    store = CheckpointStore(str(root), "rescaled", tidy=False)
    wait_until(lambda: store.latest_id() is not None, timeout=120)
    job.suspend()  # the source waits at the gate: the job is still running
    assert job.status is JobStatus.SUSPENDED
    assert len(read_lines(out)) <= 4500, "the source went past its gate"
    gate.open()
    again = SparkRunner(spark).submit(
        streaming_dag(out, 9000, source=gated_stream(gate, count=9000)), attrs.evolve(config, member_count=3)
    )
    again.join(180)
    assert again.member_count == 3 and again.job_id == job.job_id
    assert sorted(read_lines(out)) == expected_rows(9000)


@pytest.mark.timeout(400)
def test_a_job_whose_source_runs_on_one_member_suspends_and_cancels_between_epochs(
    spark: Any, tmp_path: Path
) -> None:
    """The source has one processor, on member 0 (as `postgres_cdc`): member 1's `step` processors
    have no producer and complete in the first epoch. The commit-only pass that suspend() and
    cancel() run after a committed epoch must still end."""
    import attrs

    from tests.spark.dags import one_reader

    gate = Gate(tmp_path / "gate", hold_at=500)
    config = attrs.evolve(epochs(tmp_path / "ck", name="one-reader", interval=150), member_count=2)
    job = SparkRunner(spark).submit(one_reader(gate), config)
    store = CheckpointStore(str(tmp_path / "ck"), "one-reader", tidy=False)
    wait_until(lambda: store.latest_id() is not None or job.status is not JobStatus.RUNNING, timeout=120)
    job.suspend(timeout=90)  # raises if the commit-only pass does not end
    assert job.status is JobStatus.SUSPENDED
    suspended_at = store.latest_id()
    assert suspended_at is not None
    assert sorted(job.result("sink")) == list(range(1, 501))
    job.resume()
    wait_until(
        lambda: (store.latest_id() or 0) > suspended_at or job.status is not JobStatus.RUNNING, timeout=120
    )
    job.cancel(timeout=90)  # raises "did not cancel" if the commit-only pass does not end
    assert job.status is JobStatus.CANCELLED


def test_a_first_member_only_source_goes_on_across_epochs_with_its_slice_saved_on_another_member(
    spark: Any, tmp_path: Path
) -> None:
    """`FirstMemberOnly` runs the source on member 0 of 3; its one slice's key falls in a
    partition of member 2 (checked below), which runs no processor of it. Each epoch's restore
    must hand the slice to member 0 (adopted, as the local runner does), or the source starts
    each epoch with no slice and the rest of the stream is lost."""
    from jetspark.core.suppliers import FirstMemberOnly
    from jetspark.engine.snapshot import entry_partition

    assert entry_partition(("slice", 0, 1), 271) % 3 == 2
    gate = Gate(tmp_path / "gate", hold_at=1500)
    dag = counting_dag(gate=gate)
    dag.get_vertex("source").meta_supplier = FirstMemberOnly(gated_stream(gate, count=3000))
    config = attrs.evolve(epochs(tmp_path / "ck", interval=200), member_count=3)
    job = SparkRunner(spark).submit(dag, config)
    wait_until(lambda: job.epochs_committed >= 2 or job.status is not JobStatus.RUNNING, timeout=120)
    gate.open()
    job.join(180)
    assert sorted(job.result("sink")) == EXPECTED
    assert job.metrics()["source"]["emitted"] == 3000
