"""Sort, distinct and top-N.

`sort` collects everything and emits it sorted at the end (a batch operation): feed it with
`Edge.all_to_one()` (its default key), so that one processor sees all items. Its snapshot entry is
keyed by that same key, so a restore sends the collected items to the processor the edge feeds,
whatever the new parallelism.

`distinct` emits the first item of each key at once and drops later ones; its state (the keys
seen) grows with the number of keys. Feed it with an edge partitioned by the same key; each key
is its own snapshot entry, restored to the key's owner.

`top_n` is an `AggregateOperation` (Jet's `AggregateOperations.topN`): use it with
`aggregate_by_key` per key, with an `all_to_one` edge for a global top-N, or over windows.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Hashable
from typing import Any

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.errors import ProcessorContractError
from jetspark.core.keyed_state import keys_to_offer
from jetspark.core.partitioner import whole_item
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.processors._snapshots import EntryWriter
from jetspark.processors.aggregate import AggregateOperation

#: The key `Edge.all_to_one()` routes by; `sort` keys its snapshot entries with it.
ALL_TO_ONE_KEY = "ALL"


class _SortP(AbstractProcessor):
    def __init__(self, key: Callable[[Any], Any] | None, reverse: bool) -> None:
        self._key = key
        self._reverse = reverse
        self._items: list[Any] = []
        self._sorted = False
        self._index = 0

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self._items.append(item)
        return True

    def complete(self) -> bool:
        if not self._sorted:
            self._items.sort(key=self._key, reverse=self._reverse)
            self._sorted = True
        items = self._items
        outbox = self.outbox
        while self._index < len(items):
            room = outbox.room()
            if room <= 0:
                return False
            chunk = items[self._index : self._index + room]
            if not outbox.offer_batch(chunk):
                raise ProcessorContractError(
                    f"vertex {self.context.vertex_name!r}: the outbox refused {len(chunk)} items "
                    "right after reporting room for them"
                )
            self._index += len(chunk)
        return True

    def save_to_snapshot(self) -> bool:
        left = self._items[self._index :]
        return not left or self.outbox.offer_to_snapshot(ALL_TO_ONE_KEY, left)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self._items.extend(value)


def sort(key: Callable[[Any], Any] | None = None, reverse: bool = False) -> ProcessorSupplier:
    """Emit all input items sorted by `key` (stable; descending with `reverse`) once the input
    is complete. Feed it with `Edge.all_to_one()` (see the module docstring).

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> words = dag.new_vertex("words", P.from_iterable(["pear", "fig", "apple"]), 2)
    >>> ordered = dag.new_vertex("sort", P.sort(key=len))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(words, ordered).all_to_one()).edge(Edge.between(ordered, sink))
    >>> run_dag(dag).result("sink")
    ['fig', 'pear', 'apple']
    ```

    :param key: what to sort by (the items themselves when None).
    :param reverse: greatest first.
    """
    return ProcessorSupplier.of(functools.partial(_SortP, key, reverse))


class _DistinctP(AbstractProcessor):
    def __init__(self, key_fn: Callable[[Any], Hashable]) -> None:
        self._key_fn = key_fn
        self._seen: set[Hashable] = set()
        self._writer = EntryWriter()
        #: Keys seen since the last save or restore (`changed_snapshot_keys`); None until the
        #: first of them.
        self._changed: set[Hashable] | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        key = self._key_fn(item)
        if key in self._seen:
            return True
        if not self.outbox.offer(item):
            return False
        self._seen.add(key)
        if self._changed is not None:
            self._changed.add(key)
        return True

    def save_to_snapshot(self) -> bool:
        if not self._writer.save(self.outbox, self._snapshot_entries):
            return False
        self._changed = set()
        return True

    def changed_snapshot_keys(self) -> set[Hashable]:
        """Keys first seen since the last save or restore (incremental snapshots; keys are never
        forgotten, so there are no deletions); the first time, every key seen."""
        return set(self._seen) if self._changed is None else self._changed

    def _snapshot_entries(self) -> list[tuple[Any, Any]]:
        only = self.outbox.keys_to_save()
        seen = self._seen
        return [(key, True) for key in keys_to_offer(seen, only)]

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self._seen.add(key)

    def finish_snapshot_restore(self) -> bool:
        self._changed = set()
        return True


def distinct(key_fn: Callable[[Any], Hashable] = whole_item) -> ProcessorSupplier:
    """Emit each item whose `key_fn(item)` was not seen before, at once; drop the others.
    Feed it with an edge partitioned by `key_fn` when it runs in more than one processor.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> words = dag.new_vertex("words", P.from_iterable(["b", "a", "b", "c", "a"]))
    >>> first = dag.new_vertex("distinct", P.distinct())
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(words, first).partitioned(P.whole_item)).edge(Edge.between(first, sink))
    >>> run_dag(dag).result("sink")
    ['b', 'a', 'c']
    ```

    :param key_fn: what makes two items the same (the whole item by default).
    """
    return ProcessorSupplier.of(functools.partial(_DistinctP, key_fn))


def _new_top() -> list[Any]:
    return []


def _trim(n: int, key: Callable[[Any], Any] | None, acc: list[Any]) -> list[Any]:
    acc.sort(key=key, reverse=True)
    del acc[n:]
    return acc


def _top_add(n: int, key: Callable[[Any], Any] | None, acc: list[Any], item: Any) -> list[Any]:
    acc.append(item)
    return _trim(n, key, acc) if len(acc) >= 2 * n else acc


def _top_combine(n: int, key: Callable[[Any], Any] | None, acc: list[Any], other: list[Any]) -> list[Any]:
    acc.extend(other)
    return _trim(n, key, acc) if len(acc) >= 2 * n else acc


def _top_result(n: int, key: Callable[[Any], Any] | None, acc: list[Any]) -> list[Any]:
    return sorted(acc, key=key, reverse=True)[:n]


def top_n(n: int, key: Callable[[Any], Any] | None = None) -> AggregateOperation:
    """The `n` greatest items by `key` (the items themselves when None), greatest first; ties
    keep the order the items were accumulated in.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> scores = [("ann", 7), ("bob", 9), ("ann", 3), ("bob", 2), ("ann", 8)]
    >>> dag = DAG()
    >>> source = dag.new_vertex("scores", P.from_iterable(scores))
    >>> best = P.aggregate_by_key(dag, "best", source, P.entry_key, P.top_n(2, key=lambda s: s[1]))
    >>> _ = dag.edge(Edge.between(best, dag.new_vertex("sink", P.collect())))
    >>> sorted(run_dag(dag).result("sink"))
    [('ann', [('ann', 8), ('ann', 7)]), ('bob', [('bob', 9), ('bob', 2)])]
    ```

    :param n: how many items to keep.
    :param key: what to rank by (the items themselves when None).
    """
    if n < 1:
        raise ValueError(f"top_n: n must be >= 1, got {n}")
    return AggregateOperation(
        create=_new_top,
        accumulate=functools.partial(_top_add, n, key),
        combine=functools.partial(_top_combine, n, key),
        export=functools.partial(_top_result, n, key),
        finish=functools.partial(_top_result, n, key),
    )
