"""Event time on a stream: clicks per page over a sliding window, with watermarks, an allowed
lag, late clicks counted, and early results.

    python examples/windowed_clicks.py                   # 20,000 clicks on the local runner
    python examples/windowed_clicks.py --clicks 0        # endless: Ctrl-C stops it

A generator emits clicks `(timestamp_ms, page)` whose timestamps run up to 300 ms out of order.
`insert_watermarks` stamps each source processor's stream with watermarks 200 ms behind the
highest timestamp seen, so a click more than 200 ms late arrives behind
windows that are already out: the window counts it in `late_items_dropped` and drops it. The
window counts clicks per page over the last second, every 250 ms, in two stages (per frame, then
per window, partitioned by page), and prints each window's top pages as it closes.
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from jetspark import DAG, AbstractProcessor, Edge, JobConfig
from jetspark import processors as P
from jetspark.runners.local import LocalRunner

PAGES = [f"/page/{n}" for n in range(20)]
START_MS = 1_700_000_000_000


def click(seq: int) -> tuple[int, str]:
    """The click with sequence number `seq`: 100 clicks per second of event time, shuffled by up
    to 300 ms, on pages with a skewed popularity."""
    rng = random.Random(seq)
    timestamp = START_MS + seq * 10 - rng.randrange(0, 300)
    page = PAGES[min(int(rng.expovariate(0.3)), len(PAGES) - 1)]
    return (timestamp, page)


def timestamp_of(item: tuple[int, str]) -> int:
    return item[0]


def page_of(item: tuple[int, str]) -> str:
    return item[1]


class PrintTop(AbstractProcessor):
    """Prints, per closed window, its three busiest pages (a sink: watermarks end here)."""

    def init_processor(self, context: Any) -> None:
        self.windows: dict[int, list[tuple[int, str]]] = {}

    def try_process_item(self, ordinal: int, result: P.WindowResult) -> bool:
        if not result.early:
            self.windows.setdefault(result.end, []).append((result.value, result.key))
        return True

    def try_process_watermark(self, watermark: Any) -> bool:
        for end in sorted(e for e in self.windows if e <= watermark.timestamp):
            self._print(end)
        return True

    def complete(self) -> bool:
        for end in sorted(self.windows):
            self._print(end)
        return True

    def _print(self, end: int) -> None:
        top = sorted(self.windows.pop(end), reverse=True)[:3]
        shown = ", ".join(f"{page} {count}" for count, page in top)
        print(f"window ending +{end - START_MS:>6} ms: {shown}")


def build_dag(clicks: int | None) -> DAG:
    dag = DAG()
    source = dag.new_vertex("clicks", P.generator_stream(count=clicks, items_per_second=20_000, fn=click), 2)
    stamps = dag.new_vertex(
        "stamps", P.insert_watermarks(timestamp_of, allowed_lag=200, throttling_frame_size=250), 2
    )
    dag.edge(Edge.between(source, stamps).isolated())
    policy = P.WindowPolicy.sliding(window_size=1_000, slide=250)
    windows = P.window_aggregate(dag, "per-page", stamps, page_of, timestamp_of, policy, P.counting())
    printer = dag.new_vertex("print", PrintTop, 1)
    dag.edge(Edge.between(windows, printer).all_to_one().distributed())
    return dag


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--clicks", type=int, default=20_000, help="how many clicks (0: endless)")
    args = parser.parse_args()
    started = time.monotonic()
    job = LocalRunner(1).submit(build_dag(args.clicks or None), JobConfig())
    try:
        job.join()
    except KeyboardInterrupt:
        job.cancel()
    late = job.metrics()["per-page-frames"].get(P.LATE_ITEMS_METRIC, 0)
    print(f"{late} late clicks dropped; {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()
