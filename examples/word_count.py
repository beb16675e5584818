"""Word count: the README's main example.

Generates a small text corpus, counts its words with a jetspark DAG and prints the ten most
frequent words. The same file runs everywhere:

    jetspark run examples/word_count.py            # embedded local[*] Spark
    jetspark run --local examples/word_count.py    # in process, no Spark or Java needed
    python examples/word_count.py                  # embedded local[*] Spark
    jetspark submit examples/word_count.py         # pyspark's spark-submit
    spark-submit examples/word_count.py            # (with jetspark installed for that Python)

The DAG: `lines` -> `words` (flat map) -> `count-prepare` (per-member counts) run in one Spark
stage; the distributed edge partitioned by word is a shuffle to `count` (one total per word,
owned by the member that owns the word's partition) -> `sink`, which collects the totals.
"""

from __future__ import annotations

import argparse
import random
import re
import sys

from jetspark import DAG, Edge, JobConfig
from jetspark.api import run
from jetspark.processors import aggregate_by_key, collect, counting, flat_map, from_iterable, whole_item

VOCABULARY = (  # noqa: SIM905 (a word list reads better as text)
    "the of and to in is that it for as was with be by on not he this are or his from at which but "
    "have an they you were her she there been one all we their has would when if so no will more "
    "can stream processor vertex edge member partition watermark snapshot spark jet item outbox "
    "inbox"
).split()
WORD = re.compile(r"[a-z]+")


def corpus(lines: int, seed: int = 7) -> list[str]:
    """`lines` lines of 12 words each, drawn with Zipf-like frequencies (word i has weight 1/(i+1))."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(VOCABULARY))]
    return [" ".join(rng.choices(VOCABULARY, weights, k=12)) for _ in range(lines)]


def tokenize(line: str) -> list[str]:
    return WORD.findall(line.lower())


def word_count_dag(lines: list[str]) -> DAG:
    dag = DAG()
    source = dag.new_vertex("lines", from_iterable(lines))
    words = dag.new_vertex("words", flat_map(tokenize))
    dag.edge(Edge.between(source, words))
    counts = aggregate_by_key(dag, "count", words, whole_item, counting())  # each word is its own key
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(counts, sink))
    return dag


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=20_000, help="lines in the generated corpus")
    parser.add_argument("--members", type=int, default=None, help="member count (default: the runner's)")
    args = parser.parse_args(argv)
    lines = corpus(args.lines)
    job = run(word_count_dag(lines), JobConfig(name="word-count", member_count=args.members))
    counts = job.result("sink")
    total = sum(count for _, count in counts)
    print(f"{total} words, {len(counts)} distinct, on {type(job).__name__} with {job.member_count} member(s)")
    print("top 10:")
    for rank, (name, count) in enumerate(sorted(counts, key=lambda kv: (-kv[1], kv[0]))[:10], 1):
        print(f"{rank:>3}. {name:<12} {count}")


if __name__ == "__main__":
    main(sys.argv[1:])
