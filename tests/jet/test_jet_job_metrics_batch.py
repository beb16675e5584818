"""Jet's `JobMetrics_BatchTest` (hazelcast-jet-core, `com.hazelcast.jet.core.metrics`), ported:
the per-vertex `receivedCount` and `emittedCount` of a finished batch job.

Jet's `job.getMetrics()` filtered by vertex and summed over its processors is
`job.metrics()[vertex]`; `receivedCount` and `emittedCount` are `received` and `emitted`. On the
local runner with 2 members and local parallelism 2, as Jet's `TestInClusterSupport` cluster.
Jet's word-count pipeline is written as its DAG, with Jet's vertex names: `TestSources.items`
(vertex `items`) is `from_iterable`; the fused flat-map and filter stage is a `fused` vertex
(`fused(flat-map, filter)`); `groupingKey(wholeItem()).aggregate(counting())` is
`aggregate_by_key` (`group-and-aggregate-prepare`, `group-and-aggregate`); `Sinks.map("counts")`
is a `collect()` sink (`mapSink(counts)`). Jet's `setStoreMetricsAfterJobCompletion(true)` has no
counterpart: a jetspark job's handle always keeps its metrics after the job ends. Each test is
named after the Jet case it ports.

Differences:
- Jet fuses the flat-map and the filter but not into the aggregation's first stage; jetspark's
  planner also folds the chain into `aggregate_by_key`'s first stage (docs/architecture.md,
  "Chains of stateless built-in steps are fused"), and the merged vertex's metrics are gone. The
  ports run with `JobConfig(fuse_vertices=False)` to keep Jet's vertices;
  `..._fusedIntoAggregation` checks what the default plan counts.
- `when_twoDifferentJobsForTheSamePipeline_then_haveDifferentMetrics`: Jet's metrics differ
  because every measurement is tagged with the job's id; jetspark's figures carry no job id, so
  two runs of one DAG have equal counts. The port checks that the jobs are two (their ids
  differ) and that each one's metrics are right.

Skipped, with no counterpart: `when_storeMetricsAfterJobCompletionDisabled_then_metricsEmpty`
(no such option: the metrics are always kept), `when_memberAddedAfterJobFinished_then_metricsNotAffected`
and `when_memberRemovedAfterJobFinished_then_metricsNotAffected` (the local runner's members
cannot join or leave a cluster).
"""

from __future__ import annotations

import re

from jetspark import DAG, Edge, JobConfig
from jetspark import processors as P
from jetspark.runners.local import LocalJob, LocalRunner

MEMBER_COUNT = 2
PARALLELISM = 2
TIMEOUT = 60

SOURCE_VERTEX = "items"
FLAT_MAP_AND_FILTER_VERTEX = "fused(flat-map, filter)"
GROUP_AND_AGGREGATE_PREPARE_VERTEX = "group-and-aggregate-prepare"
GROUP_AND_AGGREGATE_VERTEX = "group-and-aggregate"
SINK_VERTEX = "mapSink(counts)"

COMMON_TEXT = "look at some common text here and uncommon text here"


def words_of(line: str) -> list[str]:
    return re.split(r"\W+", line.lower())


def create_pipeline(text: str = COMMON_TEXT) -> DAG:
    dag = DAG()
    items = dag.new_vertex(SOURCE_VERTEX, P.from_iterable([text]))
    words = dag.new_vertex(
        FLAT_MAP_AND_FILTER_VERTEX, P.fused(P.Chain().flat_map(words_of).filter(lambda word: word != ""))
    )
    dag.edge(Edge.between(items, words))
    counts = P.aggregate_by_key(dag, GROUP_AND_AGGREGATE_VERTEX, words, P.whole_item, P.counting())
    dag.edge(Edge.between(counts, dag.new_vertex(SINK_VERTEX, P.collect())))
    return dag


def config(fuse_vertices: bool = False) -> JobConfig:
    return JobConfig(default_local_parallelism=PARALLELISM, fuse_vertices=fuse_vertices)


def execute(dag: DAG, job_config: JobConfig | None = None) -> LocalJob:
    return LocalRunner(MEMBER_COUNT).run(dag, job_config or config(), timeout=TIMEOUT)


def assert_metrics(metrics: dict[str, dict[str, int]], original_text: str = COMMON_TEXT) -> None:
    assert metrics is not None
    words = re.split(r"\W+", original_text)
    word_count = len(words)
    unique_word_count = len(set(words))

    assert metrics[SOURCE_VERTEX]["emitted"] == 1
    assert metrics[FLAT_MAP_AND_FILTER_VERTEX]["received"] == 1
    assert metrics[FLAT_MAP_AND_FILTER_VERTEX]["emitted"] == word_count
    assert metrics[GROUP_AND_AGGREGATE_PREPARE_VERTEX]["received"] == word_count
    assert metrics[GROUP_AND_AGGREGATE_PREPARE_VERTEX]["emitted"] == unique_word_count
    assert metrics[GROUP_AND_AGGREGATE_VERTEX]["received"] == unique_word_count
    assert metrics[GROUP_AND_AGGREGATE_VERTEX]["emitted"] == unique_word_count
    assert metrics[SINK_VERTEX]["received"] == unique_word_count


def test_JobMetrics_BatchTest__when_jobCompleted_then_metricsExist() -> None:
    job = execute(create_pipeline())
    assert_metrics(job.metrics())
    assert sorted(job.result(SINK_VERTEX)) == sorted(
        (word, COMMON_TEXT.split().count(word)) for word in set(COMMON_TEXT.split())
    )


def test_JobMetrics_BatchTest__when_jobCompleted_then_metricsExist__fusedIntoAggregation() -> None:
    """With the default plan the flat-map and filter run in the aggregation's first stage: its
    vertex receives the line and emits one entry per distinct word; the fused vertex is gone."""
    job = execute(create_pipeline(), config(fuse_vertices=True))
    metrics = job.metrics()
    unique_word_count = len(set(COMMON_TEXT.split()))
    assert FLAT_MAP_AND_FILTER_VERTEX not in metrics
    assert metrics[SOURCE_VERTEX]["emitted"] == 1
    assert metrics[GROUP_AND_AGGREGATE_PREPARE_VERTEX]["received"] == 1
    assert metrics[GROUP_AND_AGGREGATE_PREPARE_VERTEX]["emitted"] == unique_word_count
    assert metrics[GROUP_AND_AGGREGATE_VERTEX]["received"] == unique_word_count
    assert metrics[GROUP_AND_AGGREGATE_VERTEX]["emitted"] == unique_word_count
    assert metrics[SINK_VERTEX]["received"] == unique_word_count


def test_JobMetrics_BatchTest__when_twoDifferentPipelines_then_haveDifferentMetrics() -> None:
    another_text = "look at some common text here and here"
    runner = LocalRunner(MEMBER_COUNT)
    job = runner.submit(create_pipeline(), config())
    job2 = runner.submit(create_pipeline(another_text), config())
    job.join(TIMEOUT)
    job2.join(TIMEOUT)

    assert job.metrics() != job2.metrics()
    assert_metrics(job.metrics())
    assert_metrics(job2.metrics(), another_text)


def test_JobMetrics_BatchTest__when_twoDifferentJobsForTheSamePipeline_then_haveDifferentMetrics() -> None:
    """Jet's metrics of the two jobs differ by their job id tags; here the jobs' ids differ."""
    dag = create_pipeline()
    runner = LocalRunner(MEMBER_COUNT)
    job = runner.submit(dag, config())
    job2 = runner.submit(dag, config())
    job.join(TIMEOUT)
    job2.join(TIMEOUT)

    assert job.job_id != job2.job_id
    assert_metrics(job.metrics())
    assert_metrics(job2.metrics())
