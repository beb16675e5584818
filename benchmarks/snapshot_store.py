"""Snapshot and restore time in the checkpoint store, and restore time of one processor's share.

    python benchmarks/snapshot_store.py [--keys 1e4,1e5,1e6] [--root /tmp/x]

For each key count: `offer` = serializing the entries as `offer_to_snapshot` does (key and value
pickled, partition computed); `save` = writing the files, manifest and LATEST (`snapshot_io.commit_snapshot`);
`load all` = reading and checking every entry; `load 1/4` = reading the partitions one processor of
four owns (`CheckpointStore.read` with its partitions), the cost a restoring processor pays.
Reported in seconds, and `1/4 share` as the ratio load 1/4 : load all (proportional would be 0.25).
Values are small tuples (a running count and a sum), as a keyed aggregation saves.
"""

from __future__ import annotations

import argparse
import tempfile
import time

from jetspark.checkpoint import CheckpointStore
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.engine.snapshot import encode_entry, entry_partition
from jetspark.planning.partitions import PartitionArrangement
from jetspark.runners import snapshot_io


def measure(keys: int, root: str) -> dict[str, float]:
    started = time.perf_counter()
    entries = [
        encode_entry(("key", k), (k, k * 2), entry_partition(("key", k), DEFAULT_PARTITION_COUNT))
        for k in range(keys)
    ]
    offer = time.perf_counter() - started
    store = CheckpointStore(root, f"bench-{keys}")
    started = time.perf_counter()
    manifest = snapshot_io.commit_snapshot(store, 0, {"agg": entries}, ["agg"], DEFAULT_PARTITION_COUNT, {})
    save = time.perf_counter() - started
    started = time.perf_counter()
    loaded = snapshot_io.read_snapshot(store, manifest, DEFAULT_PARTITION_COUNT)
    load_all = time.perf_counter() - started
    assert len(loaded.data["agg"]) == keys
    share = PartitionArrangement(DEFAULT_PARTITION_COUNT, 4).member_partitions(0)
    started = time.perf_counter()
    mine = [entry for entry in store.read(manifest, "agg", share)]
    decoded = [(entry[1], entry[2]) for entry in mine]
    load_share = time.perf_counter() - started
    assert 0 < len(decoded) < keys
    store.discard()
    return {
        "offer": offer,
        "save": save,
        "load all": load_all,
        "load 1/4": load_share,
        "bytes": manifest.total_bytes,
        "share keys": len(decoded) / keys,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keys", default="1e4,1e5,1e6")
    parser.add_argument("--root", default=None)
    args = parser.parse_args()
    root = args.root or tempfile.mkdtemp(prefix="jetspark-bench-")
    print(
        "| keys | offer (s) | save (s) | load all (s) | load 1/4 share (s) | share time / all | share keys / all | MB |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for keys in (int(float(k)) for k in args.keys.split(",")):
        r = measure(keys, root)
        print(
            f"| {keys:,} | {r['offer']:.3f} | {r['save']:.3f} | {r['load all']:.3f} | {r['load 1/4']:.3f} "
            f"| {r['load 1/4'] / r['load all']:.2f} | {r['share keys']:.2f} | {r['bytes'] / 2**20:.1f} |"
        )


if __name__ == "__main__":
    main()
