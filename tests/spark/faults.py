"""Task attempts that fail, crash or race, for the `files` sink tests (test_attempts.py).

The job: 20 000 ints from 2 members -> identity map -> distributed partitioned edge -> `gate` ->
local edge -> `files` sink. `Gate` is the sink stage's input step: in partition 0 of that stage it
passes `after` items to the sink, waits until its own worker process has written sink output,
then injects its fault (raise, crash the Python worker, or stall as a speculated original or
copy). Each gate leaves empty marker files `<partition>.<attempt>.<task id>.<pid>.<event>` in a
side directory, so the test can see which attempts ran and what they did.

Run as a script (one process holds one SparkContext): `python faults.py '<json spec>'` runs the
spec's jobs on one session and prints one JSON line, a report per job. The output checks are
`committed_problems` and `failed_problems`.
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cloudpickle

import tests
from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.config import JobConfig
from jetspark.core.context import ProcessorContext
from jetspark.core.dag import DAG
from jetspark.core.edge import Edge
from jetspark.core.inbox import Inbox
from jetspark.processors import files, from_iterable
from jetspark.processors import map as map_items

cloudpickle.register_pickle_by_value(tests)

COUNT = 20_000
MEMBERS = 2
SINK = "sink"
#: Faults `Gate` injects in partition 0 of the sink stage.
FAULTS = ("none", "raise", "raise-always", "exit", "slow-original", "slow-copy")
#: How long a gate waits for its own output to reach the disk before injecting anyway. A sink
#: writing through Python's buffered files (8 KiB) shows nothing on disk before about 3 batches
#: of 1024 items, so faults come after 4000 items or more.
OUTPUT_WAIT = 10.0


def identity(item: Any) -> Any:
    return item


# ---- evidence from the workers ---------------------------------------------------------------


def mark(side: str, name: str) -> None:
    """Leave an empty marker file (no appends: several processes write at once)."""
    Path(side, name).touch()


def claim(path: str) -> bool:
    """Create `path` atomically; True for the one caller that created it."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


@dataclass
class Attempt:
    """One task attempt of the sink stage, as its gate recorded it."""

    partition: int
    number: int
    task_id: int
    pid: int
    #: event -> when its marker was made (st_mtime_ns)
    events: dict[str, int] = field(default_factory=dict)

    @property
    def key(self) -> str:
        return f"{self.partition}.{self.number}.{self.task_id}.{self.pid}"


def attempts(side: str) -> list[Attempt]:
    """The attempts that left markers in `side`, by partition then attempt number."""
    found: dict[str, Attempt] = {}
    for name in os.listdir(side):
        parts = name.split(".")
        if len(parts) != 5:
            continue
        partition, number, task_id, pid = (int(p) for p in parts[:4])
        attempt = found.setdefault(".".join(parts[:4]), Attempt(partition, number, task_id, pid))
        attempt.events[parts[4]] = os.stat(os.path.join(side, name)).st_mtime_ns
    return sorted(found.values(), key=lambda a: (a.partition, a.number, a.task_id))


def alive(pid: int) -> bool:
    """True while process `pid` runs (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False


def own_output_bytes(directory: str) -> int:
    """Bytes in the files under `directory` this process holds open: what this attempt's sink has
    written so far, wherever it stages it (Linux: /proc/self/fd)."""
    prefix = os.path.realpath(directory) + os.sep
    total = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith(prefix):
                total += os.fstat(int(fd)).st_size
        except OSError:
            continue
    return total


def wait_for(condition: Callable[[], object], timeout: float, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(step)
    return True


# ---- the job -----------------------------------------------------------------------------------


class Gate(AbstractProcessor):
    """Passes items on; in partition 0 of the sink stage, injects `fault` after `after` items
    (`copy_after` in a retry or speculative copy: attempts that stop at different points leave
    files of different lengths, which is what lets overlapping attempts corrupt a shared file).

    The fault comes at the start of a `process` call, so everything passed before it has left the
    outbox, and only once this process's sink file holds data: the failed or stalled attempt has
    really written part of its output.
    """

    def __init__(self, fault: str, side: str, output: str, after: int, copy_after: int) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}")
        self.fault = fault
        self.side = side
        self.output = output
        self.after = after
        self.copy_after = copy_after
        self.passed = 0
        self.attempt: Attempt | None = None
        self.armed = False

    def is_cooperative(self) -> bool:
        return False  # it blocks while it stalls

    def init_processor(self, context: ProcessorContext) -> None:
        from pyspark import TaskContext

        task = TaskContext.get()
        assert task is not None, "Gate runs in a Spark task"
        self.attempt = Attempt(task.partitionId(), task.attemptNumber(), task.taskAttemptId(), os.getpid())
        if self.attempt.number > 0:
            self.after = self.copy_after
        self.armed = self.attempt.partition == 0 and self.fault != "none"
        if self.fault in ("raise", "slow-original"):
            self.armed = self.armed and self.attempt.number == 0
        self._mark("start")

    def _mark(self, event: str) -> None:
        if self.attempt is not None:
            mark(self.side, f"{self.attempt.key}.{event}")

    def _others(self, event: str) -> bool:
        """True once another attempt of this partition recorded `event`."""
        assert self.attempt is not None
        return any(
            a.partition == self.attempt.partition and a.key != self.attempt.key and event in a.events
            for a in attempts(self.side)
        )

    def process(self, ordinal: int, inbox: Inbox) -> None:
        if self.armed and self.passed >= self.after:
            self.armed = False
            self._inject()
        super().process(ordinal, inbox)

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        if not self.try_emit(item):
            return False
        self.passed += 1
        return True

    def _inject(self) -> None:
        assert self.attempt is not None
        written = wait_for(lambda: own_output_bytes(self.output) > 0, OUTPUT_WAIT)
        self._mark("partial" if written else "nopartial")
        if self.fault in ("raise", "raise-always"):
            self._mark("fault")
            raise RuntimeError(f"injected fault in attempt {self.attempt.key}")
        if self.fault == "exit":
            if claim(os.path.join(self.side, "exit-once")):
                self._mark("fault")
                os._exit(1)
            return
        if self.fault == "slow-original":  # stall until a copy has done its work, so the copy wins
            self._mark("fault")
            wait_for(lambda: self._others("done"), 20)
            time.sleep(3)
        elif self.attempt.number == 0:  # slow-copy, the original: go on once a copy wrote some
            wait_for(lambda: self._others("partial"), 20)
        else:  # slow-copy, a copy: stall until killed (the original wins)
            self._mark("fault")
            time.sleep(20)
        self._mark("woke")

    def complete(self) -> bool:
        self._mark("done")
        return True

    def close(self) -> None:
        self._mark("closed")


def job_dag(
    fault: str, side: str, output: str, after: int = 4000, copy_after: int | None = None, count: int = COUNT
) -> DAG:
    """source -> identity -distributed, partitioned-> gate -> files sink (stages: 2)."""
    dag = DAG()
    source = dag.new_vertex("source", from_iterable(range(count)))
    same = dag.new_vertex("identity", map_items(identity))
    gate_supplier = functools.partial(
        Gate, fault, side, output, after, after if copy_after is None else copy_after
    )
    gate = dag.new_vertex("gate", gate_supplier)
    sink = dag.new_vertex(SINK, files(output))
    dag.edge(Edge.between(source, same))
    dag.edge(Edge.between(same, gate).partitioned(identity).distributed())
    dag.edge(Edge.between(gate, sink))
    return dag


# ---- output checks ---------------------------------------------------------------------------

_COMMITTED = re.compile(rf"{SINK}-(\d{{5}})\.txt")


def committed_problems(directory: str, expected: Iterable[str], members: int = MEMBERS) -> list[str]:
    """What is wrong with the output of a successful job; empty when it is exact.

    Contract: only `_SUCCESS` (empty) and `sink-<global index:05d>.txt` files, well-formed lines,
    and the union of their lines is `expected`, each line once.
    """
    root = Path(directory)
    if not root.is_dir():
        return [f"{directory} does not exist"]
    problems: list[str] = []
    names = sorted(p.name for p in root.iterdir())
    success = root / "_SUCCESS"
    if not success.is_file():
        problems.append("no _SUCCESS")
    elif success.stat().st_size:
        problems.append(f"_SUCCESS is not empty ({success.stat().st_size} bytes)")
    stray = [n for n in names if n != "_SUCCESS" and not _COMMITTED.fullmatch(n)]
    if stray:
        problems.append(f"unexpected entries left: {stray}")
    lines: list[str] = []
    for name in names:
        match = _COMMITTED.fullmatch(name)
        if match is None:
            continue
        if int(match.group(1)) >= members:
            problems.append(f"{name}: global index out of range (parallelism {members})")
        data = (root / name).read_bytes()
        nuls = data.count(b"\0")
        if nuls:
            first = data.index(b"\0")
            problems.append(f"{name}: {nuls} NUL bytes, the first at offset {first}")
        if data and not data.endswith(b"\n"):
            problems.append(f"{name}: last line not terminated: {data[-20:]!r}")
        text = data.decode("utf-8", errors="replace")
        own = text.splitlines()
        bad = [line for line in own if not re.fullmatch(r"-?\d+", line)]
        if bad:
            problems.append(f"{name}: {len(bad)} malformed lines, e.g. {_short(bad)}")
        lines += own
    want = sorted(expected)
    got = sorted(lines)
    if got != want:
        wanted, seen = set(want), set(got)
        missing = sorted(wanted - seen, key=_numeric)
        extra = sorted(seen - wanted, key=_numeric)
        repeated = len(got) - len(seen)
        problems.append(
            f"{len(got)} lines for {len(want)} expected: {len(missing)} missing {missing[:5]}, "
            f"{repeated} repeated, {len(extra)} unexpected {_short(extra)}"
        )
    return problems


def failed_problems(directory: str) -> list[str]:
    """What is wrong with the output of a failed job: any `sink-*.txt` file or `_SUCCESS`."""
    root = Path(directory)
    if not root.is_dir():
        return []
    left = sorted(p.name for p in [*root.glob(f"{SINK}-*.txt"), *root.glob("_SUCCESS")])
    return [f"a failed job left {left}"] if left else []


def _short(lines: list[str]) -> str:
    """The first few lines, each cut short (a line of NUL bytes can be kilobytes long)."""
    return repr([line[:20] + ("..." if len(line) > 20 else "") for line in lines[:3]])


def _numeric(line: str) -> tuple[int, str]:
    return (int(line), "") if re.fullmatch(r"-?\d+", line) else (1 << 62, line)


# ---- the job script ----------------------------------------------------------------------------


def quiesce(side: str, timeout: float) -> bool:
    """Wait until every attempt closed or its worker process is gone, so nothing writes after the
    test looks (a killed loser's worker dies seconds after the job ends)."""
    return wait_for(
        lambda: all("closed" in a.events or not alive(a.pid) for a in attempts(side)), timeout, 0.2
    )


def main(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Run `spec["jobs"]` one after the other on a session of `spec["master"]`."""
    from jetspark.runners.spark import SparkRunner, get_session

    spark = get_session(spec["master"], extra_conf=spec.get("conf", {}))
    sc = spark.sparkContext
    wait_for(lambda: len(sc.statusTracker().getExecutorInfos()) > spec.get("executors", 0), 120, 0.2)
    reports = []
    for job in spec["jobs"]:
        started = time.monotonic()
        dag = job_dag(job["fault"], job["side"], job["output"], job.get("after", 4000), job.get("copy_after"))
        try:
            SparkRunner(spark).run(dag, JobConfig(name=job["fault"], member_count=MEMBERS), timeout=180)
            status = "completed"
        except Exception as error:
            first_line = (str(error).splitlines() or [""])[0]
            status = f"failed: {type(error).__name__}: {first_line[:300]}"
        seconds = time.monotonic() - started
        quiet = quiesce(job["side"], 30)
        reports.append(
            {
                "fault": job["fault"],
                "status": status,
                "seconds": round(seconds, 2),
                "quiesced": quiet,
                "quiesce_seconds": round(time.monotonic() - started - seconds, 2),
                "executors": len(sc.statusTracker().getExecutorInfos()) - 1,
            }
        )
    spark.stop()
    return reports


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
