"""Stateless transforms: `map`, `filter`, `flat_map` and `fused`, a chain of them in one processor.

Python's per-item cost dominates a pipeline, so these processors work a batch at a time: ask the
outbox how much `room()` it has, run the user's functions over that many inbox items in one tight
generated loop (see `_codegen`) that appends the outputs to a list, remove the processed inputs
with one `drain_to`, and hand the list over with one `offer_batch`. Per item that costs the user's
calls and a list append; the outbox never rejects (the batch fits by construction), so no output
is ever left pending and re-offered.

map and filter emit at most one output per input, so `room()` inputs always fit. A flat_map step
may emit any number: when the room runs out mid-item, the rest of that item's outputs wait in
their iterator and the item stays in the inbox until all went out. That matters for snapshots:
`save_to_snapshot` runs only with an empty inbox, so no output is left behind a snapshot barrier
while its input counts as consumed before it.

`fused` runs a chain of map/filter/flat_map steps in one processor: no queue, no outbox and no
inbox between the steps, and each step costs only the call of the user's function.

Jet semantics: a map step that returns None drops the item; a flat_map step's None outputs are
skipped too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from typing import Any, cast

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.errors import ProcessorContractError
from jetspark.core.inbox import Inbox
from jetspark.core.processor import Processor
from jetspark.core.suppliers import FusibleSupplier, ProcessorSupplier
from jetspark.core.suppliers import Step as CoreStep
from jetspark.processors._codegen import Step, checked_steps, compile_chain


class _TransformP(AbstractProcessor):
    """Shared plumbing: removing processed inputs and handing over a batch of outputs."""

    def __init__(self) -> None:
        self._scratch: list[Any] = []

    def _remove(self, inbox: Inbox, count: int) -> None:
        """Remove the first `count` items from the inbox."""
        if count:
            scratch = self._scratch
            inbox.drain_to(scratch, count)
            scratch.clear()

    def _emit(self, outputs: list[Any]) -> None:
        """Offer a batch that fits the room asked for just before (so it cannot be refused)."""
        if outputs and not self.outbox.offer_batch(outputs):
            raise ProcessorContractError(
                f"vertex {self.context.vertex_name!r} processor #{self.context.global_processor_index}: "
                f"the outbox refused {len(outputs)} items right after reporting room for them"
            )


class _ChainP(_TransformP):
    """map and filter steps, compiled into one loop over up to `room()` inbox items."""

    def __init__(self, steps: tuple[Step, ...]) -> None:
        super().__init__()
        self._run: Callable[[Iterable[Any], Callable[[Any], None]], None] = compile_chain(
            steps, header=["def run(items, emit):", "    for item in items:"], innermost=["emit(item)"]
        )

    def process(self, ordinal: int, inbox: Inbox) -> None:
        room = self.outbox.room()
        if room <= 0:
            return
        size = inbox.size()
        outputs: list[Any] = []
        if size <= room:
            self._run(inbox, outputs.append)
            self._remove(inbox, size)
        else:
            self._run(islice(inbox, room), outputs.append)
            self._remove(inbox, room)
        self._emit(outputs)


def _fill(outputs: Iterator[Any], batch: list[Any], room: int) -> bool:
    """Move non-None items of `outputs` to `batch` until it holds `room`; True if `outputs` ended."""
    append = batch.append
    for out in outputs:
        if out is not None:
            append(out)
            if len(batch) >= room:
                return False
    return True


class _FlatMapP(_TransformP):
    """Emits every item of the iterable `fn(item)` returns (None items are skipped)."""

    def __init__(self, fn: Callable[[Any], Iterable[Any]]) -> None:
        super().__init__()
        self._fn = fn
        self._outputs: Iterator[Any] | None = None  # the rest of the head item's outputs

    def process(self, ordinal: int, inbox: Inbox) -> None:
        room = self.outbox.room()
        if room <= 0:
            return
        batch: list[Any] = []
        items = iter(inbox)
        done = 0
        if self._outputs is not None:
            if not _fill(self._outputs, batch, room):
                self._emit(batch)
                return
            self._outputs = None
            next(items)
            done = 1
        fn = self._fn
        for item in items:
            outputs = iter(fn(item))
            if not _fill(outputs, batch, room):
                self._outputs = outputs
                break
            done += 1
        self._remove(inbox, done)
        self._emit(batch)


def _generator_of(steps: tuple[Step, ...]) -> Callable[[Any], Iterator[Any]]:
    """A chain that may hold flat_map steps, as a generator function of one input item."""
    return compile_chain(steps, header=["def outputs(item):"], innermost=["yield item"])


class Chain:
    """An immutable list of map/filter/flat_map steps, for `fused`: `Chain().map(f).filter(p)`.

    Iterating it gives the `(kind, fn)` steps, so `fused` also takes a plain list of those.

    ```pycon
    >>> from jetspark import processors as P
    >>> chain = P.Chain().map(str.strip).filter(None).flat_map(str.split)
    >>> [kind for kind, fn in chain]
    ['map', 'filter', 'flat_map']
    ```

    :param steps: the `(kind, fn)` steps to start from (none by default).
    """

    __slots__ = ("steps",)

    def __init__(self, steps: Iterable[Step] = ()) -> None:
        self.steps: tuple[Step, ...] = tuple(steps)

    def map(self, fn: Callable[[Any], Any]) -> Chain:
        """Add a step replacing each item with `fn(item)`; None drops it."""
        return Chain((*self.steps, ("map", fn)))

    def filter(self, predicate: Callable[[Any], Any]) -> Chain:
        """Add a step keeping the items for which `predicate(item)` is true."""
        return Chain((*self.steps, ("filter", predicate)))

    def flat_map(self, fn: Callable[[Any], Iterable[Any]]) -> Chain:
        """Add a step replacing each item with the items of `fn(item)`."""
        return Chain((*self.steps, ("flat_map", fn)))

    def __iter__(self) -> Iterator[Step]:
        return iter(self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __repr__(self) -> str:
        return "Chain(" + ", ".join(f"{kind}({getattr(fn, '__name__', fn)})" for kind, fn in self.steps) + ")"


def _fused_processor(steps: tuple[Step, ...]) -> _TransformP:
    if len(steps) == 1 and steps[0][0] == "flat_map":
        return _FlatMapP(steps[0][1])
    if any(kind == "flat_map" for kind, _ in steps):
        return _FlatMapP(_generator_of(steps))
    return _ChainP(steps)


class StepsSupplier(FusibleSupplier):
    """Supplies processors running a chain of stateless steps; the planner may fuse it (see
    `jetspark.planning.fusion`) into the next vertex, or the previous one into it."""

    def __init__(self, steps: tuple[Step, ...]) -> None:
        self.steps = steps

    def get(self, count: int) -> list[Processor]:
        return [_fused_processor(self.steps) for _ in range(count)]

    def stateless_steps(self) -> tuple[Step, ...]:
        return self.steps

    def does_work_without_input(self) -> bool:
        """Stateless steps make items only out of items."""
        return False

    def with_leading_steps(self, steps: tuple[CoreStep, ...]) -> StepsSupplier:
        return StepsSupplier(checked_steps(cast("tuple[Step, ...]", steps), "fused") + self.steps)

    def __repr__(self) -> str:
        return f"StepsSupplier({Chain(self.steps)!r})"


def _check_callable(factory: str, fn: object) -> None:
    if not callable(fn):
        raise TypeError(f"{factory}: expected a callable, got {fn!r}")


def map(fn: Callable[[Any], Any]) -> ProcessorSupplier:
    """Emit `fn(item)` for each item; an item mapped to None is dropped.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", P.from_iterable([1, 2, 3]))
    >>> double = dag.new_vertex("double", P.map(lambda x: 2 * x))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(numbers, double)).edge(Edge.between(double, sink))
    >>> sorted(run_dag(dag).result("sink"))
    [2, 4, 6]
    ```

    :param fn: called with each item; its result is emitted (None: nothing).
    :returns: a supplier for `DAG.new_vertex`; the planner may fuse it with neighbouring steps.
    """
    _check_callable("map", fn)
    return StepsSupplier((("map", fn),))


def filter(predicate: Callable[[Any], Any]) -> ProcessorSupplier:
    """Emit the items for which `predicate(item)` is true.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> numbers = dag.new_vertex("numbers", P.from_iterable(range(10)))
    >>> even = dag.new_vertex("even", P.filter(lambda x: x % 2 == 0))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(numbers, even)).edge(Edge.between(even, sink))
    >>> sorted(run_dag(dag).result("sink"))
    [0, 2, 4, 6, 8]
    ```

    :param predicate: called with each item; the item is emitted when the result is true.
    """
    _check_callable("filter", predicate)
    return StepsSupplier((("filter", predicate),))


def flat_map(fn: Callable[[Any], Iterable[Any]]) -> ProcessorSupplier:
    """Emit every item of the iterable (or `Traverser`) `fn(item)` returns; None items are skipped.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> dag = DAG()
    >>> lines = dag.new_vertex("lines", P.from_iterable(["to be", "or not"]))
    >>> words = dag.new_vertex("words", P.flat_map(str.split))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(lines, words)).edge(Edge.between(words, sink))
    >>> sorted(run_dag(dag).result("sink"))
    ['be', 'not', 'or', 'to']
    ```

    :param fn: called with each item; returns an iterable (or a `Traverser`) of the items to emit.
    """
    _check_callable("flat_map", fn)
    return StepsSupplier((("flat_map", fn),))


def fused(steps: Iterable[Step]) -> ProcessorSupplier:
    """Run a chain of stateless steps in one processor.

    `steps` is a `Chain` (`Chain().map(f).filter(p).flat_map(g)`) or a list of `(kind, fn)`
    tuples with kind "map", "filter" or "flat_map". The output equals that of one vertex per step
    joined by local edges, without the queues between them.

    ```pycon
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> steps = P.Chain().flat_map(str.split).filter(lambda w: len(w) > 2).map(str.upper)
    >>> dag = DAG()
    >>> lines = dag.new_vertex("lines", P.from_iterable(["to be", "or not to be"]))
    >>> words = dag.new_vertex("long-words", P.fused(steps))
    >>> sink = dag.new_vertex("sink", P.collect())
    >>> _ = dag.edge(Edge.between(lines, words)).edge(Edge.between(words, sink))
    >>> run_dag(dag).result("sink")
    ['NOT']
    ```

    :param steps: a `Chain`, or `(kind, fn)` tuples with kind "map", "filter" or "flat_map".
    """
    checked = checked_steps(steps, "fused")
    if not checked:
        raise ValueError("fused: the chain has no steps")
    return StepsSupplier(checked)
