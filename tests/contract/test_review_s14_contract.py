"""Review session 14: contract scenarios an external reviewer writes without looking at the suite,
aimed at the corners where ports of Jet's `Processor` usually go wrong (seed 003, checked against
Jet's `ProcessorTasklet` and `OutboxImpl` where the seed is silent).

A defect is a strict xfail written as the seed or Jet expects; the other tests add coverage the
contract suite lacked. The tests marked `spark` run on the shared `local[2]` session
(`tests/spark/conftest.py`), few and small.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cloudpickle
import pytest

import tests
from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.config import JobConfig, ProcessingGuarantee
from jetspark.core.context import ProcessorContext
from jetspark.core.dag import DAG
from jetspark.core.edge import Edge
from jetspark.core.errors import JobFailedError, ProcessorContractError
from jetspark.core.inbox import Inbox
from jetspark.core.outbox import Outbox
from jetspark.core.processor import Processor
from jetspark.core.traverser import Traverser, traverse_iterable
from jetspark.core.watermark import BroadcastKey, Watermark
from jetspark.processors import collect
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.harness import DONE, SnapshotBarrier, TaskletHarness
from tests.contract.recording import Behaviour, Recorder, RecordingProcessor
from tests.contract.scenarios import EXACTLY_ONCE, numbered, source_map_sink
from tests.waiting import wait_until

SPARK_TIMEOUT = 180


# ---- saveToSnapshot / snapshotCommitPrepare: a refused snapshot entry reported as done -------------


class IgnoresRefusedSnapshotOffers(Processor):
    """A sink whose `method` (save_to_snapshot or snapshot_commit_prepare) offers the snapshot
    entries k1, k2, k3, stops at the first refused offer, and returns True anyway: the processor
    bug the engine must not turn into a snapshot that silently lacks k2 and k3."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.finished: list[bool] = []

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.drain_to([])

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def _offer_entries(self) -> bool:
        for key in ("k1", "k2", "k3"):
            if not self.outbox.offer_to_snapshot(key, key.upper()):
                break
        return True

    def save_to_snapshot(self) -> bool:
        return self._offer_entries() if self.method == "save_to_snapshot" else True

    def snapshot_commit_prepare(self) -> bool:
        return self._offer_entries() if self.method == "snapshot_commit_prepare" else True

    def snapshot_commit_finish(self, success: bool) -> bool:
        self.finished.append(success)
        return True


@pytest.mark.parametrize("method", ["save_to_snapshot", "snapshot_commit_prepare"])
def test_a_snapshot_method_returning_true_after_a_refused_snapshot_entry_is_a_contract_error(
    method: str,
) -> None:
    """saveToSnapshot: "If this method returns false, it will be called again", and isCooperative:
    "The processor must also return as soon as the outbox rejects an item" — a refused entry must
    be offered again in a later call of the same method. Jet's `OutboxImpl` keeps the refused
    entry unfinished, and the barrier offered next (`offerToEdgesAndSnapshot`) trips its
    "Different item offered after previous call returned false" assertion: the snapshot never
    completes without the entry. jetspark checks the same thing for complete() and
    complete_edge() (`_check_nothing_refused`), so a snapshot method that returns True with an
    entry refused must fail with a ProcessorContractError naming that method and the entry,
    before phase 2 commits the snapshot."""
    p = IgnoresRefusedSnapshotOffers(method)
    harness = TaskletHarness(p, inbound=[(0, 1)], outbound=1, batch_size=1)
    harness.snapshot.start(0)
    harness.feed(0, 0, "x", SnapshotBarrier(0), "y")
    with pytest.raises(ProcessorContractError, match=rf"{method}\(\) returned True.*'k2'"):
        harness.run()
    assert p.finished == [], "the snapshot without k2 and k3 was committed"


# ---- finishSnapshotRestore: a refused offer reported as done --------------------------------------


class RestoresThenIgnoresRefusal(Processor):
    """A streaming source: finish_snapshot_restore offers r1 and r2, stops at the first refusal and
    returns True anyway; complete() emits nothing and returns False (streams forever)."""

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self.outbox = outbox

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        inbox.drain_to([])

    def finish_snapshot_restore(self) -> bool:
        for item in ("r1", "r2"):
            if not self.outbox.offer(item):
                break
        return True

    def complete(self) -> bool:
        return False


def test_finish_snapshot_restore_returning_true_after_a_refused_offer_is_a_contract_error() -> None:
    """finishSnapshotRestore: "If this method tried to offer to the outbox and the offer call
    returned false, this method must also return false and retry the offer in the next call" —
    Jet asserts it right there ("outbox has an unfinished item after successful
    finishSnapshotRestore()", `ProcessorTasklet` COMPLETE_EDGE of the snapshot inbox), and jetspark
    checks the same rule for complete_edge() and complete(). A streaming source that breaks it
    must fail naming finish_snapshot_restore and the refused r2, not stream on without r2."""
    harness = TaskletHarness(RestoresThenIgnoresRefusal(), outbound=1, batch_size=1, restore=[("k", 1)])
    with pytest.raises(ProcessorContractError, match=r"finish_snapshot_restore\(\) returned True.*'r2'"):
        harness.run(max_calls=200, idle_calls=50)
    assert "r2" not in harness.output(0)  # the job fails; r1 may still sit in the outbox's buffer


# ---- init: not a processing method, the outbox is not yet open ------------------------------------


class OffersFromInit(Processor):
    """A source that offers "from-init" in init() (and remembers what the offer returned), then
    emits "from-complete" from complete()."""

    accepted: bool | None = None

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self.outbox = outbox
        OffersFromInit.accepted = outbox.offer("from-init")

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete(self) -> bool:
        return self.outbox.offer("from-complete")


def test_an_offer_from_init_is_refused_and_never_delivered() -> None:
    """init: "Initializes this processor with the outbox that the processing methods must use to
    deposit their output items" (init is not a processing method), and jetspark's own contract
    table says init may not emit. Jet's outbox refuses such an offer: its batch budget is set only
    by `reset()` at the start of each `call()`, so before the first call `offer` returns False.
    Expected here: the offer is refused (returns False) or is a ProcessorContractError naming the
    processor; either way "from-init" never reaches the sink."""
    OffersFromInit.accepted = None
    dag = DAG()
    source = dag.new_vertex("source", OffersFromInit, 1)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.between(source, sink))
    try:
        job = LocalRunner(1).run(dag, timeout=JOB_TIMEOUT)
    except JobFailedError as failed:
        assert failed.vertex == "source"
        assert isinstance(failed.__cause__, ProcessorContractError)
        assert "init" in str(failed.__cause__)
        return
    assert OffersFromInit.accepted is False
    assert "from-init" not in job.result("sink")


# ---- snapshotCommitFinish(false), then the next snapshot -------------------------------------------


def test_after_a_failed_snapshot_the_next_one_is_saved_prepared_and_committed_with_true() -> None:
    """snapshotCommitFinish: "success - true, if all members were successful in saveToSnapshot()";
    snapshotCommitPrepare: "there can be multiple prepared transactions if the previous snapshot
    completed with commitTransactions == false". Snapshot 0 fails to be stored, snapshot 1 is
    stored: the processor sees save, prepare, finish(False), then for snapshot 1 again save,
    prepare (with the entries of snapshot 1, not those of 0) and finish(True), with processing in
    between, each exactly once."""
    p = RecordingProcessor("map", Behaviour(snapshot=lambda p: [("received", len(p.received))]))
    harness = TaskletHarness(p, inbound=[(0, 1)])
    stored: list[tuple[int, bool, int]] = []
    outcomes = iter([False, True])

    def store(snapshot_id: int, data: Any) -> bool:
        ok = next(outcomes)
        stored.append((snapshot_id, ok, len(data.get("v", []))))
        return ok

    harness.snapshot.on_phase1_complete = store
    harness.snapshot.start(0)
    harness.feed(0, 0, "a", SnapshotBarrier(0), "b")
    harness.run()
    harness.snapshot.start(1)
    harness.feed(0, 0, "c", SnapshotBarrier(1), "d", DONE)
    harness.run()
    snapshot_calls = [
        (c.method, c.args)
        for c in p.processing_calls()
        if c.method in ("save_to_snapshot", "snapshot_commit_prepare", "snapshot_commit_finish")
    ]
    assert snapshot_calls == [
        ("save_to_snapshot", ()),
        ("snapshot_commit_prepare", ()),
        ("snapshot_commit_finish", (False,)),
        ("save_to_snapshot", ()),
        ("snapshot_commit_prepare", ()),
        ("snapshot_commit_finish", (True,)),
    ]
    assert p.saves == [(0, 1), (0, 3)], "snapshot 1 saved the state after a, b and c"
    assert stored == [(0, False, 1), (1, True, 1)]
    assert p.received == [(0, "a"), (0, "b"), (0, "c"), (0, "d")]
    assert p.calls_of("complete")[-1].result is True


# ---- offerToSnapshot with duplicate keys -----------------------------------------------------------


def duplicate_entries(p: RecordingProcessor) -> list[tuple[Any, Any]]:
    label = p.label
    return [
        (("dup", label), 1),
        (("dup", label), 2),
        (BroadcastKey("shared"), (label, 1)),
        (BroadcastKey("shared"), (label, 2)),
    ]


def test_duplicate_snapshot_keys_are_all_restored_in_their_order(recorder: Recorder) -> None:
    """restoreFromSnapshot: "key and value types are exactly as they were saved in
    saveToSnapshot()"; the snapshot is a stream of entries, not a map: Jet writes every offered
    entry and leaves duplicates to the processor (its `SlidingWindowP` and `SessionWindowP` throw
    "Duplicate key in snapshot" themselves). After suspend/resume on 3 members, a keyed key saved
    twice comes back twice, in the order offered, to its owner; a BroadcastKey saved twice by
    each processor comes back to every processor, all of those entries."""
    engine = EngineSettings(1, 1, 3)
    source = Behaviour(emit=numbered("a", 3), complete_when=lambda p: p.generation > 0)
    middle = Behaviour(forward=True, snapshot=duplicate_entries)
    job = engine.submit(source_map_sink(engine, recorder, middle, source=source), EXACTLY_ONCE)
    job.suspend(JOB_TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    before = recorder.processors("map", generation=0)
    labels = sorted(p.label for p in before)
    assert len(labels) == 3
    recorder.generation = 1
    job.resume().join(JOB_TIMEOUT)
    after = recorder.processors("map", generation=1)
    keyed = [(k, v) for p in after for k, v in p.restored if not isinstance(k, BroadcastKey)]
    assert sorted(keyed, key=repr) == sorted(
        [(("dup", label), n) for label in labels for n in (1, 2)], key=repr
    )
    for p in after:
        mine = [(k, v) for k, v in p.restored if not isinstance(k, BroadcastKey)]
        for label in labels:
            values = [v for k, v in mine if k == ("dup", label)]
            assert values in ([], [1, 2]), f"{p.label}: {label}'s entries came back as {values}"
        shared = [v for k, v in p.restored if k == BroadcastKey("shared")]
        assert sorted(shared) == sorted((label, n) for label in labels for n in (1, 2)), p.label
        for label in labels:
            assert [v for v in shared if v[0] == label] == [(label, 1), (label, 2)], p.label


# ---- Spark local[2] ----------------------------------------------------------------------------------


class Stamped(AbstractProcessor):
    """Source: processor g of T emits `(tag, n)` for its share of n < count, and after every block
    of `every` numbers `Watermark(block + 1)` (each producer's watermarks rise)."""

    def __init__(self, tag: str, count: int, every: int) -> None:
        self.tag = tag
        self.count = count
        self.every = every

    def init_processor(self, context: ProcessorContext) -> None:
        g, step = context.global_processor_index, context.total_parallelism
        plan: list[Any] = []
        for block in range(self.count // self.every):
            plan += [
                (self.tag, n) for n in range(block * self.every, (block + 1) * self.every) if n % step == g
            ]
            plan.append(Watermark(block + 1))
        self.traverser: Traverser[Any] = traverse_iterable(plan)

    def complete(self) -> bool:
        return self.emit_from_traverser(self.traverser)


class CallLog(Processor):
    """Logs its calls: ("process", ordinal, items), ("wm", t), ("complete_edge", ordinal), and
    ("try_process",) once both edges completed; complete() emits `(global index, log)`."""

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self.outbox = outbox
        self.index = context.global_processor_index
        self.log: list[tuple[Any, ...]] = []
        self.completed = 0

    def process(self, ordinal: int, inbox: Inbox) -> None:
        self.log.append(("process", ordinal, tuple(inbox)))
        inbox.drain_to([])

    def try_process_watermark(self, watermark: Watermark) -> bool:
        self.log.append(("wm", watermark.timestamp))
        return True

    def try_process(self) -> bool:
        if self.completed == 2:
            self.log.append(("try_process",))
        return True

    def complete_edge(self, ordinal: int) -> bool:
        self.completed += 1
        self.log.append(("complete_edge", ordinal))
        return True

    def complete(self) -> bool:
        return self.outbox.offer((self.index, tuple(self.log)))


COUNT, EVERY = 240, 20


def prioritized_call_log(log: Callable[[], Processor] = CallLog) -> DAG:
    """late -> CallLog ordinal 0 (priority 2) and early -> ordinal 1 (priority 1), both distributed
    and partitioned, two source processors per member; the logs go to a collect sink."""
    dag = DAG()
    late = dag.new_vertex("late", lambda: Stamped("late", COUNT, EVERY), 2)
    early = dag.new_vertex("early", lambda: Stamped("early", COUNT, EVERY), 2)
    logged = dag.new_vertex("log", log, 2)
    sink = dag.new_vertex("sink", collect(), 1)
    dag.edge(Edge.from_(late).to(logged, 0).partitioned(lambda item: item[1]).distributed().with_priority(2))
    dag.edge(Edge.from_(early).to(logged, 1).partitioned(lambda item: item[1]).distributed().with_priority(1))
    dag.edge(Edge.between(logged, sink))
    return dag


def check_call_logs(logs: list[tuple[int, tuple[tuple[Any, ...], ...]]], processors: int) -> None:
    assert sorted(index for index, _ in logs) == list(range(processors))
    items: dict[int, list[Any]] = {0: [], 1: []}
    for index, log in logs:
        kinds = [entry[0] for entry in log]
        assert kinds.count("complete_edge") == 2, f"#{index}: {kinds}"
        first, second = (i for i, entry in enumerate(log) if entry[0] == "complete_edge")
        assert log[first] == ("complete_edge", 1) and log[second] == ("complete_edge", 0), f"#{index}"
        for position, entry in enumerate(log):
            if entry[0] == "process":
                ordinal = entry[1]
                items[ordinal].extend(entry[2])
                assert entry[2], f"#{index}: process() with an empty inbox"
                if ordinal == 1:
                    assert position < first, f"#{index}: an item of ordinal 1 after complete_edge(1)"
                else:
                    assert first < position < second, f"#{index}: ordinal 0 item out of its turn"
            elif entry[0] == "wm":
                # the coalesced watermark needs ordinal 0's, which is drained only after ordinal 1 ended
                assert position > first, f"#{index}: watermark {entry[1]} before complete_edge(1)"
            elif entry[0] == "try_process":
                raise AssertionError(f"#{index}: try_process() between the last complete_edge and complete()")
        marks = [entry[1] for entry in log if entry[0] == "wm"]
        assert marks == sorted(set(marks)), f"#{index}: watermarks do not rise: {marks}"
        assert all(1 <= mark <= COUNT // EVERY for mark in marks), marks
    assert sorted(items[1]) == [("early", n) for n in range(COUNT)]
    assert sorted(items[0]) == [("late", n) for n in range(COUNT)]


def test_prioritized_edges_complete_in_priority_order_with_watermarks_on_the_local_runner() -> None:
    """completeEdge: "Called after the edge input with the supplied ordinal is exhausted", with edge
    priorities and watermarks on both edges, on 2 members with 2 processors each: every item of
    the higher-priority ordinal 1, then complete_edge(1), then ordinal 0's items, then
    complete_edge(0), then complete() (no try_process in between, as Jet goes to COMPLETE at
    once); no watermark before complete_edge(1) (the coalesced value needs ordinal 0's, which Jet
    does not drain before ordinal 1 ended), rising ones after. The same check runs on Spark."""
    job = LocalRunner(2).run(prioritized_call_log(), timeout=JOB_TIMEOUT)
    check_call_logs(job.result("sink"), 4)


@pytest.fixture(scope="module")
def spark() -> Any:
    """The suite's one Spark session, with the settings of `tests/spark/conftest.py` (reused when it
    runs already; that fixture stops it at the end of the run), and test code shipped to Spark's
    Python workers by value, as that conftest sets up for the tests under `tests/spark`."""
    from jetspark.runners.spark.session import get_session

    cloudpickle.register_pickle_by_value(tests)
    return get_session(
        "local[2]", extra_conf={"spark.sql.shuffle.partitions": "4", "spark.default.parallelism": "2"}
    )


@pytest.mark.spark
def test_prioritized_edges_complete_in_priority_order_with_watermarks_on_spark(
    spark: Any,
) -> None:
    """The scenario above on Spark local[2] (each edge a shuffle): the same call order per
    processor, and the same items."""
    from jetspark.runners.spark.runner import SparkRunner

    job = SparkRunner(spark).run(prioritized_call_log(), JobConfig(member_count=2), timeout=SPARK_TIMEOUT)
    check_call_logs(job.result("sink"), 4)


class RaisesIn(CallLog):
    """A CallLog that raises in `method` (complete_edge or try_process_watermark)."""

    def __init__(self, method: str) -> None:
        self.method = method

    def try_process_watermark(self, watermark: Watermark) -> bool:
        if self.method == "try_process_watermark":
            raise ValueError(f"boom in try_process_watermark of #{self.index}")
        return super().try_process_watermark(watermark)

    def complete_edge(self, ordinal: int) -> bool:
        if self.method == "complete_edge":
            raise ValueError(f"boom in complete_edge of #{self.index}")
        return super().complete_edge(ordinal)


@pytest.mark.spark
@pytest.mark.parametrize("method", ["complete_edge", "try_process_watermark"])
def test_an_exception_in_complete_edge_or_try_process_watermark_on_spark_names_vertex_and_processor(
    spark: Any, method: str
) -> None:
    """Errors (docs/processor-contract.md): "An exception from any method except close fails the
    job. join() raises JobFailedError, whose message and vertex / processor_index attributes name
    the processor, chained to the original exception" — on Spark, for the two callbacks the
    Spark failure tests do not raise from (they raise in try_process_item)."""
    from jetspark.runners.spark.runner import SparkRunner

    job = SparkRunner(spark).submit(prioritized_call_log(lambda: RaisesIn(method)), JobConfig(member_count=2))
    with pytest.raises(JobFailedError) as caught:
        job.join(SPARK_TIMEOUT)
    error = caught.value
    assert error.vertex == "log"
    assert error.processor_index in range(4)
    assert f"vertex 'log' processor #{error.processor_index}" in str(error)
    assert isinstance(error.__cause__, ValueError)
    assert str(error.__cause__) == f"boom in {method} of #{error.processor_index}"
    assert job.status is JobStatus.FAILED


JOB_NAME = "s14-refused-save"
ENTRIES = 1500  # more than the outbox's default batch (1024): the snapshot bucket refuses some


class Quiet(Processor):
    """A streaming source that emits nothing and never completes."""

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete(self) -> bool:
        return False


class SavesAndIgnoresRefusal(Processor):
    """Saves ENTRIES entries in one save_to_snapshot call, stopping at the first refused offer and
    returning True anyway (the processor's bug)."""

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self.outbox = outbox

    def process(self, ordinal: int, inbox: Inbox) -> None:
        inbox.drain_to([])

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def save_to_snapshot(self) -> bool:
        for key in range(ENTRIES):
            if not self.outbox.offer_to_snapshot(key, key):
                break
        return True

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        inbox.drain_to([])

    def complete(self) -> bool:
        return False


@pytest.mark.spark
def test_a_save_to_snapshot_returning_true_after_a_refusal_fails_the_epoch_job_on_spark(
    spark: Any, tmp_path: Path
) -> None:
    """saveToSnapshot, as in the local test above, in an epoch job on Spark local[2]: a processor
    whose save_to_snapshot returns True after the snapshot bucket refused an entry must fail the
    job naming save_to_snapshot (Jet's outbox asserts on the barrier offered next), rather than
    have the driver commit a snapshot without those entries."""
    from jetspark.checkpoint import CheckpointStore
    from jetspark.engine.snapshot import SnapshotEntry, decode_entries
    from jetspark.runners.spark.runner import SparkRunner

    dag = DAG()
    source = dag.new_vertex("source", Quiet, 1)
    saver = dag.new_vertex("saver", SavesAndIgnoresRefusal, 1)
    dag.edge(Edge.between(source, saver).distributed())
    config = JobConfig(
        name=JOB_NAME,
        member_count=1,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=200,
        checkpoint_root=os.fspath(tmp_path / "ck"),
    )
    store = CheckpointStore(os.fspath(tmp_path / "ck"), JOB_NAME, tidy=False)
    job = SparkRunner(spark).submit(dag, config)
    try:
        wait_until(
            lambda: job.status is not JobStatus.RUNNING or store.latest_id() is not None,
            "the job failed or committed a snapshot",
            timeout=SPARK_TIMEOUT,
        )
        manifest = store.latest()
        if manifest is not None:
            kept = len(decode_entries(SnapshotEntry._make(e) for e in store.read(manifest, "saver")))
            raise AssertionError(
                f"snapshot {manifest.snapshot_id} was committed with {kept} of {ENTRIES} entries"
            )
        with pytest.raises(JobFailedError, match=r"save_to_snapshot"):
            job.join(SPARK_TIMEOUT)
    finally:
        if job.status is JobStatus.RUNNING:
            job.cancel()
