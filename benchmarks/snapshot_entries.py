"""The per-entry cost of a snapshot's save and restore, without Spark, in this process.

    python benchmarks/snapshot_entries.py [--keys 1000000] [--key-type int|str|tuple] [--repeat 3]

Three steps, each timed alone (CPU seconds of this process) over `--keys` entries of a small
value (a count and a sum, as a keyed aggregation saves), the best of `--repeat` runs:

- `offer`: the entries offered through the engine's outbox (`OutboxImpl.offer_to_snapshot`:
  the key's partition, key and value pickled), 1,024 a call as a tasklet's save calls make them
  (with the collector paused around each call where the tasklet pauses it: `engine/gc_pause.py`);
- `KeyedState save` (a second line, with its own `encode + write` and `restore`): the same
  entries saved by a `KeyedState` holding them all, in an incremental save where every key
  changed (the busy epoch of a keyed count: what `epoch_state_bench.py --keyed-state` saves),
  through the same outbox, calls made until it returns True: in bulk where the outbox has
  `offer_all_to_snapshot` (blocks, `core/snapshot_block.py`), else one by one;
- `encode + write`: the vertex's file written and committed (`snapshot_io.commit_snapshot`);
- `restore`: the file read and checked, its entries decoded, routed to the processor that owns
  their partition (2 members x 2 processors) and unpickled for each (`snapshot_io.read_snapshot`,
  `wiring.route_snapshot_entries`, `wiring.restore_entries_for`): what a restore on a
  state-cache miss costs before the processors apply the entries.

With `--window`, first: the CPU seconds of a full save of the built-in sliding window holding
`--keys` keys (its own loop building a dict per key, then the offers), through the test kit's
harness, as `epoch_state_bench.py --save-profile` does it but in CPU time, with the collector
paused around each save call where the engine's tasklet pauses it (`engine/gc_pause.py`).

It uses only APIs older than this benchmark, so a checkout of an earlier commit can be measured
in the same run: `PYTHONPATH=/path/to/old/checkout python benchmarks/snapshot_entries.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jetspark
from jetspark.checkpoint import CheckpointStore
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.engine.outbox_impl import OutboxImpl
from jetspark.engine.snapshot import SnapshotEntry
from jetspark.planning.plan import ExecutionPlan
from jetspark.runners import snapshot_io, wiring

try:  # a save call runs with the collector paused where the engine's tasklet pauses it
    from jetspark.engine.gc_pause import gc_paused as around_save
except ImportError:  # a checkout from before the pause: its tasklet calls the save as is
    around_save = contextlib.nullcontext  # type: ignore[assignment]

MEMBERS, LOCAL_PARALLELISM = 2, 2
#: Items of the window benchmark are their own keys, all in one frame of one window.
WINDOW_SPAN = 10**15
KEYS: dict[str, Callable[[int], Any]] = {
    "int": lambda k: k,
    "str": lambda k: f"user-{k}",
    "tuple": lambda k: ("key", k),
}


def offer(keys: list[Any]) -> list[SnapshotEntry]:
    """Every key offered to the snapshot through an outbox, as a tasklet's `save_to_snapshot`
    calls do: offers until one is refused (1,024 a call), then the flush that ends the call."""
    saved: list[SnapshotEntry] = []
    outbox = OutboxImpl([], "bench", 1024, saved.extend, DEFAULT_PARTITION_COUNT)
    outbox.allow_snapshot_offers("save_to_snapshot")
    put = outbox.offer_to_snapshot
    index, count = 0, len(keys)
    while index < count:
        with around_save():
            while index < count and put(keys[index], (index, index * 2)):
                index += 1
        outbox.flush()
    return saved


def keyed_state_save(keys: list[Any]) -> list[SnapshotEntry]:
    """A `KeyedState` of every key saved incrementally with every key changed."""
    from jetspark.core.keyed_state import KeyedState

    state: KeyedState[Any, Any] = KeyedState((key, (index, index * 2)) for index, key in enumerate(keys))
    state.touch(keys[0])  # tracking on, every key changed
    state._changed = set(keys)
    saved: list[SnapshotEntry] = []
    outbox = OutboxImpl([], "bench", 1024, saved.extend, DEFAULT_PARTITION_COUNT)
    outbox.save_only(set(state.changed_keys()))
    outbox.allow_snapshot_offers("save_to_snapshot")

    class Processor:
        def __init__(self) -> None:
            self.outbox = outbox

        def try_emit_to_snapshot(self, key: Any, value: Any) -> bool:
            return outbox.offer_to_snapshot(key, value)

    processor = Processor()
    started = time.process_time()
    while True:
        with around_save():
            done = state.save(processor)
        outbox.flush()
        if done:
            break
    outbox.end_incremental()
    outbox.flush()
    _timed[0] = time.process_time() - started
    return saved


#: CPU seconds of the last `keyed_state_save`'s saving alone (the state's build left out).
_timed = [0.0]


class _Plan:
    """The two fields of an `ExecutionPlan` the restore reads."""

    def __init__(self) -> None:
        from jetspark.planning.partitions import PartitionArrangement

        self.arrangement = PartitionArrangement(DEFAULT_PARTITION_COUNT, MEMBERS)
        self.vertices = {"agg": _Vertex()}


class _Vertex:
    local_parallelism = LOCAL_PARALLELISM


def restore(store: CheckpointStore, manifest: Any) -> int:
    """Read, route and unpickle every entry for its processor; the number of entries restored."""
    snapshot = snapshot_io.read_snapshot(store, manifest, DEFAULT_PARTITION_COUNT)
    plan: ExecutionPlan = _Plan()  # type: ignore[assignment]
    routed = wiring.route_snapshot_entries(snapshot.data, plan, "agg")
    restored = 0
    for member in range(MEMBERS):
        for local in range(LOCAL_PARALLELISM):
            entries = wiring.restore_entries_for(snapshot.data, plan, "agg", member, local, routed)
            assert entries is not None
            restored += len(entries)
    return restored


def window_save(keys: int) -> float:
    """CPU seconds of a full save of the built-in sliding window holding `keys` keys (a count per
    key, a dict per key as its value: the processor's own loop, then the outbox's offers)."""
    from jetspark.core.suppliers import ProcessorSupplier
    from jetspark.processors import WindowPolicy, counting
    from jetspark.processors.windows import _SlidingWindowP
    from jetspark.testing._verify import driven_harness

    supplier = ProcessorSupplier.of(
        lambda: _SlidingWindowP(WindowPolicy.tumbling(WINDOW_SPAN), counting(), 0, _itself, _at_zero)
    )
    harness = driven_harness(
        supplier, inbox_size=4096, outbox_capacity=1024, cooperative_limit=1e9, timeout_seconds=None
    )
    for start in range(0, keys, 100_000):
        harness.feed(0, list(range(start, min(keys, start + 100_000))))
    processor = harness.instances[0].processor
    save = processor.save_to_snapshot
    spent = [0.0]

    def timed_save() -> bool:
        started = time.process_time()
        try:
            with around_save():
                return bool(save())
        finally:
            spent[0] += time.process_time() - started

    processor.save_to_snapshot = timed_save  # type: ignore[method-assign]
    gc.collect()
    harness.snapshot(restore=False)
    harness.close(None)
    return spent[0]


def _itself(item: int) -> int:
    return item


def _at_zero(item: int) -> int:
    return 0


def best(step: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """The least CPU seconds of this process in `repeat` runs of `step` (garbage collected
    before each), and its result: CPU time, as the machine may be busy with other work."""
    seconds, result = float("inf"), None
    for _ in range(repeat):
        result = None
        gc.collect()
        started = time.process_time()
        result = step()
        seconds = min(seconds, time.process_time() - started)
    return seconds, result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keys", type=int, default=1_000_000)
    parser.add_argument("--key-type", choices=sorted(KEYS), default="int")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--window", action="store_true", help="also a full save of a built-in window")
    args = parser.parse_args()
    if args.window:
        seconds = min(window_save(args.keys) for _ in range(args.repeat))
        print(f"keys {args.keys:,}: a window's full save {seconds:.3f} s CPU", flush=True)
    keys = list(map(KEYS[args.key_type], range(args.keys)))
    offered, entries = best(lambda: offer(keys), args.repeat)
    assert len(entries) == args.keys
    keyed, keyed_entries = float("inf"), []
    for _ in range(args.repeat):
        gc.collect()
        keyed_entries = keyed_state_save(keys)
        keyed = min(keyed, _timed[0])
    root = tempfile.mkdtemp(prefix="jetspark-entries-")
    store = CheckpointStore(root, "bench")
    ids = iter(range(10**6))
    per = 1e6 / args.keys
    where = Path(jetspark.__file__).parents[1]
    for label, saved, seconds in (("offer", entries, offered), ("KeyedState save", keyed_entries, keyed)):

        def write(saved: list[SnapshotEntry] = saved) -> Any:
            return snapshot_io.commit_snapshot(
                store, next(ids), {"agg": saved}, ["agg"], DEFAULT_PARTITION_COUNT, {}
            )

        written, manifest = best(write, args.repeat)
        restored, count = best(lambda manifest=manifest: restore(store, manifest), args.repeat)
        assert count == args.keys, f"restored {count} of {args.keys} entries"
        print(
            f"keys {args.keys:,} ({args.key_type}): {label} {seconds:.3f} s ({seconds * per:.2f} us/entry), "
            f"encode + write {written:.3f} s ({written * per:.2f} us/entry), "
            f"restore {restored:.3f} s ({restored * per:.2f} us/entry) [jetspark of {where}]",
            flush=True,
        )
    store.discard()


if __name__ == "__main__":
    main()
