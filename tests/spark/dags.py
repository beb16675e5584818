"""DAG shapes and small processors for the Spark runner tests.

Each builder returns a fresh DAG (a DAG's suppliers hold state, so a DAG runs once). Processors
record where they ran (member index, global processor index), so tests can check partition
ownership and the member arrangement against the local runner.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.context import ProcessorContext
from jetspark.core.dag import DAG
from jetspark.core.edge import Edge
from jetspark.core.suppliers import FirstMemberOnly, ProcessorSupplier
from jetspark.core.traverser import Traverser, traverse_iterable
from jetspark.core.watermark import BroadcastKey, Watermark
from jetspark.processors import collect, map


class Numbers(AbstractProcessor):
    """Source: processor g of T emits g, g + T, ... below `count`, as `(tag, n)` pairs."""

    def __init__(self, count: int, tag: str = "n") -> None:
        self.count = count
        self.tag = tag

    def init_processor(self, context: ProcessorContext) -> None:
        step = context.total_parallelism
        self.traverser = traverse_iterable(
            (self.tag, n) for n in range(context.global_processor_index, self.count, step)
        )

    def complete(self) -> bool:
        return self.emit_from_traverser(self.traverser)


class Where(AbstractProcessor):
    """Emits `(item, member index, global processor index, pid)` for every item."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        c = self.context
        return self.try_emit((item, c.member_index, c.global_processor_index, os.getpid()))


class Fail(AbstractProcessor):
    """Passes items on; raises on item `(tag, at)` (on whichever processor receives it)."""

    def __init__(self, at: int) -> None:
        self.at = at

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if item[1] == self.at:
            raise ValueError(f"boom at {item!r}")
        return self.try_emit(item)


class Arrivals(AbstractProcessor):
    """Records `(ordinal, item)` in arrival order; on each watermark emits `("wm", timestamp)`."""

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit((ordinal, item, self.context.global_processor_index))

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.try_emit(("wm", watermark.timestamp, self.context.global_processor_index))


class Timed(AbstractProcessor):
    """Source of timestamped items `("t", ts)` and watermarks, processor g of T:

    items with ts in [0, W) then Watermark(W) with W = 10 * (g + 1), then items with ts in
    [50, 100), then Watermark(100). A correct coalescing downstream never shows a watermark above
    the smallest W before every producer sent 100, so no item arrives behind its watermark.
    """

    def init_processor(self, context: ProcessorContext) -> None:
        g = context.global_processor_index
        first = 10 * (g + 1)
        plan: list[Any] = [("t", ts) for ts in range(g, first, 3)]
        plan.append(Watermark(first))
        plan += [("t", ts) for ts in range(50 + g, 100, 7)]
        plan.append(Watermark(100))
        self.traverser: Traverser[Any] = traverse_iterable(plan)

    def complete(self) -> bool:
        return self.emit_from_traverser(self.traverser)


class Endless(AbstractProcessor):
    """A source that never ends (sleeps a little per item), for cancellation."""

    def is_cooperative(self) -> bool:
        return False

    def complete(self) -> bool:
        time.sleep(0.01)
        self.try_emit(("tick", 0))
        return False


def append_line(path: str, line: str) -> None:
    """Append one line to a file: how processors in Spark's Python workers report to the test."""
    with open(path, "a", encoding="utf-8") as file:
        file.write(line + "\n")


class Closing(AbstractProcessor):
    """Passes items on; writes `made <id>` to `path` when created and `closed <id>` on close().

    `cooperative=None` makes is_cooperative() raise, which fails the wiring of the stage.
    """

    def __init__(self, path: str, cooperative: bool | None = True) -> None:
        self.path = path
        self.cooperative = cooperative
        self.id = uuid.uuid4().hex
        append_line(path, f"made {self.id}")

    def is_cooperative(self) -> bool:
        if self.cooperative is None:
            raise RuntimeError("is_cooperative is broken")
        return self.cooperative

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)

    def close(self) -> None:
        append_line(self.path, f"closed {self.id}")


def made_and_closed(path: str) -> tuple[list[str], list[str]]:
    """The ids of the processors `Closing` made, and of every close() call (repeats kept)."""
    try:
        with open(path, encoding="utf-8") as file:
            lines = [line.split() for line in file.read().splitlines()]
    except FileNotFoundError:
        return [], []
    return [i for what, i in lines if what == "made"], [i for what, i in lines if what == "closed"]


def key_of(item: tuple[str, int]) -> int:
    return item[1] % 17


def first(item: tuple[Any, ...]) -> Any:
    return item[0]


# ---- shapes ----------------------------------------------------------------------------------


def linear(count: int = 1000) -> DAG:
    """source -> where -> sink, all local: one stage."""
    dag = DAG()
    source = dag.new_vertex("source", lambda: Numbers(count), local_parallelism=2)
    where = dag.new_vertex("where", Where)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, where))
    dag.edge(Edge.between(where, sink))
    return dag


def partitioned(count: int = 2000, local_parallelism: int = 2) -> DAG:
    """source -> (partitioned by key, distributed) -> where -> sink: two stages."""
    dag = DAG()
    source = dag.new_vertex("source", lambda: Numbers(count))
    where = dag.new_vertex("where", Where, local_parallelism=local_parallelism)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, where).partitioned(key_of).distributed())
    dag.edge(Edge.between(where, sink))
    return dag


def priorities(count: int = 300) -> DAG:
    """Two sources into one vertex over distributed edges; ordinal 1 has the lower priority
    number, so each processor must get all of ordinal 1 before anything of ordinal 0."""
    dag = DAG()
    late = dag.new_vertex("late", lambda: Numbers(count, "late"))
    early = dag.new_vertex("early", lambda: Numbers(count, "early"))
    arrivals = dag.new_vertex("arrivals", Arrivals)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.from_(late).to(arrivals, 0).partitioned(key_of).distributed().with_priority(2))
    dag.edge(Edge.from_(early).to(arrivals, 1).partitioned(key_of).distributed().with_priority(1))
    dag.edge(Edge.between(arrivals, sink))
    return dag


def watermarks() -> DAG:
    """Timed sources (2 per member) -> distributed unicast -> arrivals -> sink."""
    dag = DAG()
    source = dag.new_vertex("source", Timed, local_parallelism=2)
    arrivals = dag.new_vertex("arrivals", Arrivals)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, arrivals).distributed())
    dag.edge(Edge.between(arrivals, sink))
    return dag


def failing(at: int = 7) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", lambda: Numbers(100))
    fail = dag.new_vertex("fail", lambda: Fail(at), local_parallelism=2)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, fail).partitioned(key_of).distributed())
    dag.edge(Edge.between(fail, sink))
    return dag


def endless() -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", Endless)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, sink).distributed())
    return dag


def broken_supplier() -> Any:
    raise RuntimeError("no processors for you")


def setup_fails(path: str, where: str) -> DAG:
    """a -> b over a local edge (one stage) with `Closing` processors; `where` breaks the setup:
    "supplier" (b's supplier raises) or "wiring" (b's is_cooperative() raises)."""
    dag = DAG()
    a = dag.new_vertex("a", lambda: Closing(path), local_parallelism=2)
    if where == "supplier":
        b = dag.new_vertex("b", broken_supplier)
    else:
        b = dag.new_vertex("b", lambda: Closing(path, cooperative=None))
    dag.edge(Edge.between(a, b))
    return dag


def diamond(count: int = 500) -> DAG:
    """a -local-> b and a -distributed-> c -fanout, distributed-> b: the local edge becomes a
    stage boundary (stages a, c, b), and a's stage feeds two stages."""
    dag = DAG()
    a = dag.new_vertex("a", lambda: Numbers(count), local_parallelism=2)
    c = dag.new_vertex("c", Where)
    b = dag.new_vertex("b", Arrivals, local_parallelism=2)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.from_(a, 0).to(b, 0))
    dag.edge(Edge.from_(a, 1).to(c).partitioned(key_of).distributed())
    dag.edge(Edge.from_(c).to(b, 1).fanout().distributed())
    dag.edge(Edge.between(b, sink))
    return dag


class GatedCounter(AbstractProcessor):
    """Emits 0, 1, 2, ... below `gate`'s limit (`tests.gates`) and never completes. It saves its
    position under a broadcast key, as `postgres_cdc` does: it runs as the only processor of its
    vertex (`FirstMemberOnly`), whatever partitions member 0 owns."""

    def __init__(self, gate: Any) -> None:
        self.gate = gate
        self.next = 0
        self.limit: int | None = 0
        self.read_at = float("-inf")

    def complete(self) -> bool:
        if self.limit is not None and self.next >= self.limit:
            now = time.monotonic()
            if now - self.read_at < 0.002:
                return False
            self.read_at = now
            self.limit = self.gate.limit()
            if self.limit is not None and self.next >= self.limit:
                return False
        if self.try_emit(self.next):
            self.next += 1
        return False

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(BroadcastKey("gated-counter"), self.next)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.next = value


def plus_one(x: int) -> int:
    return x + 1


def one_reader(gate: Any) -> DAG:
    """counter (one processor, on member 0) -> step (local edge) -> sink (distributed): on the other
    members `step` has no producer, so its processors there complete in the first epoch."""
    dag = DAG()
    reader = dag.new_vertex("source", FirstMemberOnly(ProcessorSupplier.of(lambda: GatedCounter(gate))))
    step = dag.new_vertex("step", map(plus_one))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(reader, step))
    dag.edge(Edge.between(step, sink).distributed())
    return dag
