"""Failure rules: an exception in any processing method fails the job, naming the processor, and
every processor is still closed exactly once; nothing hangs."""

from __future__ import annotations

import pytest

from jetspark import processors as P
from jetspark.core import PartitioningError
from jetspark.core.dag import DAG
from jetspark.core.errors import JobFailedError
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.recording import PROCESSING_METHODS, Behaviour, Boom, Recorder
from tests.contract.scenarios import EXACTLY_ONCE, source_map_sink, with_watermarks

RESTORING_METHODS = ["restore_from_snapshot", "finish_snapshot_restore"]
RUNNING_METHODS = ["init", *(m for m in PROCESSING_METHODS if m not in RESTORING_METHODS)]


def failing_pipeline(
    engine: EngineSettings,
    recorder: Recorder,
    method: str | None,
    cooperative: bool,
    until_suspended: bool = False,
) -> DAG:
    """source -> map -> sink, streaming until two snapshots were taken (or, with `until_suspended`,
    until the job is suspended), and ending at once after a resume; the map raises in `method`, on
    its first call of it."""
    source = Behaviour(
        emit=with_watermarks("a", 12),
        complete_when=lambda p: (
            p.generation > 0 or (not until_suspended and len(p.saves) >= 2 and p.count("complete") > 20)
        ),
    )
    middle = Behaviour(
        forward=True,
        raise_in=method,
        cooperative=cooperative,
        snapshot=lambda p: [(("state", p.label), p.label)],
    )
    return source_map_sink(engine, recorder, middle, source=source)


def assert_failed_naming_map(job: LocalJob, recorder: Recorder, method: str) -> None:
    with pytest.raises(JobFailedError) as caught:
        job.join(JOB_TIMEOUT)
    error = caught.value
    assert job.status is JobStatus.FAILED
    assert error.vertex == "map"
    assert error.processor_index is not None
    assert f"vertex 'map' processor #{error.processor_index}" in str(error)
    assert isinstance(error.__cause__, Boom)
    assert f"boom in {method}" in str(error.__cause__)
    failing = [p for p in recorder.processors("map") if any(isinstance(c.error, Boom) for c in p.calls)]
    raised = [p.context.global_processor_index for p in failing if p.context]
    # the first failure is named; non-cooperative processors run on threads of their own, so a
    # second one may raise in the same instant, before the job's stop reaches its thread
    assert error.processor_index in raised
    if method == "init":  # as Jet, which awaits every init: the ones after a failed one run too
        assert len(raised) == len(recorder.processors("map")), raised
    else:
        assert len(raised) == 1 or all(not p.behaviour.cooperative for p in failing)
    for p in recorder.processors():
        assert p.count("close") <= 1, p.label
        if p.calls:
            assert p.count("close") == 1, f"{p.label} was not closed"
            assert p.methods()[-1] == "close", p.label


@pytest.mark.parametrize("cooperative", [True, False], ids=["cooperative", "non-cooperative"])
@pytest.mark.parametrize("method", RUNNING_METHODS)
def test_exception_in_processing_method_fails_job_naming_vertex_and_processor(
    engine: EngineSettings, recorder: Recorder, method: str, cooperative: bool
) -> None:
    """Rule (failures): an exception in any processing method (or init) fails the job: join() raises
    JobFailedError chained to the original error, naming the vertex and processor index; every
    processor is still closed exactly once and the job ends."""
    job = engine.submit(failing_pipeline(engine, recorder, method, cooperative), EXACTLY_ONCE)
    assert_failed_naming_map(job, recorder, method)


@pytest.mark.parametrize("method", RESTORING_METHODS)
def test_exception_while_restoring_fails_job_naming_vertex_and_processor(
    engine: EngineSettings, recorder: Recorder, method: str
) -> None:
    """Rule (failures), restore methods: restore_from_snapshot / finish_snapshot_restore raising after a
    resume fails the job the same way."""
    job = engine.submit(failing_pipeline(engine, recorder, method, True, until_suspended=True), EXACTLY_ONCE)
    job.suspend(JOB_TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    recorder.generation = 1
    job.resume()
    assert_failed_naming_map(job, recorder, method)


def key_of_or_fail(item: int) -> int:
    """A key function that fails for item 5 (as user code does, for one bad record)."""
    return 10 // (item - 5)


def test_a_failing_key_function_fails_the_job_naming_the_edge_and_the_key_function(
    engine: EngineSettings,
) -> None:
    """Rule (failures): an exception in a partitioned edge's key function names the edge (source
    vertex and ordinal, destination vertex and ordinal), the key function and the item, chained to
    the original error; not only the upstream processor, where the routing happens to run."""
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(10)))
    mapped = dag.new_vertex("map", P.map(lambda x: x))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(engine.edge(source, mapped))
    dag.edge(engine.edge(mapped, sink).partitioned(key_of_or_fail))
    with pytest.raises(JobFailedError) as caught:
        engine.run(dag)
    message = str(caught.value)
    assert "edge map[0] -> sink[0]" in message, message
    assert "key function tests.contract.test_failures.key_of_or_fail" in message, message
    assert "ZeroDivisionError" in message and "item 5" in message, message
    assert isinstance(caught.value.__cause__, PartitioningError)
    assert isinstance(caught.value.__cause__.__cause__, ZeroDivisionError)


def test_a_partitioner_that_cannot_place_a_key_names_the_edge_and_the_key(engine: EngineSettings) -> None:
    """Rule (failures): the default partitioner refuses an unhashable key (a list); the error names
    the edge, the key and the item."""
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(10)))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(engine.edge(source, sink).partitioned(lambda item: [item]))
    with pytest.raises(JobFailedError) as caught:
        engine.run(dag)
    message = str(caught.value)
    assert "edge source[0] -> sink[0]" in message and "partitioner" in message, message
    assert "unhashable type list" in message, message
    assert isinstance(caught.value.__cause__, PartitioningError)
