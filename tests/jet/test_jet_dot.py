"""Jet's `DotTest` (hazelcast-jet-core, `com.hazelcast.jet.core`), ported.

Jet's `DAG.toDotString()` is jetspark's `DAG.to_dot()`, whose vertex lines are Jet's
(`"a" [localParallelism=1];`). (`planning.pictures.render_dag(dag, "dot")`, what `jetspark dag`
prints, draws the DAG for people in its own format: a vertex's label says `lp 1`; Jet's test has
no counterpart for it.) Jet's `noopP()` is `processors.noop()`, `wholeItem()` is `whole_item`, an
`EdgeConfig` queue size is `Edge.with_queue_size`. Each test is named after the Jet case it
ports. `to_dot()` writes Jet's text attribute for attribute (its `-prepare` cluster, labels,
ordinals and queue sizes); `..._wholeText` compares all of it.

Skipped, with no counterpart: `when_pipelineToDotString` and the pipeline half of `assertedTest`
(jetspark has no Pipeline API; its DAG half is built by hand below, as Jet's planner makes it).
"""

from __future__ import annotations

from jetspark import DAG, Edge, whole_item
from jetspark.processors import noop


def dag_of_jets_case() -> DAG:
    dag = DAG()
    a = dag.new_vertex("a", noop(), 1)
    b = dag.new_vertex("b", noop())
    c = dag.new_vertex("c", noop(), 1)
    dag.new_vertex("d", noop(), 1)
    dag.edge(Edge.from_(a, 0).to(c, 0).partitioned(whole_item).with_queue_size(128))
    dag.edge(Edge.from_(a, 1).to(b, 0).broadcast().distributed())
    return dag


def test_DotTest__when_dagToDotString() -> None:
    actual = dag_of_jets_case().to_dot()
    assert actual.startswith("digraph DAG {")
    assert '"a" [localParallelism=1];' in actual
    assert '"b" [localParallelism=default];' in actual
    assert '"c" [localParallelism=1];' in actual
    assert '"d" [localParallelism=1];' in actual
    assert actual.endswith("\n}")


def test_DotTest__when_dagToDotString__edgeLines() -> None:
    actual = dag_of_jets_case().to_dot()
    assert '"a" -> "c" [label="partitioned", taillabel=0, queueSize=128];' in actual
    assert '"a" -> "b" [label="distributed-broadcast", taillabel=1, queueSize=1024]' in actual


def test_DotTest__when_dagToDotStringNonDefaults() -> None:
    actual = dag_of_jets_case().to_dot(16, 16384)  # type: ignore[call-arg]
    assert actual.startswith("digraph DAG {")
    assert '"a" [localParallelism=1];' in actual
    assert '"b" [localParallelism=16];' in actual
    assert '"c" [localParallelism=1];' in actual
    assert '"d" [localParallelism=1];' in actual
    assert '"a" -> "c" [label="partitioned", taillabel=0, queueSize=128];' in actual
    assert '"a" -> "b" [label="distributed-broadcast", taillabel=1, queueSize=16384]' in actual
    assert actual.endswith("\n}")


def dag_of_asserted_test() -> DAG:
    """The DAG Jet's planner makes of `assertedTest`'s pipeline: a map source (its name has a
    double quote), a two-stage count by key, a logger sink."""
    dag = DAG()
    source = dag.new_vertex('mapSource(source1")', noop(), 1)
    prepare = dag.new_vertex("aggregateToCount-prepare", noop())
    count = dag.new_vertex("aggregateToCount", noop())
    sink = dag.new_vertex("loggerSink", noop(), 1)
    dag.edge(Edge.between(source, prepare).partitioned(whole_item))
    dag.edge(Edge.between(prepare, count).partitioned(whole_item).distributed())
    dag.edge(Edge.between(count, sink))
    return dag


def test_DotTest__assertedTest() -> None:
    """The vertex lines of Jet's expected text, the double quote in a name escaped."""
    actual = dag_of_asserted_test().to_dot()
    assert actual.startswith("digraph DAG {\n")
    assert '"mapSource(source1\\")" [localParallelism=1];\n' in actual
    assert '"aggregateToCount-prepare" [localParallelism=default];\n' in actual
    assert '"aggregateToCount" [localParallelism=default];\n' in actual
    assert '"loggerSink" [localParallelism=1];\n' in actual
    assert '"mapSource(source1\\")" -> "aggregateToCount-prepare"' in actual
    assert actual.endswith("\n}")


def test_DotTest__assertedTest__wholeText() -> None:
    assert dag_of_asserted_test().to_dot() == (
        "digraph DAG {\n"
        '\t"mapSource(source1\\")" [localParallelism=1];\n'
        '\t"aggregateToCount-prepare" [localParallelism=default];\n'
        '\t"aggregateToCount" [localParallelism=default];\n'
        '\t"loggerSink" [localParallelism=1];\n'
        '\t"mapSource(source1\\")" -> "aggregateToCount-prepare" [label="partitioned", queueSize=1024];\n'
        "\tsubgraph cluster_0 {\n"
        '\t\t"aggregateToCount-prepare" -> "aggregateToCount" '
        '[label="distributed-partitioned", queueSize=1024];\n'
        "\t}\n"
        '\t"aggregateToCount" -> "loggerSink" [queueSize=1024];\n'
        "}"
    )
