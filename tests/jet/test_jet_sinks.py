"""Jet's `SinksTest` (hazelcast-jet-core, `com.hazelcast.jet.pipeline`), ported: the cases about
sinks jetspark has.

jetspark has no Pipeline API; each Jet pipeline is the DAG Jet plans from it, on the local runner
with 2 members and local parallelism 2 (Jet's `PipelineTestSupport` cluster). Jet's
`Sources.list(name)` (one processor in the cluster) is `from_iterable` of `sequence(itemCount)`,
itemCount 1024, and Jet's `Sinks.list(name)` is `collect()` (the job's result of the sink
vertex). Each test is named after the Jet case it ports.

Differences:
- `noop`: Jet only checks that the job completes; the port also checks, by the sink vertex's
  `received` metric (Jet's `receivedCount`), that the no-op sink took every item.
- `list_byRef` is `list_byName`: `collect()` has no name to refer to.

Skipped:
- `when_setName_then_sinkHasIt`, `when_setLocalParallelism_then_sinkHasIt`,
  `when_usedTwice_then_throwException`: Pipeline API checks (a sink stage's name and
  parallelism, a `Sink` object reused by two stages); a DAG vertex's name and local parallelism
  are covered by `test_jet_vertex_def.py` and `test_jet_dag.py`.
- The `cache*`, `map*`, `remoteMap*`, `mapWith*`, `remoteList`, `reliableTopic*` and
  `remoteReliableTopic` cases: Hazelcast data structures (IMap, ICache, IList, ITopic, remote
  clusters, entry processors, locks) that jetspark, which has no data grid, does not have.
"""

from __future__ import annotations

from jetspark import DAG, Edge, JobConfig
from jetspark import processors as P
from jetspark.runners.local import LocalJob, LocalRunner

MEMBER_COUNT = 2
LOCAL_PARALLELISM = 2
ITEM_COUNT = 1024
TIMEOUT = 60


def execute(dag: DAG) -> LocalJob:
    return LocalRunner(MEMBER_COUNT).run(
        dag, JobConfig(default_local_parallelism=LOCAL_PARALLELISM), timeout=TIMEOUT
    )


def test_SinksTest__when_writeToMultipleStagesToSingleSink_then_allItemsInSink() -> None:
    input_ = list(range(ITEM_COUNT))
    dag = DAG()
    first_source = dag.new_vertex("first", P.from_iterable(input_))
    second_source = dag.new_vertex("second", P.from_iterable(input_))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(first_source, sink))
    dag.edge(Edge.from_(second_source).to(sink, 1))
    result = execute(dag).result("sink")
    assert len(result) == ITEM_COUNT * 2
    assert sorted(result) == sorted(input_ * 2)


def test_SinksTest__list_byName() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(ITEM_COUNT)))
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.collect())))
    result = execute(dag).result("sink")
    assert len(result) == ITEM_COUNT
    assert sorted(result) == list(range(ITEM_COUNT))


def test_SinksTest__noop() -> None:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(ITEM_COUNT)))
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.noop())))
    job = execute(dag)  # works without error
    assert job.metrics()["sink"]["received"] == ITEM_COUNT
