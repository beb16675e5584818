"""The Outbox: where a processor deposits its output, one bucket per outbound edge ordinal."""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any


class Outbox(abc.ABC):
    """Output of a processor, bounded: an offer returns False when the bucket is full.

    After an offer returned False, the processor must return from the current call and offer the
    *same* item (to the same ordinals) again before offering anything else; the engine raises
    `ProcessorContractError` if it does not. Offering to several ordinals remembers which ones
    already accepted the item and retries only the others.

    A processor with no outbound edges may offer: the items are accepted and dropped.
    """

    @abc.abstractmethod
    def bucket_count(self) -> int:
        """Number of outbound edge ordinals (the snapshot bucket is not counted)."""

    @abc.abstractmethod
    def offer(self, item: Any) -> bool:
        """Offer `item` to every outbound edge; True when all accepted it."""

    @abc.abstractmethod
    def offer_to(self, ordinal: int | Sequence[int], item: Any) -> bool:
        """Offer `item` to one ordinal (-1 means all) or to several; True when all accepted it."""

    @abc.abstractmethod
    def offer_to_snapshot(self, key: Any, value: Any) -> bool:
        """Add a snapshot entry. Allowed only from `save_to_snapshot` and `snapshot_commit_prepare`.

        The entry is serialized at once, so the caller may change `value` afterwards. A key wrapped
        in `BroadcastKey` is restored to every processor; any other key to the processor that owns
        the key's partition when the job restores.
        """

    @abc.abstractmethod
    def has_unfinished_item(self) -> bool:
        """True after an offer returned False and before the same item was accepted."""
