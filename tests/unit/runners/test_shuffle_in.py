"""The Spark task's lazy shuffle reader, without Spark: spill order, sequence order, read-ahead."""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark.engine.special import DONE
from jetspark.runners.spark.records import DataRecord, ResultRecord
from jetspark.runners.spark.shuffle_in import ShuffleReader, SpillBuffer


@given(st.lists(st.one_of(st.binary(max_size=40), st.none()), max_size=60), st.integers(0, 3))
def test_spill_buffer_is_first_in_first_out_across_memory_and_disk(
    ops: list[bytes | None], memory: int
) -> None:
    """`bytes` appends, None pops: what comes out is what went in, in order, wherever it was kept."""
    buffer, model = SpillBuffer(memory_records=memory), []
    try:
        for seq, op in enumerate(ops):
            if op is None:
                assert buffer.popleft() == (model.pop(0) if model else None)
            else:
                buffer.append(seq, op)
                model.append((seq, op))
            assert len(buffer) == len(model)
    finally:
        buffer.close()


def pair_records(pair: int, chunks: list[list[int]]) -> list[tuple[int, DataRecord]]:
    """The records of producer `pair` -> consumer (0, 0): one chunk each, DONE in the last."""
    out = []
    for seq, chunk in enumerate(chunks):
        last = seq == len(chunks) - 1
        entries: list[Any] = [chunk, DONE] if last else [chunk]
        out.append((0, DataRecord(1, 0, (pair, 0), (0, 0), seq, pickle.dumps(entries), last)))
    return out


@given(
    st.lists(
        st.lists(st.lists(st.integers(), min_size=1, max_size=3), min_size=1, max_size=4),
        min_size=1,
        max_size=3,
    ),
    st.randoms(),
)
def test_each_pair_replays_in_sequence_order_whatever_the_arrival_order(
    pairs: list[list[list[int]]], random: Any
) -> None:
    records = [record for pair, chunks in enumerate(pairs) for record in pair_records(pair, chunks)]
    random.shuffle(records)
    records.insert(random.randrange(len(records) + 1), (0, ResultRecord(1, "sink", b"")))
    reader = ShuffleReader(iter(records), patience=0)
    queues = [reader.replay_queue((0, (pair, 0), (0, 0)), f"pair {pair}") for pair in range(len(pairs))]
    got: list[list[Any]] = [[] for _ in pairs]
    done = [False] * len(pairs)
    while not all(done):
        progress = False
        for pair, queue in enumerate(queues):
            for _ in range(2):  # a queue answers None once after each record
                while (entry := queue.take()) is not None:
                    progress = True
                    if entry is DONE:
                        done[pair] = True
                    else:
                        got[pair].extend(entry)
        if not progress:
            assert reader.move_head_aside(), "a record nobody takes is moved aside, never stuck"
    reader.finish()
    reader.close()
    assert got == [[item for chunk in chunks for item in chunk] for chunks in pairs]
    assert [type(r) for r in reader.passing] == [ResultRecord], "results of upstream stages pass through"


def test_a_consumer_reads_only_what_it_takes() -> None:
    """Lazy: nothing beyond the record a consumer asked for is read from Spark's iterator."""
    records = pair_records(0, [[1], [2], [3]])
    consumed: list[int] = []

    def source() -> Any:
        for record in records:
            consumed.append(record[1].seq)
            yield record

    reader = ShuffleReader(source())
    queue = reader.replay_queue((0, (0, 0), (0, 0)), "pair")
    assert queue.take() == [1]
    assert consumed == [0]
    assert queue.take() is None, "one drain into the inbox takes at most one record"
    assert consumed == [0]
    assert queue.take() == [2]
    assert consumed == [0, 1]


def test_an_input_cut_short_is_an_error_naming_the_pair() -> None:
    records = pair_records(0, [[1], [2]])[:1]
    reader = ShuffleReader(iter(records))
    queue = reader.replay_queue((0, (0, 0), (0, 0)), "edge a->b (0, 0)->(0, 0)")
    assert queue.take() == [1]
    assert queue.take() is None
    with pytest.raises(AssertionError, match=r"edge a->b \(0, 0\)->\(0, 0\)"):
        reader.finish()
