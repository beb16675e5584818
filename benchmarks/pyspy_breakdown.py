"""Where an epoch's seconds go: py-spy samples of the driver and its Spark Python workers, summed
by what the sampled stack was doing.

    python benchmarks/pyspy_breakdown.py PROFILE.raw EPOCHS [--top 25]

`start(path)` attaches `py-spy record --subprocesses --idle` to this process (the driver), which
also samples every Python process under it: the Spark JVM's `pyspark.daemon` and its workers;
`stop` ends it and the raw (collapsed) stacks are written. `report(path, epochs)` sorts every
sample of the driver's epoch loop and of the workers into a category (the innermost frame that
names one, `WORKER_CATEGORIES` and `DRIVER_CATEGORIES`), and prints seconds per epoch: samples / rate / epochs. Driver figures
are wall clock of the one thread that runs the epochs; worker figures are summed over the
workers (up to two run at once on `local[2]`), idle time between tasks included.

Needs py-spy (`pip install py-spy`), which needs ptrace rights on the processes (root, or
`kernel.yama.ptrace_scope=0`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter

RATE = 100


#: (category, pattern of a frame); the innermost frame of a stack that matches one decides it.
#: Frames are py-spy's "function (file:line)".
def _fn(names: str, where: str = "") -> str:
    """A frame of function(s) `names` (a regex alternative, any class prefix) in file `where`."""
    return rf"^(?:[\w<>]+\.)*(?:{names}) \({where}"


#: (category, pattern of a frame) of the workers' samples; the innermost frame of a stack that
#: matches one decides it. Frames are py-spy's "function (file:line)"; `{name}` is filled with the
#: line numbers of the statements `_compiled` looks up.
WORKER_CATEGORIES: list[tuple[str, str]] = [
    # the processors' save, per entry (engine/outbox_impl.py)
    ("save: partition of each key (stable hash)", _fn("entry_partition")),
    ("save: pickle each key and value", _fn("offer_to_snapshot", r"jetspark/engine/outbox\.py:{pickles}\)")),
    ("save, restore: make each entry's tuple", r"^(?:<lambda> \(<string>|namedtuple\.<locals>\._make )"),
    ("save: the outbox's checks per offer", _fn("offer_to_snapshot|_check_reoffer|_clear_unfinished")),
    ("save: the processor's loop (save_to_snapshot)", _fn("save_to_snapshot|_begin_save|\\w*to_snapshot")),
    ("save: the processor's loop (save_to_snapshot)", r"\(jetspark/core/traverser\.py"),
    # the snapshot file's write
    ("write: SHA-256 of the file", _fn("encode", r"jetspark/checkpoint/entries\.py:{sha256}\)")),
    ("write: encode (sort, pack, CRC-32)", _fn("encode", r"jetspark/checkpoint/entries\.py")),
    ("write: write + fsync the file", _fn("write_file", r"jetspark/checkpoint/atomic\.py")),
    ("write: other", _fn("_write", r"jetspark/runners/spark/epoch_task\.py")),
    # restore on a miss
    ("restore: state cache lookup", _fn("take_kept")),
    ("restore: CRC-32 of the segments", _fn("decode_segment", r"jetspark/checkpoint/entries\.py:{crc}\)")),
    ("restore: decode each entry (struct, bytes)", _fn("decode_segment")),
    ("restore: unpickle each key and value", _fn("decode", r"jetspark/engine/snapshot\.py")),
    (
        "restore: route the entries to their processors",
        _fn("route_snapshot_entries|global_owner|local_owner"),
    ),
    ("restore: read the share (other)", _fn("load_shares|restore_data")),
    ("restore: restore_from_snapshot_entry", r"restore_from_snapshot|_restore \(jetspark/engine/tasklet"),
    # the rest of a task
    ("task: claim marker (runs/)", _fn("refusal|_claim", r"jetspark/runners/spark/epoch_task\.py")),
    (
        "task: keep or close processors",
        _fn("finish_keeping|close", r"jetspark/runners/(spark/epoch_task|member)\.py"),
    ),
    (
        "task: unpickle the task spec",
        _fn("run_stage_task", r"jetspark/runners/spark/task\.py:{spec_loads}\)"),
    ),
    ("task: processor setup", _fn("setup", r"jetspark/runners/member\.py")),
    ("task: open the checkpoint store", _fn("store|_open_store", r"jetspark/runners/spark/epoch_task\.py")),
    ("task: idle rounds (waiting for input or the span)", _fn("idle", r"jetspark/engine/execution\.py")),
    ("task: run the processors (items, engine)", _fn("steps", r"jetspark/engine/")),
    ("task: other of run_stage_task", _fn("run_stage_task")),
    ("pyspark: waiting for the next task", _fn("read_int")),
    ("pyspark: read the task, send results", r"\((?:pyspark/)?(?:worker|serializers|worker_util)\.py"),
]

#: The same for the driver's thread that runs the epochs.
DRIVER_CATEGORIES: list[tuple[str, str]] = [
    ("driver: commit, retention", _fn("_apply_retention")),
    ("driver: commit, manifest + LATEST", _fn("commit", r"jetspark/checkpoint/store\.py")),
    ("driver: commit, other (ledger, results)", _fn("_commit", r"jetspark/runners/spark/epochs\.py")),
    (
        "driver: read LATEST + manifest, check files",
        _fn("latest|latest_id", r"jetspark/checkpoint/store\.py"),
    ),
    ("driver: settle write_epochs tables", _fn("_settle_tables")),
    ("driver: delete the run's markers", _fn("_forget_run")),
    ("driver: build the epoch's RDDs", _fn("build|_build_rdds", r"jetspark/runners/spark/runner\.py")),
    ("driver: wait for the Spark job (collect)", _fn("collect", r"(?:pyspark/)?(?:core/)?rdd\.py")),
    ("driver: read the tasks' reports", _fn("of", r"jetspark/runners/spark/records\.py")),
    ("driver: other of the epoch", _fn("execute", r"jetspark/runners/spark/epochs\.py")),
    ("driver: back-off, restart loop", _fn("run", r"jetspark/runners/coordinator\.py")),
]


_WORKER = re.compile(_fn("worker", r"(?:pyspark/)?daemon\.py"))
_EPOCHS = re.compile(_fn("execute", "jetspark/runners/spark/epochs"))


def _line_of(path: str, needle: str) -> str:
    """The line numbers in `path` (a file of jetspark) holding `needle`, as a regex alternative."""
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", path)
    with open(here) as source:
        lines = [str(n) for n, text in enumerate(source, 1) if needle in text]
    return "(?:" + "|".join(lines or ["0"]) + ")"


def _compiled(categories: list[tuple[str, str]]) -> list[tuple[str, re.Pattern[str]]]:
    fill = {
        "sha256": _line_of("jetspark/checkpoint/entries.py", "hashlib.sha256"),
        "crc": _line_of("jetspark/checkpoint/entries.py", "if zlib.crc32(body)"),
        "pickles": _line_of("jetspark/engine/outbox_impl.py", "pickle.dumps("),
        "spec_loads": _line_of("jetspark/runners/spark/task.py", "pickle.loads"),
    }
    return [(name, re.compile(pattern.format(**fill))) for name, pattern in categories]


def start(path: str, rate: int = RATE) -> subprocess.Popen[bytes]:
    """py-spy recording this process and its Python descendants into `path` (raw format)."""
    spy = shutil.which("py-spy") or os.path.join(os.path.dirname(sys.executable), "py-spy")
    command = [spy, "record", "--pid", str(os.getpid()), "--subprocesses", "--idle", "--threads"]
    command += ["--nonblocking", "--rate", str(rate), "--format", "raw", "-o", path]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    time.sleep(1.0)  # it attaches
    if process.poll() is not None:
        raise SystemExit(f"py-spy did not start: {process.stderr.read().decode() if process.stderr else ''}")
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGINT)
    process.wait(timeout=120)


def _frames(line: str) -> tuple[list[str], int]:
    stack, _, count = line.rstrip("\n").rpartition(" ")
    return stack.split(";"), int(count)


def classify(path: str) -> tuple[Counter[str], Counter[str], int]:
    """Samples per category of the driver's epoch thread and of the workers, and the samples
    of what matched no category (by innermost frame, `Counter` keys prefixed `?`)."""
    in_workers, in_driver = _compiled(WORKER_CATEGORIES), _compiled(DRIVER_CATEGORIES)
    driver: Counter[str] = Counter()
    workers: Counter[str] = Counter()
    with open(path) as raw:
        for line in raw:
            if not line.strip():
                continue
            frames, count = _frames(line)
            processes = [f for f in frames if f.startswith("process ")]
            code = [f for f in frames if not f.startswith(("process ", "thread "))]
            in_worker = "pyspark.daemon" in processes[-1] if processes else False
            if in_worker and not any(_WORKER.match(f) for f in code):
                continue  # the daemon itself, which only forks the workers
            epoch_thread = len(processes) == 1 and any(_EPOCHS.match(f) for f in code)
            if not in_worker and not epoch_thread:
                continue  # another driver thread, or a process that is neither
            target = workers if in_worker else driver
            patterns = in_workers if in_worker else in_driver
            for frame in reversed(code):
                for name, pattern in patterns:
                    if pattern.search(frame):
                        target[name] += count
                        break
                else:
                    continue
                break
            else:
                inner = code[-1] if code else "(no Python frame)"
                target[f"? {inner}"] += count
    return driver, workers, sum(driver.values()) + sum(workers.values())


def report(path: str, epochs: int, rate: int = RATE, top: int = 25) -> str:
    driver, workers, _ = classify(path)
    lines = [f"py-spy breakdown of {epochs} epochs ({path}), seconds per epoch:"]
    for title, counts in (
        ("driver (epoch thread, wall clock)", driver),
        ("Python workers (summed)", workers),
    ):
        total = sum(counts.values())
        lines.append(f"  {title}: {total / rate / max(epochs, 1):.3f} s")
        for name, samples in counts.most_common(top):
            lines.append(
                f"    {samples / rate / max(epochs, 1):7.3f}  {100 * samples / max(total, 1):5.1f} %  {name}"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("profile")
    parser.add_argument("epochs", type=int)
    parser.add_argument("--rate", type=int, default=RATE)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print(report(args.profile, args.epochs, args.rate, args.top))


if __name__ == "__main__":
    main()
