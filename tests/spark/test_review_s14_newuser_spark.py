"""A new user's event-time job on Spark (fourteenth session's review): once one member's source
has nothing new, its windows must still close from the other member's data.

In epochs every epoch's consumers are new tasklets that wait for a watermark from every producer;
a kept producer with nothing new in an epoch sent none, so the windows stalled for ever (208
epochs committed, nothing written). A kept processor now sends its outbound edges the watermark
it sent last at the start of each epoch (`OutboxImpl.replay_watermarks`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, BroadcastKey, Edge, JobConfig, ProcessingGuarantee
from jetspark import processors as P
from jetspark.runners.spark import SparkRunner
from tests.waiting import wait_until

pytestmark = pytest.mark.spark


class FileSource(AbstractProcessor):
    """Processor i follows the lines (ints) of <dir>/data-<i>.txt; its offset is in the snapshot."""

    def __init__(self, directory: str) -> None:
        self.directory = directory

    def init_processor(self, context: Any) -> None:
        self.index = context.global_processor_index
        self.offset = 0
        self.pending: list[int] = []

    def complete(self) -> bool:
        if not self.pending:
            try:
                with open(f"{self.directory}/data-{self.index}.txt", "rb") as file:
                    file.seek(self.offset)
                    data = file.read()
            except FileNotFoundError:
                return False
            end = data.rfind(b"\n") + 1
            self.pending = [int(line) for line in data[:end].split()]
            self.offset += end
        while self.pending:
            if not self.try_emit(self.pending[0]):
                return False
            self.pending.pop(0)
        return False

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(
            BroadcastKey(("offset", self.index)), (self.offset, list(self.pending))
        )

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if key.key[1] == self.index:
            self.offset, self.pending = value[0], list(value[1])


def window_row(result: Any) -> dict[str, int]:
    return {"end": result.end, "count": result.value}


def identity(t: int) -> int:
    return t


def parity(t: int) -> int:
    return t % 2


def test_on_spark_windows_close_when_only_one_member_has_new_data(spark: Any, tmp_path: Path) -> None:
    source_dir, out = tmp_path / "in", tmp_path / "out"
    source_dir.mkdir()
    (source_dir / "data-0.txt").write_text("".join(f"{t}\n" for t in range(0, 50_000, 100)) + "10000000\n")
    (source_dir / "data-1.txt").write_text("".join(f"{t}\n" for t in range(0, 50_000, 100)))

    def ends() -> set[int]:
        found: set[int] = set()
        for path in out.glob("*.jsonl") if out.exists() else []:
            found |= {json.loads(line)["end"] for line in path.read_text().splitlines() if line}
        return found

    directory = str(source_dir)
    dag = DAG()
    source = dag.new_vertex("source", lambda: FileSource(directory), 1)
    stamps = dag.new_vertex(
        "stamps", P.insert_watermarks(identity, allowed_lag=1000, throttling_frame_size=1000), 1
    )
    dag.edge(Edge.between(source, stamps).isolated())
    windows = P.window_aggregate(
        dag, "tumble", stamps, parity, identity, P.WindowPolicy.tumbling(10_000), P.counting()
    )
    rows = dag.new_vertex("rows", P.map(window_row))
    dag.edge(Edge.between(windows, rows))
    dag.edge(Edge.between(rows, dag.new_vertex("out", P.write_jsonl(str(out)))))
    config = JobConfig(
        name="one-member-quiet",
        member_count=2,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=300,
        checkpoint_root=str(tmp_path / "ck"),
    )
    job = SparkRunner(spark).submit(dag, config)
    try:
        wait_until(lambda: 40_000 in ends() or job.ended, "the first windows")
        assert 40_000 in ends(), job.error
        with (source_dir / "data-1.txt").open("a") as file:  # only member 1 gets more
            file.write("".join(f"{t}\n" for t in range(50_000, 100_000, 100)) + "10000000\n")
        wait_until(lambda: 100_000 in ends() or job.ended, "the windows of member 1's new data")
        assert 100_000 in ends(), f"window ends written: {sorted(ends())}; {job.status} {job.error}"
    finally:
        job.cancel()
