"""Which Python worker of this host holds a member's processors: the handoff's registry.

A worker that keeps the processors of (job, stage, member) after an epoch (`state_cache`) says so
in a small file, `<job>-s<stage>-m<member>.holder`, holding its pid, the Unix socket its handoff
server listens on (`handoff`) and the snapshot id its processors took. A task of that member that
lands in another worker reads the file and hands its run to the holder. The files live in a
directory private to the user (`<tempdir>/jetspark-handoff-<uid>`, mode 0700: whoever can connect
to a socket there can make the worker run a stage task, so nobody else may); a directory that is
not private is not used, and tasks run where they land.

The registry is advice, never trusted for correctness: the holder checks the snapshot its
processors took against the committed one before it runs anything, and a dead holder (its pid
gone, or its socket refusing) means the task runs where it landed and restores from the store.
A file is replaced atomically (`os.replace`), and removed by its holder when it drops the
processors; files and sockets of dead pids are swept when a server starts.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
import uuid
from collections.abc import Mapping
from pathlib import Path

import attrs

#: Longest path a Unix socket address takes (Linux: 108 bytes with the final NUL).
_MAX_SOCKET_PATH = 100
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@attrs.frozen
class Holder:
    """A worker that holds a member's processors, as of the snapshot they took."""

    pid: int
    socket: str
    snapshot_id: int


def directory() -> Path | None:
    """This user's registry directory (made on first use), or None when it is not private."""
    path = Path(tempfile.gettempdir()) / f"jetspark-handoff-{os.getuid()}"
    try:
        path.mkdir(mode=0o700, exist_ok=True)
        info = path.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        return None
    return path


def _entry(root: Path, job_id: str, stage: int, member: int, kind: str = "holder") -> Path:
    return root / f"{_UNSAFE.sub('_', job_id)}-s{stage}-m{member}.{kind}"


def socket_path() -> str | None:
    """A fresh socket path for this process's server (its pid first, for the sweep), or None."""
    root = directory()
    if root is None:
        return None
    path = str(root / f"w{os.getpid()}-{uuid.uuid4().hex[:8]}.sock")
    return path if len(path) <= _MAX_SOCKET_PATH else None


def advertise(job_id: str, stage: int, member: int, holder: Holder) -> None:
    """Say that `holder` keeps the processors of (job, stage, member)."""
    root = directory()
    if root is None:
        return
    _write(_entry(root, job_id, stage, member), attrs.asdict(holder))


def lookup(job_id: str, stage: int, member: int) -> Holder | None:
    """The worker the registry names for (job, stage, member), if any (not checked for life)."""
    root = directory()
    if root is None:
        return None
    try:
        data = json.loads(_entry(root, job_id, stage, member).read_text(encoding="utf-8"))
        return Holder(int(data["pid"]), str(data["socket"]), int(data["snapshot_id"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def withdraw(job_id: str, stage: int, member: int, pid: int) -> None:
    """Remove the entry of (job, stage, member) if it names `pid` (another worker may have taken
    over since: its entry stays). Read and remove are not one step: a worker that registers in
    between loses its entry, and its member's next task restores from the store (a miss)."""
    holder = lookup(job_id, stage, member)
    root = directory()
    if holder is not None and holder.pid == pid and root is not None:
        with contextlib.suppress(OSError):
            _entry(root, job_id, stage, member).unlink()


def entries(job_id: str) -> list[Path]:
    """The registry files of a job (tests, diagnostics)."""
    root = directory()
    if root is None:
        return []
    return sorted(root.glob(f"{_UNSAFE.sub('_', job_id)}-s*-m*.holder"))


def stage_and_member(path: Path, job_id: str) -> tuple[int, int] | None:
    """The (stage, member) an entry of `entries(job_id)` names, or None for another name."""
    match = re.fullmatch(re.escape(_UNSAFE.sub("_", job_id)) + r"-s(\d+)-m(\d+)\.holder", path.name)
    return None if match is None else (int(match.group(1)), int(match.group(2)))


def note_relay(job_id: str, stage: int, member: int, holder: int, relaying: int, epoch: int) -> None:
    """While a holder runs a relayed task: which worker relays it (`.relay` next to the entry),
    for an operator (and tests) to see; removed by `end_relay`."""
    root = directory()
    if root is not None:
        record = {"holder": holder, "relaying": relaying, "epoch": epoch}
        _write(_entry(root, job_id, stage, member, "relay"), record)


def end_relay(job_id: str, stage: int, member: int) -> None:
    root = directory()
    if root is not None:
        with contextlib.suppress(OSError):
            _entry(root, job_id, stage, member, "relay").unlink()


def relay_note(job_id: str, stage: int, member: int) -> dict[str, int] | None:
    root = directory()
    if root is None:
        return None
    try:
        data: dict[str, int] = json.loads(_entry(root, job_id, stage, member, "relay").read_text("utf-8"))
        return data
    except (OSError, ValueError):
        return None


def sweep() -> None:
    """Remove the sockets and entries of workers that are gone (a SIGKILLed worker removes
    nothing), so the directory does not grow with dead workers."""
    root = directory()
    if root is None:
        return
    for path in root.iterdir():
        pid = _pid_of(path)
        if pid is not None and not alive(pid):
            with contextlib.suppress(OSError):
                path.unlink()


def _pid_of(path: Path) -> int | None:
    name = path.name
    if name.endswith(".sock") and name.startswith("w"):
        with contextlib.suppress(ValueError):
            return int(name[1:].split("-", 1)[0])
        return None
    if name.endswith((".holder", ".relay")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return int(data["pid"] if "pid" in data else data["holder"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
    return None


def alive(pid: int) -> bool:
    """Whether process `pid` exists (a zombie counts as gone where /proc tells)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as info:
            return info.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _write(path: Path, data: Mapping[str, object]) -> None:
    """Write `data` to `path` atomically: a reader sees the old file or the new one, whole."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:6]}")
    try:
        temporary.write_text(json.dumps(data), encoding="utf-8")
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()
