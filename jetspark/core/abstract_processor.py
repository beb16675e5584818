"""AbstractProcessor: the usual base class, one item at a time instead of one inbox at a time."""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Sequence
from itertools import islice
from typing import Any

from jetspark.core.context import ProcessorContext
from jetspark.core.errors import ProcessorContractError
from jetspark.core.inbox import Inbox
from jetspark.core.outbox import SNAPSHOT_CHUNK, Outbox
from jetspark.core.processor import Processor
from jetspark.core.traverser import Traverser
from jetspark.core.watermark import Watermark

_NO_ITEM: Any = object()
_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)
_PER_ORDINAL = ("try_process0", "try_process1", "try_process2", "try_process3", "try_process4")


class AbstractProcessor(Processor):
    """Keeps the outbox and context, and turns `process` into per-item `try_process_item` calls.

    Override `try_process_item(ordinal, item)` (or `try_process0` ... `try_process4` for one
    ordinal): return True once the item is processed, False to get it again later (for example
    because an offer was rejected). Emit with `try_emit` and `emit_from_traverser`; snapshot with
    `try_emit_to_snapshot`; restore entry by entry in `restore_from_snapshot_entry(key, value)`.
    Watermarks are forwarded downstream unchanged by default.
    """

    outbox: Outbox
    context: ProcessorContext
    logger: logging.Logger

    def init(self, outbox: Outbox, context: ProcessorContext) -> None:
        self._bind(outbox, context)
        self.init_processor(context)

    def _bind(self, outbox: Outbox, context: ProcessorContext) -> None:
        """Take the outbox and context; also how a processor kept between Spark epochs
        (`runners.spark.state_cache`) is handed the next epoch's, without `init_processor`."""
        self.outbox = outbox
        if type(self).try_emit is AbstractProcessor.try_emit:
            # One Python call per emitted item instead of two: the instance attribute shadows the
            # method and is exactly what the method would call.
            self.try_emit = outbox.offer  # type: ignore[method-assign]
        self.context = context
        self.logger = context.logger

    def init_processor(self, context: ProcessorContext) -> None:
        """Hook for subclasses: called from `init` once the outbox and context are set."""

    # ---- input ----------------------------------------------------------------------------

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if 0 <= ordinal < len(_PER_ORDINAL):
            name = _PER_ORDINAL[ordinal]
            if getattr(type(self), name) is not getattr(AbstractProcessor, name):
                inbox.drain_while(getattr(self, name))
                return
        # The default try_process<n> would only forward: skip it, one Python call less per item.
        inbox.drain_while(self.try_process_item, ordinal)

    def try_process0(self, item: Any) -> bool:
        return self.try_process_item(0, item)

    def try_process1(self, item: Any) -> bool:
        return self.try_process_item(1, item)

    def try_process2(self, item: Any) -> bool:
        return self.try_process_item(2, item)

    def try_process3(self, item: Any) -> bool:
        return self.try_process_item(3, item)

    def try_process4(self, item: Any) -> bool:
        return self.try_process_item(4, item)

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        """Process one item from edge `ordinal`; False to receive the same item again later."""
        raise NotImplementedError(
            f"{type(self).__name__} received an item on ordinal {ordinal} but does not override "
            "try_process_item() or try_process{ordinal}()"
        )

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self.outbox.offer(watermark)

    # ---- output ---------------------------------------------------------------------------

    def try_emit(self, item: Any) -> bool:
        """Offer `item` to every outbound edge."""
        return self.outbox.offer(item)

    def try_emit_to(self, ordinal: int | Sequence[int], item: Any) -> bool:
        """Offer `item` to one ordinal or several."""
        return self.outbox.offer_to(ordinal, item)

    def try_emit_to_snapshot(self, key: Any, value: Any) -> bool:
        """Offer a snapshot entry; allowed from `save_to_snapshot` and `snapshot_commit_prepare`."""
        return self.outbox.offer_to_snapshot(key, value)

    def emit_from_traverser(self, traverser: Traverser[Any], ordinal: int | Sequence[int] = -1) -> bool:
        """Emit items from `traverser` until it returns None (True) or the outbox rejects one (False).

        A rejected item is kept and emitted first on the next call with the same traverser.
        """
        outbox = self.outbox
        key = id(traverser)
        pending = self.__dict__.get("_jetspark_pending")
        if pending:  # items taken from the traverser but not accepted last time go first
            left = pending.pop(key, None)
            if left is not None:
                left_items = iter(left)
                refused = outbox.offer_from(left_items, ordinal)
                if refused:
                    refused.extend(left_items)
                    pending[key] = refused
                    return False
        # The traverser is called from C and the outbox takes the items in bulk.
        refused = outbox.offer_from(iter(traverser.next, None), ordinal)
        if refused:
            self._pending_traverser_item[key] = refused
            return False
        return True

    def emit_from_traverser_to_snapshot(self, traverser: Traverser[tuple[Any, Any]]) -> bool:
        """Emit `(key, value)` entries from `traverser` to the snapshot, like `emit_from_traverser`.

        In bulk (`Outbox.offer_all_to_snapshot`), a chunk of up to 32,768 entries a call (False
        after a full one, so that a cooperative call stays short); entries taken from the
        traverser but refused are kept and offered first on the next call."""
        unfinished = self.__dict__.get("_jetspark_saving")
        if unfinished is not None and unfinished is not traverser:
            raise ProcessorContractError(
                f"{type(self).__name__}.save_to_snapshot() passed emit_from_traverser_to_snapshot a "
                "new traverser while the one of its previous call was not done: the save would "
                "start over on every call and never end; keep the traverser in a field until the "
                "call returns True (then drop it), as Jet's processors do"
            )
        pending = self._pending_traverser_item
        key = id(traverser)
        chunk: list[Any] = pending.pop(key, None) or []
        if len(chunk) < SNAPSHOT_CHUNK:
            chunk.extend(islice(iter(traverser.next, None), SNAPSHOT_CHUNK - len(chunk)))
        done = not chunk
        if chunk:
            taken = self.outbox.offer_all_to_snapshot(list(map(_FIRST, chunk)), list(map(_SECOND, chunk)))
            if taken < len(chunk):
                pending[key] = chunk[taken:]
            else:
                done = len(chunk) < SNAPSHOT_CHUNK  # a full chunk: the traverser may hold more
        self.__dict__["_jetspark_saving"] = None if done else traverser
        return done

    @property
    def _pending_traverser_item(self) -> dict[int, Any]:
        try:
            return self.__dict__["_jetspark_pending"]  # type: ignore[no-any-return]
        except KeyError:
            pending: dict[int, Any] = {}
            self.__dict__["_jetspark_pending"] = pending
            return pending

    def flat_mapper(
        self, mapper: Callable[[Any], Traverser[Any]], ordinal: int | Sequence[int] = -1
    ) -> FlatMapper:
        """A helper that emits the items `mapper` returns for each input item, honouring back-pressure."""
        return FlatMapper(self, mapper, ordinal)

    # ---- snapshot restore -----------------------------------------------------------------

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        while (entry := inbox.poll()) is not None:
            self.restore_from_snapshot_entry(entry[0], entry[1])

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        """Restore one snapshot entry. Default: raises; override when saving state."""
        raise NotImplementedError(
            f"{type(self).__name__} received snapshot entry {key!r} but does not override "
            "restore_from_snapshot_entry()"
        )


class FlatMapper:
    """Emits the traverser a mapper returns for each item; `try_process(item)` is False until all went out."""

    __slots__ = ("_current", "_item", "_mapper", "_ordinal", "_processor")

    def __init__(
        self,
        processor: AbstractProcessor,
        mapper: Callable[[Any], Traverser[Any]],
        ordinal: int | Sequence[int],
    ) -> None:
        self._processor = processor
        self._mapper = mapper
        self._ordinal = ordinal
        self._current: Traverser[Any] | None = None
        self._item: Any = _NO_ITEM

    def try_process(self, item: Any) -> bool:
        """Emit the output for `item`; False when the outbox filled up (call again with the same item)."""
        if self._current is None or self._item is not item:
            self._current = self._mapper(item)
            self._item = item
        if self._processor.emit_from_traverser(self._current, self._ordinal):
            self._current = None
            self._item = _NO_ITEM
            return True
        return False
