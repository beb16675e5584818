"""DAG shapes for end-to-end tests, shared by every runner's tests.

Each builder returns `(dag, expected)`: `expected` maps each collecting sink vertex to the items it
must receive, computed in plain Python, in any order (compare with `normalized`). The expected
items never depend on the member count or the local parallelism: where a routing policy's effect
does (broadcast, fan-out, isolated), a stamping vertex records where each item went and an
all-to-one checker turns that into a verdict per item, `(item, True)`.

Builders take `local_parallelism` (for every vertex; -1 = the job's default) and `queue_size` (for
every edge; 1 forces back-pressure). The helper processors here are module-level classes; a
runner that ships suppliers to other processes may need
`cloudpickle.register_pickle_by_value(tests.e2e.shapes)`.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Iterable
from typing import Any

from jetspark import processors as P
from jetspark.core import DAG, AbstractProcessor, Edge, Traverser, traverse_iterable
from jetspark.core.edge import DEFAULT_QUEUE_SIZE

Expected = dict[str, list[Any]]
Shape = Callable[..., tuple[DAG, Expected]]

N = 300
WORDS = ["alpha", "beta", "gamma", "delta", "alpha", "beta", "alpha", "omega", "pi"]
key_of_entry = operator.itemgetter(0)


def normalized(items: Iterable[Any]) -> list[Any]:
    """The items in a canonical order, for comparing multisets of unorderable items."""
    return sorted(items, key=repr)


class _Builder:
    """Adds vertices with one local parallelism and edges with one queue size."""

    def __init__(self, local_parallelism: int, queue_size: int) -> None:
        self.dag = DAG()
        self.lp = local_parallelism
        self.queue_size = queue_size

    def vertex(self, name: str, supplier: Any) -> Any:
        return self.dag.new_vertex(name, supplier, self.lp)

    def edge(self, source: Any, destination: Any, source_ordinal: int = 0, dest_ordinal: int = 0) -> Edge:
        edge = (
            Edge.from_(source, source_ordinal).to(destination, dest_ordinal).with_queue_size(self.queue_size)
        )
        self.dag.edge(edge)
        return edge


# ---- helper processors -----------------------------------------------------------------------


class JoinP(AbstractProcessor):
    """Hash join: ordinal 0 builds `key -> value`, ordinal 1 emits `(key, x, value or None)`.

    Ordinal 0 must have the lower priority: an item on it after one on ordinal 1 fails the job.
    """

    def __init__(self) -> None:
        self.table: dict[Any, Any] = {}
        self.probing = False

    def try_process0(self, item: Any) -> bool:
        if self.probing:
            raise AssertionError(f"build-side item {item!r} after a probe-side item: priority ignored")
        self.table[item[0]] = item[1]
        return True

    def try_process1(self, item: Any) -> bool:
        self.probing = True
        return self.try_emit((item[0], item[1], self.table.get(item[0])))


class StampP(AbstractProcessor):
    """Emits `(item, member index, global processor index)`: where the item arrived."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        context = self.context
        return self.try_emit((item, context.member_index, context.global_processor_index))


class CheckP(AbstractProcessor):
    """Gathers stamps per item; at the end emits `(item, True)`, or `(item, stamps)` when wrong.

    `kind` "broadcast": each item reached every processor of the stamping vertex (which has this
    vertex's local parallelism); "fanout": exactly one processor on every member.
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.stamps: dict[Any, list[tuple[int, int]]] = {}
        self.verdicts: Traverser[Any] | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        value, member, index = item
        self.stamps.setdefault(value, []).append((member, index))
        return True

    def _verdict(self, stamps: list[tuple[int, int]]) -> bool:
        context = self.context
        if self.kind == "broadcast":
            return sorted(index for _, index in stamps) == list(range(context.total_parallelism))
        return sorted(member for member, _ in stamps) == list(range(context.member_count))

    def complete(self) -> bool:
        if self.verdicts is None:
            self.verdicts = traverse_iterable(
                (value, True if self._verdict(stamps) else sorted(stamps))
                for value, stamps in self.stamps.items()
            )
        return self.emit_from_traverser(self.verdicts)


class IsolationCheckP(AbstractProcessor):
    """Behind an isolated edge from `from_iterable(range(n))` with the same parallelism: processor
    g must receive exactly the items at positions g, g + T, ...; emits `(item, ok)`."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        context = self.context
        return self.try_emit((item, item % context.total_parallelism == context.global_processor_index))


class NarrowingCheckP(AbstractProcessor):
    """Behind an isolated edge from `from_iterable(range(n))` with `up_lp` processors per member to
    fewer ones: the item at position x comes from upstream processor g = x % T (member g // up_lp,
    local index g % up_lp), which must send only to the local processor (g % up_lp) % lp of its
    own member; emits `(item, ok)`."""

    def __init__(self, up_lp: int) -> None:
        self.up_lp = up_lp

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        context = self.context
        producer = item % (self.up_lp * context.member_count)
        member, local = divmod(producer, self.up_lp)
        ok = (
            member == context.member_index
            and local % context.local_parallelism == context.local_processor_index
        )
        return self.try_emit((item, ok))


class CountP(AbstractProcessor):
    """Counts its items; at the end emits the count, if it received any."""

    def __init__(self) -> None:
        self.count = 0

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.count += 1
        return True

    def complete(self) -> bool:
        return self.count == 0 or self.try_emit(self.count)


# ---- shapes ----------------------------------------------------------------------------------


def linear(local_parallelism: int = -1, queue_size: int = DEFAULT_QUEUE_SIZE) -> tuple[DAG, Expected]:
    """source -> map -> filter -> fused(flat_map, map) -> sink."""
    b = _Builder(local_parallelism, queue_size)
    source = b.vertex("source", P.from_iterable(range(N)))
    tripled = b.vertex("map", P.map(lambda x: x * 3))
    even = b.vertex("filter", P.filter(lambda x: x % 2 == 0))
    fused = b.vertex("fused", P.fused(P.Chain().flat_map(lambda x: (x, -x)).map(lambda x: x + 1)))
    sink = b.vertex("sink", P.collect())
    b.edge(source, tripled)
    b.edge(tripled, even)
    b.edge(even, fused)
    b.edge(fused, sink)
    expected = [y + 1 for x in range(N) if x * 3 % 2 == 0 for y in (x * 3, -x * 3)]
    return b.dag, {"sink": expected}


def fan_out_to_two_sinks(
    local_parallelism: int = -1, queue_size: int = DEFAULT_QUEUE_SIZE
) -> tuple[DAG, Expected]:
    """One vertex with two outbound edges: every item goes to both; one branch filters."""
    b = _Builder(local_parallelism, queue_size)
    source = b.vertex("source", P.from_iterable(range(N)))
    pairs = b.vertex("pairs", P.map(lambda x: (x, x % 5)))
    everything = b.vertex("all", P.collect())
    zeros = b.vertex("zeros", P.filter(lambda pair: pair[1] == 0))
    zeros_sink = b.vertex("zeros-sink", P.collect())
    b.edge(source, pairs)
    b.edge(pairs, everything, source_ordinal=0)
    b.edge(pairs, zeros, source_ordinal=1)
    b.edge(zeros, zeros_sink)
    all_pairs = [(x, x % 5) for x in range(N)]
    return b.dag, {"all": all_pairs, "zeros-sink": [p for p in all_pairs if p[1] == 0]}


DIMENSION = [(k, f"name-{k}") for k in range(40)]
FACTS = [(i % 50, i) for i in range(N)]  # keys 40..49 have no dimension entry
JOINED = [(k, i, dict(DIMENSION).get(k)) for k, i in FACTS]


def hash_join(local_parallelism: int = -1, queue_size: int = DEFAULT_QUEUE_SIZE) -> tuple[DAG, Expected]:
    """Two inputs partitioned by key into a join; the build side has the lower priority."""
    b = _Builder(local_parallelism, queue_size)
    dimension = b.vertex("dimension", P.from_iterable(DIMENSION))
    facts = b.vertex("facts", P.from_iterable(FACTS))
    join = b.vertex("join", JoinP)
    sink = b.vertex("sink", P.collect())
    b.edge(dimension, join, dest_ordinal=0).partitioned(key_of_entry).distributed()
    b.edge(facts, join, dest_ordinal=1).partitioned(key_of_entry).distributed().with_priority(1)
    b.edge(join, sink)
    return b.dag, {"sink": JOINED}


def broadcast_join(local_parallelism: int = -1, queue_size: int = DEFAULT_QUEUE_SIZE) -> tuple[DAG, Expected]:
    """The build side is broadcast (with a lower priority) to every join processor; facts stay local."""
    b = _Builder(local_parallelism, queue_size)
    dimension = b.vertex("dimension", P.from_iterable(DIMENSION))
    facts = b.vertex("facts", P.from_iterable(FACTS))
    join = b.vertex("join", JoinP)
    sink = b.vertex("sink", P.collect())
    b.edge(dimension, join, dest_ordinal=0).broadcast().distributed().with_priority(-1)
    b.edge(facts, join, dest_ordinal=1)
    b.edge(join, sink)
    return b.dag, {"sink": JOINED}


def two_stage_aggregation(
    local_parallelism: int = -1, queue_size: int = DEFAULT_QUEUE_SIZE
) -> tuple[DAG, Expected]:
    """Word count and word-length sum: flat_map, then `aggregate_by_key` (local + partitioned distributed)."""
    b = _Builder(local_parallelism, queue_size)
    lines = [" ".join(WORDS[i % len(WORDS)] for i in range(start, start + 7)) for start in range(N // 3)]
    source = b.vertex("lines", P.from_iterable(lines))
    words = b.vertex("words", P.flat_map(str.split))
    b.edge(source, words)
    counts = P.aggregate_by_key(b.dag, "counts", words, lambda w: w, P.counting())
    lengths = P.aggregate_by_key(b.dag, "lengths", words, lambda w: w[0], P.summing(len), ordinal=1)
    for vertex in ("counts-prepare", "counts", "lengths-prepare", "lengths"):
        b.dag.get_vertex(vertex).with_local_parallelism(local_parallelism)
    for edge in b.dag.edges:
        edge.with_queue_size(queue_size)
    counts_sink = b.vertex("counts-sink", P.collect())
    lengths_sink = b.vertex("lengths-sink", P.collect())
    b.edge(counts, counts_sink)
    b.edge(lengths, lengths_sink)
    all_words = [w for line in lines for w in line.split()]
    word_counts: dict[str, int] = {}
    letter_lengths: dict[str, int] = {}
    for w in all_words:
        word_counts[w] = word_counts.get(w, 0) + 1
        letter_lengths[w[0]] = letter_lengths.get(w[0], 0) + len(w)
    return b.dag, {"counts-sink": list(word_counts.items()), "lengths-sink": list(letter_lengths.items())}


def _stamped(b: _Builder, kind: str, route: Callable[[Edge], Edge]) -> None:
    source = b.vertex("source", P.from_iterable(range(N // 3)))
    stamp = b.vertex("stamp", StampP)
    check = b.vertex("check", lambda: CheckP(kind))
    sink = b.vertex("sink", P.collect())
    route(b.edge(source, stamp))
    b.edge(stamp, check).all_to_one("check").distributed()
    b.edge(check, sink)


def broadcast_edge(local_parallelism: int = -1, queue_size: int = DEFAULT_QUEUE_SIZE) -> tuple[DAG, Expected]:
    """A distributed broadcast edge: every processor of every member gets every item."""
    b = _Builder(local_parallelism, queue_size)
    _stamped(b, "broadcast", lambda e: e.broadcast().distributed())
    return b.dag, {"sink": [(x, True) for x in range(N // 3)]}


def fanout_edge(local_parallelism: int = -1, queue_size: int = DEFAULT_QUEUE_SIZE) -> tuple[DAG, Expected]:
    """A fan-out edge: every member gets every item, one processor per member."""
    b = _Builder(local_parallelism, queue_size)
    _stamped(b, "fanout", lambda e: e.fanout().distributed())
    return b.dag, {"sink": [(x, True) for x in range(N // 3)]}


def isolated_edge(local_parallelism: int = -1, queue_size: int = DEFAULT_QUEUE_SIZE) -> tuple[DAG, Expected]:
    """An isolated edge pairs source processor g with downstream processor g."""
    b = _Builder(local_parallelism, queue_size)
    source = b.vertex("source", P.from_iterable(range(N)))
    check = b.vertex("check", IsolationCheckP)
    sink = b.vertex("sink", P.collect())
    b.edge(source, check).isolated()
    b.edge(check, sink)
    return b.dag, {"sink": [(x, True) for x in range(N)]}


def isolated_edge_to_fewer_processors(
    local_parallelism: int = -1, queue_size: int = DEFAULT_QUEUE_SIZE
) -> tuple[DAG, Expected]:
    """An isolated edge from 2L + 1 processors per member to L (L = the local parallelism, at least
    1): each upstream processor sends to exactly one downstream processor, upstream i to downstream
    i % L of its member (Jet 4 and later)."""
    b = _Builder(local_parallelism, queue_size)
    down = max(local_parallelism, 1)
    up = 2 * down + 1
    source = b.dag.new_vertex("source", P.from_iterable(range(N)), up)
    check = b.dag.new_vertex("check", functools.partial(NarrowingCheckP, up), down)
    sink = b.vertex("sink", P.collect())
    b.edge(source, check).isolated()
    b.edge(check, sink)
    return b.dag, {"sink": [(x, True) for x in range(N)]}


def all_to_one_edge(
    local_parallelism: int = -1, queue_size: int = DEFAULT_QUEUE_SIZE
) -> tuple[DAG, Expected]:
    """An all-to-one edge: a single processor receives every item, so one count comes out."""
    b = _Builder(local_parallelism, queue_size)
    source = b.vertex("source", P.from_iterable(range(N)))
    count = b.vertex("count", CountP)
    sink = b.vertex("sink", P.collect())
    b.edge(source, count).all_to_one().distributed()
    b.edge(count, sink)
    return b.dag, {"sink": [N]}


SHAPES: dict[str, Shape] = {
    "linear": linear,
    "fan_out_to_two_sinks": fan_out_to_two_sinks,
    "hash_join": hash_join,
    "broadcast_join": broadcast_join,
    "two_stage_aggregation": two_stage_aggregation,
    "broadcast_edge": broadcast_edge,
    "fanout_edge": fanout_edge,
    "isolated_edge": isolated_edge,
    "isolated_edge_to_fewer_processors": isolated_edge_to_fewer_processors,
    "all_to_one_edge": all_to_one_edge,
}
