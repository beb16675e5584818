"""How long an epoch's sources run: the configured interval (`JobConfig.snapshot_interval_millis`),
shortened when the sources have caught up, so that the epoch as a whole lasts about the interval.

An epoch is one Spark job: its sources run for their span, then the later stages process what
they made, then the driver commits. With the span equal to the interval, an epoch lasts the
interval plus all the rest, and a row waits that much longer. As with Spark Structured Streaming's
processing-time trigger (a micro-batch starts every interval, or at once when the last one took
longer), the interval is then the time from one epoch's start to the next: the span is the
interval minus what the last committed epochs took beyond their span (the median of the last
three, so one slow epoch does not swing it), and at least `MIN_SPAN_SHARE` of the interval.

That pays only for sources that have **caught up**: a source that reads what is waiting (a
queue, a rate-limited generator, a directory that fills slowly) reads the same items in a shorter
span and then waits; its items reach their sinks sooner. A source with a **backlog** makes items
for as long as it runs (a generator over a finite range, a topic read from its start): a shorter
span would make fewer items per epoch while each epoch's fixed cost stays, so the job would run
many more epochs for the same items. Each task of a stage without upstream stages reports which
share of its span its processors sat idle (`EpochTask.idle_share`); when any of them was idle less
than `CAUGHT_UP_IDLE_SHARE` of it, the sources have a backlog and the next epoch runs the whole
interval. The first epoch, with nothing measured yet, runs the whole interval too.

With `JobConfig.epochs_within_interval` an epoch lasts about the interval under a backlog too
(latency first). There the rest grows with the span (the later stages process what the span
made), so "the interval less the rest" would swing; instead each committed epoch proposes the span
that would have made it last the interval, `span * interval / duration` (with a rest of
`a + b * span`, repeating this converges on the span that makes the epoch last the interval, by
the factor `a / interval` per epoch), and the next span is the median of the last three
proposals, between `MIN_SPAN_SHARE` of the interval and the interval. More, smaller epochs pay the
fixed cost of an epoch more often: throughput under a backlog goes down (docs/benchmarks.md).

`JETSPARK_EPOCH_SPAN=interval` in the driver's environment keeps every span at the interval.
"""

from __future__ import annotations

import os
import statistics
from collections import deque

#: The span never goes below this share of the interval.
MIN_SPAN_SHARE = 0.2
#: Committed epochs whose rest (duration minus span) the next span is computed from.
REMEMBERED = 3
#: A sources' task idle at least this share of its span has caught up with its input.
CAUGHT_UP_IDLE_SHARE = 0.25
#: The driver's environment variable that, set to `interval`, keeps every span at the interval.
SWITCH = "JETSPARK_EPOCH_SPAN"


def caught_up(least_idle_share: float | None) -> bool:
    """Whether the sources' tasks of an epoch all caught up, from the least share of its span one
    of them sat idle (see the module); False when none reported (assume a backlog)."""
    return least_idle_share is not None and least_idle_share >= CAUGHT_UP_IDLE_SHARE


class SpanPolicy:
    """The next epoch's span, from what the last committed epochs took (see the module)."""

    def __init__(self, interval: float, within_interval: bool = False) -> None:
        if interval <= 0:
            raise ValueError(f"the epoch interval must be positive, not {interval} s")
        self.interval = interval
        #: Shorten the span under a backlog too (`JobConfig.epochs_within_interval`).
        self.within_interval = within_interval
        self._rests: deque[float] = deque(maxlen=REMEMBERED)
        self._proposals: deque[float] = deque(maxlen=REMEMBERED)
        self._caught_up = False
        self._fixed = os.environ.get(SWITCH, "").strip().lower() == "interval"

    def next_span(self) -> float:
        """Seconds the next epoch's sources run before its terminal snapshot starts."""
        if self._fixed or not self._rests:
            return self.interval
        if self._caught_up:
            span = self.interval - statistics.median(self._rests)
        elif self.within_interval:
            span = statistics.median(self._proposals)
        else:
            return self.interval
        return min(self.interval, max(self.interval * MIN_SPAN_SHARE, span))

    def committed(self, span: float, duration: float, caught_up: bool) -> None:
        """An epoch whose sources ran `span` s committed `duration` s after it started; its
        sources had `caught_up` with their input (or had a backlog)."""
        self._rests.append(max(0.0, duration - span))
        # the span that would have made this epoch last the interval, had its rest grown or
        # shrunk with its span (a backlog)
        self._proposals.append(span * self.interval / duration if duration > 0 else self.interval)
        self._caught_up = caught_up
