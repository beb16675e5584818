"""How long an epoch's sources run, so that the epoch as a whole lasts about the configured
interval (`JobConfig.snapshot_interval_millis`).

An epoch is one Spark job: its sources run for their span, then the later stages process what
they made, then the driver commits. With the span equal to the interval, an epoch lasted the
interval plus all the rest (1 s epochs took 1.7 s with little state), and a row waited that much
longer. As in Spark Structured Streaming's processing-time trigger (a micro-batch starts every
interval, or at once when the last one took longer), the interval here is the time from one
epoch's start to the next: the span is the interval minus what the last committed epochs took
beyond their span (the median of the last three, so one slow epoch does not swing it), and at
least `MIN_SPAN_SHARE` of the interval, so that an epoch whose rest outlasts the interval still
gives its sources time to run. The first epoch, with nothing measured yet, runs the whole interval.

A source that reads what is waiting (a queue, a directory, the generator's backlog by its rate)
reads the same items in a shorter span, so a shorter span costs no throughput; it only moves the
snapshot sooner.
"""

from __future__ import annotations

import statistics
from collections import deque

#: The span never goes below this share of the interval.
MIN_SPAN_SHARE = 0.2
#: Committed epochs whose rest (duration minus span) the next span is computed from.
REMEMBERED = 3


class SpanPolicy:
    """The next epoch's span, from what the last committed epochs took (see the module)."""

    def __init__(self, interval: float) -> None:
        if interval <= 0:
            raise ValueError(f"the epoch interval must be positive, not {interval} s")
        self.interval = interval
        self._rests: deque[float] = deque(maxlen=REMEMBERED)

    def next_span(self) -> float:
        """Seconds the next epoch's sources run before its terminal snapshot starts."""
        if not self._rests:
            return self.interval
        rest = statistics.median(self._rests)
        return max(self.interval * MIN_SPAN_SHARE, self.interval - rest)

    def committed(self, span: float, duration: float) -> None:
        """An epoch whose sources ran `span` s committed `duration` s after it started."""
        self._rests.append(max(0.0, duration - span))
