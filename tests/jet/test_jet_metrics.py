"""Jet's `MetricsTest` (hazelcast-jet-core, `com.hazelcast.jet.core.metrics`), ported: user
metrics, the counters a processor reports into the job's metrics.

Jet's user code calls `Metrics.metric(name)` (a counter held per processor, created on first use,
with `increment`, `decrement` and `set`); jetspark's processors report their own counters from
`Processor.custom_metrics()`, summed per vertex in `job.metrics()` (docs/processor-contract.md).
Here a `UserMetricsP` processor (Jet's `TransformP` running the stage's lambda) hands the lambda
itself, whose `metric(name)` gives such a counter, created on first use; `custom_metrics()`
returns the counters created so far. Jet's `JobMetricsChecker.assertSummedMetricValue(name, v)`
sums the metric over every vertex and processor: `summed(job, name)` here. Jet's
`JobConfig.setStoreMetricsAfterJobCompletion(true)` has no counterpart: a jetspark job's handle
keeps its metrics after the job ends. On the local runner with one member (Jet's
`initialize(1, ...)`); the user vertices run 2 processors (Jet's run one per core), so that a
metric is summed over processors, except where the stage keeps state over all items
(`customUnit`: Jet's non-keyed `mapStateful` runs one processor). `TestSources.items` is
`from_iterable`; `Sinks.noop()` is `noop()`. Each test is named after the Jet case it ports.

Differences:
- `customUnit`, `customUnit_notUsed`: jetspark's counters have no unit; the port checks the value.
- `availableDuringJobExecution`, `metricsAreJobIndependent`: Jet's `itemStream(1000)` with a
  filter on the sequence is `generator_stream` (endless) with the same filter; instead of
  polling until the sum is reached (`assertTrueEventually`), the processor sets an event once it
  has counted the last item, and the test reads the metrics of the running job then.
- `metricInFusedStages`: jetspark never fuses users' processors (docs/architecture.md, "Chains of
  stateless built-in steps are fused": their classes may keep state), so the filter and the map
  are two vertices; the metrics summed over the job are Jet's.
- `when_jetMetricNameIsUsed_then_itIsNotOverwritten`: Jet keeps a user metric named as one of its
  own apart from it (tagged `user=true`); jetspark reports it as `user.emitted`.

Skipped, with no counterpart: `metricsDisabled` and
`when_metricsDisabled_then_unavailableDuringJobExecution` (no `JobConfig.metricsEnabled`: a job
always counts), `usingServiceAsync` (no `mapUsingServiceAsync` and no thread-safe metric),
`availableViaJmx` (no JMX), `test_sourceSinkTag` (jetspark's metrics carry no source or sink
tags).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobCancelledError, JobConfig, ProcessorSupplier
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

TIMEOUT = 60
PARALLELISM = 2

#: What a `UserMetricsP`'s function returns to emit nothing (Jet's filter dropping the item).
DROP = object()
_NOTHING = object()


class Metric:
    """Jet's `Metric`: a counter of one processor."""

    def __init__(self) -> None:
        self.value = 0

    def increment(self, delta: int = 1) -> None:
        self.value += delta

    def decrement(self, delta: int = 1) -> None:
        self.value -= delta

    def set(self, value: int) -> None:
        self.value = value


class UserMetricsP(AbstractProcessor):
    """Jet's `TransformP` whose function calls `Metrics.metric(name)`: `fn(self, item)` returns the
    item to emit, or `DROP`; `self.metric(name)` is the processor's counter of that name."""

    def __init__(self, fn: Callable[[UserMetricsP, Any], Any], cooperative: bool = True) -> None:
        self.fn = fn
        self.cooperative = cooperative
        self.state: Any = None
        self._metrics: dict[str, Metric] = {}
        self._pending: Any = _NOTHING

    def is_cooperative(self) -> bool:
        return self.cooperative

    def metric(self, name: str) -> Metric:
        found = self._metrics.get(name)
        if found is None:
            found = self._metrics[name] = Metric()
        return found

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if self._pending is _NOTHING:  # the function runs once per item, even if the offer fails
            self._pending = self.fn(self, item)
        if self._pending is not DROP and not self.try_emit(self._pending):
            return False
        self._pending = _NOTHING
        return True

    def custom_metrics(self) -> dict[str, int]:
        return {name: metric.value for name, metric in list(self._metrics.items())}


def user_stage(fn: Callable[[UserMetricsP, Any], Any], cooperative: bool = True) -> ProcessorSupplier:
    return ProcessorSupplier.of(lambda: UserMetricsP(fn, cooperative))


def summed(job: LocalJob, name: str) -> int | None:
    """Jet's `assertSummedMetricValue`: the metric summed over the job's vertices; None if no
    vertex has it."""
    values = [figures[name] for figures in job.metrics().values() if name in figures]
    return sum(values) if values else None


def pipeline(items: Any, *stages: ProcessorSupplier, sink: ProcessorSupplier | None = None) -> DAG:
    """`items` through `stages` (each a vertex of `PARALLELISM` processors) into `sink`."""
    dag = DAG()
    previous = dag.new_vertex("items", P.from_iterable(items))
    for index, stage in enumerate(stages):
        vertex = dag.new_vertex(f"stage{index}", stage, PARALLELISM)
        dag.edge(Edge.between(previous, vertex))
        previous = vertex
    dag.edge(Edge.between(previous, dag.new_vertex("sink", sink or P.noop())))
    return dag


def run(dag: DAG) -> LocalJob:
    return LocalRunner(1).run(dag, JobConfig(), timeout=TIMEOUT)


# ---- counters -----------------------------------------------------------------------------


def test_MetricsTest__unusedMetrics() -> None:
    def fn(p: UserMetricsP, item: int) -> Any:
        passed = item % 2 == 0
        if not passed:
            p.metric("dropped")  # retrieved, never changed
        return item if passed else DROP

    job = run(pipeline([0, 1, 2, 3, 4], user_stage(fn)))
    assert summed(job, "dropped") == 0
    assert summed(job, "total") is None


def test_MetricsTest__typicalUsage() -> None:
    def fn(p: UserMetricsP, item: int) -> Any:
        passed = item % 2 == 0
        if passed:
            p.metric("single-flip-flop").decrement()
            p.metric("multi-flip-flop").decrement(10)
        else:
            p.metric("dropped").increment()
            p.metric("single-flip-flop").increment()
            p.metric("multi-flip-flop").increment(10)
        p.metric("total").increment()
        p.metric("last").set(item)
        return item if passed else DROP

    job = run(pipeline([5, 4, 3, 2, 1, 0], user_stage(fn)))
    assert summed(job, "dropped") == 3
    assert summed(job, "total") == 6
    assert summed(job, "single-flip-flop") == 0
    assert summed(job, "multi-flip-flop") == 0


def _running_sum(p: UserMetricsP, item: int) -> int:
    p.state = (p.state or 0) + item
    return int(p.state)


def test_MetricsTest__customUnit() -> None:
    def fn(p: UserMetricsP, item: int) -> Any:
        total = _running_sum(p, item)
        p.metric("sum").set(total)
        return total

    dag = DAG()
    items = dag.new_vertex("items", P.from_iterable([0, 1, 2, 3, 4]))
    stateful = dag.new_vertex("map-stateful", user_stage(fn), 1)
    dag.edge(Edge.between(items, stateful)).edge(Edge.between(stateful, dag.new_vertex("sink", P.noop())))
    assert summed(run(dag), "sum") == 10


def test_MetricsTest__customUnit_notUsed() -> None:
    def fn(p: UserMetricsP, item: int) -> Any:
        total = _running_sum(p, item)
        p.metric("sum")
        return total

    dag = DAG()
    items = dag.new_vertex("items", P.from_iterable([0, 1, 2, 3, 4]))
    stateful = dag.new_vertex("map-stateful", user_stage(fn), 1)
    dag.edge(Edge.between(items, stateful)).edge(Edge.between(stateful, dag.new_vertex("sink", P.noop())))
    assert summed(run(dag), "sum") == 0


def test_MetricsTest__nonCooperativeProcessor() -> None:
    def fn(p: UserMetricsP, item: int) -> Any:
        p.metric("mapped").increment()
        return item * 10

    job = run(pipeline([1, 2, 3], user_stage(fn, cooperative=False), sink=P.collect()))
    assert summed(job, "mapped") == 3
    assert set(job.result("sink")) == {10, 20, 30}


# ---- while the job runs, and across jobs ----------------------------------------------------


class Counted:
    """Set once a processor has counted the last of the items it lets through."""

    def __init__(self) -> None:
        self.event = threading.Event()


def counting_stage(limit: int, counts: Callable[[int], bool], done: Counted) -> ProcessorSupplier:
    """Jet's `.filter(l -> l.sequence() < limit).map(t -> { if (counts) total++ })` on one
    processor: it sets `done` when item `limit - 1` has passed."""

    def fn(p: UserMetricsP, seq: int) -> Any:
        if seq >= limit:
            return DROP
        p.metric("total")  # as Jet's: the counter exists from the first item on
        if counts(seq):
            p.metric("total").increment()
        if seq == limit - 1:
            done.event.set()
        return seq

    return user_stage(fn)


def stream_job(stage: ProcessorSupplier) -> LocalJob:
    dag = DAG()
    source = dag.new_vertex("items", P.generator_stream(), 1)
    counted = dag.new_vertex("filter-map", stage, 1)
    dag.edge(Edge.between(source, counted)).edge(Edge.between(counted, dag.new_vertex("sink", P.noop())))
    return LocalRunner(1).submit(dag, JobConfig())


def cancel(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(TIMEOUT)


def test_MetricsTest__availableDuringJobExecution() -> None:
    done = Counted()
    job = stream_job(counting_stage(1000, lambda _seq: True, done))
    try:
        assert done.event.wait(TIMEOUT)
        assert job.status is JobStatus.RUNNING
        assert summed(job, "total") == 1000
    finally:
        cancel(job)


def test_MetricsTest__metricsAreJobIndependent() -> None:
    done1, done2 = Counted(), Counted()
    job1 = stream_job(counting_stage(4000, lambda seq: seq % 4 == 0, done1))
    job2 = stream_job(counting_stage(4000, lambda seq: seq % 4 != 0, done2))
    try:
        assert done1.event.wait(TIMEOUT)
        assert done2.event.wait(TIMEOUT)
        assert summed(job1, "total") == 1000
        assert summed(job2, "total") == 3000
    finally:
        cancel(job1)
        cancel(job2)


def test_MetricsTest__when_jetMetricNameIsUsed_then_itIsNotOverwritten() -> None:
    """Jet: `emittedCount` without the user metrics is 10 (5 from the source, 5 from the filter);
    with them 10 + 5 x 1000: jetspark reports the user's as `user.emitted`."""

    def fn(p: UserMetricsP, item: int) -> Any:
        p.metric("emitted").increment(1000)
        return item

    job = run(pipeline([0, 1, 2, 3, 4], user_stage(fn)))
    assert job.metrics()["stage0"]["emitted"] == 5
    assert summed(job, "emitted") == 10
    assert summed(job, "emitted") + summed(job, "user.emitted") == 10 + 5 * 1000


# ---- metrics of several stages, and of several runs --------------------------------------------

INPUT_SIZE = 100_000


def _count_in(*names: str) -> Callable[[UserMetricsP, Any], Any]:
    def fn(p: UserMetricsP, item: Any) -> Any:
        for name in names:
            p.metric(name).increment()
        return item

    return fn


def test_MetricsTest__metricInFusedStages() -> None:
    job = run(
        pipeline(
            range(INPUT_SIZE),
            user_stage(_count_in("onlyInFilter", "inBoth")),
            user_stage(_count_in("onlyInMap", "inBoth")),
        )
    )
    assert summed(job, "onlyInFilter") == INPUT_SIZE
    assert summed(job, "onlyInMap") == INPUT_SIZE
    assert summed(job, "inBoth") == 2 * INPUT_SIZE


def test_MetricsTest__metricInNotFusedStages() -> None:
    dag = DAG()
    items = dag.new_vertex("items", P.from_iterable(range(INPUT_SIZE)))
    filtered = dag.new_vertex("filter", user_stage(_count_in("onlyInFilter", "inBoth")), PARALLELISM)
    dag.edge(Edge.between(items, filtered))
    counted = P.aggregate_by_key(dag, "group-and-aggregate", filtered, P.whole_item, P.counting())
    mapped = dag.new_vertex("map", user_stage(_count_in("onlyInMap", "inBoth")), PARALLELISM)
    dag.edge(Edge.between(counted, mapped)).edge(Edge.between(mapped, dag.new_vertex("sink", P.noop())))

    job = run(dag)
    assert summed(job, "onlyInFilter") == INPUT_SIZE
    assert summed(job, "onlyInMap") == INPUT_SIZE
    assert summed(job, "inBoth") == 2 * INPUT_SIZE


def test_MetricsTest__metricsAreRestartedIfPipelineIsRunTwice() -> None:
    dag = pipeline([0, 1, 2, 3, 4], user_stage(_count_in("total")))
    assert summed(run(dag), "total") == 5
    assert summed(run(dag), "total") == 5
