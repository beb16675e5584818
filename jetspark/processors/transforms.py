"""Stateless transforms: `map`, `filter`, `flat_map` and `fused`, a chain of them in one processor.

Python's per-item cost dominates a pipeline, so these processors work on the whole inbox in one
tight loop: methods bound to locals, `for item in inbox`, and the processed items removed at the
end with one `drain_to`. When the outbox rejects an output, the input item that produced it stays
in the inbox and the output is kept *pending*: the next call offers it again unchanged (the
outbox requires the same item) before going on. Keeping the input in the inbox until all of its
output went out matters for snapshots: `save_to_snapshot` runs only with an empty inbox, so no
output can be left behind a snapshot barrier while its input counts as consumed before it.

`fused` runs a chain of map/filter/flat_map steps in one processor: no queue, no outbox and no
inbox between the steps. The chain is compiled into one function (`_codegen`), so each step costs
only the call of the user's function.

Jet semantics: a map step that returns None drops the item; a flat_map step's None outputs are
skipped too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeAlias

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.inbox import Inbox
from jetspark.core.suppliers import ProcessorSupplier
from jetspark.processors._codegen import Step, checked_steps, compile_chain

_NO_ITEM: Any = object()


class _TransformP(AbstractProcessor):
    """Shared state: the pending output and a scratch list to drain processed items into."""

    def __init__(self) -> None:
        self._pending: Any = _NO_ITEM
        self._scratch: list[Any] = []

    def _remove(self, inbox: Inbox, count: int | None) -> None:
        """Remove the first `count` items (all when None) from the inbox."""
        if count != 0:
            scratch = self._scratch
            inbox.drain_to(scratch, count)
            scratch.clear()


#: `run(items, offer, start)`: offers the chain's output of each item; on a rejection returns
#: `(index of the item, rejected output)`, else None. Indexes count from `start`.
_RunLoop: TypeAlias = Callable[[Iterator[Any], Callable[[Any], bool], int], "tuple[int, Any] | None"]


class _ChainP(_TransformP):
    """map and filter steps, compiled into one loop over the inbox (see `_compile`)."""

    def __init__(self, steps: tuple[Step, ...]) -> None:
        super().__init__()
        self._run: _RunLoop = _compile(steps, loop=True)

    def process(self, ordinal: int, inbox: Inbox) -> None:
        offer = self.outbox.offer
        items = iter(inbox)
        start = 0
        if self._pending is not _NO_ITEM:
            if not offer(self._pending):
                return
            self._pending = _NO_ITEM
            next(items)
            start = 1
        stopped = self._run(items, offer, start)
        if stopped is None:
            self._remove(inbox, None)
        else:
            done, self._pending = stopped
            self._remove(inbox, done)


class _FlatMapP(_TransformP):
    """Offers every item of the iterable `fn(item)` returns (None items are skipped)."""

    def __init__(self, fn: Callable[[Any], Iterable[Any]]) -> None:
        super().__init__()
        self._fn = fn
        self._outputs: Iterator[Any] | None = None

    def process(self, ordinal: int, inbox: Inbox) -> None:
        offer = self.outbox.offer
        fn = self._fn
        items = iter(inbox)
        done = 0
        if self._outputs is not None:
            if not self._finish_head(self._outputs):
                return
            next(items)
            done = 1
        for item in items:
            outputs = iter(fn(item))
            for out in outputs:
                if out is not None and not offer(out):
                    self._pending = out
                    self._outputs = outputs
                    self._remove(inbox, done)
                    return
            done += 1
        self._remove(inbox, done)

    def _finish_head(self, outputs: Iterator[Any]) -> bool:
        """Finish the outputs of the head item; False if the outbox rejected one again."""
        offer = self.outbox.offer
        if self._pending is not _NO_ITEM:
            if not offer(self._pending):
                return False
            self._pending = _NO_ITEM
        for out in outputs:
            if out is not None and not offer(out):
                self._pending = out
                return False
        self._outputs = None
        return True


def _compile(steps: tuple[Step, ...], loop: bool) -> Any:
    """With `loop`, a map/filter chain becomes `run(items, offer, start)` (see `_RunLoop`), the
    steps inlined into the loop over the inbox; otherwise the chain (which may hold flat_map steps)
    becomes a generator function `outputs(item)` yielding the item's outputs."""
    if loop:
        return compile_chain(
            steps,
            header=["def run(items, offer, start):", "    for done, item in enumerate(items, start):"],
            innermost=["if not offer(item):", "    return done, item"],
            footer=["    return None"],
        )
    return compile_chain(steps, header=["def outputs(item):"], innermost=["yield item"])


class Chain:
    """An immutable list of map/filter/flat_map steps, for `fused`: `Chain().map(f).filter(p)`.

    Iterating it gives the `(kind, fn)` steps, so `fused` also takes a plain list of those.
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
    if any(kind == "flat_map" for kind, _ in steps):
        return _FlatMapP(_compile(steps, loop=False))
    return _ChainP(steps)


def _check_callable(factory: str, fn: object) -> None:
    if not callable(fn):
        raise TypeError(f"{factory}: expected a callable, got {fn!r}")


def map(fn: Callable[[Any], Any]) -> ProcessorSupplier:
    """Emit `fn(item)` for each item; an item mapped to None is dropped."""
    _check_callable("map", fn)
    return ProcessorSupplier.of(functools.partial(_ChainP, (("map", fn),)))


def filter(predicate: Callable[[Any], Any]) -> ProcessorSupplier:
    """Emit the items for which `predicate(item)` is true."""
    _check_callable("filter", predicate)
    return ProcessorSupplier.of(functools.partial(_ChainP, (("filter", predicate),)))


def flat_map(fn: Callable[[Any], Iterable[Any]]) -> ProcessorSupplier:
    """Emit every item of the iterable (or `Traverser`) `fn(item)` returns; None items are skipped."""
    _check_callable("flat_map", fn)
    return ProcessorSupplier.of(functools.partial(_FlatMapP, fn))


def fused(steps: Iterable[Step]) -> ProcessorSupplier:
    """Run a chain of stateless steps in one processor.

    `steps` is a `Chain` (`Chain().map(f).filter(p).flat_map(g)`) or a list of `(kind, fn)`
    tuples with kind "map", "filter" or "flat_map". The output equals that of one vertex per step
    joined by local edges, without the queues between them.
    """
    checked = checked_steps(steps, "fused")
    if not checked:
        raise ValueError("fused: the chain has no steps")
    return ProcessorSupplier.of(functools.partial(_fused_processor, checked))
