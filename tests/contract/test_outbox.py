"""Outbox rules: back-pressure, re-offers after a rejection, ordinals, processors without output."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from jetspark.core.dag import DAG
from jetspark.core.errors import JobFailedError, ProcessorContractError
from jetspark.core.outbox import Outbox
from jetspark.core.processor import Processor
from jetspark.core.watermark import Watermark
from jetspark.runners.local import LocalRunner
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.harness import TaskletHarness
from tests.contract.recording import Behaviour, Recorder
from tests.contract.scenarios import source_to_sink


class OfferingSource(Processor):
    """A source whose complete() runs `step(outbox, call_number)`; logs what each offer returned."""

    def __init__(self, step: Callable[[Outbox, int], bool]) -> None:
        self.step = step
        self.calls = 0
        self.log: list[tuple[int, str, Any, bool]] = []

    def init(self, outbox: Outbox, context: Any) -> None:
        self.outbox = outbox

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True

    def complete(self) -> bool:
        self.calls += 1
        return self.step(self.outbox, self.calls)


def single_source_dag(source: Processor, recorder: Recorder, sinks: int = 1, queue_size: int = 1024) -> DAG:
    from jetspark.core.edge import Edge

    dag = DAG()
    src = dag.new_vertex("source", lambda: source, 1)
    for ordinal in range(sinks):
        sink = recorder.vertex(dag, f"sink{ordinal}", Behaviour(), 1)
        dag.edge(Edge.from_(src, ordinal).to(sink).with_queue_size(queue_size))
    return dag


def test_offer_returns_false_when_the_outbox_is_full(engine: EngineSettings, recorder: Recorder) -> None:
    """Rule (outbox): "Each call of a tasklet gets a batch budget ... an offer past it returns False. ...
    A full downstream queue makes offer return False" — no call gets more than batch_size
    accepted offers, and a False comes before any overflow."""
    items = list(range(3 * engine.batch_size + 5)) if engine.batch_size < 100 else list(range(2500))
    position = {"next": 0}
    per_call: list[tuple[int, bool]] = []

    def step(outbox: Outbox, _call: int) -> bool:
        accepted = 0
        while position["next"] < len(items):
            if not outbox.offer(items[position["next"]]):
                per_call.append((accepted, False))
                return False
            accepted += 1
            position["next"] += 1
        per_call.append((accepted, True))
        return True

    source = OfferingSource(step)
    LocalRunner(1, engine.batch_size).run(
        single_source_dag(source, recorder, queue_size=engine.queue_size), timeout=JOB_TIMEOUT
    )
    assert all(accepted <= engine.batch_size for accepted, _ in per_call), per_call[:5]
    assert any(result is False for _, result in per_call)
    assert sorted(recorder.received("sink0")) == items


def test_has_unfinished_item_after_a_rejection_until_the_same_item_is_accepted(recorder: Recorder) -> None:
    """Rule (outbox): "After an offer returned False, the processor must offer the same item ... again
    before anything else; has_unfinished_item() tells"."""
    states: list[tuple[str, bool]] = []

    def step(outbox: Outbox, call: int) -> bool:
        if call == 1:
            states.append(("start", outbox.has_unfinished_item()))
            assert outbox.offer("first")
            rejected = not outbox.offer("second")
            states.append(("rejected" if rejected else "accepted", outbox.has_unfinished_item()))
            return False
        accepted = outbox.offer("second")
        states.append(("re-offered" if accepted else "again rejected", outbox.has_unfinished_item()))
        return accepted

    LocalRunner(1, batch_size=1).run(single_source_dag(OfferingSource(step), recorder), timeout=JOB_TIMEOUT)
    assert states[:3] == [("start", False), ("rejected", True), ("re-offered", False)]
    assert recorder.received("sink0") == ["first", "second"]


@pytest.mark.parametrize(
    "second_offer",
    [
        pytest.param(lambda o: o.offer("different"), id="different-item"),
        pytest.param(lambda o: o.offer_to(0, "different"), id="different-item-to-ordinal"),
        pytest.param(lambda o: o.offer_to(1, "second"), id="same-item-other-ordinals"),
        pytest.param(lambda o: o.offer(Watermark(7)), id="watermark-instead"),
    ],
)
def test_reoffer_of_a_different_item_after_rejection_raises_naming_the_processor(
    recorder: Recorder, second_offer: Callable[[Outbox], bool]
) -> None:
    """Rule (outbox): "After an offer returned False, the processor must offer the same item to the same
    ordinals again before anything else ... jetspark should raise a clear error"."""

    def step(outbox: Outbox, call: int) -> bool:
        if call == 1:
            outbox.offer("first")
            assert not outbox.offer("second")
            return False
        return second_offer(outbox)

    with pytest.raises(JobFailedError) as caught:
        LocalRunner(1, batch_size=1).run(
            single_source_dag(OfferingSource(step), recorder, sinks=2), timeout=JOB_TIMEOUT
        )
    cause = caught.value.__cause__
    assert isinstance(cause, ProcessorContractError)
    assert "vertex 'source' processor #0" in str(cause)
    assert "'second'" in str(cause)


@pytest.mark.parametrize(
    ("offer", "bad"),
    [
        pytest.param(lambda o: o.offer_to(o.bucket_count(), "x"), "1", id="bucket_count"),
        pytest.param(lambda o: o.offer_to(7, "x"), "7", id="far-out"),
        pytest.param(lambda o: o.offer_to(-2, "x"), "-2", id="negative"),
        pytest.param(lambda o: o.offer_to([0, 3], "x"), "3", id="one-of-several"),
    ],
)
def test_ordinal_out_of_range_is_an_error_naming_processor_and_ordinal(
    engine: EngineSettings, recorder: Recorder, offer: Callable[[Outbox], bool], bad: str
) -> None:
    """Rule (outbox): "An ordinal equal to bucket_count() is an error" (and any other outside
    0..bucket_count-1, except -1 meaning all)."""
    with pytest.raises(JobFailedError) as caught:
        LocalRunner(1, engine.batch_size).run(
            single_source_dag(OfferingSource(lambda o, _c: offer(o)), recorder), timeout=JOB_TIMEOUT
        )
    cause = caught.value.__cause__
    assert isinstance(cause, ProcessorContractError)
    assert "vertex 'source' processor #0" in str(cause)
    assert f"ordinal {bad}" in str(cause)


def test_offer_to_several_ordinals_retries_only_the_rejected_ones() -> None:
    """Rule (outbox): "Offering to several ordinals remembers which already accepted and retries only
    the rest; returns True when all accepted" — no duplicate on the ordinal that accepted."""
    results: list[bool] = []

    def step(outbox: Outbox, call: int) -> bool:
        if call == 1:
            results.append(outbox.offer_to(0, "fill-0"))
            results.append(outbox.offer_to(0, "fill-0b"))
            results.append(outbox.offer_to([0, 1], "both"))  # ordinal 0 is full, ordinal 1 is not
            return False
        results.append(outbox.offer_to([0, 1], "both"))
        return True

    source = OfferingSource(step)
    harness = TaskletHarness(source, outbound=2, batch_size=2)
    harness.run()
    assert results == [True, True, False, True]
    assert harness.output(0)[:3] == ["fill-0", "fill-0b", "both"]
    assert harness.output(1)[:1] == ["both"]
    assert "both" not in harness.output(1)


def test_offer_to_several_ordinals_under_back_pressure_delivers_each_item_once_per_ordinal(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (outbox), end to end: a source offering every item to two edges while one consumer is slow
    (queues of the engine setting's size); both sinks get every item exactly once, in order."""
    items = list(range(150))
    position = {"next": 0}

    def step(outbox: Outbox, _call: int) -> bool:
        while position["next"] < len(items):
            if not outbox.offer_to([0, 1], items[position["next"]]):
                return False
            position["next"] += 1
        return True

    from jetspark.core.edge import Edge

    dag = DAG()
    src = dag.new_vertex("source", lambda: OfferingSource(step), 1)
    fast = recorder.vertex(dag, "fast", Behaviour(), 1)
    slow = recorder.vertex(dag, "slow", Behaviour(take=1, stall=2), 1)
    dag.edge(Edge.from_(src, 0).to(fast).with_queue_size(engine.queue_size))
    dag.edge(Edge.from_(src, 1).to(slow).with_queue_size(engine.queue_size))
    LocalRunner(1, engine.batch_size).run(dag, timeout=JOB_TIMEOUT)
    assert recorder.received("fast") == items
    assert recorder.received("slow") == items


def test_processor_without_outbound_edges_may_offer(engine: EngineSettings, recorder: Recorder) -> None:
    """Rule (outbox): "A processor with no outbound edges: offers are accepted (count as progress) and
    dropped" — a sink that forwards everything completes normally."""
    offers: list[bool] = []

    def offer_all(p: Any) -> None:
        if p.last_inbox is not None:
            for item in list(p.last_inbox):
                offers.append(p.outbox.offer(item))
            offers.append(p.outbox.offer(Watermark(10**9 + len(offers))))

    sink = Behaviour(forward=True, hooks={"process": offer_all})
    engine.run(source_to_sink(engine, recorder, sink))
    assert len(recorder.received("sink")) == 20 * engine.member_count
    assert offers and all(offers)
    for p in recorder.processors("sink"):
        assert p.outbox.bucket_count() == 0


def test_items_offered_before_a_watermark_arrive_before_it(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (outbox): "Watermarks ... first flush the buffer (order is kept)" — items a producer
    offered before a watermark reach the consumer before that watermark, from every producer."""

    def emit(context: Any) -> list[Any]:
        g = context.global_processor_index
        return [(g, "a"), (g, "b"), Watermark(1), (g, "c"), (g, "d"), Watermark(2), (g, "e")]

    dag = DAG()
    src = recorder.vertex(dag, "source", Behaviour(emit=emit))
    snk = recorder.vertex(dag, "sink", Behaviour(take=1))
    dag.edge(engine.edge(src, snk).all_to_one("one"))
    engine.run(dag)
    owner = next(p for p in recorder.processors("sink") if p.received)
    calls = owner.processing_calls()
    for timestamp, letters in ((1, "ab"), (2, "abcd")):
        at = next(
            i
            for i, c in enumerate(calls)
            if c.method == "try_process_watermark" and c.args[0].timestamp == timestamp
        )
        before = {
            item
            for c in calls[:at]
            if c.method == "process"
            for item in (c.inbox or ())[: len(c.inbox or ()) - (c.left or 0)]
        }
        expected = {(g, letter) for g in range(engine.member_count) for letter in letters}
        assert expected <= before, f"watermark {timestamp} overtook {sorted(expected - before)}"


@pytest.mark.parametrize(
    "again",
    [
        pytest.param(lambda o: o.offer("second"), id="same-item"),
        pytest.param(lambda o: o.offer_to(0, "second"), id="same-item-to-its-ordinal"),
    ],
)
def test_offer_again_in_the_same_call_after_a_refusal_raises_naming_the_processor(
    recorder: Recorder, again: Callable[[Outbox], bool]
) -> None:
    """Rule (outbox, Jet's OutboxImplTest.when_batchSizeReachedAndOfferReturnedFalse_then_subsequentCallFails):
    after an offer returned False the processor must return from the call; an offer in the same
    call, even of the same item, raises ("offer() called again") instead of spinning in a loop the
    outbox cannot end (nothing is flushed before the call returns)."""

    def step(outbox: Outbox, call: int) -> bool:
        assert outbox.offer("first")
        assert not outbox.offer("second")
        return again(outbox)

    with pytest.raises(JobFailedError) as caught:
        LocalRunner(1, batch_size=1).run(
            single_source_dag(OfferingSource(step), recorder), timeout=JOB_TIMEOUT
        )
    cause = caught.value.__cause__
    assert isinstance(cause, ProcessorContractError)
    assert "vertex 'source' processor #0" in str(cause)
    assert "called again in the same call after it returned False" in str(cause)
