"""Benchmark: sliding-window counts on the local runner against a bare Python loop.

Events `(timestamp_ms, key)`, one per millisecond of event time, over `--keys` keys, counted per
key over a 10 s window sliding by 2 s. Contenders, each computing the same window counts
(checked against the bare loop's):

- `loop`: a bare Python loop over the events, per-frame counts in dicts, windows summed at the end;
- `window`: `insert_watermarks` (throttled to the slide) -> `window_aggregate` (two stages) -> sink;
- `window, unthrottled`: the same with a watermark after every event (the default without
  `throttling_frame_size`), to show what throttling saves (on a tenth of the events);
- `count by key`: `aggregate_by_key` over the same events, no windows: what the windows add.

    python benchmarks/windows_local.py [--n 500000] [--keys 100] [--repeat 3]

Times are wall-clock, best of `--repeat` interleaved runs, reported as items/s and as a ratio to
the bare loop measured in the same run.
"""

from __future__ import annotations

import argparse
import functools
import operator
import time
from collections import Counter
from collections.abc import Callable

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig
from jetspark.runners.local import LocalRunner

WINDOW, SLIDE = 10_000, 2_000
POLICY = P.WindowPolicy.sliding(WINDOW, SLIDE)
ts_of = operator.itemgetter(0)
key_of = operator.itemgetter(1)
Results = Counter[tuple[int, int]]


def event_fn(keys: int) -> Callable[[int], tuple[int, int]]:
    def event(seq: int) -> tuple[int, int]:
        return (seq, (seq * 7919) % keys)

    return event


def bare_loop(n: int, keys: int) -> Results:
    """Per-frame counts in dicts, then each window's count per key summed from its frames."""
    event = event_fn(keys)
    frames: dict[int, Counter[int]] = {}
    for seq in range(n):
        timestamp, key = event(seq)
        end = timestamp - timestamp % SLIDE + SLIDE
        frame = frames.get(end)
        if frame is None:
            frame = frames[end] = Counter()
        frame[key] += 1
    out: Results = Counter()
    for frame_end, frame in frames.items():
        for window_end in range(frame_end, frame_end + WINDOW, SLIDE):
            for key, count in frame.items():
                out[(window_end, key)] += count
    return out


def window_dag(n: int, keys: int, throttle: int) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.generator_stream(count=n, fn=event_fn(keys)), 1)
    stamps = dag.new_vertex("stamps", P.insert_watermarks(ts_of, throttling_frame_size=throttle), 1)
    dag.edge(Edge.between(source, stamps).isolated())
    windows = P.window_aggregate(dag, "windows", stamps, key_of, ts_of, POLICY, P.counting())
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(windows, sink))
    return dag


def count_dag(n: int, keys: int) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.generator_stream(count=n, fn=event_fn(keys)), 1)
    counts = P.aggregate_by_key(dag, "counts", source, key_of, P.counting())
    sink = dag.new_vertex("sink", P.noop(), 1)
    dag.edge(Edge.between(counts, sink))
    return dag


def windows_of(job: object) -> Results:
    return Counter({(r.end, r.key): r.value for r in job.result("sink")})  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    n, keys = args.n, args.keys
    runner = LocalRunner(1)
    small = n // 10  # a watermark per event is so slow that a tenth of the events tells enough
    expected = {n: bare_loop(n, keys), small: bare_loop(small, keys)}

    def window(events: int, throttle: int) -> Callable[[], None]:
        def run() -> None:
            job = runner.run(window_dag(events, keys, throttle), JobConfig(), timeout=3600)
            assert windows_of(job) == expected[events], "the window counts differ from the bare loop's"

        return run

    contenders: dict[str, tuple[int, Callable[[], object]]] = {
        "loop": (n, functools.partial(bare_loop, n, keys)),
        "window": (n, window(n, SLIDE)),
        "window, unthrottled": (small, window(small, 1)),
        "count by key": (n, functools.partial(runner.run, count_dag(n, keys), JobConfig(), 3600)),
    }
    rate = dict.fromkeys(contenders, 0.0)
    for _ in range(args.repeat):
        for name, (events, run) in contenders.items():
            started = time.perf_counter()
            run()
            rate[name] = max(rate[name], events / (time.perf_counter() - started))
    print(f"{n:,} events, {keys} keys, window {WINDOW} ms sliding by {SLIDE} ms; best of {args.repeat}")
    for name, items_per_second in rate.items():
        ratio = rate["loop"] / items_per_second
        print(f"  {name:<22} {items_per_second:>12,.0f} items/s   {ratio:6.1f}x the loop's time per item")


if __name__ == "__main__":
    main()
