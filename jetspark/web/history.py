"""The last minutes of each job's figures, sampled once a second while the UI serves.

A page shows figures of the moment; the charts need the minutes before it, whether or not a
page was open. So the registry's `Sampler` reads every running job's per-vertex counters once a
`SAMPLE_SECONDS` (on the local runner `metrics()`; on Spark what the tasks last reported, for a
job in epochs added to its committed epochs' figures) into a `History` of `HISTORY_SECONDS`, and reads an
ended job once more, for its final figures. Rates and back-pressure are differences between two
samples of a history: nothing is added to the engine's hot path.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Callable, Iterable
from typing import NamedTuple

from jetspark.runners.job import JobHandle

#: Seconds between two samples of a job.
SAMPLE_SECONDS = 1.0
#: Seconds of samples kept per job (the span of the charts).
HISTORY_SECONDS = 300.0
#: The counters sampled per vertex, in this order.
COUNTERS = ("received", "emitted", "backpressured_ms")


class Sample(NamedTuple):
    """Per vertex `COUNTERS` at wall-clock time `at`."""

    at: float
    figures: dict[str, tuple[int, int, int]]


class Rates(NamedTuple):
    """A vertex's items per second in and out, and the share of time its processors were
    back-pressured (0 to 1), between two samples."""

    rate_in: float
    rate_out: float
    backpressure: float


class History:
    """One job's samples, oldest first, at most `HISTORY_SECONDS` of them."""

    def __init__(self) -> None:
        self.samples: deque[Sample] = deque(maxlen=int(HISTORY_SECONDS / SAMPLE_SECONDS) + 1)

    def add(self, at: float, metrics: dict[str, dict[str, int]]) -> None:
        figures = {
            vertex: (values.get("received", 0), values.get("emitted", 0), values.get("backpressured_ms", 0))
            for vertex, values in metrics.items()
        }
        self.samples.append(Sample(at, figures))

    def rates(self, processors: dict[str, int]) -> dict[str, Rates]:
        """Per vertex, between the last two samples; `processors` counts each vertex's processors
        (back-pressure is the share of their combined time)."""
        if len(self.samples) < 2:
            return {}
        return _rates(self.samples[-2], self.samples[-1], processors)

    def series(self, vertex: str) -> tuple[list[float], list[float], list[float]]:
        """Times and the items per second in and out of `vertex` between consecutive samples."""
        times: list[float] = []
        rates_in: list[float] = []
        rates_out: list[float] = []
        samples = list(self.samples)
        for before, after in itertools.pairwise(samples):
            rate = _rates(before, after, {}).get(vertex)
            if rate is not None:
                times.append(after.at)
                rates_in.append(rate.rate_in)
                rates_out.append(rate.rate_out)
        return times, rates_in, rates_out


def _rates(before: Sample, after: Sample, processors: dict[str, int]) -> dict[str, Rates]:
    elapsed = after.at - before.at
    if elapsed <= 0:
        return {}
    out = {}
    for vertex, (received, emitted, blocked_ms) in after.figures.items():
        was = before.figures.get(vertex, (0, 0, 0))
        share = max(blocked_ms - was[2], 0) / 1000 / elapsed / max(processors.get(vertex, 1), 1)
        out[vertex] = Rates(
            max(received - was[0], 0) / elapsed, max(emitted - was[1], 0) / elapsed, min(share, 1.0)
        )
    return out


class Sampler:
    """A daemon thread that calls `sample()` every `interval` seconds until `stop()`."""

    def __init__(self, sample: Callable[[], None], interval: float = SAMPLE_SECONDS) -> None:
        self._stop = threading.Event()
        self._sample = sample
        self._interval = interval
        self._thread = threading.Thread(target=self._run, name="jetspark web UI sampler", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                self._sample()
            except Exception:  # a job going away mid-read: the next round reads again
                continue

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def read_counters(job: JobHandle) -> dict[str, dict[str, int]]:
    """The job's per-vertex figures now (`JobHandle.current_metrics`): `metrics()`; on a running
    Spark batch job the counts its tasks last reported; on a job in epochs its committed epochs'
    counters plus the running epoch's as its tasks last reported them."""
    try:
        return job.current_metrics()
    except Exception:  # the Spark session is stopping
        return {}


def processor_counts(job: JobHandle, names: Iterable[str]) -> dict[str, int]:
    """Processors deployed per vertex under the job's plan (1 where it has none yet)."""
    plan = job.plan
    out = {}
    for name in names:
        planned = plan.vertices.get(name) if plan is not None else None
        out[name] = len(planned.processor_ids()) if planned is not None else 1
    return out
