"""Keyed vertices (sessions, windows, keyed combines) refuse an input that would split a key's
items across processors: at `dag.edge()` when the vertex may have several processors per member,
at submit when the job runs on several members. Edges that place every key on one processor
are accepted, and the results are right."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, AbstractProcessor, DagValidationError, Edge, JobConfig, Vertex
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.runners.local import LocalRunner

ts_of = operator.itemgetter(0)
user_of = operator.itemgetter(1)
#: One session per user: clicks 10 ms apart, gap 100.
CLICKS = [(t, user) for t in range(0, 500, 10) for user in ("ann", "bob", "cy")]
SESSIONS = sorted(P.WindowResult(0, 590, user, 50) for user in ("ann", "bob", "cy"))


def source_and_sessions(parallelism: int = -1) -> tuple[DAG, Vertex, Vertex]:
    dag = DAG()
    source = dag.new_vertex("clicks", P.from_iterable(CLICKS))
    sessions = dag.new_vertex(
        "sessions", P.aggregate_to_session_window(user_of, ts_of, 100, P.counting()), parallelism
    )
    return dag, source, sessions


def run(dag: DAG, sink_from: Vertex, members: int) -> list[Any]:
    dag.edge(Edge.between(sink_from, dag.new_vertex("sink", P.collect())))
    return sorted(LocalRunner(member_count=members).run(dag, JobConfig(), timeout=60).result("sink"))


@pytest.mark.parametrize(
    "edge, got",
    [
        (lambda e: e, "unicast"),
        (lambda e: e.distributed(), "unicast distributed"),
        (lambda e: e.broadcast().distributed(), "broadcast distributed"),
    ],
)
def test_an_edge_not_partitioned_into_several_processors_is_refused_when_added(edge: Any, got: str) -> None:
    dag, source, sessions = source_and_sessions()
    with pytest.raises(DagValidationError) as caught:
        dag.edge(edge(Edge.between(source, sessions)))
    message = str(caught.value)
    assert message.startswith("edge clicks[0] -> sessions[0]: vertex 'sessions' (aggregate_to_session_window")
    assert f"got {got}:" in message
    assert "Edge.between(clicks, sessions).partitioned(key_fn).distributed()" in message


@pytest.mark.parametrize(
    "edge, got",
    [
        (lambda e: e.partitioned(user_of), "partitioned local"),
        (lambda e: e, "unicast local"),  # one processor per member: one per member is not one
    ],
)
def test_an_edge_right_on_one_member_only_is_refused_on_two(edge: Any, got: str) -> None:
    parallelism = -1 if got.startswith("partitioned") else 1
    dag, source, sessions = source_and_sessions(parallelism)
    dag.edge(edge(Edge.between(source, sessions)))
    with pytest.raises(DagValidationError) as caught:
        run(dag, sessions, members=2)
    message = str(caught.value)
    assert message.startswith("edge clicks[0] -> sessions[0]: vertex 'sessions'")
    assert (
        f"runs on 2 members, so its edge must be partitioned by its key and distributed, got {got}:"
        in message
    )


@pytest.mark.parametrize(
    "edge, parallelism",
    [(lambda e: e.partitioned(user_of), -1), (lambda e: e, 1), (lambda e: e.distributed(), 1)],
)
def test_on_one_member_a_local_partitioned_edge_or_one_processor_is_right(
    edge: Any, parallelism: int
) -> None:
    dag, source, sessions = source_and_sessions(parallelism)
    dag.edge(edge(Edge.between(source, sessions)))
    assert run(dag, sessions, members=1) == SESSIONS


def test_a_partitioned_distributed_edge_is_right_on_three_members() -> None:
    dag, source, sessions = source_and_sessions()
    dag.edge(Edge.between(source, sessions).partitioned(user_of).distributed())
    assert run(dag, sessions, members=3) == SESSIONS


class Tag(AbstractProcessor):
    """A keyed map: it keeps the item's key (it appends to the item)."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)


def test_a_local_partitioned_edge_behind_a_distributed_partitioned_one_is_right_on_two_members() -> None:
    """The keys were placed by member upstream: each member's map holds only its own keys."""
    dag, source, sessions = source_and_sessions()
    tag = dag.new_vertex("tag", Tag)
    dag.edge(Edge.between(source, tag).partitioned(user_of).distributed())
    dag.edge(Edge.between(tag, sessions).partitioned(user_of))
    assert run(dag, sessions, members=2) == SESSIONS


def test_the_built_in_two_stage_helpers_wire_their_keyed_stage_right_on_two_members() -> None:
    dag = DAG()
    source = dag.new_vertex("clicks", P.from_iterable(CLICKS))
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of), 1)
    dag.edge(Edge.between(source, stamps).isolated())
    windows = P.window_aggregate(
        dag, "per-user", stamps, user_of, ts_of, P.WindowPolicy.tumbling(1000), P.counting()
    )
    assert [(r.key, r.value) for r in run(dag, windows, members=2)] == [("ann", 50), ("bob", 50), ("cy", 50)]
    dag = DAG()
    source = dag.new_vertex("clicks", P.from_iterable(CLICKS))
    totals = P.aggregate_by_key(dag, "per-user", source, user_of, P.counting())
    assert run(dag, totals, members=2) == [("ann", 50), ("bob", 50), ("cy", 50)]


class CountPerKey(AbstractProcessor):
    """A user's keyed count, emitted at the end."""

    def __init__(self) -> None:
        self.counts: dict[Any, int] = {}

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.counts[user_of(item)] = self.counts.get(user_of(item), 0) + 1
        return True

    def complete(self) -> bool:
        return all(self.try_emit(entry) for entry in sorted(self.counts.items()))


def test_a_users_own_supplier_can_ask_for_keyed_input() -> None:
    dag = DAG()
    source = dag.new_vertex("clicks", P.from_iterable(CLICKS))
    counts = dag.new_vertex(
        "counts", ProcessorSupplier.of(CountPerKey, keyed_input_reason="one count per user")
    )
    with pytest.raises(
        DagValidationError, match=r"vertex 'counts' \(one count per user\) needs an edge partitioned"
    ):
        dag.edge(Edge.between(source, counts).distributed())
    dag.edge(Edge.between(source, counts).partitioned(user_of).distributed())
    assert run(dag, counts, members=2) == [("ann", 50), ("bob", 50), ("cy", 50)]
