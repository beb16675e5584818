"""Properties of WatermarkCoalescer (engine/coalescer.py) against a plain model.

The model recomputes everything from the per-queue state after each event: the minimum over live
queues (neither idle nor done), the highest watermark ever seen, whether an idle marker was already
sent for the current all-idle spell. Random event sequences come from per-queue rising timestamps,
so the coalescer only ever sees legal input, except in the test that feeds it a falling one.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark.core.errors import ProcessorContractError
from jetspark.core.watermark import IDLE_MESSAGE, Watermark
from jetspark.engine.coalescer import WatermarkCoalescer
from jetspark.engine.inbound import InboundStream
from jetspark.engine.queue import BoundedQueue
from jetspark.engine.special import DONE


@dataclass(frozen=True)
class Wm:
    queue: int
    step: int  # how far the queue's watermark rises (>= 1)


@dataclass(frozen=True)
class Idle:
    queue: int


@dataclass(frozen=True)
class Item:
    queue: int


@dataclass(frozen=True)
class Done:
    queue: int


Event = Wm | Idle | Item | Done


def events(max_queue: int) -> st.SearchStrategy[list[Event]]:
    queue = st.integers(min_value=0, max_value=max_queue)
    return st.lists(
        st.one_of(
            st.builds(Wm, queue, st.integers(min_value=1, max_value=5)),
            st.builds(Idle, queue),
            st.builds(Item, queue),
            st.builds(Done, queue),
        ),
        max_size=60,
    )


@dataclass
class Model:
    queues: int
    latest: dict[int, int] = field(default_factory=dict)  # queue -> its latest watermark
    idle: set[int] = field(default_factory=set)
    done: set[int] = field(default_factory=set)
    forwarded: int | None = None
    top: int | None = None
    idle_sent: bool = False

    def live(self) -> list[int]:
        return [q for q in range(self.queues) if q not in self.idle and q not in self.done]

    def outcome(self) -> list[Watermark]:
        """What a coalescer must forward now, given the state after the event."""
        live = self.live()
        if live:
            if any(q not in self.latest for q in live):
                return []  # a live queue without a watermark holds everything back
            low = min(self.latest[q] for q in live)
            if self.forwarded is None or low > self.forwarded:
                self.forwarded = low
                self.idle_sent = False
                return [Watermark(low)]
            return []
        if len(self.done) == self.queues:
            # the end of every input (DONE follows): the highest watermark seen goes on if it has
            # not yet (as Jet's coalescer: an input that ended first held it back), no idle marker
            if self.top is not None and (self.forwarded is None or self.top > self.forwarded):
                self.forwarded = self.top
                return [Watermark(self.top)]
            return []
        out = []
        if self.top is not None and (self.forwarded is None or self.top > self.forwarded):
            self.forwarded = self.top
            out.append(Watermark(self.top))
        if not self.idle_sent:
            self.idle_sent = True
            out.append(IDLE_MESSAGE)
        return out


def play(queue_count: int, script: list[Event]) -> None:
    """Feed `script` to a coalescer and to the model; they must agree after every event."""
    coalescer = WatermarkCoalescer(queue_count, "test")
    model = Model(queue_count)
    sent: list[int] = []
    for event in script:
        if event.queue in model.done:
            continue  # nothing arrives from a queue after its DONE
        if isinstance(event, Wm):
            value = model.latest.get(event.queue, 0) + event.step
            model.latest[event.queue] = value
            model.idle.discard(event.queue)
            model.idle_sent = False
            model.top = value if model.top is None else max(model.top, value)
            got = coalescer.observe(event.queue, Watermark(value))
            want = model.outcome()
        elif isinstance(event, Idle):
            model.idle.add(event.queue)
            got = coalescer.observe(event.queue, IDLE_MESSAGE)
            want = model.outcome()
        elif isinstance(event, Item):
            if event.queue in model.idle:
                model.idle.discard(event.queue)
                model.idle_sent = False
            coalescer.observe_item(event.queue)
            got, want = [], []  # an item never makes the minimum rise: nothing to forward
        else:
            model.done.add(event.queue)
            got = coalescer.queue_done(event.queue)
            want = model.outcome()
        assert got == want, (event, model)
        for watermark in got:
            if not watermark.is_idle():
                sent.append(watermark.timestamp)
        for q in range(queue_count):
            assert coalescer.is_idle(q) == (q in model.idle), q
        assert coalescer.last_forwarded == model.forwarded
    assert all(a < b for a, b in itertools.pairwise(sent)), f"forwarded watermarks must rise: {sent}"


@given(st.integers(min_value=1, max_value=4).flatmap(lambda n: st.tuples(st.just(n), events(n - 1))))
def test_coalescer_agrees_with_the_model(case: tuple[int, list[Event]]) -> None:
    play(*case)


@given(st.integers(min_value=1, max_value=4).flatmap(lambda n: st.tuples(st.just(n), events(n - 1))))
def test_forwarded_value_is_the_minimum_over_live_queues(case: tuple[int, list[Event]]) -> None:
    # The same property stated directly, without the model's bookkeeping: after every watermark,
    # when every live queue has one, the last forwarded value is at least their minimum, and
    # whatever was forwarded was either that minimum or (all idle) the top observed value.
    queue_count, script = case
    coalescer = WatermarkCoalescer(queue_count)
    latest: dict[int, int] = {}
    idle: set[int] = set()
    done: set[int] = set()
    for event in script:
        if event.queue in done:
            continue
        if isinstance(event, Wm):
            latest[event.queue] = latest.get(event.queue, 0) + event.step
            idle.discard(event.queue)
            out = coalescer.observe(event.queue, Watermark(latest[event.queue]))
        elif isinstance(event, Idle):
            idle.add(event.queue)
            out = coalescer.observe(event.queue, IDLE_MESSAGE)
        elif isinstance(event, Item):
            idle.discard(event.queue)
            coalescer.observe_item(event.queue)
            continue
        else:
            done.add(event.queue)
            out = coalescer.queue_done(event.queue)
        live = [q for q in range(queue_count) if q not in idle and q not in done]
        values = [w.timestamp for w in out if not w.is_idle()]
        if live and all(q in latest for q in live):
            low = min(latest[q] for q in live)
            last = coalescer.last_forwarded
            assert last is not None and last >= low
            assert values in ([], [low])
            assert IDLE_MESSAGE not in out
        elif live:
            assert out == []
        elif len(done) < queue_count:
            assert values in ([], [max(latest.values(), default=0)])
            if values:
                assert out[-1] == IDLE_MESSAGE
        else:
            assert values in ([], [max(latest.values(), default=0)])
            assert IDLE_MESSAGE not in out


@given(st.lists(st.integers(min_value=1, max_value=10), min_size=1, max_size=5))
def test_done_queues_do_not_hold_back(values: list[int]) -> None:
    # Queue 0 stays at 0 until it is done; then the minimum of the others goes out.
    coalescer = WatermarkCoalescer(len(values) + 1)
    assert coalescer.observe(0, Watermark(0)) == []
    out: list[Watermark] = []
    for queue, value in enumerate(values, start=1):
        out = coalescer.observe(queue, Watermark(value))
    assert out == [Watermark(0)]
    assert coalescer.queue_done(0) == [Watermark(min(values))]


@given(st.lists(st.integers(min_value=1, max_value=100), min_size=1, max_size=5))
def test_all_idle_forwards_the_top_then_idle_once(values: list[int]) -> None:
    coalescer = WatermarkCoalescer(len(values))
    for queue, value in enumerate(values):
        coalescer.observe(queue, Watermark(value))
    out: list[Watermark] = []
    for queue in range(len(values)):
        out += coalescer.observe(queue, IDLE_MESSAGE)
    assert out[-1] == IDLE_MESSAGE and out.count(IDLE_MESSAGE) == 1
    assert coalescer.last_forwarded == max(values)
    # Still idle: a repeated idle marker is not forwarded again.
    assert coalescer.observe(0, IDLE_MESSAGE) == []


@given(
    st.integers(min_value=1, max_value=4),
    st.integers(min_value=-(2**40), max_value=2**40),
    st.integers(min_value=0, max_value=2**40),
)
def test_a_watermark_that_does_not_rise_is_a_contract_error(queues: int, first: int, drop: int) -> None:
    coalescer = WatermarkCoalescer(queues, "vertex 'v' edge ordinal 0")
    coalescer.observe(queues - 1, Watermark(first))
    with pytest.raises(ProcessorContractError, match=rf"vertex .v. edge ordinal 0.*input {queues - 1}"):
        coalescer.observe(queues - 1, Watermark(first - drop))


@given(st.integers(min_value=2, max_value=4), st.integers(min_value=2, max_value=50))
def test_falling_after_idle_is_still_an_error(queues: int, value: int) -> None:
    coalescer = WatermarkCoalescer(queues)
    coalescer.observe(0, Watermark(value))
    coalescer.observe(0, IDLE_MESSAGE)
    with pytest.raises(ProcessorContractError):
        coalescer.observe(0, Watermark(value - 1))


# ---- coalescing over the producers of one edge (InboundStream) -------------------------------


@st.composite
def producer_scripts(draw: st.DrawFn) -> list[list[tuple[str, int]]]:
    """Per producer: ("item", ts) and ("wm", ts) entries; watermarks rise, no item is late."""
    scripts = []
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        watermark = 0
        script: list[tuple[str, int]] = []
        for kind in draw(st.lists(st.sampled_from(["item", "item", "wm"]), max_size=15)):
            if kind == "wm":
                watermark += draw(st.integers(min_value=1, max_value=4))
                script.append(("wm", watermark))
            else:
                script.append(("item", watermark + draw(st.integers(min_value=0, max_value=6))))
        scripts.append(script)
    return scripts


@given(producer_scripts(), st.lists(st.integers(min_value=0, max_value=4), max_size=80), st.booleans())
def test_an_edge_delivers_items_once_in_order_and_never_behind_its_watermark(
    scripts: list[list[tuple[str, int]]], schedule: list[int], aligned: bool
) -> None:
    queues = [BoundedQueue(1_000) for _ in scripts]
    stream = InboundStream(0, 0, queues, "vertex 'v'", aligned)
    sent = [0] * len(scripts)
    delivered: list[list[tuple[int, int]]] = [[] for _ in scripts]  # per producer: (position, ts)
    forwarded: list[int] = []

    def send(producer: int) -> None:
        position = sent[producer]
        script = scripts[producer]
        if position > len(script):
            return
        sent[producer] += 1
        if position == len(script):
            queues[producer].put_special(DONE)
        elif script[position][0] == "wm":
            queues[producer].put_special(Watermark(script[position][1]))
        else:
            queues[producer].put_chunk([(producer, position, script[position][1])])

    def drain() -> None:
        chunks: list[list[tuple[int, int, int]]] = []
        stream.drain_to(chunks)
        floor = forwarded[-1] if forwarded else None
        for producer, position, ts in (item for chunk in chunks for item in chunk):
            assert floor is None or ts >= floor, f"item {ts} delivered after watermark {floor}"
            delivered[producer].append((position, ts))
        forwarded.extend(w.timestamp for w in stream.pending_watermarks)
        stream.pending_watermarks.clear()

    for step in schedule:
        if step < len(scripts):
            send(step)
        else:
            drain()
    for _ in range(200):  # everything that is left, then the end of every producer
        if stream.is_done:
            break
        for producer in range(len(scripts)):
            send(producer)
        drain()
    assert stream.is_done
    for producer, script in enumerate(scripts):
        want = [(position, ts) for position, (kind, ts) in enumerate(script) if kind == "item"]
        assert delivered[producer] == want, f"producer {producer}"
    assert all(a < b for a, b in itertools.pairwise(forwarded))
    sent_watermarks = {ts for script in scripts for kind, ts in script if kind == "wm"}
    assert set(forwarded) <= sent_watermarks, "only values some producer sent are forwarded"
