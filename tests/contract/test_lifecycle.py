"""Lifecycle rules: init first and once, close last and once (whatever happened), threads."""

from __future__ import annotations

import logging
import threading

import pytest

from jetspark.core.dag import DAG
from jetspark.core.errors import JobCancelledError, JobFailedError
from jetspark.runners.job import JobStatus
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.recording import Behaviour, Boom, Recorder, RecordingProcessor
from tests.contract.scenarios import numbered, source_map_sink, wait_for


def test_init_called_exactly_once_and_before_any_other_method_except_is_cooperative(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (init): "called exactly once and strictly before any calls to other methods (except
    for the isCooperative() method)"."""
    engine.run(source_map_sink(engine, recorder, Behaviour(forward=True)))
    processors = recorder.processors()
    assert len(processors) == 3 * engine.member_count
    for p in processors:
        methods = [m for m in p.methods() if m != "is_cooperative"]
        assert methods.count("init") == 1, p.label
        assert methods[0] == "init", f"{p.label}: first calls {methods[:3]}"


def test_close_called_exactly_once_as_the_last_method_after_a_successful_job(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (close): "Called as the last method in the processor lifecycle ... whether the job was
    successful or not" — exactly once."""
    engine.run(source_map_sink(engine, recorder, Behaviour(forward=True)))
    for p in recorder.processors():
        assert p.count("close") == 1, p.label
        assert p.methods()[-1] == "close", p.label


@pytest.mark.parametrize("failing", ["source", "map", "sink"])
def test_close_called_exactly_once_on_every_processor_when_init_raised(
    engine: EngineSettings, recorder: Recorder, failing: str
) -> None:
    """Rule (close): "The method might get called even if init() method was not yet called" — every
    processor is closed once when some init raises, including those whose init never ran."""
    dag = DAG()
    src = recorder.vertex(
        dag, "source", Behaviour(emit=numbered("a", 5), raise_in="init" if failing == "source" else None)
    )
    mid = recorder.vertex(dag, "map", Behaviour(forward=True, raise_in="init" if failing == "map" else None))
    snk = recorder.vertex(dag, "sink", Behaviour(raise_in="init" if failing == "sink" else None))
    dag.edge(engine.edge(src, mid))
    dag.edge(engine.edge(mid, snk))
    with pytest.raises(JobFailedError) as caught:
        engine.run(dag)
    assert caught.value.vertex == failing
    for p in recorder.processors():
        assert p.count("close") == 1, p.label
        assert p.count("init") <= 1, p.label
        assert p.methods()[-1] == "close", p.label
        assert not any(m in p.methods() for m in ("process", "complete", "try_process")), (
            f"{p.label} was processing although an init failed: {p.methods()}"
        )


@pytest.mark.parametrize("method", ["process", "try_process", "complete_edge", "complete"])
def test_close_called_exactly_once_on_every_processor_when_a_processing_method_raised(
    engine: EngineSettings, recorder: Recorder, method: str
) -> None:
    """Rule (close): called "whether the job was successful or not": a processing method raising
    in one processor still closes every processor exactly once, and the job ends."""
    # the source ends late, so that the map's inbox runs dry before its edge is done (try_process)
    source = Behaviour(emit=numbered("a", 20), complete_when=lambda p: p.count("complete") > 20)
    job = engine.submit(
        source_map_sink(engine, recorder, Behaviour(forward=True, raise_in=method), source=source)
    )
    with pytest.raises(JobFailedError):
        job.join(30)
    for p in recorder.processors():
        assert p.count("close") == 1, p.label
        assert p.methods()[-1] == "close", p.label


def test_close_called_right_after_complete_returned_true_while_the_job_still_runs(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (close): "The method will be called right after complete() returns true, that is before the
    job is finished. The job might still be running other processors"."""
    dag = source_map_sink(
        engine, recorder, Behaviour(forward=True), sink=Behaviour(false_times={"complete": 40})
    )
    engine.run(dag)
    sink_done = min(p.calls_of("complete")[-1].seq for p in recorder.processors("sink"))
    for p in recorder.processors("source"):
        completed = p.calls_of("complete")[-1]
        assert completed.result is True
        close = p.calls_of("close")[0]
        assert close.seq < sink_done, f"{p.label} was closed only after the sink completed"
        assert p.methods()[p.methods().index("close") - 1] == "complete"


@pytest.mark.parametrize("cooperative", [True, False], ids=["cooperative", "non-cooperative-map"])
def test_close_called_exactly_once_on_every_processor_when_the_job_is_cancelled(
    engine: EngineSettings, recorder: Recorder, cooperative: bool
) -> None:
    """Rule (close): called "whether the job was successful or not" — cancel() of a running
    streaming job closes every processor exactly once, as its last method, and join() raises
    JobCancelledError."""
    streaming = Behaviour(emit=numbered("a", 5), complete_when=lambda p: False)  # never completes
    job = engine.submit(
        source_map_sink(engine, recorder, Behaviour(forward=True, cooperative=cooperative), source=streaming)
    )
    expected = 5 * engine.member_count
    wait_for(lambda: len(recorder.received("sink")) == expected, f"the sinks received {expected} items")
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(JOB_TIMEOUT)
    assert job.status is JobStatus.CANCELLED
    processors = recorder.processors()
    assert len(processors) == 3 * engine.member_count
    for p in processors:
        assert p.count("close") == 1, f"{p.label} closed {p.count('close')} times"
        assert p.methods()[-1] == "close", p.label
    for p in recorder.processors("source"):
        assert p.calls_of("complete")[-1].result is False, f"{p.label} had completed: not a cancel"


def test_close_exception_is_logged_and_does_not_fail_the_job(
    engine: EngineSettings, recorder: Recorder, caplog: pytest.LogCaptureFixture
) -> None:
    """Rule (close): "If this method throws an exception, it is logged but it won't be reported as
    a job failure or cause the job to fail"."""
    with caplog.at_level(logging.ERROR, logger="jetspark"):
        engine.run(source_map_sink(engine, recorder, Behaviour(forward=True, raise_in="close")))
    assert len(recorder.received("sink")) == 20 * engine.member_count
    failed = [p for p in recorder.processors("map") if p.calls_of("close")[0].error is not None]
    assert len(failed) == engine.member_count
    messages = "\n".join(r.getMessage() + (r.exc_text or "") for r in caplog.records)
    for p in failed:
        assert f"vertex 'map' processor #{p.context.global_processor_index}" in messages  # type: ignore[union-attr]
    for p in recorder.processors():
        assert p.count("close") == 1, p.label


def test_non_cooperative_processor_runs_every_call_on_its_own_thread(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (isCooperative): "Otherwise it will run in a dedicated Java thread": every call of a
    non-cooperative processor's processing methods is on one thread shared with no other
    processor and not the cooperative one."""
    engine.run(source_map_sink(engine, recorder, Behaviour(forward=True, cooperative=False)))
    cooperative_threads = {
        c.thread for p in recorder.processors() if p.vertex != "map" for c in p.processing_calls()
    }
    seen: set[int] = set()
    for p in recorder.processors("map"):
        threads = {c.thread for c in p.processing_calls()}
        assert len(threads) == 1, f"{p.label} ran on {len(threads)} threads"
        (thread,) = threads
        assert thread not in cooperative_threads, p.label
        assert thread not in seen, f"{p.label} shares its thread with another non-cooperative processor"
        assert thread != threading.get_ident()
        seen.add(thread)


def test_is_cooperative_value_is_respected_per_instance(recorder: Recorder) -> None:
    """Rule (isCooperative): "Processor instances of a single vertex are allowed to return different
    values": with 2 of 4 local processors non-cooperative, exactly those two get threads of their
    own."""
    from jetspark.core.edge import Edge
    from jetspark.runners.local import LocalRunner

    created = {"n": 0}

    def factory() -> object:
        created["n"] += 1
        return recorder.supplier("map", Behaviour(forward=True, cooperative=created["n"] % 2 == 0))()

    dag = DAG()
    src = recorder.vertex(dag, "source", Behaviour(emit=numbered("a", 50)))
    mid = dag.new_vertex("map", factory, 4)  # type: ignore[arg-type]
    snk = recorder.vertex(dag, "sink", Behaviour())
    dag.edge(Edge.between(src, mid))
    dag.edge(Edge.between(mid, snk))
    LocalRunner(1).run(dag, timeout=30)
    main_threads = {c.thread for p in recorder.processors("source") for c in p.processing_calls()}
    for p in recorder.processors("map"):
        threads = {c.thread for c in p.processing_calls()}
        if p.behaviour.cooperative:
            assert threads <= main_threads, p.label
        else:
            assert not threads & main_threads, p.label


def test_close_called_on_every_created_processor_when_is_cooperative_raises(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (close): "It is called whether the job was successful or not ... The method might get
    called even if init() method was not yet called" — also when the job fails while its
    processors are being set up (here: is_cooperative() raising)."""
    job = engine.submit(source_map_sink(engine, recorder, Behaviour(forward=True, raise_in="is_cooperative")))
    with pytest.raises(JobFailedError) as caught:
        job.join(30)
    assert caught.value.vertex == "map"
    created = recorder.processors()
    assert created
    for p in created:
        assert p.count("close") == 1, f"{p.label} was created but never closed"


def test_close_called_on_every_created_processor_when_a_later_supplier_fails(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (close): processors created for earlier vertices are closed when a later vertex's
    supplier raises."""

    def failing_supplier() -> RecordingProcessor:
        raise Boom("supplier of 'sink' failed")

    dag = DAG()
    src = recorder.vertex(dag, "source", Behaviour(emit=numbered("a", 5)))
    snk = dag.new_vertex("sink", failing_supplier)
    dag.edge(engine.edge(src, snk))
    with pytest.raises(Exception, match="supplier of 'sink' failed"):
        engine.run(dag)
    created = recorder.processors("source")
    assert created
    for p in created:
        assert p.count("close") == 1, f"{p.label} was created but never closed"
