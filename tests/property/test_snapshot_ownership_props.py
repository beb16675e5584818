"""Properties of snapshot ownership (`runners/snapshot_io.py`): for any member count, local
parallelism and partition count, every saved key is restored by exactly one member (and one
processor of it), a broadcast key by every processor, and the three ways of asking agree: the
in-memory routing of the local runner (`wiring.route_snapshot_entries`), a member's share read
from the checkpoint store (`read_shares`), and the rule itself (`restorer`)."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark import DAG, JobConfig
from jetspark import processors as P
from jetspark.checkpoint import CheckpointStore
from jetspark.core.watermark import BroadcastKey
from jetspark.engine.snapshot import SnapshotEntry, encode_entry, entry_partition
from jetspark.planning.partitions import PartitionArrangement
from jetspark.planning.pipeline import build_plan
from jetspark.runners.snapshot_io import (
    FileName,
    commit_snapshot,
    member_partitions,
    member_processors,
    read_shares,
    restored_partitions,
    restorer,
)
from jetspark.runners.wiring import route_snapshot_entries

keys = st.one_of(st.integers(), st.text(max_size=8), st.tuples(st.text(max_size=3), st.integers()))
partition_counts = st.integers(min_value=1, max_value=300)
member_counts = st.integers(min_value=1, max_value=9)
parallelisms = st.integers(min_value=1, max_value=4)


@given(st.lists(keys, max_size=40), partition_counts, member_counts, parallelisms)
def test_every_key_is_restored_by_exactly_one_member_and_processor(
    saved: list[Any], partitions: int, members: int, lp: int
) -> None:
    arrangement = PartitionArrangement(partitions, members)
    shares = [restored_partitions(arrangement, lp, member_processors(m, lp)) for m in range(members)]
    for key in saved:
        partition = entry_partition(key, partitions)
        owners = [m for m in range(members) if partition in shares[m]]
        assert len(owners) == 1, f"key {key!r} (partition {partition}) is restored by members {owners}"
        processor = restorer(partition, arrangement, lp)
        assert processor is not None and processor // lp == owners[0]
        assert partition in member_partitions(arrangement, owners[0])
        assert partition in restored_partitions(arrangement, lp, (processor,))
    assert restorer(entry_partition(BroadcastKey("b"), partitions), arrangement, lp) is None
    assert all(-1 not in share for share in shares), "a broadcast entry is nobody's alone"


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(keys, st.integers()), max_size=30, unique_by=lambda kv: repr(kv[0])),
    st.lists(st.text(max_size=4), max_size=3, unique=True),
    member_counts,
    parallelisms,
    st.sampled_from([1, 7, 271]),
)
def test_a_members_share_from_the_store_is_what_the_in_memory_routing_gives_its_processors(
    saved: list[tuple[Any, int]], broadcast: list[str], members: int, lp: int, partitions: int
) -> None:
    dag = DAG()
    dag.new_vertex("counts", P.noop(), lp)
    plan = build_plan(dag, JobConfig(), members, job_id="j", partition_count=partitions)
    entries = [encode_entry(k, v, entry_partition(k, partitions)) for k, v in saved]
    entries += [
        encode_entry(BroadcastKey(b), b, entry_partition(BroadcastKey(b), partitions)) for b in broadcast
    ]
    data = {"counts": entries}
    store = CheckpointStore(f"memory://ownership-{uuid.uuid4().hex}", "job")
    manifest = commit_snapshot(store, 0, data, ["counts"], partitions, {})
    assert [f.name for f in manifest.files] == [f"{FileName(0)}.snap"]
    keyed, everyone = route_snapshot_entries(data, plan, "counts")
    restored: list[SnapshotEntry] = []
    for member in range(members):
        share = read_shares(store, manifest, plan, ["counts"], member)["counts"]
        assert sorted(e for e in share if e.partition == -1) == sorted(everyone)
        mine = [e for e in share if e.partition != -1]
        routed = [e for g in member_processors(member, lp) for e in keyed.get(g, [])]
        assert sorted(mine) == sorted(routed)
        restored += mine
    assert sorted(restored) == sorted(e for e in entries if e.partition != -1), "each keyed entry once"
