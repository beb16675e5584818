"""Small DAGs the contract tests share: sources of numbered items feeding recording processors."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from jetspark.core.config import JobConfig, ProcessingGuarantee
from jetspark.core.context import ProcessorContext
from jetspark.core.dag import DAG
from jetspark.core.watermark import Watermark
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.recording import Behaviour, Recorder, RecordingProcessor

#: Snapshot, restore and failure tests snapshot as often as they can (at most once a millisecond).
EXACTLY_ONCE = JobConfig(processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=1)
AT_LEAST_ONCE = JobConfig(processing_guarantee=ProcessingGuarantee.AT_LEAST_ONCE, snapshot_interval_millis=1)
#: Run a test under both guarantees, as its `config` argument.
GUARANTEES = pytest.mark.parametrize(
    "config", [EXACTLY_ONCE, AT_LEAST_ONCE], ids=["exactly_once", "at_least_once"]
)


def numbered(tag: str, count: int) -> Callable[[ProcessorContext], list[tuple[str, int, int]]]:
    """Each source processor emits `(tag, its global index, n)` for n in range(count)."""

    def items(context: ProcessorContext) -> list[tuple[str, int, int]]:
        return [(tag, context.global_processor_index, n) for n in range(count)]

    return items


def wait_for(condition: Callable[[], bool], what: str, timeout: float = JOB_TIMEOUT) -> None:
    """Poll until `condition()` holds while a job runs; fail naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached within {timeout} s: {what}")
        time.sleep(0.005)


def one_item_per_snapshot(p: RecordingProcessor) -> bool:
    """Emission gate: the next item only after a snapshot since the last one."""
    return p.count("save_to_snapshot") >= p.emitted


def with_watermarks(tag: str, count: int, every: int = 3) -> Callable[[ProcessorContext], list[Any]]:
    """Numbered items with a rising watermark after every `every` items (timestamp = n + 1)."""

    def items(context: ProcessorContext) -> list[Any]:
        out: list[Any] = []
        for n in range(count):
            out.append((tag, context.global_processor_index, n))
            if (n + 1) % every == 0:
                out.append(Watermark(n + 1))
        return out

    return items


def chain(engine: EngineSettings, recorder: Recorder, *stages: tuple[str, Behaviour, int]) -> DAG:
    """Vertices `(name, behaviour, local parallelism)` joined in a line by distributed edges."""
    dag = DAG()
    previous = None
    for name, behaviour, parallelism in stages:
        vertex = recorder.vertex(dag, name, behaviour, parallelism)
        if previous is not None:
            dag.edge(engine.edge(previous, vertex))
        previous = vertex
    return dag


def source_to_sink(
    engine: EngineSettings,
    recorder: Recorder,
    sink: Behaviour,
    source: Behaviour | None = None,
    count: int = 20,
) -> DAG:
    """source -> sink over one distributed edge; each source processor emits `count` items."""
    return chain(
        engine, recorder, ("source", source or Behaviour(emit=numbered("a", count)), -1), ("sink", sink, -1)
    )


def source_map_sink(
    engine: EngineSettings,
    recorder: Recorder,
    middle: Behaviour,
    count: int = 20,
    source: Behaviour | None = None,
    sink: Behaviour | None = None,
    map_parallelism: int = -1,
) -> DAG:
    """source -> map -> sink; the map is the processor under test."""
    return chain(
        engine,
        recorder,
        ("source", source or Behaviour(emit=numbered("a", count)), -1),
        ("map", middle, map_parallelism),
        ("sink", sink or Behaviour(), -1),
    )


def two_sources_to_sink(
    engine: EngineSettings,
    recorder: Recorder,
    sink: Behaviour,
    count: int = 10,
    sources: Sequence[Behaviour] | None = None,
    priorities: tuple[int, int] = (0, 0),
) -> DAG:
    """Sources "a" and "b" into ordinals 0 and 1 of the sink."""
    dag = DAG()
    behaviours = sources or (Behaviour(emit=numbered("a", count)), Behaviour(emit=numbered("b", count)))
    a = recorder.vertex(dag, "a", behaviours[0])
    b = recorder.vertex(dag, "b", behaviours[1])
    snk = recorder.vertex(dag, "sink", sink)
    dag.edge(engine.edge(a, snk, 0, 0).with_priority(priorities[0]))
    dag.edge(engine.edge(b, snk, 0, 1).with_priority(priorities[1]))
    return dag


def between_false_and_retry(
    processor: RecordingProcessor, method: str, allowed: Sequence[str] = ()
) -> list[str]:
    """Violations of "a method that returned False is called again before any other": for every
    False return of `method`, the next processing call must be `method` again (or one of
    `allowed`). Returns descriptions of the violations."""
    calls = processor.processing_calls()
    problems = []
    for i, call in enumerate(calls):
        if call.method != method or call.result is not False:
            continue
        for following in calls[i + 1 :]:
            if following.method in allowed:
                continue
            if following.method != method or following.args != call.args:
                problems.append(
                    f"{processor.label}: {method}{call.args} returned False, then {following.method}"
                    f"{following.args} was called"
                )
            break
    return problems
