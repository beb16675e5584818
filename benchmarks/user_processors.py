"""The benchmarks' pipelines written as a jetspark user writes them: `AbstractProcessor` subclasses.

Shared by `p1_local.py` and `spark_bench.py`, so that every benchmark measures what users write,
not only the built-in processors. Nothing here is tuned for speed: each class is the obvious one
from the processor contract (emit with `try_emit`, return False when it is refused).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from jetspark import AbstractProcessor, traverse_iterable, whole_item
from jetspark.core import DAG, Edge, ProcessorContext
from jetspark.core.traverser import Traverser


class RangeSource(AbstractProcessor):
    """Emits this processor's share of `range(n)` from `complete()`."""

    def __init__(self, n: int) -> None:
        self.n = n

    def init_processor(self, context: ProcessorContext) -> None:
        self.next = context.global_processor_index
        self.step = context.total_parallelism

    def complete(self) -> bool:
        while self.next < self.n:
            if not self.try_emit(self.next):
                return False
            self.next += self.step
        return True


class Double(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item * 2)


class DropMultiplesOf3(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return item % 3 == 0 or self.try_emit(item)


class CountByKey(AbstractProcessor):
    """Counts items per `str(item % 1000)`; emits `(key, count)` when its input is done."""

    def init_processor(self, context: ProcessorContext) -> None:
        self.counts: dict[str, int] = {}
        self.results: Traverser[Any] | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        key = str(item % 1000)
        self.counts[key] = self.counts.get(key, 0) + 1
        return True

    def complete(self) -> bool:
        if self.results is None:
            self.results = traverse_iterable(self.counts.items())
        return self.emit_from_traverser(self.results)


class Tokenize(AbstractProcessor):
    """Splits each line into words, with the contract's `flat_mapper` helper."""

    def init_processor(self, context: ProcessorContext) -> None:
        self.tokenizer = self.flat_mapper(lambda line: traverse_iterable(line.split()))

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.tokenizer.try_process(item)


class CountWords(AbstractProcessor):
    def init_processor(self, context: ProcessorContext) -> None:
        self.counts: Counter[str] = Counter()
        self.results: Traverser[Any] | None = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.counts[item] += 1
        return True

    def complete(self) -> bool:
        if self.results is None:
            self.results = traverse_iterable(self.counts.items())
        return self.emit_from_traverser(self.results)


def p1_user_dag(n: int, sink: Any, distributed: bool) -> DAG:
    """RangeSource -> Double -> DropMultiplesOf3 -> (partitioned by key) CountByKey -> sink."""
    dag = DAG()
    source = dag.new_vertex("source", lambda: RangeSource(n))
    doubled = dag.new_vertex("double", Double)
    kept = dag.new_vertex("drop-multiples-of-3", DropMultiplesOf3)
    counted = dag.new_vertex("count", CountByKey)
    out = dag.new_vertex("sink", sink)
    dag.edge(Edge.between(source, doubled)).edge(Edge.between(doubled, kept))
    to_count = Edge.between(kept, counted)
    if distributed:
        to_count = to_count.partitioned(_p1_key).distributed()
    dag.edge(to_count).edge(Edge.between(counted, out))
    return dag


def _p1_key(item: int) -> str:
    return str(item % 1000)


def word_count_user_dag(lines: Any, sink: Any) -> DAG:
    """lines -> Tokenize -> (partitioned by word, distributed) CountWords -> sink: every word
    crosses the shuffle, as in the user's code the issue measured."""
    dag = DAG()
    source = dag.new_vertex("lines", lines)
    words = dag.new_vertex("tokenize", Tokenize)
    counted = dag.new_vertex("count", CountWords)
    out = dag.new_vertex("sink", sink)
    dag.edge(Edge.between(source, words))
    dag.edge(Edge.between(words, counted).partitioned(whole_item).distributed())
    dag.edge(Edge.between(counted, out))
    return dag
