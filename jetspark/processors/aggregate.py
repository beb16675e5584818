"""Grouping and aggregating by key, in two stages as Jet does it.

Stage 1 (`accumulate_by_key`) folds the items each processor receives into one accumulator per
key, with no network in between; stage 2 (`combine_by_key`) receives the `(key, accumulator)`
entries over a partitioned distributed edge, so all entries of a key meet in one processor, and
combines them. Only one entry per key and stage-1 processor crosses the network, not every item.
`aggregate_by_key` adds both vertices and their edges to a DAG.

Both stages emit at `complete()`, in batches that fit the outbox's `room()` (so over several calls
when the outbox is full); an entry leaves the processor's state once handed over, so a snapshot
taken between `complete()` calls holds only what has not gone out. Both save one snapshot entry
per key still held, keyed by the grouping key: on restore the engine routes it to the processor
owning the key under the new plan (whatever the new parallelism), which combines all entries it
gets for a key.
"""

from __future__ import annotations

import collections
import functools
import math
import operator
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, cast

import attrs

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.dag import DAG, Vertex
from jetspark.core.edge import Edge
from jetspark.core.errors import ProcessorContractError
from jetspark.core.inbox import Inbox
from jetspark.core.keyed_state import keys_to_offer
from jetspark.core.partitioner import whole_item
from jetspark.core.processor import Processor
from jetspark.core.suppliers import FusibleSupplier, ProcessorSupplier
from jetspark.core.suppliers import Step as CoreStep
from jetspark.processors._codegen import Step, checked_steps, compile_chain

_NO_ENTRY: Any = object()


def _identity(value: Any) -> Any:
    return value


@attrs.frozen(kw_only=True)
class AggregateOperation:
    """How to aggregate items: a mutable or immutable accumulator and the functions over it.

    `create()` makes an empty accumulator; `accumulate(acc, item)` and `combine(acc, other)`
    return the new accumulator (they may update `acc` in place and return it; `other` is not used
    afterwards); `deduct(acc, other)` undoes a `combine` (optional; for sliding windows);
    `export(acc)` reads the result without disturbing `acc`; `finish(acc)` reads the final result
    (may hand out `acc` itself). All of them must be picklable (cloudpickle) for the Spark runner,
    and accumulators must be picklable for snapshots.

    ```pycon
    >>> from jetspark import processors as P
    >>> longest = P.AggregateOperation(
    ...     create=lambda: "",
    ...     accumulate=lambda acc, word: max(acc, word, key=len),
    ...     combine=lambda acc, other: max(acc, other, key=len),
    ... )
    >>> acc = longest.create()
    >>> for word in ["to", "be", "or", "not"]:
    ...     acc = longest.accumulate(acc, word)
    >>> longest.finish(acc)
    'not'
    ```

    :ivar create: makes an empty accumulator.
    :ivar accumulate: `accumulate(acc, item)` returns the accumulator with the item added.
    :ivar combine: `combine(acc, other)` returns the two accumulators merged.
    :ivar deduct: `deduct(acc, other)` undoes a `combine` (optional).
    :ivar export: reads the result without disturbing `acc` (the accumulator itself by default).
    :ivar finish: reads the final result (the accumulator itself by default).
    """

    create: Callable[[], Any]
    accumulate: Callable[[Any, Any], Any]
    combine: Callable[[Any, Any], Any]
    deduct: Callable[[Any, Any], Any] | None = None
    export: Callable[[Any], Any] = _identity
    finish: Callable[[Any], Any] = _identity

    def with_finish(self, finish: Callable[[Any], Any]) -> AggregateOperation:
        """The same operation with another `finish` (and `export`)."""
        return attrs.evolve(self, export=finish, finish=finish)


# ---- ready-made operations ----------------------------------------------------------------------


def _python_count_elements(counts: dict[Any, int], items: Iterable[Any]) -> None:
    get = counts.get
    for item in items:
        counts[item] = get(item, 0) + 1


#: CPython's C loop behind `Counter.update` (counts into any dict); a Python loop elsewhere.
_count_elements: Callable[[dict[Any, int], Iterable[Any]], None] = getattr(
    collections, "_count_elements", _python_count_elements
)


def _zero() -> int:
    return 0


def _count_one(acc: int, _item: Any) -> int:
    return acc + 1


def counting() -> AggregateOperation:
    """Counts the items.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> words = dag.new_vertex("words", P.from_iterable("to be or not to be".split()))
    >>> counts = P.aggregate_by_key(dag, "counts", words, P.whole_item, P.counting())
    >>> _ = dag.edge(Edge.between(counts, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"))
    [('be', 2), ('not', 1), ('or', 1), ('to', 2)]
    ```
    """
    return AggregateOperation(create=_zero, accumulate=_count_one, combine=operator.add, deduct=operator.sub)


def _add_value(fn: Callable[[Any], Any], acc: Any, item: Any) -> Any:
    return acc + fn(item)


def summing(fn: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """Sums `fn(item)` over the items (0 for none).

    ```pycon
    >>> from jetspark import processors as P
    >>> op = P.summing(lambda sale: sale[1])
    >>> acc = op.create()
    >>> for sale in [("tea", 3), ("tea", 4)]:
    ...     acc = op.accumulate(acc, sale)
    >>> op.finish(op.combine(acc, op.accumulate(op.create(), ("tea", 5))))
    12
    ```

    :param fn: what to add up for each item (the item itself by default).
    """
    return AggregateOperation(
        create=_zero,
        accumulate=functools.partial(_add_value, fn),
        combine=operator.add,
        deduct=operator.sub,
    )


def _new_list() -> list[Any]:
    return []


def _append(acc: list[Any], item: Any) -> list[Any]:
    acc.append(item)
    return acc


def _extend(acc: list[Any], other: list[Any]) -> list[Any]:
    acc.extend(other)
    return acc


def to_list() -> AggregateOperation:
    """Collects the items into a list (in arrival order per stage-1 processor).

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> words = dag.new_vertex("words", P.from_iterable(["ant", "bee", "ape"]))
    >>> by_letter = P.aggregate_by_key(dag, "by-letter", words, lambda w: w[0], P.to_list())
    >>> _ = dag.edge(Edge.between(by_letter, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"))
    [('a', ['ant', 'ape']), ('b', ['bee'])]
    ```
    """
    return AggregateOperation(create=_new_list, accumulate=_append, combine=_extend, export=list)


def _new_average() -> list[Any]:
    return [0, 0]


def _average_add(fn: Callable[[Any], Any], acc: list[Any], item: Any) -> list[Any]:
    acc[0] += 1
    acc[1] += fn(item)
    return acc


def _average_combine(acc: list[Any], other: list[Any]) -> list[Any]:
    acc[0] += other[0]
    acc[1] += other[1]
    return acc


def _average_deduct(acc: list[Any], other: list[Any]) -> list[Any]:
    acc[0] -= other[0]
    acc[1] -= other[1]
    return acc


def _average_result(acc: list[Any]) -> float:
    return acc[1] / acc[0] if acc[0] else math.nan


def averaging(fn: Callable[[Any], Any] = _identity) -> AggregateOperation:
    """The mean of `fn(item)` over the items (NaN for none).

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> readings = [("kitchen", 20.0), ("hall", 17.0), ("kitchen", 22.0)]
    >>> dag = DAG()
    >>> source = dag.new_vertex("readings", P.from_iterable(readings))
    >>> mean = P.aggregate_by_key(dag, "mean", source, P.entry_key, P.averaging(lambda r: r[1]))
    >>> _ = dag.edge(Edge.between(mean, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"))
    [('hall', 17.0), ('kitchen', 21.0)]
    ```

    :param fn: the number to average for each item (the item itself by default).
    """
    return AggregateOperation(
        create=_new_average,
        accumulate=functools.partial(_average_add, fn),
        combine=_average_combine,
        deduct=_average_deduct,
        export=_average_result,
        finish=_average_result,
    )


# ---- processors -----------------------------------------------------------------------------


class _KeyedStateP(AbstractProcessor):
    """One accumulator per key; emits `(key, result(acc))` at `complete()`; snapshots per key."""

    def __init__(self, op: AggregateOperation) -> None:
        self._op = op
        self._accs: dict[Hashable, Any] = {}
        self._emit_keys: list[Hashable] | None = None
        self._emit_index = 0
        self._snapshot_keys: Iterator[Hashable] | None = None
        self._snapshot_pending: Any = _NO_ENTRY
        #: Keys changed since the last snapshot, once `changed_snapshot_keys` (stage 2 only:
        #: stage 1's keys are not partitioned) was first asked; None before (nothing is tracked
        #: in batch jobs). Keys removed (emitted) are tracked always: only `complete` removes.
        self._changed: set[Hashable] | None = None
        self._removed: set[Hashable] = set()

    def _result(self, acc: Any) -> Any:
        raise NotImplementedError

    def complete(self) -> bool:
        """Emit `(key, result)` entries in `room()`-sized batches; an entry leaves the state once out."""
        keys = self._emit_keys
        if keys is None:
            keys = self._emit_keys = list(self._accs)
        accs = self._accs
        result = self._result
        outbox = self.outbox
        while self._emit_index < len(keys):
            room = outbox.room()
            if room <= 0:
                return False
            chunk = keys[self._emit_index : self._emit_index + room]
            if not outbox.offer_batch([(key, result(accs[key])) for key in chunk]):
                raise ProcessorContractError(
                    f"vertex {self.context.vertex_name!r} processor #{self.context.global_processor_index}: "
                    f"the outbox refused {len(chunk)} entries right after reporting room for them"
                )
            for key in chunk:
                del accs[key]
            self._removed.update(chunk)
            self._emit_index += len(chunk)
        return True

    def save_to_snapshot(self) -> bool:
        """One entry per key not yet emitted (including a rejected, pending one); in an
        incremental snapshot, only those of the changed keys (`Outbox.keys_to_save`)."""
        accs = self._accs
        if self._snapshot_keys is None:
            only = self.outbox.keys_to_save()
            self._snapshot_keys = iter(keys_to_offer(accs, only))
        offer = self.outbox.offer_to_snapshot
        if self._snapshot_pending is not _NO_ENTRY:
            if not offer(self._snapshot_pending, accs[self._snapshot_pending]):
                return False
            self._snapshot_pending = _NO_ENTRY
        for key in self._snapshot_keys:
            if not offer(key, accs[key]):
                self._snapshot_pending = key
                return False
        self._snapshot_keys = None
        self._track_changes()
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        accs = self._accs
        accs[key] = self._op.combine(accs[key], value) if key in accs else value

    def finish_snapshot_restore(self) -> bool:
        self._track_changes()
        return True

    def _track_changes(self) -> None:
        """A job that snapshots: from now on stage 2 notes the keys it changes."""
        if self._changed is None:
            self._changed = set()


class _AccumulateByKeyP(_KeyedStateP):
    """Stage 1: `acc[key_fn(item)] = accumulate(acc, item)`; emits `(key, acc)` entries.

    The loop over the inbox is generated (`_codegen`) with the optional stateless steps inlined
    before the accumulation; `counting()` gets a loop without create/accumulate calls.
    """

    def __init__(
        self, key_fn: Callable[[Any], Hashable], op: AggregateOperation, steps: tuple[Step, ...]
    ) -> None:
        super().__init__(op)
        self._scratch: list[Any] = []
        if op.create is _zero and op.accumulate is _count_one and key_fn is whole_item:
            self._run = _whole_item_counter(steps)
            return
        if op.create is _zero and op.accumulate is _count_one:
            innermost = ["key = key_fn(item)", "accs[key] = get(key, 0) + 1"]
        else:
            innermost = [
                "key = key_fn(item)",
                "acc = get(key, _MISSING)",
                "if acc is _MISSING:",
                "    acc = create()",
                "accs[key] = accumulate(acc, item)",
            ]
        self._run = compile_chain(
            steps,
            header=["def run(items, accs, get):", "    for item in items:"],
            innermost=innermost,
            namespace={
                "key_fn": key_fn,
                "create": op.create,
                "accumulate": op.accumulate,
                "_MISSING": _NO_ENTRY,
            },
        )

    def process(self, ordinal: int, inbox: Inbox) -> None:
        accs = self._accs
        self._run(inbox, accs, accs.get)
        inbox.drain_to(self._scratch)
        self._scratch.clear()

    def _result(self, acc: Any) -> Any:
        return acc


def _whole_item_counter(steps: tuple[Step, ...]) -> Callable[..., None]:
    """`run(items, accs, get)` counting each output of `steps` by itself, the counting done in C.

    A last flat_map step's outputs go to the C loop as they come, one call per input item; a None
    output is counted too and dropped at the end (items are never None, so no real key is lost).
    """
    namespace: dict[str, Any] = {"count_elements": _count_elements}
    run_header = ["def run(items, accs, get):"]
    if not steps:
        return compile_chain((), run_header, ["count_elements(accs, items)"], namespace=namespace)
    if steps[-1][0] == "flat_map":
        namespace["_last"] = steps[-1][1]
        return compile_chain(
            steps[:-1],
            header=[*run_header, "    for item in items:"],
            innermost=["count_elements(accs, _last(item))"],
            footer=["    accs.pop(None, None)"],
            namespace=namespace,
        )
    namespace["outputs"] = compile_chain(
        steps, header=["def outputs(items):", "    for item in items:"], innermost=["yield item"]
    )
    return compile_chain((), run_header, ["count_elements(accs, outputs(items))"], namespace=namespace)


class _CombineByKeyP(_KeyedStateP):
    """Stage 2: combines `(key, acc)` entries per key; emits `(key, finish(acc))`."""

    def __init__(self, op: AggregateOperation) -> None:
        super().__init__(op)
        self._scratch: list[Any] = []

    def process(self, ordinal: int, inbox: Inbox) -> None:
        accs = self._accs
        get = accs.get
        combine = self._op.combine
        missing = _NO_ENTRY
        changed = self._changed
        if changed is None:
            for key, acc in inbox:
                current = get(key, missing)
                accs[key] = acc if current is missing else combine(current, acc)
        else:
            mark = changed.add
            for key, acc in inbox:
                current = get(key, missing)
                accs[key] = acc if current is missing else combine(current, acc)
                mark(key)
        inbox.drain_to(self._scratch)
        self._scratch.clear()

    def _result(self, acc: Any) -> Any:
        return self._op.finish(acc)

    def changed_snapshot_keys(self) -> set[Hashable]:
        """Keys combined into or emitted since the last snapshot (incremental snapshots); the
        first time, every key held (changes were not tracked before)."""
        changed = set(self._accs) if self._changed is None else self._changed
        changed |= self._removed
        self._changed, self._removed = set(), set()
        return changed


def accumulate_by_key(
    key_fn: Callable[[Any], Hashable], op: AggregateOperation, steps: Iterable[Step] = ()
) -> ProcessorSupplier:
    """Stage 1: accumulate items per `key_fn(item)`; at the end emit `(key, accumulator)` entries.

    `steps` (a `Chain` or `(kind, fn)` tuples, as for `fused`) transform each item first, in this
    processor: cheaper than a vertex of their own in front of it, which costs a queue and an offer
    per item.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> lines = dag.new_vertex("lines", P.from_iterable(["a b", "a"]))
    >>> split = P.Chain().flat_map(str.split)
    >>> stage1 = dag.new_vertex("count", P.accumulate_by_key(P.whole_item, P.counting(), split))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(lines, stage1)).edge(Edge.between(stage1, sink))
    >>> sorted(run_dag(dag).result("sink"))
    [('a', 2), ('b', 1)]
    ```

    :param key_fn: the grouping key of an item.
    :param op: how to aggregate (`counting()`, `summing(fn)`, ...).
    :param steps: stateless steps run on each item first (a `Chain`, or `(kind, fn)` tuples).
    """
    return AccumulateSupplier(key_fn, op, checked_steps(steps, "accumulate_by_key"))


class AccumulateSupplier(FusibleSupplier):
    """Supplies stage-1 processors; the planner fuses a chain of stateless steps in front of it
    into it (`jetspark.planning.fusion`), as `steps` would."""

    def __init__(
        self, key_fn: Callable[[Any], Hashable], op: AggregateOperation, steps: tuple[Step, ...]
    ) -> None:
        self.key_fn = key_fn
        self.op = op
        self.steps = steps

    def get(self, count: int) -> list[Processor]:
        return [_AccumulateByKeyP(self.key_fn, self.op, self.steps) for _ in range(count)]

    def with_leading_steps(self, steps: tuple[CoreStep, ...]) -> AccumulateSupplier:
        leading = checked_steps(cast("tuple[Step, ...]", steps), "accumulate_by_key")
        return AccumulateSupplier(self.key_fn, self.op, leading + self.steps)

    def __repr__(self) -> str:
        return (
            f"AccumulateSupplier({getattr(self.key_fn, '__name__', self.key_fn)!r}, steps={len(self.steps)})"
        )


def combine_by_key(op: AggregateOperation) -> ProcessorSupplier:
    """Stage 2: combine `(key, accumulator)` entries per key; at the end emit `(key, finish(acc))`.

    Feed it with an edge partitioned by the entry's key (and distributed), so that each key's
    entries all reach one processor.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> partial_counts = [("a", 2), ("b", 1), ("a", 3)]   # (key, accumulator) from stage-1 processors
    >>> dag = DAG()
    >>> entries = dag.new_vertex("entries", P.from_iterable(partial_counts))
    >>> total = dag.new_vertex("total", P.combine_by_key(P.counting()))
    >>> _ = dag.edge(Edge.between(entries, total).partitioned(P.entry_key).distributed())
    >>> _ = dag.edge(Edge.between(total, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"))
    [('a', 5), ('b', 1)]
    ```

    :param op: the same operation stage 1 accumulated with; its `finish` makes the result.
    """
    return ProcessorSupplier.of(
        functools.partial(_CombineByKeyP, op),
        keyed_input_reason="combine_by_key: a key's accumulators combine in one processor",
    )


#: Key function of the stage-1 -> stage-2 edge: the key of a `(key, acc)` entry. Picklable.
entry_key: Callable[[tuple[Any, Any]], Any] = operator.itemgetter(0)


def aggregate_by_key(
    dag: DAG,
    name: str,
    upstream: Vertex,
    key_fn: Callable[[Any], Hashable],
    op: AggregateOperation,
    ordinal: int = 0,
    steps: Iterable[Step] = (),
) -> Vertex:
    """Add a two-stage aggregation of `upstream`'s output at `ordinal`; return the stage-2 vertex.

    Adds vertex `"{name}-prepare"` (stage 1, fed by a local edge; `steps` run there first, see
    `accumulate_by_key`) and vertex `name` (stage 2, fed by an edge partitioned by key and
    distributed). The stage-2 vertex emits `(key, result)`.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> sales = [("tea", 3), ("cake", 5), ("tea", 4)]
    >>> dag = DAG()
    >>> source = dag.new_vertex("sales", P.from_iterable(sales))
    >>> totals = P.aggregate_by_key(dag, "totals", source, P.entry_key, P.summing(lambda s: s[1]))
    >>> _ = dag.edge(Edge.between(totals, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"))
    [('cake', 5), ('tea', 7)]
    >>> [vertex.name for vertex in dag.topological_order()]
    ['sales', 'totals-prepare', 'totals', 'sink']
    ```

    :param dag: the DAG to add the two vertices and their edges to.
    :param name: the stage-2 vertex's name (stage 1 is `"{name}-prepare"`).
    :param upstream: the vertex whose output is aggregated.
    :param key_fn: the grouping key of an item.
    :param op: how to aggregate (`counting()`, `summing(fn)`, `to_list()`, `top_n(n)`, ...).
    :param ordinal: the outbound ordinal of `upstream` to read.
    :param steps: stateless steps run on each item in stage 1 first (see `accumulate_by_key`).
    """
    prepare = dag.new_vertex(f"{name}-prepare", accumulate_by_key(key_fn, op, steps))
    combine = dag.new_vertex(name, combine_by_key(op))
    dag.edge(Edge.from_(upstream, ordinal).to(prepare))
    dag.edge(Edge.between(prepare, combine).partitioned(entry_key).distributed())
    return combine


# ---- global (not keyed) aggregation: Jet's aggregateP, accumulateP, combineP --------------------

#: The one key a global aggregation keeps its accumulator under (in snapshots too), as Jet's.
GLOBAL_KEY = "ALL"


def _global_key(_item: Any) -> str:
    return GLOBAL_KEY


def _emit_global(processor: _KeyedStateP) -> bool:
    """`complete()` of a global aggregation: emit the one result (unless None), then done."""
    accs = processor._accs
    if GLOBAL_KEY not in accs:
        return True
    result = processor._result(accs[GLOBAL_KEY])
    if result is not None and not processor.outbox.offer(result):
        return False
    del accs[GLOBAL_KEY]
    processor._removed.add(GLOBAL_KEY)
    return True


class _GlobalAccumulateP(_AccumulateByKeyP):
    """All items into one accumulator, created up front: the result goes out even for no input."""

    def __init__(self, op: AggregateOperation, finish: bool) -> None:
        super().__init__(_global_key, op, ())
        self._accs[GLOBAL_KEY] = op.create()
        self._finish = finish

    def _result(self, acc: Any) -> Any:
        return self._op.finish(acc) if self._finish else acc

    def complete(self) -> bool:
        return _emit_global(self)


class _GlobalCombineP(_CombineByKeyP):
    """Combines the accumulators it receives into one; emits `finish` of it."""

    def __init__(self, op: AggregateOperation) -> None:
        super().__init__(op)
        self._accs[GLOBAL_KEY] = op.create()

    def process(self, ordinal: int, inbox: Inbox) -> None:
        combine = self._op.combine
        acc = self._accs[GLOBAL_KEY]
        for other in inbox:
            acc = combine(acc, other)
        self._accs[GLOBAL_KEY] = acc
        if self._changed is not None:  # (the one key changed: the incremental snapshot saves it)
            self._changed.add(GLOBAL_KEY)
        inbox.drain_to(self._scratch)
        self._scratch.clear()

    def complete(self) -> bool:
        return _emit_global(self)


def aggregate(op: AggregateOperation) -> ProcessorSupplier:
    """Aggregate every item into one result, `finish(acc)`, emitted at the end (Jet's `aggregateP`).

    Each processor emits one result, also when it received nothing (the finished empty
    accumulator), so run it as a single processor: feed it with a distributed
    `Edge.all_to_one()` into a vertex of local parallelism 1 (or use `accumulate` and `combine`
    for two stages). Its snapshot is one entry under `GLOBAL_KEY`, restored by that key's owner.

    ```pycon
    >>> from jetspark import processors as P
    >>> from jetspark.testing import verify_processor
    >>> _ = verify_processor(P.aggregate(P.summing())).disable_redistribution().input([1, 2, 3]).expect_output([6])
    ```

    :param op: how to aggregate; its `finish` makes the result (a None result is not emitted).
    """
    return ProcessorSupplier.of(functools.partial(_GlobalAccumulateP, op, True))


def accumulate(op: AggregateOperation) -> ProcessorSupplier:
    """Stage 1 of a global aggregation: accumulate every item, emit the accumulator at the end
    (Jet's `accumulateP`); `combine(op)` behind an `all_to_one` distributed edge finishes it.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", P.from_iterable(range(1, 11)))
    >>> partial = dag.new_vertex("partial", P.accumulate(P.summing()))
    >>> total = dag.new_vertex("total", P.combine(P.summing()), local_parallelism=1)
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(numbers, partial))
    >>> _ = dag.edge(Edge.between(partial, total).all_to_one().distributed())
    >>> _ = dag.edge(Edge.between(total, sink))
    >>> run_dag(dag).result("sink")
    [55]
    ```

    :param op: how to aggregate; the accumulator is emitted as it is (no `finish`).
    """
    return ProcessorSupplier.of(functools.partial(_GlobalAccumulateP, op, False))


def combine(op: AggregateOperation) -> ProcessorSupplier:
    """Stage 2 of a global aggregation: combine the accumulators `accumulate(op)` emitted, emit
    `finish` of the result at the end (Jet's `combineP`); run it as a single processor, as
    `aggregate`.

    ```pycon
    >>> from jetspark import processors as P
    >>> from jetspark.testing import verify_processor
    >>> words = P.to_list().with_finish(sorted)
    >>> _ = verify_processor(P.combine(words)).disable_redistribution().input([["b"], ["a", "c"]]).expect_output([["a", "b", "c"]])
    ```

    :param op: the operation `accumulate` used; its `finish` makes the result.
    """
    return ProcessorSupplier.of(functools.partial(_GlobalCombineP, op))
