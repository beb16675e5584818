"""The floor under word count written as user processors: the user's own per-word Python, no engine.

`spark_bench.py` compares jetspark running `Tokenize -> partitioned edge -> CountWords`
(benchmarks/user_processors.py) with an experienced user's RDD code, which counts each line with
`Counter.update` (a C loop) and shuffles only partial counts. This script times, on one core and
in one process, what the user's processors themselves do per word when no engine runs them at
all, against that C loop, so that the ratio the engine could at best reach is known:

    python benchmarks/word_count_floor.py [--lines 500000] [--repeat 5]

- `Counter.update per line`: the experienced RDD code's inner loop;
- `CountWords.try_process_item per word`: the user's counting method called in a bare loop over
  the words, as an inbox would hand them over, nothing else;
- `Tokenize by hand per line`: `line.split()` and a Python loop that appends each word to a list
  (what emitting each word costs at the least).

Times are process CPU seconds, best of `--repeat`, with ns per word.
"""

from __future__ import annotations

import argparse
import random
import time
from collections import Counter
from collections.abc import Callable

from user_processors import CountWords

from jetspark.core import DAG, JobConfig
from jetspark.planning.pipeline import build_plan


def corpus(lines: int, seed: int = 11) -> list[str]:
    """The lines of `spark_bench.write_corpus`: 10 words from a Zipf-like 5,000-word vocabulary."""
    rng = random.Random(seed)
    vocabulary = [f"w{rank}" + "x" * (rank % 7) for rank in range(5000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    return [" ".join(rng.choices(vocabulary, weights, k=10)) for _ in range(lines)]


def counter_update(lines: list[str]) -> None:
    counts: Counter[str] = Counter()
    for line in lines:
        counts.update(line.split())


def count_words_method(words: list[str]) -> Callable[[], None]:
    def run() -> None:
        processor = CountWords()
        dag = DAG()
        dag.new_vertex("count", lambda: processor, 1)
        processor.init_processor(build_plan(dag, JobConfig(), 1).processor_context("count", 0, 0))
        handle = processor.try_process_item
        for index in range(0, len(words)):
            if not handle(0, words[index]):
                break

    return run


def tokenize_by_hand(lines: list[str]) -> None:
    out: list[str] = []
    append = out.append
    for line in lines:
        for word in line.split():
            append(word)
        if len(out) >= 1024:
            out = []
            append = out.append


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--lines", type=int, default=500_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    lines = corpus(args.lines)
    words = [word for line in lines for word in line.split()]
    contenders: list[tuple[str, Callable[[], None]]] = [
        ("Counter.update per line (experienced RDD)", lambda: counter_update(lines)),
        ("CountWords.try_process_item per word", count_words_method(words)),
        ("Tokenize by hand per line", lambda: tokenize_by_hand(lines)),
    ]
    best: dict[str, float] = {}
    for _ in range(args.repeat):
        for name, run in contenders:
            start = time.process_time()
            run()
            best[name] = min(best.get(name, float("inf")), time.process_time() - start)
    baseline = best[contenders[0][0]]
    print(f"{len(words):,} words in {len(lines):,} lines, best of {args.repeat} (process CPU time)")
    print(f"{'contender':44} {'seconds':>8} {'ns/word':>8} {'x Counter.update':>17}")
    for name, _ in contenders:
        seconds = best[name]
        print(f"{name:44} {seconds:8.3f} {seconds / len(words) * 1e9:8.0f} {seconds / baseline:17.2f}")


if __name__ == "__main__":
    main()
