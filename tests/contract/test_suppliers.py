"""Supplier rules: when ProcessorSupplier.close(error) and ProcessorMetaSupplier.close(error) run, and
the error they are told."""

from __future__ import annotations

import pytest

from jetspark.core.dag import DAG
from jetspark.core.errors import JobCancelledError, JobFailedError
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.recording import Behaviour, Boom, Recorder, RecordingMetaSupplier
from tests.contract.scenarios import numbered, wait_for

OUTCOMES = ["success", "failure", "cancelled"]


def pipeline(
    engine: EngineSettings, recorder: Recorder, outcome: str
) -> tuple[DAG, list[RecordingMetaSupplier]]:
    """source -> map -> sink, each vertex with a recording meta supplier. The map raises in
    `process` for "failure"; the sources never complete for "cancelled"."""
    source = Behaviour(
        emit=numbered("a", 10), complete_when=(lambda p: False) if outcome == "cancelled" else None
    )
    middle = Behaviour(forward=True, raise_in="process" if outcome == "failure" else None)
    metas = [
        RecordingMetaSupplier(recorder, "source", source),
        RecordingMetaSupplier(recorder, "map", middle),
        RecordingMetaSupplier(recorder, "sink", Behaviour()),
    ]
    dag = DAG()
    vertices = [dag.new_vertex(meta.vertex, meta) for meta in metas]
    dag.edge(engine.edge(vertices[0], vertices[1]))
    dag.edge(engine.edge(vertices[1], vertices[2]))
    return dag, metas


def run_to_outcome(
    engine: EngineSettings, recorder: Recorder, outcome: str
) -> tuple[list[RecordingMetaSupplier], BaseException | None]:
    """Run the pipeline to `outcome`; return its meta suppliers and the error join() raised."""
    dag, metas = pipeline(engine, recorder, outcome)
    job = engine.submit(dag)
    if outcome == "cancelled":
        items = 10 * engine.member_count
        wait_for(lambda: len(recorder.received("sink")) == items, f"the sinks received {items} items")
        job.cancel()
    expected = {"success": None, "failure": JobFailedError, "cancelled": JobCancelledError}[outcome]
    if expected is None:
        job.join(JOB_TIMEOUT)
        return metas, None
    with pytest.raises(expected) as caught:
        job.join(JOB_TIMEOUT)
    return metas, caught.value


@pytest.mark.parametrize(
    "outcome",
    [
        "success",
        "failure",
        "cancelled",
    ],
)
def test_processor_supplier_close_after_its_processors_close_and_gets_the_job_error(
    engine: EngineSettings, recorder: Recorder, outcome: str
) -> None:
    """Rule (close / ProcessorSupplier.close): a processor's close() is called "strictly before
    ProcessorSupplier.close(Throwable) is called on this member"; ProcessorSupplier.close(error) gets
    the job's error (None on success, the failure on failure, not None when cancelled), and
    ProcessorMetaSupplier.close(error) runs once after the job, after every member's supplier
    closed, with the same error."""
    metas, error = run_to_outcome(engine, recorder, outcome)
    for meta in metas:
        members = sorted(s.member for s in meta.suppliers)
        assert members == list(range(engine.member_count)), f"{meta.vertex}: suppliers of members {members}"
        assert len(meta.closes) == 1, (
            f"{meta.vertex}: ProcessorMetaSupplier.close called {len(meta.closes)} times"
        )
        for supplier in meta.suppliers:
            where = f"vertex {meta.vertex!r} member {supplier.member}"
            assert len(supplier.closes) == 1, (
                f"{where}: ProcessorSupplier.close called {len(supplier.closes)} times"
            )
            closed = supplier.closes[0]
            assert supplier.made, f"{where}: no processor made"
            for p in supplier.made:
                assert p.count("close") == 1, p.label
                assert p.calls_of("close")[0].seq < closed.seq, (
                    f"{p.label} was closed after ProcessorSupplier.close of {where}"
                )
            assert closed.seq < meta.closes[0].seq, f"{where}: supplier closed after the meta supplier"
            if outcome == "cancelled":
                assert isinstance(closed.error, JobCancelledError), f"{where}: close({closed.error!r})"
            else:
                assert closed.error is error, f"{where}: close({closed.error!r}), the job raised {error!r}"
        meta_error = meta.closes[0].error
        if outcome == "cancelled":
            assert isinstance(meta_error, JobCancelledError), f"{meta.vertex}: close({meta_error!r})"
        else:
            assert meta_error is error, f"{meta.vertex}: ProcessorMetaSupplier.close({meta_error!r})"
    if outcome == "failure":
        assert isinstance(error, JobFailedError) and isinstance(error.__cause__, Boom)
