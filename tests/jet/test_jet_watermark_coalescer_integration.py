"""Jet's `WatermarkCoalescer_IntegrationTest` (hazelcast-jet-core, `impl.execution`), ported.

Two sources emit watermarks and idle markers, either on two edges into one processor
(TWO_EDGES) or as two processors of one vertex on one edge (TWO_QUEUES); the processor turns
each watermark it gets into the item "wm(<timestamp>)" for a recording sink. The jobs run on the
local runner. Jet's sources wait with `Delay(500 ms)` between items; here they wait at a gate the
test opens once it has seen what must come first (no sleeps), and where Jet asserts that nothing
comes for 3 s, the sources end and the job's complete output is checked. Each test is named after
the Jet case it ports; every case has a counterpart.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from jetspark import (
    DAG,
    IDLE_MESSAGE,
    AbstractProcessor,
    Edge,
    JobCancelledError,
    ProcessorContext,
    ProcessorSupplier,
    Watermark,
)
from jetspark.runners.local import LocalRunner
from tests.waiting import wait_until

DONE_ITEM = "DONE_ITEM"
GATE = "GATE"
_gates: dict[str, threading.Event] = {}
_sink: list[Any] = []
_lock = threading.Lock()


def wm(timestamp: int) -> Watermark:
    return Watermark(timestamp)


class ScriptSource(AbstractProcessor):
    """Emits its script: watermarks (and the idle marker) as they are, GATE waits until the test
    opens the gate, DONE_ITEM completes; without DONE_ITEM it never completes (a stream)."""

    def __init__(self, scripts: tuple[list[Any], ...]) -> None:
        self.scripts = scripts

    def init_processor(self, context: ProcessorContext) -> None:
        self.script = list(self.scripts[context.local_processor_index % len(self.scripts)])

    def complete(self) -> bool:
        while self.script:
            entry = self.script[0]
            if entry == GATE:
                if not _gates[GATE].is_set():
                    return False
            elif entry == DONE_ITEM:
                return True
            elif not self.try_emit(entry):
                return False
            self.script.pop(0)
        return False


class WatermarksToStrings(AbstractProcessor):
    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.try_emit(f"wm({watermark.timestamp})")


class Record(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        with _lock:
            _sink.append(item)
        return True

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True


@pytest.fixture(autouse=True)
def _fresh() -> None:
    _sink.clear()
    _gates[GATE] = threading.Event()


def sink() -> list[Any]:
    with _lock:
        return list(_sink)


@pytest.fixture(params=["TWO_EDGES", "TWO_QUEUES"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def start(mode: str, input1: list[Any], input2: list[Any]) -> Any:
    dag = DAG()
    to_string = dag.new_vertex("mapWmToString", WatermarksToStrings, 1)
    dag.edge(Edge.between(to_string, dag.new_vertex("sink", Record, 1)))
    if mode == "TWO_EDGES":
        edge1 = dag.new_vertex("edge1", ProcessorSupplier.of(lambda: ScriptSource((input1,))), 1)
        edge2 = dag.new_vertex("edge2", ProcessorSupplier.of(lambda: ScriptSource((input2,))), 1)
        dag.edge(Edge.from_(edge1).to(to_string, 0))
        dag.edge(Edge.from_(edge2).to(to_string, 1))
    else:
        edge = dag.new_vertex("edge", ProcessorSupplier.of(lambda: ScriptSource((input1, input2))), 2)
        dag.edge(Edge.between(edge, to_string))
    return LocalRunner().submit(dag)


def stop(job: Any) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(60)


def test_WatermarkCoalescer_IntegrationTest__when_i1_active_i2_active_then_wmForwardedImmediately(
    mode: str,
) -> None:
    job = start(mode, [wm(100)], [wm(100)])
    wait_until(lambda: len(sink()) >= 1, "a watermark at the sink")
    stop(job)
    assert sink() == ["wm(100)"]


def test_WatermarkCoalescer_IntegrationTest__when_i1_active_i2_idle_then_wmForwardedImmediately(
    mode: str,
) -> None:
    job = start(mode, [wm(100)], [IDLE_MESSAGE])
    wait_until(lambda: len(sink()) >= 1, "a watermark at the sink")
    stop(job)
    assert sink() == ["wm(100)"]


def test_WatermarkCoalescer_IntegrationTest__when_i1_idle_i2_active_then_wmForwardedImmediately(
    mode: str,
) -> None:
    job = start(mode, [IDLE_MESSAGE], [wm(100)])
    wait_until(lambda: len(sink()) >= 1, "a watermark at the sink")
    stop(job)
    assert sink() == ["wm(100)"]


def test_WatermarkCoalescer_IntegrationTest__when_i1_idle_i2_idle_then_idleMessageForwardedImmediately(
    mode: str,
) -> None:
    job = start(mode, [IDLE_MESSAGE, DONE_ITEM], [IDLE_MESSAGE, DONE_ITEM])
    job.join(60)
    assert sink() == []  # the idle marker is never presented to the processor


def test_WatermarkCoalescer_IntegrationTest__when_waitingForWmOnI2ButI2BecomesDone_then_wmFromI1Forwarded(
    mode: str,
) -> None:
    job = start(mode, [wm(100)], [GATE, DONE_ITEM])
    _gates[GATE].set()
    wait_until(lambda: len(sink()) >= 1, "the watermark of input 1 once input 2 is done")
    stop(job)
    assert sink() == ["wm(100)"]


def test_WatermarkCoalescer_IntegrationTest__when_multipleWm_then_allForwarded(mode: str) -> None:
    job = start(mode, [wm(100), GATE, wm(101)], [wm(100), GATE, wm(101)])
    wait_until(lambda: len(sink()) >= 1, "wm(100) at the sink")
    assert sink() == ["wm(100)"]  # wm(101) waits at the gate
    _gates[GATE].set()
    wait_until(lambda: len(sink()) >= 2, "wm(101) at the sink")
    stop(job)
    assert sink() == ["wm(100)", "wm(101)"]
