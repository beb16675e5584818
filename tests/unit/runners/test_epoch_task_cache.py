"""`EpochTask` deciding, from a real committed manifest, whether a worker's kept processors may go
on (`take_kept`) and whether a member's next file may be incremental (`_plan_chains`): without
Spark, with explicit snapshot ids and files."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from jetspark import DAG, Edge, JobConfig
from jetspark import processors as P
from jetspark.checkpoint import CheckpointStore
from jetspark.checkpoint.entries import Entry
from jetspark.checkpoint.store import SnapshotFile
from jetspark.core.errors import ProcessorContractError
from jetspark.engine.snapshot import DELETED, SnapshotEntry
from jetspark.planning.pipeline import build_plan
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners.spark import state_cache
from jetspark.runners.spark.epoch_task import EpochSpec, EpochTask
from tests.unit.runners.test_state_cache import Counting


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    state_cache.clear()
    yield
    state_cache.clear()


def plan() -> ExecutionPlan:
    dag = DAG()
    source = dag.new_vertex("source", P.generator_stream(count=10), 1)
    counts = dag.new_vertex("counts", Counting, 1)
    dag.edge(Edge.between(source, counts).partitioned(lambda x: x).distributed())
    sink = dag.new_vertex("sink", P.noop(), 1)
    dag.edge(Edge.between(counts, sink))
    return build_plan(dag, JobConfig(member_count=2), 2, job_id="job-1")


def commit(
    store: CheckpointStore,
    the_plan: ExecutionPlan,
    snapshot_id: int,
    stray: bool = False,
    broadcast: bool = False,
) -> str:
    """Snapshot `snapshot_id` with one counts file per member, each holding its own partitions
    (with `stray`, member 1's file also holds a partition member 0 owns; with `broadcast`, each
    file holds a broadcast entry too). Returns member 0's name."""
    index = list(the_plan.vertices).index("counts")
    arrangement = the_plan.arrangement
    files = []
    for member in (0, 1):
        mine = arrangement.member_partitions(member)
        entries: list[Entry] = [(mine[0], b"k%d" % member, b"v")]
        if stray and member == 1:
            entries.append((arrangement.member_partitions(0)[1], b"stray", b"v"))
        if broadcast:
            entries.append((-1, b"watermark", b"%d" % member))
        files.append(
            store.write_file(
                snapshot_id, "counts", f"v{index:04d}-m{member:05d}-a{snapshot_id}{member}", entries
            )
        )
    store.commit(snapshot_id, files, arrangement.partition_count, {"member_count": 2})
    return files[0].name


def task(tmp_path: Path, the_plan: ExecutionPlan, restore_id: int) -> EpochTask:
    store = CheckpointStore(str(tmp_path), "job")
    spec = EpochSpec(str(tmp_path), "job", restore_id + 1, store.snapshot_dir(restore_id), restore_id, 0.0)
    return EpochTask(spec, the_plan, ["counts"], 0, 99, None)


def keep(the_plan: ExecutionPlan, store: CheckpointStore, snapshot_id: int, name: str) -> Counting:
    manifest = store.latest()
    assert manifest is not None
    sha = next(f.sha256 for f in manifest.files if f.name == name)
    kept = Counting()
    state_cache.put(
        the_plan.job_id,
        "counts",
        0,
        state_cache.Kept(
            [kept],
            snapshot_id,
            (name, sha),
            2,
            the_plan.arrangement.partition_count,
            execution_id=the_plan.execution_id,
        ),
    )
    return kept


def test_kept_processors_go_on_when_the_committed_manifest_lists_their_file(tmp_path: Path) -> None:
    the_plan = plan()
    store = CheckpointStore(str(tmp_path), "job")
    kept = keep(the_plan, store, 5, commit(store, the_plan, 5))
    epoch = task(tmp_path, the_plan, 5)
    assert epoch.take_kept() == {"counts": [kept]}
    figures: dict[str, dict[str, int]] = {}
    epoch.adjust_custom(figures)
    assert figures == {"counts": {state_cache.HITS: 1}}
    assert epoch.restore_data() == {}, "nothing of the kept vertex is read from the store"


def test_a_worker_that_ran_e_missed_e_plus_1_and_gets_e_plus_2_restores_from_the_store(
    tmp_path: Path,
) -> None:
    the_plan = plan()
    store = CheckpointStore(str(tmp_path), "job")
    kept = keep(the_plan, store, 5, commit(store, the_plan, 5))  # this worker ran epoch 5
    commit(store, the_plan, 6)  # epoch 6 ran on another worker
    epoch = task(tmp_path, the_plan, 6)  # epoch 7 lands here again
    assert epoch.take_kept() == {}
    assert kept.closed == 1
    figures: dict[str, dict[str, int]] = {}
    epoch.adjust_custom(figures)
    assert figures == {"counts": {state_cache.MISSES: 1}}
    restored = epoch.restore_data()
    assert restored is not None and [e.key for e in restored["counts"]] == [b"k0"]


def test_another_members_entries_in_my_partitions_make_it_a_miss_and_the_file_full(tmp_path: Path) -> None:
    """A restore would hand member 0 an entry member 1 saved: keeping member 0's processors (or
    extending member 0's chain) would lose it."""
    the_plan = plan()
    store = CheckpointStore(str(tmp_path), "job")
    keep(the_plan, store, 5, commit(store, the_plan, 5, stray=True))
    epoch = task(tmp_path, the_plan, 5)
    assert epoch.take_kept() == {}
    assert epoch._plan_chains() == {}
    clean = task(tmp_path / "clean", the_plan, 5)
    clean_store = CheckpointStore(str(tmp_path / "clean"), "job")
    commit(clean_store, the_plan, 5)
    chains = clean._plan_chains()
    assert list(chains) == ["counts"] and [i for i, _ in chains["counts"]] == [5]


def test_broadcast_entries_allow_an_incremental_file_but_not_keeping_the_processors(tmp_path: Path) -> None:
    """A delta writes every broadcast entry again (`deltas.merge`), so a file with them may be
    extended; a kept processor would miss the broadcast entries of the other members' files."""
    the_plan = plan()
    store = CheckpointStore(str(tmp_path), "job")
    keep(the_plan, store, 5, commit(store, the_plan, 5, broadcast=True))
    epoch = task(tmp_path, the_plan, 5)
    assert epoch.take_kept() == {}
    chains = epoch._plan_chains()
    assert list(chains) == ["counts"] and [i for i, _ in chains["counts"]] == [5]


def test_a_large_member_file_limits_how_many_keys_the_next_incremental_save_may_change(
    tmp_path: Path,
) -> None:
    """The committed file's key count (a block's entries counted) sets the limit above which
    the member's next save of the vertex is a full one (`deltas.delta_limit`); a small file
    sets none."""
    from jetspark.checkpoint.deltas import LIMITED_FROM_KEYS, MAX_DELTA_RATIO
    from jetspark.core.snapshot_block import block_key, block_value

    the_plan = plan()
    small = tmp_path / "small"
    commit(CheckpointStore(str(small), "job"), the_plan, 5)
    assert task(small, the_plan, 5).snapshot_context(1).delta_limits == {}

    large = tmp_path / "large"
    store = CheckpointStore(str(large), "job")
    index = list(the_plan.vertices).index("counts")
    keys = list(range(LIMITED_FROM_KEYS))
    files = []
    for member in (0, 1):
        partition = the_plan.arrangement.member_partitions(member)[0]
        block: Entry = (partition, block_key(len(keys)), block_value(keys, keys))
        files.append(store.write_file(5, "counts", f"v{index:04d}-m{member:05d}-a5{member}", [block]))
    store.commit(5, files, the_plan.arrangement.partition_count, {"member_count": 2})
    context = task(large, the_plan, 5).snapshot_context(1)
    assert context.incremental == {"counts"}
    assert context.delta_limits == {"counts": int(MAX_DELTA_RATIO * LIMITED_FROM_KEYS)}


class Dropping(Counting):
    """Counts what it dropped since it was made (a processor's own counter)."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped = 0

    def custom_metrics(self) -> dict[str, int]:
        return {"dropped": self.dropped}


def test_a_kept_processors_own_counters_are_reported_once(tmp_path: Path) -> None:
    """The driver adds each epoch's counters: a kept processor's count from earlier epochs is
    taken off, or it would be added again every epoch it goes on."""
    the_plan = plan()
    store = CheckpointStore(str(tmp_path), "job")
    name = commit(store, the_plan, 5)
    manifest = store.latest()
    assert manifest is not None
    sha = next(f.sha256 for f in manifest.files if f.name == name)
    kept = Dropping()
    kept.dropped = 7  # reported in epochs up to 5
    partitions = the_plan.arrangement.partition_count
    state_cache.put(
        the_plan.job_id,
        "counts",
        0,
        state_cache.Kept([kept], 5, (name, sha), 2, partitions, execution_id=the_plan.execution_id),
    )
    epoch = task(tmp_path, the_plan, 5)
    assert epoch.take_kept() == {"counts": [kept]}
    kept.dropped += 2  # this epoch
    figures = {"counts": dict(kept.custom_metrics())}
    epoch.adjust_custom(figures)
    assert figures == {"counts": {"dropped": 2, state_cache.HITS: 1}}


def tasklet(local: int, last: int, saved: set[int]) -> Any:
    """What `_write` reads of a counts tasklet: its place, last snapshot, partitions saved."""
    context = SimpleNamespace(vertex_name="counts", local_processor_index=local, global_processor_index=local)
    return SimpleNamespace(
        context=context, last_snapshot_id=last, outbox=SimpleNamespace(snapshot_partitions=saved)
    )


def two_per_member(tmp_path: Path) -> tuple[ExecutionPlan, EpochTask]:
    """Counts on 2 processors per member, snapshot 5 committed (member 0's file: BASE0 and BASE1,
    keys of its processors 0 and 1), and epoch 6's task of member 0 with a chain for counts."""
    dag = DAG()
    source = dag.new_vertex("source", P.generator_stream(count=10), 1)
    counts = dag.new_vertex("counts", Counting, 2)
    dag.edge(Edge.between(source, counts).partitioned(lambda x: x).distributed())
    dag.edge(Edge.between(counts, dag.new_vertex("sink", P.noop(), 1)))
    the_plan = build_plan(dag, JobConfig(member_count=2), 2, job_id="job-1")
    arrangement = the_plan.arrangement
    mine0 = arrangement.processor_partitions(0, 0, 2)
    mine1 = arrangement.processor_partitions(0, 1, 2)
    store = CheckpointStore(str(tmp_path), "job")
    base: list[Entry] = [
        (mine0[0], b"kept", b"1"),
        (mine0[1], b"changed", b"1"),
        (mine0[2], b"removed", b"1"),
        (mine1[0], b"of-the-completed", b"1"),
    ]
    index = list(the_plan.vertices).index("counts")
    files = [store.write_file(5, "counts", f"v{index:04d}-m00000-a5", base)]
    files.append(store.write_file(5, "counts", f"v{index:04d}-m00001-a5", []))
    store.commit(5, files, arrangement.partition_count, {"member_count": 2})
    epoch = task(tmp_path, the_plan, 5)
    epoch.snapshot_context(3)
    assert "counts" in epoch._chains
    return the_plan, epoch


def test_a_processor_that_saves_keys_it_does_not_own_in_a_delta_is_named(tmp_path: Path) -> None:
    """A delta keeps one entry per key: two processors saving one key (input not partitioned by
    it) would lose one, so an incremental save of a key a processor does not own fails loudly."""
    the_plan, epoch = two_per_member(tmp_path)
    theirs = the_plan.arrangement.processor_partitions(0, 1, 2)[0]
    epoch.tasklets = [tasklet(local=0, last=6, saved={theirs}), tasklet(local=1, last=6, saved=set())]
    with pytest.raises(
        ProcessorContractError, match=r"vertex 'counts' processor #0 has changed_snapshot_keys\(\)"
    ):
        epoch._write(6, {"counts": [SnapshotEntry(theirs, b"k", b"1")]})


def test_a_delta_whose_vertex_had_a_processor_complete_is_written_whole(tmp_path: Path) -> None:
    """Counts on 2 processors per member: processor 1 completed in the epoch (its state went out
    with its output), processor 0 saved only what changed. The file must be a full one holding
    processor 0's committed entries with its delta applied, and none of processor 1's."""
    the_plan, epoch = two_per_member(tmp_path)
    arrangement = the_plan.arrangement
    mine0 = arrangement.processor_partitions(0, 0, 2)
    store = epoch.store
    epoch.tasklets = [
        tasklet(local=0, last=6, saved={mine0[1], mine0[2], -1}),
        tasklet(local=1, last=5, saved=set()),
    ]
    delta = [
        SnapshotEntry(mine0[1], b"changed", b"2"),
        SnapshotEntry(mine0[2], b"removed", DELETED),
        SnapshotEntry(-1, b"watermark", b"9"),
    ]
    epoch._write(6, {"counts": delta})
    written = SnapshotFile.from_json(epoch.files[0])
    assert written.chain == (), "a full file"
    store.commit(6, [written], arrangement.partition_count, {"member_count": 2})
    manifest = store.latest()
    assert manifest is not None
    assert sorted(store.read(manifest, "counts")) == sorted(
        [(-1, b"watermark", b"9"), (mine0[0], b"kept", b"1"), (mine0[1], b"changed", b"2")]
    )
