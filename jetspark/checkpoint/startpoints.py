"""Startpoints: where a replayable source starts reading, set out of band (Samza's SEP-19).

A startpoint names one *source partition*, `(vertex, split)` (for `directory_stream` a split is a
file name), optionally one processor of that vertex (its global index), and says where to start:
`Specific(offset)`, `Timestamp(ts)`, `Oldest()` or `Upcoming()`. Each carries its creation time.

Life of a startpoint:

1. *Written* (`StartpointStore.write`, `jetspark startpoint set`) before or while a job runs.
2. *Fanned out* when the job's plan is built (`StartpointStore.fan_out`): for each processor and
   each of its source partitions, the newer of the partition-only and the partition+processor
   startpoint wins; the result is written per processor and the written startpoints it consumed
   are deleted. Fan-outs of an earlier plan are folded in too, so a job planned again on another
   member count moves each partition's fan-out to its new owner.
3. *Resolved* by the source at start to an offset that overrides the snapshot's (see
   `startpoint_source`). The snapshot itself is never modified.
4. *Removed* once a committed snapshot holds an offset that moved since the start.

Layout under the store's directory (`<checkpoint root>/.startpoints/<job>` by default; a name
starting with a dot cannot be a job's)::

    written/<vertex>.<split>[.p<processor>].json    one written startpoint
    fanout/<vertex>/p<processor>.json               {split: startpoint} of one processor
    resolved/<vertex>.<split>.json                  the offset a startpoint resolved to, and when

Vertex and split are hex-encoded in file names, so any split name is safe.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

import attrs
import fsspec

from jetspark.checkpoint import atomic
from jetspark.checkpoint.store import check_name

T = TypeVar("T")
_log = logging.getLogger("jetspark.startpoints")

#: Samza's default: a written startpoint older than this is ignored.
DEFAULT_EXPIRY_SECONDS = 12 * 3600.0


@attrs.frozen
class Specific:
    """Start at `offset` (a byte offset for `directory_stream`)."""

    offset: int
    created: float = attrs.field(factory=time.time)

    def __attrs_post_init__(self) -> None:
        if isinstance(self.offset, bool) or not isinstance(self.offset, int) or self.offset < 0:
            raise ValueError(f"Specific startpoint: offset must be an int >= 0, got {self.offset!r}")


@attrs.frozen
class Timestamp:
    """Start at the first record whose timestamp (milliseconds) is at or after `timestamp`, else at the end."""

    timestamp: int
    created: float = attrs.field(factory=time.time)

    def __attrs_post_init__(self) -> None:
        if isinstance(self.timestamp, bool) or not isinstance(self.timestamp, int):
            raise ValueError(
                f"Timestamp startpoint: timestamp must be an int of milliseconds, got {self.timestamp!r}"
            )


@attrs.frozen
class Oldest:
    """Start at the beginning of the partition."""

    created: float = attrs.field(factory=time.time)


@attrs.frozen
class Upcoming:
    """Start at the end: only records that arrive from now on."""

    created: float = attrs.field(factory=time.time)


Startpoint = Specific | Timestamp | Oldest | Upcoming
_KINDS: dict[str, type[Any]] = {
    "specific": Specific,
    "timestamp": Timestamp,
    "oldest": Oldest,
    "upcoming": Upcoming,
}


def startpoint_to_json(startpoint: Startpoint) -> dict[str, Any]:
    kind = {cls: name for name, cls in _KINDS.items()}[type(startpoint)]
    return {"type": kind, **attrs.asdict(startpoint)}


def startpoint_from_json(data: dict[str, Any]) -> Startpoint:
    fields = dict(data)
    kind = fields.pop("type", None)
    if kind not in _KINDS:
        raise ValueError(f"unknown startpoint type {kind!r}; expected one of {sorted(_KINDS)}")
    try:
        startpoint: Startpoint = _KINDS[kind](**fields)
    except TypeError as error:  # a field missing, or one the kind does not have
        names = [field.name for field in attrs.fields(_KINDS[kind])]
        raise ValueError(
            f"a {kind} startpoint has the fields {names}, got {sorted(fields)} ({error})"
        ) from None
    return startpoint


class SourcePartition(NamedTuple):
    """One partition of a source vertex (Samza's system-stream-partition)."""

    vertex: str
    split: str


@runtime_checkable
class StartpointSource(Protocol):
    """A source supplier whose processors honour startpoints; says which partition owns a split,
    so that the fan-out finds the processor that reads it."""

    def split_partition(self, split: str, partition_count: int) -> int: ...


class Resolved(NamedTuple):
    """What a startpoint resolved to: the offset, and the snapshot the source had restored then."""

    startpoint: Startpoint
    offset: int
    restore_id: int


def _hex(text: str) -> str:
    return text.encode().hex()


def _unhex(text: str) -> str:
    return bytes.fromhex(text).decode()


class StartpointStore:
    """The startpoints of one job, under `<root>/.startpoints/<job>` or `<directory>/<job>`."""

    def __init__(
        self,
        root: str,
        job: str,
        directory: str | None = None,
        storage_options: dict[str, Any] | None = None,
    ) -> None:
        base = root if directory is None else directory
        self.fs, path = fsspec.core.url_to_fs(base, **(storage_options or {}))
        self.job = check_name("job", job)
        self.dir = f"{path.rstrip('/')}/{'.startpoints/' if directory is None else ''}{job}"

    # ---- written startpoints -------------------------------------------------------------------

    def _written_path(self, partition: SourcePartition, processor: int | None) -> str:
        tail = "" if processor is None else f".p{processor}"
        return f"{self.dir}/written/{_hex(partition.vertex)}.{_hex(partition.split)}{tail}.json"

    def write(self, partition: SourcePartition, startpoint: Startpoint, processor: int | None = None) -> None:
        """Write (replacing) the startpoint of `partition`, or of `partition` read by `processor`."""
        if processor is not None and (isinstance(processor, bool) or processor < 0):
            raise ValueError(
                f"startpoint of {partition}: processor must be a global index >= 0, got {processor}"
            )
        self._put(self._written_path(partition, processor), startpoint_to_json(startpoint))

    def read(
        self,
        partition: SourcePartition,
        processor: int | None = None,
        expiry_seconds: float = DEFAULT_EXPIRY_SECONDS,
        now: float | None = None,
    ) -> Startpoint | None:
        """The written startpoint, or None if there is none or it is older than `expiry_seconds`."""
        path = self._written_path(partition, processor)
        data = self._get(path)
        if data is None:
            return None
        startpoint = _parsed(path, startpoint_from_json, data)
        if (time.time() if now is None else now) - startpoint.created > expiry_seconds:
            return None
        return startpoint

    def delete(self, partition: SourcePartition, processor: int | None = None) -> bool:
        """Delete the startpoint of `partition`: the one written (for `processor`, or for the
        partition alone), and, once a plan fanned it out, its fan-out (to `processor`, or to any)
        and its resolution; False if there was none of these."""
        deleted = False
        path = self._written_path(partition, processor)
        if self.fs.exists(path):
            self.fs.rm(path)
            deleted = True
        for (vertex, owner), splits in self.fan_outs().items():
            if vertex == partition.vertex and partition.split in splits and processor in (None, owner):
                self.remove_fan_out(vertex, owner, {partition.split})
                deleted = True
        return deleted

    def delete_all(self) -> None:
        """Delete every written startpoint, fan-out and resolution of the job."""
        if self.fs.exists(self.dir):
            self.fs.rm(self.dir, recursive=True)

    def written(self) -> Iterator[tuple[SourcePartition, int | None, Startpoint]]:
        """Every written startpoint (expired ones too), as (partition, processor or None, startpoint)."""
        for path in self._ls(f"{self.dir}/written"):
            parts = path.rsplit("/", 1)[-1][: -len(".json")].split(".")
            processor = int(parts[2][1:]) if len(parts) == 3 else None
            data = self._get(path)
            if data is not None:
                yield (
                    SourcePartition(_unhex(parts[0]), _unhex(parts[1])),
                    processor,
                    _parsed(path, startpoint_from_json, data),
                )

    # ---- fan-out -------------------------------------------------------------------------------

    def fan_out(
        self,
        owner: Callable[[SourcePartition], int | None],
        expiry_seconds: float = DEFAULT_EXPIRY_SECONDS,
        now: float | None = None,
    ) -> dict[tuple[str, int], dict[str, Startpoint]]:
        """Assign startpoints to the processors of a new plan; returns and writes (vertex, processor) ->
        {split: startpoint}.

        `owner(partition)` is the global index of the processor that reads `partition` under the
        plan, or None when the plan has no such source (its startpoints are left as they are).
        Candidates for a partition: the fan-out of an earlier plan, the partition-only startpoint
        and the one written for the owner; the newest wins. Written startpoints for another
        processor than the owner are not consumed; expired ones are deleted.
        """
        now = time.time() if now is None else now
        chosen: dict[SourcePartition, Startpoint] = {}
        consumed: list[str] = []
        old_files: list[str] = []
        for vertex_dir in self._ls(f"{self.dir}/fanout"):
            vertex = _unhex(vertex_dir.rsplit("/", 1)[-1])
            for path in self._ls(vertex_dir):
                partitions = {SourcePartition(vertex, s): sp for s, sp in self._read_fan_out(path).items()}
                if any(owner(p) is not None for p in partitions):
                    old_files.append(path)
                    for partition, startpoint in partitions.items():
                        _keep_newer(chosen, partition, startpoint)
        for partition, processor, startpoint in list(self.written()):
            path = self._written_path(partition, processor)
            if now - startpoint.created > expiry_seconds:
                _log.warning(
                    "job %r: startpoint %s/%s%s expired (written %.1f h ago; they apply for %.0f h): "
                    "deleted, not applied; set it again",
                    self.job,
                    partition.vertex,
                    partition.split,
                    "" if processor is None else f" processor {processor}",
                    (now - startpoint.created) / 3600,
                    expiry_seconds / 3600,
                )
                consumed.append(path)
                continue
            target = owner(partition)
            if target is None or (processor is not None and processor != target):
                continue
            _keep_newer(chosen, partition, startpoint)
            consumed.append(path)
        result: dict[tuple[str, int], dict[str, Startpoint]] = {}
        for partition, startpoint in chosen.items():
            target = owner(partition)
            if target is not None:
                result.setdefault((partition.vertex, target), {})[partition.split] = startpoint
        new_files = set()
        for (vertex, processor), splits in result.items():
            path = self._fan_out_path(vertex, processor)
            new_files.add(path)
            self._put(path, {split: startpoint_to_json(sp) for split, sp in splits.items()})
        for path in [*old_files, *consumed]:  # only after the new fan-out is written
            if path not in new_files and self.fs.exists(path):
                self.fs.rm(path)
        return result

    def _fan_out_path(self, vertex: str, processor: int) -> str:
        return f"{self.dir}/fanout/{_hex(vertex)}/p{processor}.json"

    def _read_fan_out(self, path: str) -> dict[str, Startpoint]:
        data = self._get(path) or {}
        return _parsed(path, lambda d: {split: startpoint_from_json(sp) for split, sp in d.items()}, data)

    def fan_out_for(self, vertex: str, processor: int) -> dict[str, Startpoint]:
        """The fan-out of one processor: {split: startpoint} (Samza's get_fan_out_for_task)."""
        return self._read_fan_out(self._fan_out_path(vertex, processor))

    def fan_outs(self) -> dict[tuple[str, int], dict[str, Startpoint]]:
        """Every processor's fan-out."""
        out = {}
        for vertex_dir in self._ls(f"{self.dir}/fanout"):
            vertex = _unhex(vertex_dir.rsplit("/", 1)[-1])
            for path in self._ls(vertex_dir):
                out[(vertex, int(path.rsplit("/p", 1)[-1][: -len(".json")]))] = self._read_fan_out(path)
        return out

    def remove_fan_out(self, vertex: str, processor: int, splits: set[str]) -> None:
        """Remove `splits` from a processor's fan-out, with their resolutions."""
        path = self._fan_out_path(vertex, processor)
        remaining = {s: sp for s, sp in self._read_fan_out(path).items() if s not in splits}
        if remaining:
            self._put(path, {s: startpoint_to_json(sp) for s, sp in remaining.items()})
        elif self.fs.exists(path):
            self.fs.rm(path)
        for split in splits:
            resolved = self._resolved_path(SourcePartition(vertex, split))
            if self.fs.exists(resolved):
                self.fs.rm(resolved)

    # ---- resolutions ---------------------------------------------------------------------------

    def _resolved_path(self, partition: SourcePartition) -> str:
        return f"{self.dir}/resolved/{_hex(partition.vertex)}.{_hex(partition.split)}.json"

    def record_resolved(self, partition: SourcePartition, resolved: Resolved) -> None:
        self._put(
            self._resolved_path(partition),
            {
                "startpoint": startpoint_to_json(resolved.startpoint),
                "offset": resolved.offset,
                "restore_id": resolved.restore_id,
            },
        )

    def resolved(self, partition: SourcePartition) -> Resolved | None:
        path = self._resolved_path(partition)
        data = self._get(path)
        if data is None:
            return None
        return _parsed(
            path,
            lambda d: Resolved(startpoint_from_json(d["startpoint"]), int(d["offset"]), int(d["restore_id"])),
            data,
        )

    # ---- files ---------------------------------------------------------------------------------

    def _put(self, path: str, data: Any) -> None:
        """Write atomically and durably (`atomic.replace_json`)."""
        atomic.replace_json(self.fs, path, data)

    def _get(self, path: str) -> Any:
        try:
            return atomic.read_json(self.fs, path)
        except ValueError as error:
            raise ValueError(f"startpoint file {path} cannot be read: {error}") from error

    def _ls(self, path: str) -> list[str]:
        try:
            entries = self.fs.ls(path, detail=False)
        except FileNotFoundError:
            return []
        return sorted(p.rstrip("/") for p in entries if ".tmp-" not in p.rsplit("/", 1)[-1])


def _parsed(path: str, parse: Callable[[Any], T], data: Any) -> T:
    """`parse(data)`, the JSON read from `path`; what it cannot make sense of is one ValueError
    naming the file (a hand-edited or foreign file), not a bare TypeError or KeyError."""
    try:
        return parse(data)
    except (ValueError, TypeError, KeyError, AttributeError) as error:
        raise ValueError(f"startpoint file {path} cannot be read: {error}") from None


def _keep_newer(
    chosen: dict[SourcePartition, Startpoint], partition: SourcePartition, startpoint: Startpoint
) -> None:
    current = chosen.get(partition)
    if current is None or startpoint.created > current.created:
        chosen[partition] = startpoint
