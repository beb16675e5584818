"""Jet's `WordCountTest` (hazelcast-jet-core, `com.hazelcast.jet.benchmark`), ported: the word
count DAG of `testJet`, run once and checked.

Jet's test first runs a job whose `MockInputP` (on the first member only) writes rows of
`WORDS_PER_ROW` numbers (`counter % DISTINCT`) into the map `words`; here that job's sink is a
`collect()` vertex (Jet's `writeMapP("words")`) and `FirstMemberOnly` is Jet's meta supplier that
gives the other members `noopP()`. The word count then reads the rows (Jet's `readMapP`:
`from_iterable` of the collected entries), tokenizes them (`flat_map`), counts per word in
stage 1 behind a local edge partitioned by the word (Jet's `aggregateByKeyP(wholeItem(),
counting())` is `accumulate_by_key(whole_item, counting())`, whose accumulator is the count) and
sums the counts per word in stage 2 behind a distributed edge partitioned by the entry's key
(Jet's `aggregateByKeyP(entryKey, summingLong(getValue))` is `accumulate_by_key(entry_key,
summing(value))`), into a `collect()` sink (Jet's `writeMapP("counts")`). On the local runner
with one member (Jet's `NODE_COUNT = 1`) and local parallelism 2 (Jet's one per core).

Differences: Jet's `benchmark` runs the job repeatedly for 30 s and logs the times; the port runs
it once. 100,000 words of 10,000 distinct ones instead of Jet's 1,000,000 of 100,000 (the
same 10 occurrences of each), to stay within a few seconds on a busy machine.

Skipped: `testAggregations` and `testJetTwoPhaseAggregation` (`@Ignore`d in Jet; the first uses
an IMap aggregator, which has no counterpart).
"""

from __future__ import annotations

from typing import Any

from jetspark import DAG, AbstractProcessor, Edge, JobConfig
from jetspark import processors as P
from jetspark.core.suppliers import FirstMemberOnly, ProcessorSupplier
from jetspark.runners.local import LocalRunner

NODE_COUNT = 1
PARALLELISM = 2
TIMEOUT = 60

COUNT = 100_000
DISTINCT = 10_000
WORDS_PER_ROW = 20


class MockInputP(AbstractProcessor):
    """Emits `(row, "n n n ...")` entries: `COUNT` numbers in all, `WORDS_PER_ROW` a row."""

    def init_processor(self, context: Any) -> None:
        self.row = 0
        self.counter = 0
        self.pending: tuple[int, str] | None = None

    def complete(self) -> bool:
        while True:
            if self.pending is None:
                if self.counter == COUNT:
                    return True
                end = min(self.counter + WORDS_PER_ROW, COUNT)
                self.pending = (self.row, " ".join(str(n % DISTINCT) for n in range(self.counter, end)))
                self.row += 1
                self.counter = end
            if not self.try_emit(self.pending):
                return False
            self.pending = None


def generate_mock_input(runner: LocalRunner) -> list[tuple[int, str]]:
    dag = DAG()
    source = dag.new_vertex("source", FirstMemberOnly(ProcessorSupplier.of(MockInputP)), 1)
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(source, sink))
    return list(runner.run(dag, JobConfig(), timeout=TIMEOUT).result("sink"))


def value_of(entry: tuple[Any, Any]) -> Any:
    return entry[1]


def tokens_of(line: tuple[int, str]) -> list[str]:
    return line[1].split()


def assert_counts(word_counts: dict[str, int]) -> None:
    for i in range(DISTINCT):
        count = word_counts.get(str(i))
        assert count is not None, f"Missing count for {i}"
        assert count == COUNT // DISTINCT, f"The count for {i} is not correct"


def test_WordCountTest__testJet() -> None:
    runner = LocalRunner(NODE_COUNT)
    words = generate_mock_input(runner)
    assert len(words) == COUNT // WORDS_PER_ROW

    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(words))
    tokenize = dag.new_vertex("tokenize", P.flat_map(tokens_of))
    # word -> (word, count)
    aggregate_stage1 = dag.new_vertex("aggregateStage1", P.accumulate_by_key(P.whole_item, P.counting()))
    # (word, count) -> (word, count)
    aggregate_stage2 = dag.new_vertex(
        "aggregateStage2", P.accumulate_by_key(P.entry_key, P.summing(value_of))
    )
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, tokenize))
    dag.edge(Edge.between(tokenize, aggregate_stage1).partitioned(P.whole_item))
    dag.edge(Edge.between(aggregate_stage1, aggregate_stage2).distributed().partitioned(P.entry_key))
    dag.edge(Edge.between(aggregate_stage2, sink))

    job = runner.run(dag, JobConfig(default_local_parallelism=PARALLELISM), timeout=TIMEOUT)
    counts = dict(job.result("sink"))
    assert len(counts) == len(job.result("sink")) == DISTINCT  # one entry per word
    assert_counts(counts)
