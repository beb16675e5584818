"""collect, logger, noop, files and batches: what reaches the runner, the log, a file or nowhere."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee, RestartableError
from jetspark.core.context import RESULTS_ATTRIBUTE
from jetspark.core.errors import DagValidationError, JobFailedError
from jetspark.engine.list_inbox import ListInbox
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.planning.pipeline import build_plan
from jetspark.planning.plan import create_processors
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until


def source_into(setting: Any, sink_supplier: Any, items: list[Any], lp: int = -1) -> Any:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(items), lp)
    sink = dag.new_vertex("sink", sink_supplier, lp)
    dag.edge(setting.edge(source, sink))
    return setting.run(dag)


def test_collect_returns_every_item(setting: Any) -> None:
    items = [("a", i) for i in range(50)]
    assert sorted(source_into(setting, P.collect(), items, lp=2).result("sink")) == items


def test_collect_keeps_order_from_one_processor(single: Any) -> None:
    assert source_into(single, P.collect(), list(range(30))).result("sink") == list(range(30))


class Recorder:
    """A result collector that remembers each `add` call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, list[Any]]] = []

    def add(self, vertex: str, items: list[Any]) -> None:
        self.calls.append((vertex, list(items)))


def collect_processor(attributes: dict[str, Any]) -> Any:
    """A collect processor initialised by the planner's context for vertex 'out'."""
    dag = DAG()
    dag.new_vertex("out", P.collect())
    plan = build_plan(dag, JobConfig(pruning=False), 1)  # alone, it would be pruned
    [processor] = create_processors(plan, "out", 0)
    context = plan.processor_context("out", 0, 0)
    context.attributes.update(attributes)
    processor.init(OutboxImpl([], "out"), context)
    return processor


def test_collect_adds_one_batch_per_process_call() -> None:
    recorder = Recorder()
    processor = collect_processor({RESULTS_ATTRIBUTE: recorder})
    inbox = ListInbox()
    inbox.fill([1, 2, 3])
    processor.process(0, inbox)
    assert inbox.is_empty()
    inbox.fill([4])
    processor.process(0, inbox)
    assert recorder.calls == [("out", [1, 2, 3]), ("out", [4])]


def test_collect_without_a_result_collector_names_the_vertex() -> None:
    with pytest.raises(RuntimeError, match="vertex 'out': collect\\(\\) needs the runner's result collector"):
        collect_processor({})


def test_logger_logs_each_item(single: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="jetspark.vertex.sink"):
        source_into(single, P.logger(), ["x", "y"])
    assert [r.getMessage() for r in caplog.records if r.name == "jetspark.vertex.sink"] == ["'x'", "'y'"]


def test_logger_below_its_level_logs_nothing(single: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="jetspark.vertex.sink"):
        job = source_into(single, P.logger(logging.DEBUG), list(range(10)))
    assert [r for r in caplog.records if r.name == "jetspark.vertex.sink"] == []
    assert job.metrics()["sink"]["received"] == 10


def test_noop_consumes_everything(setting: Any) -> None:
    job = source_into(setting, P.noop(), list(range(100)), lp=2)
    assert job.metrics()["sink"]["received"] == 100


@pytest.mark.parametrize("sink", [P.collect, P.logger, P.noop])
def test_sinks_accept_watermarks(sink: Any) -> None:
    dag = DAG()
    source = dag.new_vertex(
        "source", P.generator_stream(count=30, items_per_second=300, timestamp_fn=lambda x: x)
    )
    out = dag.new_vertex("sink", sink())
    dag.edge(Edge.between(source, out))
    job = LocalRunner(1).run(dag, timeout=30)
    assert job.metrics()["sink"]["received"] == 30


def test_files_writes_one_file_per_processor_with_every_item(setting: Any, tmp_path: Any) -> None:
    items = [f"line {i}" for i in range(40)]
    source_into(setting, P.files(str(tmp_path / "out")), items, lp=2)
    written = sorted((tmp_path / "out").glob("sink-*.txt"))
    assert [p.name for p in written][:1] == ["sink-00000.txt"]
    assert (tmp_path / "out" / "_SUCCESS").read_bytes() == b"", "the success marker is written last"
    assert not (tmp_path / "out" / "_temporary").exists(), "the staging area is gone"
    lines = [line for path in written for line in path.read_text().splitlines()]
    assert sorted(lines) == sorted(items)


def test_files_of_a_failed_job_are_never_published(tmp_path: Path) -> None:
    """The local runner stages a job's files and publishes them only when the job completes."""

    def explode(x: int) -> int:
        if x == 150:
            raise ValueError("boom")
        return x

    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(300)))
    step = dag.new_vertex("step", P.map(explode))
    dag.edge(Edge.between(source, step))
    dag.edge(Edge.between(step, dag.new_vertex("sink", P.files(str(tmp_path)))))
    with pytest.raises(JobFailedError):
        LocalRunner(1, batch_size=16).run(dag, timeout=60)
    assert list(tmp_path.iterdir()) == [], "no files, no _SUCCESS, no staging area"


def test_files_refuses_a_directory_with_output_unless_asked_to_overwrite(tmp_path: Path) -> None:
    (tmp_path / "sink-00003.txt").write_text("stale\n")

    def job(overwrite: bool) -> DAG:
        dag = DAG()
        source = dag.new_vertex("source", P.from_iterable(range(10)))
        dag.edge(Edge.between(source, dag.new_vertex("sink", P.files(str(tmp_path), overwrite=overwrite))))
        return dag

    with pytest.raises(
        DagValidationError, match=r"vertex 'sink': directory .* already holds sink-00003\.txt"
    ):
        LocalRunner(1).submit(job(overwrite=False))
    assert (tmp_path / "sink-00003.txt").read_text() == "stale\n"
    LocalRunner(1).run(job(overwrite=True), timeout=60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["_SUCCESS", "sink-00000.txt"]
    assert (tmp_path / "sink-00000.txt").read_text().splitlines() == [str(n) for n in range(10)]


def test_files_formats_items_and_runs_on_its_own_thread(single: Any, tmp_path: Any) -> None:
    source_into(single, P.files(str(tmp_path), lambda kv: f"{kv[0]}={kv[1]}"), [("a", 1), ("b", 2)])
    assert (tmp_path / "sink-00000.txt").read_text() == "a=1\nb=2\n"
    with pytest.raises(TypeError, match="format_item"):
        P.files(str(tmp_path), "not callable")  # type: ignore[arg-type]


def test_batches_hands_every_item_to_the_function_with_the_context(setting: Any) -> None:
    seen: list[tuple[str, int, list[Any]]] = []

    def write(batch: list[Any], context: Any) -> None:
        seen.append((context.vertex_name, context.global_processor_index, batch))

    items = list(range(100))
    source_into(setting, P.batches(write), items, lp=2)
    assert sorted(item for _, _, batch in seen for item in batch) == items
    assert {vertex for vertex, _, _ in seen} == {"sink"}
    assert all(batch for _, _, batch in seen), "no empty batch is handed over"


# ---- files() across snapshots ------------------------------------------------------------------

STREAM_COUNT = 3000
STREAM_RATE = 4000  # items per second for the whole source vertex: the job streams for about 0.75 s


def stream_into_files(
    directory: Path,
    step: Callable[[int], int] | None = None,
    overwrite: bool = False,
    gate: Gate | None = None,
) -> DAG:
    """generator_stream -> (map step) -> files, two processors per vertex; with `gate`, the source
    runs at full speed up to the gate's limit and waits there."""
    dag = DAG()
    if gate is None:
        supplier = P.generator_stream(count=STREAM_COUNT, items_per_second=STREAM_RATE)
    else:
        supplier = gated_stream(gate, count=STREAM_COUNT)
    upstream = dag.new_vertex("source", supplier, 2)
    if step is not None:
        mapped = dag.new_vertex("step", P.map(step), 2)
        dag.edge(Edge.between(upstream, mapped))
        upstream = mapped
    dag.edge(Edge.between(upstream, dag.new_vertex("sink", P.files(str(directory), overwrite=overwrite), 2)))
    return dag


def lines_in(directory: Path) -> Counter[int]:
    """How often each item was written, over the union of the sink's files."""
    return Counter(
        int(line) for path in directory.glob("sink-*.txt") for line in path.read_text().splitlines()
    )


def exactly_once(snapshot_interval_millis: int = 15) -> JobConfig:
    return JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=snapshot_interval_millis,
    )


def emitted(job: LocalJob) -> int:
    return job.metrics().get("source", {}).get("emitted", 0)


@pytest.mark.parametrize("resume_members", [None, 2])
def test_files_after_suspend_and_resume_hold_every_item_exactly_once(
    tmp_path: Path, resume_members: int | None
) -> None:
    """A resumed processor appends: what was written before the suspension stays, nothing repeats."""
    out = tmp_path / "out"
    gate = Gate(tmp_path / "gate", hold_at=STREAM_COUNT // 4)
    job = LocalRunner(1).submit(stream_into_files(out, gate=gate), exactly_once())
    wait_until(lambda: emitted(job) >= STREAM_COUNT // 4)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    assert emitted(job) == STREAM_COUNT // 4, "the source went past its gate"
    assert sum(lines_in(out).values()) > 0, "the files hold the items written before the suspension"
    gate.open()
    job.resume(member_count=resume_members).join(60)
    if resume_members == 2:
        assert len(list(out.glob("sink-*.txt"))) == 4, "two members of two processors: four files"
    assert lines_in(out) == Counter(range(STREAM_COUNT))


def test_files_after_a_restart_from_a_snapshot_lose_nothing(tmp_path: Path) -> None:
    """A restart replays what followed the last snapshot: every item at least once, none lost.
    The source waits at a gate half-way until two snapshots were taken; the first item past the
    gate fails."""
    state: dict[str, Any] = {"failed": False}

    def fail_once(x: int) -> int:
        if not state["failed"] and x >= STREAM_COUNT // 2:
            state["failed"] = True
            state["snapshots"] = state["job"].snapshot_count
            raise RestartableError(f"injected failure at item {x}")
        return x

    out = tmp_path / "out"
    gate = Gate(tmp_path / "gate", hold_at=STREAM_COUNT // 2)
    job = LocalRunner(1).submit(stream_into_files(out, fail_once, gate=gate), exactly_once())
    state["job"] = job
    wait_until(lambda: job.snapshot_count >= 2 or job.status is not JobStatus.RUNNING, "two snapshots")
    gate.open()
    job.join(60)
    assert state["failed"], "the failure was injected"
    assert state["snapshots"] >= 2, "the failure came after two snapshots"
    assert set(lines_in(out)) == set(range(STREAM_COUNT))


def test_files_written_in_place_with_overwrite_replace_stale_files(tmp_path: Path) -> None:
    (tmp_path / "sink-00000.txt").write_text("stale\n")
    (tmp_path / "sink-00009.txt").write_text("stale\n")
    LocalRunner(1).run(stream_into_files(tmp_path, overwrite=True), exactly_once(), timeout=60)
    assert lines_in(tmp_path) == Counter(range(STREAM_COUNT))
    assert (tmp_path / "_SUCCESS").exists()


def test_files_flushes_at_every_snapshot(tmp_path: Path) -> None:
    """Once a snapshot was taken, the items it accounts for are in the file, not in a buffer."""
    out = tmp_path / "out"
    gate = Gate(tmp_path / "gate", hold_at=100)
    job = LocalRunner(1).submit(stream_into_files(out, gate=gate), exactly_once(snapshot_interval_millis=10))
    try:
        wait_until(lambda: emitted(job) >= 100)
        later = job.snapshot_count + 2  # snapshots whose barriers follow those 100 items
        wait_until(lambda: job.snapshot_count >= later or job.status is not JobStatus.RUNNING)
        assert job.status is JobStatus.RUNNING, "the job ended before the snapshots were taken"
        assert sum(lines_in(out).values()) == 100
    finally:
        job.cancel()


def test_files_are_named_as_documented(tmp_path: Path) -> None:
    """Issue 11: the docs said `<vertex>-<global index>.txt` while the files read `sink-00000.txt`;
    the docs now give the five-digit form, and the names follow it for any vertex name."""
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(20)), 3)
    out = dag.new_vertex("out", P.files(str(tmp_path / "o")), 3)
    dag.edge(Edge.between(source, out))
    LocalRunner(2).run(dag, timeout=30)
    assert sorted(p.name for p in (tmp_path / "o").glob("*.txt")) == [f"out-{i:05d}.txt" for i in range(6)]
    docs = (Path(__file__).resolve().parents[3] / "docs" / "spark.md").read_text()
    assert "`<vertex>-<global index:05d>.txt`: vertex `sink` writes `sink-00000.txt`" in docs
    assert "<vertex>-<global index:05d>.txt`" in (P.files.__doc__ or "")


def test_print_prints_each_item_with_an_optional_prefix(capsys: pytest.CaptureFixture[str]) -> None:
    dag = DAG()
    source = dag.new_vertex("numbers", P.from_iterable(range(4)))
    dag.edge(Edge.between(source, dag.new_vertex("out", P.print(lambda n: f"<{n}>", prefix=True))))
    LocalRunner(2).run(dag)
    lines = capsys.readouterr().out.splitlines()
    assert sorted(lines) == ["out#0: <0>", "out#0: <2>", "out#1: <1>", "out#1: <3>"]


LOGGING_JOB = """
import logging, sys
from jetspark import DAG, AbstractProcessor, Edge, JobConfig
from jetspark import processors as P
from jetspark.runners.local import LocalRunner

class Warns(AbstractProcessor):
    def try_process_item(self, ordinal, item):
        if item == 1:
            self.logger.warning("odd item %r", item)
        return self.try_emit(item)

if sys.argv[1] == "configured":
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s %(message)s")
dag = DAG()
source = dag.new_vertex("source", P.from_iterable(range(3)))
warns = dag.new_vertex("warns", Warns)
log = dag.new_vertex("log", P.logger())
dag.edge(Edge.between(source, warns)).edge(Edge.between(warns, log))
LocalRunner().run(dag, JobConfig())
"""


def run_logging_job(how: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", LOGGING_JOB, how], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stderr.splitlines()


def test_under_pythons_default_logging_the_logger_sink_and_processor_warnings_show() -> None:
    """Nothing configured: INFO would be dropped, so the sink writes its items to stderr itself;
    a processor's own logger shows WARNING and above (Python's last-resort handler)."""
    assert run_logging_job("default") == ["odd item 1", "log: 0", "log: 1", "log: 2"]


def test_once_logging_is_configured_it_decides_and_no_line_shows_twice() -> None:
    assert run_logging_job("configured") == [
        "WARNING jetspark.vertex.warns odd item 1",
        "INFO jetspark.vertex.log 0",
        "INFO jetspark.vertex.log 1",
        "INFO jetspark.vertex.log 2",
    ]
