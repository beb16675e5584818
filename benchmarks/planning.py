"""Planner benchmarks on Spark `local[2]`: pruning (seed 000) and adaptive batch parallelism (seed 002).

    python benchmarks/planning.py [--repeats 3] [--only pruning,adaptive]

Pruning: a tiny keyed lookup on a 271-partition source. The source is a pair RDD of 100,000
`(k, k*k)` pairs partitioned with `partitionBy(271, stable_hash)`, cached and computed before the
first run. The job reads the pairs of one key and collects their values, on 2 members:

- `pruned`: `from_rdd(rdd, keys={4242})` -> `map` -> `collect`, pruning on (the default): the
  source reads the one partition of the key (one Spark task), the other member is not deployed;
- `unpruned`: `from_rdd(rdd)` -> `filter(key == 4242)` -> `map` -> `collect` with
  `JobConfig(pruning=False)`: 271 source tasks, every member deployed.

Adaptive parallelism: `from_iterable(range(N))` -> `map(n -> (key, 1))` -> an edge partitioned by
key, distributed -> `combine_by_key(summing())` -> `collect`, with 271 members:

- `small`: N = 20,000, keys uniform over 1,000;
- `skewed`: N = 400,000, nine items in ten on key 0, the rest uniform over 1,000 keys.

Each runs with `fixed` (one task per member and stage: 271 + 271 tasks) and with adaptive
parallelism (`power_of_2` and `evenly_by_bytes`, 256 KiB per task, at most 64 tasks, sources on
Spark's default parallelism); the report gives the job time (median of `--repeats` runs, after
one warm-up run of each contender), the task count of the combining stage and its tasks' input
bytes (min / median / max), as measured by adaptive parallelism on the shuffle; the fixed run's
tasks are its members. Results are checked against each other. Run from the repository root.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

from jetspark.core import DAG, Edge, JobConfig, stable_hash
from jetspark.core.config import AdaptiveParallelism, ParallelismDecider
from jetspark.processors import collect, combine_by_key, entry_key, filter, from_iterable, map, summing
from jetspark.runners.spark import SparkJob, SparkRunner, from_rdd
from jetspark.runners.spark.session import get_session

KEY = 4242


def timed(run: Callable[[], SparkJob], repeats: int) -> tuple[float, SparkJob]:
    """Median wall time of `repeats` runs after one warm-up; the last run's job."""
    run()
    times = []
    job = None
    for _ in range(repeats):
        start = time.perf_counter()
        job = run()
        times.append(time.perf_counter() - start)
    assert job is not None
    return statistics.median(times), job


def task_count(spark: Any, job: SparkJob) -> int:
    tracker = spark.sparkContext.statusTracker()
    total = 0
    for job_id in tracker.getJobIdsForGroup(job.group):
        for stage_id in tracker.getJobInfo(job_id).stageIds:
            stage = tracker.getStageInfo(stage_id)
            total += stage.numCompletedTasks if stage is not None else 0
    return total


def _value(pair: tuple[int, int]) -> int:
    return pair[1]


def _is_key(pair: tuple[int, int]) -> bool:
    return pair[0] == KEY


def lookup_dag(rdd: Any, pruned: bool) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", from_rdd(rdd, keys={KEY} if pruned else None))
    step = dag.new_vertex("value", map(_value) if pruned else filter(_is_key))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, step))
    if pruned:
        dag.edge(Edge.between(step, sink))
    else:
        value = dag.new_vertex("value2", map(_value))
        dag.edge(Edge.between(step, value))
        dag.edge(Edge.between(value, sink))
    return dag


def bench_pruning(spark: Any, repeats: int) -> list[str]:
    sc = spark.sparkContext
    rdd = sc.parallelize([(k, k * k) for k in range(100_000)], 8).partitionBy(271, stable_hash).cache()
    rdd.count()
    runner = SparkRunner(spark)
    lines = [
        "| lookup of one key, 271-partition source, 2 members | median s | Spark tasks | plan metrics |",
        "|---|---|---|---|",
    ]
    results = {}
    for name, pruned, config in (
        ("pruned", True, JobConfig(member_count=2)),
        ("unpruned", False, JobConfig(member_count=2, pruning=False)),
    ):
        seconds, job = timed(
            functools.partial(runner.run, lookup_dag(rdd, pruned), config, timeout=600), repeats
        )
        results[name] = (seconds, job.result("sink"))
        metrics = job.plan_metrics()
        shown = f"members deployed {metrics['members_deployed']}, partitions read {metrics['source_partitions_read'] or 271}"
        lines.append(f"| {name} | {seconds:.3f} | {task_count(spark, job)} | {shown} |")
    assert results["pruned"][1] == results["unpruned"][1] == [KEY * KEY], results
    lines.append(f"\nunpruned / pruned = {results['unpruned'][0] / results['pruned'][0]:.1f}x")
    return lines


def _skewed_key(n: int) -> tuple[int, int]:
    return (0 if n % 10 else n % 1000, 1)


def _uniform_key(n: int) -> tuple[int, int]:
    return (n % 1000, 1)


def counting_dag(count: int, key: Callable[[int], tuple[int, int]]) -> DAG:
    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(count)))
    pairs = dag.new_vertex("pairs", map(key))
    total = dag.new_vertex("total", combine_by_key(summing()))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(numbers, pairs))
    dag.edge(Edge.between(pairs, total).partitioned(entry_key).distributed())
    dag.edge(Edge.between(total, sink))
    return dag


def _spread(sizes: list[int]) -> str:
    return f"{min(sizes):,} / {int(statistics.median(sizes)):,} / {max(sizes):,}"


def bench_adaptive(spark: Any, repeats: int) -> list[str]:
    runner = SparkRunner(spark)
    lines = [
        "| data | contender | median s | combining tasks | task input bytes min / median / max |",
        "|---|---|---|---|---|",
    ]
    for data, count, key in (("small", 20_000, _uniform_key), ("skewed", 400_000, _skewed_key)):
        dag = counting_dag(count, key)
        expected = None
        member_sizes: list[int] = []
        rows: list[tuple[str, float, int, str | None]] = []
        for contender in ("fixed", *ParallelismDecider):
            if contender == "fixed":
                config = JobConfig(member_count=271)
            else:
                settings = AdaptiveParallelism(
                    decider=contender, bytes_per_task=256 * 1024, min_parallelism=1, max_parallelism=64
                )
                config = JobConfig(member_count=271, adaptive_parallelism=settings)
            seconds, job = timed(functools.partial(runner.run, dag, config, timeout=1200), repeats)
            result = sorted(job.result("sink"))
            assert expected is None or result == expected, f"{data} {contender}: different results"
            expected = result
            if job.adaptive_decisions:
                decision = job.adaptive_decisions[0]
                member_sizes = list(decision.sizes)
                rows.append(
                    (contender.value, seconds, len(decision.ranges), _spread(list(decision.task_bytes)))
                )
            else:
                rows.append(("fixed 271", seconds, 271, None))
        for name, seconds, tasks, spread in rows:
            shown = spread if spread is not None else _spread(member_sizes) + " (the members' bytes)"
            lines.append(f"| {data} ({count:,} items) | {name} | {seconds:.2f} | {tasks} | {shown} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="pruning,adaptive")
    args = parser.parse_args()
    spark = get_session("local[2]")
    print(f"Spark {spark.version}, local[2], {args.repeats} timed runs each (median)\n")
    if "pruning" in args.only:
        print("\n".join(bench_pruning(spark, args.repeats)) + "\n")
    if "adaptive" in args.only:
        print("\n".join(bench_adaptive(spark, args.repeats)))


if __name__ == "__main__":
    main()
