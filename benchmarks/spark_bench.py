"""Benchmark on Spark `local[2]`: jetspark against what a Spark user would write instead.

    python benchmarks/spark_bench.py [--n 4000000] [--corpus-mb 50] [--repeat 3]

(1) P1 at N ints: map x*2 -> filter x % 3 != 0 -> count by str(x % 1000).
(2) Word count over a generated text corpus of at least `--corpus-mb` MB, split on white space.

Contenders, all on one shared SparkSession with 2 members (= Spark partitions):

- the DataFrame API (the JVM does the work; no Python worker);
- RDD code as an experienced user writes it: count in a dict per partition (`mapPartitions`),
  then `reduceByKey` the partial counts: the baseline (1.00);
- RDD code from the textbook: `map` to `(key, 1)`, `reduceByKey`;
- jetspark built-ins, one vertex per step (`map`, `filter` / `flat_map`, `aggregate_by_key`);
- jetspark user processors: `AbstractProcessor` subclasses (benchmarks/user_processors.py)
  behind a partitioned distributed edge, so every item crosses the shuffle.

Results are checked equal; times are wall clock, best of `--repeat` interleaved runs.
"""

from __future__ import annotations

import argparse
import operator
import random
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import cloudpickle
import p1_local
import user_processors
from p1_local import double, key_of, not_divisible_by_3  # the same P1 steps as the local benchmark
from pyspark import cloudpickle as pyspark_cloudpickle

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig
from jetspark.runners.spark import SparkRunner, from_rdd, get_session

MEMBERS = 2
# Executors cannot import this script's folder: ship p1_local's functions by value, for jetspark
# (cloudpickle) and for plain PySpark (its own bundled copy of cloudpickle) alike.
for module in (p1_local, user_processors):
    cloudpickle.register_pickle_by_value(module)
    pyspark_cloudpickle.register_pickle_by_value(module)


def split_words(line: str) -> list[str]:
    return line.split()


def p1_builtins(runner: SparkRunner, n: int) -> dict[str, int]:
    """One vertex per step (the local benchmark's DAG); the planner fuses map and filter into the
    aggregation's first stage."""
    return dict(runner.run(p1_local.p1_dag(n), JobConfig(name="p1", member_count=MEMBERS)).result("sink"))


def p1_user(runner: SparkRunner, n: int) -> dict[str, int]:
    dag = user_processors.p1_user_dag(n, P.collect(), distributed=True)
    return dict(runner.run(dag, JobConfig(name="p1-user", member_count=MEMBERS)).result("sink"))


def p1_rdd_textbook(spark: Any, n: int) -> dict[str, int]:
    rdd = spark.sparkContext.range(0, n, numSlices=MEMBERS)
    pairs = rdd.map(double).filter(not_divisible_by_3).map(lambda x: (key_of(x), 1))
    return dict(pairs.reduceByKey(operator.add, MEMBERS).collect())


def _p1_partition_counts(numbers: Iterable[int]) -> Iterator[tuple[str, int]]:
    counts: dict[str, int] = {}
    for x in numbers:
        y = x * 2
        if y % 3 != 0:
            key = str(y % 1000)
            counts[key] = counts.get(key, 0) + 1
    return iter(counts.items())


def p1_rdd_experienced(spark: Any, n: int) -> dict[str, int]:
    rdd = spark.sparkContext.range(0, n, numSlices=MEMBERS)
    return dict(rdd.mapPartitions(_p1_partition_counts).reduceByKey(operator.add, MEMBERS).collect())


def p1_dataframe(spark: Any, n: int) -> dict[str, int]:
    from pyspark.sql import functions as F

    doubled = spark.range(0, n, 1, MEMBERS).select((F.col("id") * 2).alias("x"))
    kept = doubled.where(F.col("x") % 3 != 0)
    grouped = kept.groupBy((F.col("x") % 1000).cast("string").alias("key")).count()
    return {row["key"]: row["count"] for row in grouped.collect()}


def word_count_builtins(runner: SparkRunner, spark: Any, path: str) -> dict[str, int]:
    dag = DAG()
    lines = dag.new_vertex("lines", from_rdd(spark.sparkContext.textFile(path, MEMBERS)))
    words = dag.new_vertex("words", P.flat_map(split_words))
    dag.edge(Edge.between(lines, words))
    counted = P.aggregate_by_key(dag, "count", words, P.whole_item, P.counting())
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(counted, sink))
    return dict(runner.run(dag, JobConfig(name="word-count", member_count=MEMBERS)).result("sink"))


def word_count_user(runner: SparkRunner, spark: Any, path: str) -> dict[str, int]:
    lines = from_rdd(spark.sparkContext.textFile(path, MEMBERS))
    dag = user_processors.word_count_user_dag(lines, P.collect())
    return dict(runner.run(dag, JobConfig(name="word-count-user", member_count=MEMBERS)).result("sink"))


def word_count_rdd_textbook(spark: Any, path: str) -> dict[str, int]:
    lines = spark.sparkContext.textFile(path, MEMBERS)
    pairs = lines.flatMap(split_words).map(lambda word: (word, 1))
    return dict(pairs.reduceByKey(operator.add, MEMBERS).collect())


def _count_words(lines: Iterable[str]) -> Iterator[tuple[str, int]]:
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(line.split())
    return iter(counts.items())


def word_count_rdd_experienced(spark: Any, path: str) -> dict[str, int]:
    lines = spark.sparkContext.textFile(path, MEMBERS)
    return dict(lines.mapPartitions(_count_words).reduceByKey(operator.add, MEMBERS).collect())


def word_count_dataframe(spark: Any, path: str) -> dict[str, int]:
    from pyspark.sql import functions as F

    words = spark.read.text(path).select(F.explode(F.split(F.col("value"), r"\s+")).alias("word"))
    grouped = words.where(F.col("word") != "").groupBy("word").count()
    return {row["word"]: row["count"] for row in grouped.collect()}


def write_corpus(directory: Path, megabytes: int, seed: int = 11) -> Path:
    """Lines of 10 words from a 5,000-word vocabulary with Zipf-like frequencies."""
    rng = random.Random(seed)
    vocabulary = [f"w{rank}" + "x" * (rank % 7) for rank in range(5000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    path = directory / "corpus.txt"
    target = megabytes * 1_000_000
    written = 0
    with path.open("w") as out:
        while written < target:
            block = "\n".join(" ".join(rng.choices(vocabulary, weights, k=10)) for _ in range(10_000)) + "\n"
            out.write(block)
            written += len(block)
    return path


BASELINE = "RDD, experienced"


def race(
    repeat: int, contenders: list[tuple[str, Callable[[], dict[str, int]]]]
) -> dict[str, tuple[float, float]]:
    """Best time of each contender, and the median over the rounds of its time over the
    baseline's time in the same round."""
    best: dict[str, float] = {}
    ratios: dict[str, list[float]] = {}
    expected: dict[str, int] | None = None
    for _ in range(repeat):
        this_round: dict[str, float] = {}
        for name, fn in contenders:  # interleaved, so that a noisy moment hits everyone alike
            start = time.perf_counter()
            result = fn()
            elapsed = time.perf_counter() - start
            if expected is None:
                expected = result
            elif result != expected:
                raise SystemExit(f"{name} computed a different result")
            best[name] = min(best.get(name, float("inf")), elapsed)
            this_round[name] = elapsed
        for name, elapsed in this_round.items():
            ratios.setdefault(name, []).append(elapsed / this_round[BASELINE])
    return {name: (best[name], statistics.median(ratios[name])) for name in best}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=4_000_000)
    parser.add_argument("--corpus-mb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["p1", "word-count"], help="run one of the two races")
    args = parser.parse_args()
    spark = get_session(f"local[{MEMBERS}]")
    runner = SparkRunner(spark, member_count=MEMBERS)
    p1_builtins(runner, 10_000)  # warm up the Python workers and the JVM of every side
    p1_rdd_textbook(spark, 10_000)
    p1_dataframe(spark, 10_000)
    n = args.n
    with tempfile.TemporaryDirectory() as tmp:
        corpus = str(write_corpus(Path(tmp), args.corpus_mb))
        size_mb = Path(corpus).stat().st_size / 1e6
        tables = []
        if args.only != "word-count":
            tables.append(
                (
                    f"P1, N = {n:,}",
                    race(
                        args.repeat,
                        [
                            ("DataFrame API", lambda: p1_dataframe(spark, n)),
                            (BASELINE, lambda: p1_rdd_experienced(spark, n)),
                            ("RDD, textbook", lambda: p1_rdd_textbook(spark, n)),
                            ("jetspark built-ins", lambda: p1_builtins(runner, n)),
                            ("jetspark user processors", lambda: p1_user(runner, n)),
                        ],
                    ),
                )
            )
        if args.only != "p1":
            tables.append(
                (
                    f"word count, {size_mb:.0f} MB",
                    race(
                        args.repeat,
                        [
                            ("DataFrame API", lambda: word_count_dataframe(spark, corpus)),
                            (BASELINE, lambda: word_count_rdd_experienced(spark, corpus)),
                            ("RDD, textbook", lambda: word_count_rdd_textbook(spark, corpus)),
                            ("jetspark built-ins", lambda: word_count_builtins(runner, spark, corpus)),
                            ("jetspark user processors", lambda: word_count_user(runner, spark, corpus)),
                        ],
                    ),
                )
            )
    print(f"Spark local[{MEMBERS}], {MEMBERS} members, best of {args.repeat} (wall clock)")
    for title, times in tables:
        print(f"\n{title}")
        print(f"{'contender':28} {'seconds':>8} {'x ' + BASELINE:>24} {'median x':>9}")
        for name, (seconds, median) in times.items():
            print(f"{name:28} {seconds:8.2f} {seconds / times[BASELINE][0]:24.2f} {median:9.2f}")


if __name__ == "__main__":
    main()
