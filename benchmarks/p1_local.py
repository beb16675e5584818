"""Benchmark P1 on one process: jetspark's local runner against a bare Python loop (and Bytewax).

Pipeline: N ints -> map x*2 -> filter x % 3 != 0 -> count by str(x % 1000) -> sink, written
three ways for jetspark: the user's own `AbstractProcessor` subclasses (benchmarks/user_processors.py,
one vertex per step), the built-ins one vertex per step, and the built-ins with the steps handed to
the aggregation by hand (`steps=`).

    python benchmarks/p1_local.py [--n 1000000] [--repeat 5] [--profile]

Every contender computes the same counts (checked). Times are wall-clock, best of `--repeat`
interleaved runs, and reported as items/s and as a ratio to the bare loop measured in the same run.
Bytewax 0.21 runs too when it is installed (`pip install bytewax==0.21.1`).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import time
from collections.abc import Callable

from user_processors import p1_user_dag

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig
from jetspark.runners.local import LocalRunner

Counts = dict[str, int]


def double(x: int) -> int:
    return x * 2


def not_divisible_by_3(x: int) -> bool:
    return x % 3 != 0


def key_of(x: int) -> str:
    return str(x % 1000)


def bare_loop(n: int) -> Counts:
    counts: Counts = {}
    for x in range(n):
        y = x * 2
        if y % 3 != 0:
            key = str(y % 1000)
            counts[key] = counts.get(key, 0) + 1
    return counts


def bare_loop_calling_the_functions(n: int) -> Counts:
    """The bare loop, but calling the user's three functions as the built-ins must: their floor."""
    counts: Counts = {}
    for x in range(n):
        y = double(x)
        if not_divisible_by_3(y):
            key = key_of(y)
            counts[key] = counts.get(key, 0) + 1
    return counts


def p1_dag(n: int) -> DAG:
    """source -> map -> filter -> count (two stages, partitioned by key) -> collect: one built-in
    vertex per step (the planner fuses map and filter into the count's first stage)."""
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(n)))
    doubled = dag.new_vertex("double", P.map(double))
    kept = dag.new_vertex("filter", P.filter(not_divisible_by_3))
    dag.edge(Edge.between(source, doubled)).edge(Edge.between(doubled, kept))
    counted = P.aggregate_by_key(dag, "count", kept, key_of, P.counting())
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(counted, sink))
    return dag


def p1_hand_fused_dag(n: int) -> DAG:
    """The steps handed to the aggregation's first stage by the user (`steps=`)."""
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(n)))
    steps = P.Chain().map(double).filter(not_divisible_by_3)
    counted = P.aggregate_by_key(dag, "count", source, key_of, P.counting(), steps=steps)
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(counted, sink))
    return dag


def jetspark_local(dag: DAG, members: int = 1) -> Counts:
    job = LocalRunner(member_count=members).run(dag, JobConfig(name="p1"))
    return dict(job.result("sink"))


def bytewax_flow(n: int) -> Counts | None:
    try:
        import bytewax.operators as op
        from bytewax.dataflow import Dataflow
        from bytewax.testing import TestingSink, TestingSource, run_main
    except ImportError:
        return None
    out: list[tuple[str, int]] = []
    flow = Dataflow("p1")
    stream = op.input("source", flow, TestingSource(range(n), batch_size=1024))
    stream = op.filter("filter", op.map("map", stream, double), not_divisible_by_3)
    counted = op.count_final("count", stream, key_of)
    op.output("sink", counted, TestingSink(out))
    run_main(flow)
    return dict(out)


def best_of(repeat: int, fn: Callable[[], Counts | None]) -> tuple[float, Counts | None]:
    best = float("inf")
    result: Counts | None = None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument(
        "--profile",
        choices=["user", "builtins"],
        help="print where jetspark's time goes for the user processors or the built-ins",
    )
    args = parser.parse_args()
    n = args.n

    contenders: list[tuple[str, Callable[[], Counts | None]]] = [
        ("bare Python loop", lambda: bare_loop(n)),
        ("bare loop calling the 3 functions", lambda: bare_loop_calling_the_functions(n)),
        ("jetspark user processors", lambda: jetspark_local(p1_user_dag(n, P.collect(), False))),
        ("jetspark built-ins, a vertex per step", lambda: jetspark_local(p1_dag(n))),
        ("jetspark built-ins, fused by hand", lambda: jetspark_local(p1_hand_fused_dag(n))),
        ("jetspark built-ins, 3 members", lambda: jetspark_local(p1_dag(n), 3)),
        ("Bytewax 0.21 run_main", lambda: bytewax_flow(n)),
    ]
    times: dict[str, float] = {}
    #: Per round, each contender's time over the bare loop's time in that same round.
    round_ratios: dict[str, list[float]] = {}
    expected = bare_loop(n)
    for _ in range(args.repeat):  # interleave, so that a noisy moment hits everyone alike
        this_round: dict[str, float] = {}
        for name, fn in contenders:
            elapsed, result = best_of(1, fn)
            if result is None:
                continue
            if result != expected:
                raise SystemExit(f"{name} computed different counts")
            times[name] = min(times.get(name, float("inf")), elapsed)
            this_round[name] = elapsed
        for name, elapsed in this_round.items():
            round_ratios.setdefault(name, []).append(elapsed / this_round["bare Python loop"])
    baseline = times["bare Python loop"]
    print(
        f"P1, N = {n:,}, best of {args.repeat} (wall clock); the last column is the median of the rounds' ratios"
    )
    print(f"{'contender':40} {'seconds':>8} {'items/s':>12} {'x bare loop':>12} {'median x':>9}")
    for name, _ in contenders:
        if name in times:
            t = times[name]
            median = statistics.median(round_ratios[name])
            print(f"{name:40} {t:8.3f} {n / t:12,.0f} {t / baseline:12.2f} {median:9.2f}")
        else:
            print(f"{name:40} not installed")
    if args.profile:
        from jetspark.runners.local import LocalJob

        dag = p1_user_dag(n, P.collect(), False) if args.profile == "user" else p1_dag(n)
        job = LocalJob(dag, JobConfig(), 1, 1024)
        profiler = cProfile.Profile()
        profiler.runcall(job._run, None, None)  # in this thread, so that the profiler sees the engine
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
