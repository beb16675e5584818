"""What a relayed stage task costs when two workers relay to each other at once, without Spark.

    python benchmarks/relay_crossing.py [--records 300] [--items 1000] [--repeat 3]

On `local[2]` a stage of two members runs in two Python workers, and PySpark gives each task to
whichever worker is idle first: about every other epoch, member 0's task lands in the worker
that keeps member 1's processors and the other way round. Each task then relays its run to the
holder (`runners/spark/handoff.py`), so each worker runs its kept member's engine on the handoff
server's thread while its main thread moves the other member's records: two busy threads under
one GIL in each process.

Two forked processes stand for the two workers. Each keeps one member and serves it through the
real handoff server; its "engine" (a stand-in for `run_stage_task`, patched in) counts the items
of each input record by key and yields a record of `(key, count)` pairs, as the busy epoch of
`epoch_state_bench.py` does. Each then runs a task of the *other* member, as PySpark would: it
relays `--records` records of `--items` pickled ints each and pickles every output record as
PySpark's serializer does. Reported: the wall time until both tasks ended, crossed, against the
same two engines run where they are kept (no relay, the hit), the best of `--repeat`.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pickle
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from jetspark.runners.spark import handoff, handoff_registry, state_cache

JOB, STAGE, VERTEX = "relay-bench", 1, "counts"


class Kept:
    """What a holder keeps: only `close` is called on it."""

    def close(self) -> None:
        pass


def engine(records: Any) -> Iterator[bytes]:
    """The member's work: a running count per key of each record's items, a record out per
    record in (Python-level work per item, as the engine's)."""
    counts: dict[int, int] = {}
    for payload in records:
        out = []
        for item in pickle.loads(payload):
            key = item % 500_000
            n = counts.get(key, 0) + 1
            counts[key] = n
            out.append((key, n))
        yield pickle.dumps(out, pickle.HIGHEST_PROTOCOL)


def keep(member: int, snapshot_id: int) -> None:
    kept: Any = Kept()
    state_cache.put(JOB, VERTEX, member, state_cache.Kept([kept], snapshot_id, ("f", "s"), 2, 271, STAGE))


def fake_run(*args: Any, **_: Any) -> Iterator[bytes]:
    yield from engine(args[4])
    keep(args[3], 6)


def request(member: int) -> handoff.Request:
    return handoff.Request(b"spec", STAGE, None, member, b"e", None, (1, 0), JOB, member, (VERTEX,), 5, 6)


def worker(kept: int, records: list[bytes], crossed: bool, start: Any, done: Any, finished: Any) -> None:
    """One Python worker: keeps member `kept`, serves it, then runs a task of the other member
    (relayed to the other worker when `crossed`, else its own member here)."""
    from jetspark.runners.spark import task

    task.run_stage_task = fake_run  # type: ignore[assignment]
    keep(kept, 5)
    handoff.advertise(JOB, STAGE, kept, 5)
    start.wait()
    began = time.perf_counter()
    if crossed:
        relay = handoff.open_relay(request(1 - kept), STAGE)
        assert relay is not None, "the other worker did not accept"
        outputs = relay.run(records)
    else:
        outputs = engine(records)
    for record in outputs:
        pickle.dumps(record, pickle.HIGHEST_PROTOCOL)  # PySpark's serializer, toward the JVM
    done.put(time.perf_counter() - began)
    finished.wait()  # keep serving until the other worker's task (its relay to this one) ended


def run_once(records: list[bytes], crossed: bool) -> float:
    context = multiprocessing.get_context("fork")
    start = context.Barrier(3)
    done = context.Queue()
    finished = context.Barrier(2)
    procs = [
        context.Process(target=worker, args=(m, records, crossed, start, done, finished)) for m in (0, 1)
    ]
    for proc in procs:
        proc.start()
    start.wait()
    began = time.perf_counter()
    times: list[float] = [done.get(timeout=120) for _ in procs]
    wall = time.perf_counter() - began
    for proc in procs:
        proc.join()
    return max(wall, *times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="rb", dir="/tmp"))
    registry: Any = handoff_registry
    registry.tempfile = SimpleNamespace(gettempdir=lambda: str(root))
    os.environ["SPARK_REUSE_WORKER"] = "1"
    os.environ.pop(handoff.SWITCH, None)
    records = [
        pickle.dumps(list(range(i * args.items, (i + 1) * args.items)), pickle.HIGHEST_PROTOCOL)
        for i in range(args.records)
    ]
    try:
        hit = min(run_once(records, crossed=False) for _ in range(args.repeat))
        crossed = min(run_once(records, crossed=True) for _ in range(args.repeat))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    size = sum(map(len, records)) / 1e6
    print(
        f"{args.records} records ({size:.1f} MB in) per member: where kept {hit:.3f} s, "
        f"crossed relays {crossed:.3f} s ({crossed / hit:.2f}x, +{crossed - hit:.3f} s) "
        f"[jetspark of {Path(handoff.__file__).parents[3]}]",
        flush=True,
    )


if __name__ == "__main__":
    threading.excepthook = lambda info: None  # a holder's server thread outliving the benchmark
    main()
