"""Benchmark on Spark `local[2]`: jetspark DAGs against the same logic in plain PySpark RDD code.

    python benchmarks/spark_bench.py [--n 4000000] [--corpus-mb 50] [--repeat 3]

(1) P1 at N ints: map x*2 -> filter x % 3 != 0 -> count by str(x % 1000).
(2) Word count over a generated text corpus of at least `--corpus-mb` MB, read with
    `sc.textFile` on both sides (jetspark through `from_rdd`), split on white space.
Both sides run on one shared SparkSession with 2 members (= Spark partitions); results are
checked equal; times are wall clock, best of `--repeat` interleaved runs, reported with the ratio
jetspark / PySpark (<= 1.0 means jetspark is at least as fast).
"""

from __future__ import annotations

import argparse
import operator
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cloudpickle
import p1_local
from p1_local import double, key_of, not_divisible_by_3  # the same P1 steps as the local benchmark
from pyspark import cloudpickle as pyspark_cloudpickle

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig
from jetspark.runners.spark import SparkRunner, from_rdd, get_session

MEMBERS = 2
# Executors cannot import this script's folder: ship p1_local's functions by value, for jetspark
# (cloudpickle) and for plain PySpark (its own bundled copy of cloudpickle) alike.
cloudpickle.register_pickle_by_value(p1_local)
pyspark_cloudpickle.register_pickle_by_value(p1_local)


def split_words(line: str) -> list[str]:
    return line.split()


def same(word: str) -> str:
    return word


def p1_jetspark(runner: SparkRunner, n: int) -> dict[str, int]:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(n)))
    counted = P.aggregate_by_key(
        dag, "count", source, key_of, P.counting(), steps=P.Chain().map(double).filter(not_divisible_by_3)
    )
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(counted, sink))
    job = runner.run(dag, JobConfig(name="p1", member_count=MEMBERS))
    return dict(job.result("sink"))


def p1_pyspark(spark: Any, n: int) -> dict[str, int]:
    rdd = spark.sparkContext.range(0, n, numSlices=MEMBERS)
    pairs = rdd.map(double).filter(not_divisible_by_3).map(lambda x: (key_of(x), 1))
    return dict(pairs.reduceByKey(operator.add, MEMBERS).collect())


def word_count_jetspark(runner: SparkRunner, spark: Any, path: str) -> dict[str, int]:
    dag = DAG()
    lines = dag.new_vertex("lines", from_rdd(spark.sparkContext.textFile(path, MEMBERS)))
    counted = P.aggregate_by_key(
        dag, "count", lines, same, P.counting(), steps=P.Chain().flat_map(split_words)
    )
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(counted, sink))
    job = runner.run(dag, JobConfig(name="word-count", member_count=MEMBERS))
    return dict(job.result("sink"))


def word_count_pyspark(spark: Any, path: str) -> dict[str, int]:
    lines = spark.sparkContext.textFile(path, MEMBERS)
    pairs = lines.flatMap(split_words).map(lambda word: (word, 1))
    return dict(pairs.reduceByKey(operator.add, MEMBERS).collect())


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


def race(repeat: int, contenders: list[tuple[str, Callable[[], dict[str, int]]]]) -> dict[str, float]:
    best: dict[str, float] = {}
    expected: dict[str, int] | None = None
    for _ in range(repeat):
        for name, fn in contenders:
            start = time.perf_counter()
            result = fn()
            elapsed = time.perf_counter() - start
            if expected is None:
                expected = result
            elif result != expected:
                raise SystemExit(f"{name} computed a different result")
            best[name] = min(best.get(name, float("inf")), elapsed)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=4_000_000)
    parser.add_argument("--corpus-mb", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spark = get_session(f"local[{MEMBERS}]")
    runner = SparkRunner(spark, member_count=MEMBERS)
    p1_jetspark(runner, 10_000)  # warm up the Python workers of both sides
    p1_pyspark(spark, 10_000)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = write_corpus(Path(tmp), args.corpus_mb)
        size_mb = corpus.stat().st_size / 1e6
        rows = [
            (
                "P1",
                f"N = {args.n:,}",
                race(
                    args.repeat,
                    [
                        ("jetspark", lambda: p1_jetspark(runner, args.n)),
                        ("pyspark", lambda: p1_pyspark(spark, args.n)),
                    ],
                ),
            ),
            (
                "word count",
                f"{size_mb:.0f} MB",
                race(
                    args.repeat,
                    [
                        ("jetspark", lambda: word_count_jetspark(runner, spark, str(corpus))),
                        ("pyspark", lambda: word_count_pyspark(spark, str(corpus))),
                    ],
                ),
            ),
        ]
    print(f"Spark local[{MEMBERS}], {MEMBERS} members, best of {args.repeat} (wall clock)")
    print(f"{'benchmark':12} {'input':>14} {'jetspark s':>11} {'PySpark s':>10} {'ratio':>7}")
    for name, size, times in rows:
        ratio = times["jetspark"] / times["pyspark"]
        print(f"{name:12} {size:>14} {times['jetspark']:11.2f} {times['pyspark']:10.2f} {ratio:7.2f}")


if __name__ == "__main__":
    main()
