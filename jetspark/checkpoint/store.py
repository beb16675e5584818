"""Snapshots on a file system: one directory per job under a checkpoint root (any fsspec URL).

Layout under the root::

    <job>/JOB                            the job's durable identity (`job_record.py`): id, owning run, completed
    <job>/LATEST                         which snapshot is committed last, and its manifest's checksum
    <job>/DRIVER                         the lock of the driver running the job (`runners/driver_lock.py`)
    <job>/side-inputs/<job id>/<vertex>  a DataFrame source's rows, copied once (`runners/spark/side_inputs.py`)
    <job>/runs/<run>/s<stage>-m<member>  claim marker of one task of one run of an epoch (Spark)
    <job>/snapshots/<id>/manifest.json   the files of snapshot <id>, their segments and checksums
    <job>/snapshots/<id>/<file>.snap     entries grouped by partition (`entries.py`)
    exported/<name>/...                  a named snapshot (`export`), usable by any job

A snapshot is committed when `LATEST` names it: the manifest is written only after every file, and
`LATEST` is replaced atomically (write a temporary file, then rename) only after the manifest. A
snapshot directory newer than `LATEST` belongs to a commit that never happened and is deleted when
the store opens. The last `retain` committed snapshots are kept.

Claim markers (`claim`, `forget_run`, `forget_runs`) let the tasks of one run of an epoch on Spark
tell a first run of a task from a second one: a retry, a speculative copy or a stage run again
finds the marker of (stage, member) taken and refuses to run. Each run of an epoch has its own
run id, so a restarted epoch claims afresh; the driver forgets a run's markers when it ends.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import re
import time
import uuid
from collections.abc import Collection, Iterable, Iterator
from typing import Any

import attrs
import fsspec

from jetspark.checkpoint import atomic
from jetspark.checkpoint.deltas import merge
from jetspark.checkpoint.entries import (
    MAGICS,
    CorruptSnapshotError,
    Entry,
    Segment,
    decode_segment,
    encode,
    wanted_ranges,
)
from jetspark.checkpoint.job_record import JobRecord
from jetspark.core.snapshot_block import entry_total
from jetspark.filesystems import is_local

FORMAT = 1
_log = logging.getLogger("jetspark.checkpoint")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def check_name(kind: str, name: str) -> str:
    """A job or snapshot name becomes one directory name: nothing may escape the root."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(
            f"{kind} name {name!r} cannot name a checkpoint directory: use 1-128 letters, digits, '.', '_' "
            "or '-', starting with a letter or digit"
        )
    return name


@attrs.frozen
class SnapshotFile:
    """One written file of a snapshot, as its manifest records it."""

    name: str
    vertex: str
    size: int
    sha256: str
    entry_count: int
    segments: tuple[Segment, ...]
    #: An incremental file (`deltas.py`): the files of earlier snapshots of this job it applies
    #: on, as (snapshot id, file), oldest (a full one) first; empty for a full file.
    chain: tuple[tuple[int, SnapshotFile], ...] = ()
    #: How its segments are laid out (`entries.py`): 1 for files of earlier releases.
    layout: int = 1
    #: How many entries it holds, a block's (`core.snapshot_block`) counted one by one, deletions
    #: too; None for files of earlier releases. A full file's is the state's key count, which
    #: tells an incremental save when what changed is most of the state (`deltas.delta_limit`).
    keys: int | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": self.name,
            "vertex": self.vertex,
            "size": self.size,
            "sha256": self.sha256,
            "entries": self.entry_count,
            "segments": [[s.partition, s.offset, s.length, s.crc32] for s in self.segments],
        }
        if self.layout != 1:  # a manifest of layout 1 files reads the same as before layout 2
            body["layout"] = self.layout
        if self.chain:
            body["chain"] = [[snapshot_id, file.to_json()] for snapshot_id, file in self.chain]
        if self.keys is not None:
            body["keys"] = self.keys
        return body

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SnapshotFile:
        return cls(
            name=check_name("snapshot file", data["name"]),
            vertex=data["vertex"],
            size=int(data["size"]),
            sha256=data["sha256"],
            entry_count=int(data["entries"]),
            segments=tuple(Segment(*map(int, s)) for s in data["segments"]),
            chain=tuple((int(i), SnapshotFile.from_json(f)) for i, f in data.get("chain", ())),
            layout=_layout(data.get("layout", 1)),
            keys=None if data.get("keys") is None else int(data["keys"]),
        )

    def without_chain(self) -> SnapshotFile:
        return attrs.evolve(self, chain=())


@attrs.frozen
class Manifest:
    """A committed (or exported) snapshot: where its files are and what they hold."""

    directory: str
    job: str
    snapshot_id: int
    partition_count: int
    created: float
    files: tuple[SnapshotFile, ...]
    checksum: str
    #: Free-form facts of the runner (for example the member count it was taken with).
    extra: dict[str, Any] = attrs.field(factory=dict)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files)

    def vertices(self) -> set[str]:
        return {f.vertex for f in self.files}


def _layout(value: Any) -> int:
    if value not in MAGICS:
        raise ValueError(f"snapshot file layout {value!r} is unknown (known: {sorted(MAGICS)})")
    return int(value)


def _body_checksum(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


class CheckpointStore:
    """The snapshots of one job under `root` (a local path or an fsspec URL such as `memory://x`)."""

    def __init__(
        self,
        root: str,
        job: str,
        retain: int = 3,
        storage_options: dict[str, Any] | None = None,
        tidy: bool = True,
    ) -> None:
        """`tidy=False` opens the store for a writer that is not the committer (a Spark task writing
        its share of an epoch's snapshot), or for a committer that does not hold the job yet (a
        submit, which tidies with `drop_uncommitted` once it holds the driver lock): uncommitted
        snapshots are then left alone."""
        if retain < 1:
            raise ValueError(f"snapshots to retain must be >= 1, got {retain}")
        self.fs, self.root = fsspec.core.url_to_fs(root, **(storage_options or {}))
        self.root = self.root.rstrip("/")
        self.job = check_name("job", job)
        self.retain = retain
        self.job_dir = f"{self.root}/{job}"
        self.fs.makedirs(self.job_dir, exist_ok=True)  # `snapshots/` comes with the first snapshot
        self._tidy = tidy
        self._commit_noted = False
        if tidy:
            self._drop_uncommitted()

    # ---- writing --------------------------------------------------------------------------

    def snapshot_dir(self, snapshot_id: int) -> str:
        return f"{self.job_dir}/snapshots/{snapshot_id:010d}"

    def write_file(
        self,
        snapshot_id: int,
        vertex: str,
        writer: str,
        entries: Iterable[Entry],
        chain: tuple[tuple[int, SnapshotFile], ...] = (),
    ) -> SnapshotFile:
        """Write one file of snapshot `snapshot_id`: the entries of `vertex` from one writer (a
        member); with `chain`, only what changed since those files (`deltas.py`)."""
        listed = entries if isinstance(entries, list) else list(entries)
        encoded = encode(listed)
        name = check_name("snapshot file", f"{writer}.snap")
        directory = self.snapshot_dir(snapshot_id)
        self.fs.makedirs(directory, exist_ok=True)
        atomic.write_file(self.fs, f"{directory}/{name}", encoded.data)
        return SnapshotFile(
            name,
            vertex,
            len(encoded.data),
            encoded.sha256,
            encoded.entry_count,
            encoded.segments,
            chain,
            encoded.layout,
            entry_total(listed),
        )

    def commit(
        self,
        snapshot_id: int,
        files: Collection[SnapshotFile],
        partition_count: int,
        extra: dict[str, Any] | None = None,
    ) -> Manifest:
        """Write the manifest, then move `LATEST` to it: from then on the snapshot is committed."""
        latest = self.latest_id()
        if latest is not None and snapshot_id <= latest:
            raise ValueError(
                f"job {self.job!r}: snapshot {snapshot_id} is not newer than the committed {latest}"
            )
        manifest = self.write_manifest(
            self.snapshot_dir(snapshot_id), snapshot_id, files, partition_count, extra
        )
        atomic.sync_directory(self.fs, f"{self.job_dir}/snapshots")  # the new snapshot's directory
        self._point_latest_at(manifest)
        try:  # the snapshot is committed now: failing to tidy up must not report it as failed
            self._note_a_commit()
            self._apply_retention(snapshot_id)
        except (OSError, CorruptSnapshotError):
            _log.exception(
                "job %r: noting the commit in its record or deleting old snapshots failed", self.job
            )
        return manifest

    def _note_a_commit(self) -> None:
        """Once per store: mark the job's record as having committed a snapshot (see
        `_check_latest_not_lost`). After `LATEST`: a death between the two leaves the record
        unmarked, which only weakens that check, as for a record written before the mark."""
        if self._commit_noted:
            return
        record = self.read_record()
        if record is not None and record.completed is None and not record.committed:
            self.write_record(record.with_a_commit())
        self._commit_noted = True

    def abort(self, snapshot_id: int) -> None:
        """Delete what an uncommitted snapshot wrote."""
        latest = self.latest_id()
        if latest is not None and snapshot_id <= latest:
            raise ValueError(f"job {self.job!r}: snapshot {snapshot_id} is committed; it cannot be aborted")
        self._remove(self.snapshot_dir(snapshot_id))

    def discard(self) -> None:
        """Delete the job's directory (every snapshot and LATEST); exported snapshots stay. The
        record goes first: a death part way leaves a directory without one, which the next submit
        tidies, not a record without `LATEST` (`_check_latest_not_lost` would refuse it)."""
        self._remove(self.record_path)
        self._remove(self.job_dir)

    # ---- the job's record ------------------------------------------------------------------

    @property
    def record_path(self) -> str:
        return f"{self.job_dir}/JOB"

    def read_record(self) -> JobRecord | None:
        """The job's record (`job_record.py`); None before the job's first submit."""
        try:
            body = atomic.read_json(self.fs, self.record_path)
            return None if body is None else JobRecord.from_body(body)
        except (ValueError, KeyError, TypeError) as error:
            raise CorruptSnapshotError(self.record_path, f"cannot be read ({error})") from error

    def write_record(self, record: JobRecord) -> None:
        atomic.replace_json(self.fs, self.record_path, record.to_body())

    def finish(self, record: JobRecord) -> None:
        """The job completed: mark its record so (first: a death after it still says completed),
        then delete its snapshots, `LATEST` and run markers; the record stays. The record keeps
        the commit mark `_note_a_commit` wrote to disk (the runner's copy is from before it)."""
        if not record.committed and (self._commit_noted or self._record_says_committed()):
            record = record.with_a_commit()
        self.write_record(record)
        self.remove_leftovers()

    def remove_leftovers(self) -> None:
        """Delete what a completed job no longer needs: its snapshots, `LATEST` and run markers
        (again, after a death during `finish` left some of them)."""
        for path in self._leftovers():
            self._remove(path)

    def has_leftovers(self) -> bool:
        """Whether `remove_leftovers` has anything to delete."""
        return any(self.fs.exists(path) for path in self._leftovers())

    def _leftovers(self) -> tuple[str, ...]:
        return tuple(f"{self.job_dir}/{name}" for name in ("LATEST", "runs", "snapshots"))

    def _record_says_committed(self) -> bool:
        try:
            on_disk = self.read_record()
        except (OSError, CorruptSnapshotError):
            return False
        return on_disk is not None and on_disk.committed

    # ---- what runners keep beside the snapshots ---------------------------------------------

    @property
    def is_local(self) -> bool:
        """The root is on this machine's disk (`os`, `fcntl` and `file://` URLs reach it)."""
        return is_local(self.fs)

    @property
    def driver_lock_path(self) -> str:
        """The file whose lock the driver running the job holds (`runners/driver_lock.py`)."""
        return f"{self.job_dir}/DRIVER"

    def side_input_dir(self, job_id: str, vertex: str) -> str:
        """Where the rows of `vertex`'s DataFrame are copied once (`runners/spark/side_inputs.py`)."""
        return f"{self.job_dir}/side-inputs/{job_id}/{vertex}"

    def side_input_written(self, directory: str) -> bool:
        """Spark's writer finished the copy in `directory` (it writes `_SUCCESS` last)."""
        return bool(self.fs.exists(f"{directory}/_SUCCESS"))

    def drop_side_inputs(self) -> None:
        """Delete every DataFrame copy of the job."""
        self._remove(f"{self.job_dir}/side-inputs")

    # ---- claim markers of the tasks of a run -----------------------------------------------

    def claim_path(self, run: str, stage: int, member: int) -> str:
        return f"{self.job_dir}/runs/{run}/s{stage:04d}-m{member:05d}"

    def claim(self, run: str, stage: int, member: int, claimant: str) -> bool:
        """Claim the task (`stage`, `member`) of run `run` for `claimant` (a task attempt): True if
        it is `claimant`'s, False if someone claimed it before (or wins a race for it)."""
        path = self.claim_path(run, stage, member)
        mine = claimant.encode()
        self.fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        if self.is_local:  # an exclusive create: of two attempts racing, exactly one makes the file
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                return False
            try:
                os.write(fd, mine)
            finally:
                os.close(fd)
            return True
        # object stores: no exclusive create through fsspec; the last writer wins the read back,
        # and an attempt that read back its own name before another wrote also thinks it won
        if self.fs.exists(path):
            return False
        self.fs.pipe_file(path, mine)
        return bool(self.fs.cat_file(path) == mine)

    def forget_run(self, run: str) -> None:
        """Delete the claim markers of run `run` (its epoch ended, committed or aborted)."""
        self._remove(f"{self.job_dir}/runs/{run}")

    def forget_runs(self) -> None:
        """Delete the claim markers of earlier runs and temporary files a dead driver left."""
        self._remove(f"{self.job_dir}/runs")
        for path in self.fs.ls(self.job_dir, detail=False):
            if ".tmp-" in path.rstrip("/").rsplit("/", 1)[-1]:
                self._remove(path)

    def export(self, manifest: Manifest, name: str) -> Manifest:
        """Copy a snapshot to `exported/<name>` (replacing an older one of that name)."""
        target = f"{self.root}/exported/{check_name('snapshot', name)}"
        staging = f"{self.root}/exported/.{name}.{uuid.uuid4().hex[:8]}"
        self.fs.makedirs(staging, exist_ok=True)
        files = []
        for file in manifest.files:
            if file.chain:  # an export stands alone: an incremental file is written whole
                encoded = encode(self._read_file(manifest.directory, file, None))
                atomic.write_file(self.fs, f"{staging}/{file.name}", encoded.data)
                file = SnapshotFile(
                    file.name,
                    file.vertex,
                    len(encoded.data),
                    encoded.sha256,
                    encoded.entry_count,
                    encoded.segments,
                    layout=encoded.layout,
                )
            else:
                self.fs.copy(f"{manifest.directory}/{file.name}", f"{staging}/{file.name}")
            files.append(file)
        extra = dict(manifest.extra, exported_name=name)
        self.write_manifest(staging, manifest.snapshot_id, files, manifest.partition_count, extra)
        self._remove(target)
        self.fs.mv(staging, target, recursive=True)
        return self.load_manifest(target)

    # ---- reading --------------------------------------------------------------------------

    def latest_id(self) -> int | None:
        pointer = self._read_latest()
        return None if pointer is None else int(pointer["snapshot_id"])

    def committed_ids(self, latest: int | None = None) -> list[int]:
        """Committed snapshots still retained, newest first (up to `latest`, default: LATEST's)."""
        latest = self.latest_id() if latest is None else latest
        if latest is None:
            return []
        return [i for i in self._snapshot_ids() if i <= latest][::-1]

    def latest(self, fallback: bool = False, verify: bool = False) -> Manifest | None:
        """The last committed snapshot, checked; None if the job has none.

        A missing, truncated or corrupt manifest or file raises `CorruptSnapshotError` naming it,
        or with `fallback`, moves on to the previous committed snapshot (and raises only when none
        is intact); a store that tidies (the committer's) then moves `LATEST` back to that snapshot
        and deletes the damaged newer ones, so that the next commit continues from it. With
        `verify`, every file's contents are checked against its SHA-256 too (a flipped bit keeps
        the size): what a restore reads is known to be intact before anything runs.
        """
        pointer = self._read_latest()
        if pointer is None:
            return None
        first_error: CorruptSnapshotError | None = None
        for snapshot_id in self.committed_ids(int(pointer["snapshot_id"])):
            try:
                manifest = self.load_manifest(self.snapshot_dir(snapshot_id))
                if snapshot_id == pointer["snapshot_id"] and manifest.checksum != pointer["manifest"]:
                    raise CorruptSnapshotError(
                        f"{manifest.directory}/manifest.json", "is not the manifest LATEST committed"
                    )
                self.check_files(manifest, contents=verify)
                if snapshot_id != pointer["snapshot_id"] and self._tidy:
                    self._fall_back_to(manifest, first_error)
                return manifest
            except CorruptSnapshotError as error:
                first_error = first_error or error
                if not fallback:
                    raise
        if first_error is None:
            first_error = CorruptSnapshotError(
                f"{self.snapshot_dir(int(pointer['snapshot_id']))}/manifest.json", "is missing"
            )
        raise first_error

    def exported(self, name: str) -> Manifest:
        """The exported snapshot `name`, checked; FileNotFoundError if there is none."""
        directory = f"{self.root}/exported/{check_name('snapshot', name)}"
        if not self.fs.exists(f"{directory}/manifest.json"):
            raise FileNotFoundError(f"no exported snapshot {name!r} under {self.root}")
        manifest = self.load_manifest(directory)
        self.check_files(manifest, contents=True)
        return manifest

    def load_manifest(self, directory: str) -> Manifest:
        path = f"{directory}/manifest.json"
        try:
            body = atomic.read_json(self.fs, path)
            if body is None:
                raise CorruptSnapshotError(path, "is missing")
            checksum = body.pop("checksum")
            if _body_checksum(body) != checksum:
                raise CorruptSnapshotError(path, "fails its checksum")
            if body["format"] != FORMAT:
                raise CorruptSnapshotError(path, f"has format {body['format']}, this jetspark reads {FORMAT}")
            return Manifest(
                directory=directory,
                job=body["job"],
                snapshot_id=int(body["snapshot_id"]),
                partition_count=int(body["partition_count"]),
                created=float(body["created"]),
                files=tuple(SnapshotFile.from_json(f) for f in body["files"]),
                checksum=checksum,
                extra=body.get("extra", {}),
            )
        except CorruptSnapshotError:
            raise
        except (ValueError, KeyError, TypeError) as error:
            raise CorruptSnapshotError(path, f"cannot be read ({type(error).__name__}: {error})") from error

    def check_files(self, manifest: Manifest, contents: bool = False) -> None:
        """Every file exists with the size the manifest records (cheap; contents are checked on
        read), and with `contents`, its bytes match the manifest's SHA-256 (reads every file)."""
        for directory, file in self._all_files(manifest):
            path = f"{directory}/{file.name}"
            try:
                size = self.fs.size(path)
            except FileNotFoundError:
                raise CorruptSnapshotError(path, "is missing") from None
            if size != file.size:
                raise CorruptSnapshotError(path, f"has {size} bytes, the manifest says {file.size}")
            if contents and hashlib.sha256(self._cat(path)).hexdigest() != file.sha256:
                raise CorruptSnapshotError(path, "fails its SHA-256 check")

    def read(
        self, manifest: Manifest, vertex: str, partitions: Collection[int] | None = None
    ) -> Iterator[Entry]:
        """The entries of `vertex`, only of `partitions` if given (-1 is the broadcast partition).

        Each segment read is checked against its CRC-32; a whole file read, against its SHA-256.
        The entries come a segment (a list) at a time, joined by `chain`: no generator step per
        entry.
        """
        wanted = None if partitions is None else frozenset(partitions)
        return itertools.chain.from_iterable(self._chunks(manifest, vertex, wanted))

    def _chunks(
        self, manifest: Manifest, vertex: str, wanted: frozenset[int] | None
    ) -> Iterator[Iterable[Entry]]:
        for file in manifest.files:
            if file.vertex != vertex:
                continue
            if file.chain:
                yield self._read_file(manifest.directory, file, wanted)
            else:
                yield from self._segments(manifest.directory, file, wanted)

    def _read_file(
        self, directory: str, file: SnapshotFile, wanted: frozenset[int] | None
    ) -> Iterator[Entry]:
        """The entries of one file; an incremental one applied on its chain (`deltas.merge`)."""
        if not file.chain:
            return self._read_one(directory, file, wanted)
        layers = [self._read_one(self.snapshot_dir(i), f, wanted) for i, f in file.chain]
        layers.append(self._read_one(directory, file, wanted))
        return merge(layers)

    def _read_one(self, directory: str, file: SnapshotFile, wanted: frozenset[int] | None) -> Iterator[Entry]:
        return itertools.chain.from_iterable(self._segments(directory, file, wanted))

    def _segments(
        self, directory: str, file: SnapshotFile, wanted: frozenset[int] | None
    ) -> Iterator[list[Entry]]:
        """The entries of each segment of one file (of the `wanted` partitions), as read."""
        path = f"{directory}/{file.name}"
        if wanted is None:
            data = self._cat(path)
            if hashlib.sha256(data).hexdigest() != file.sha256:
                if len(data) != file.size:
                    raise CorruptSnapshotError(path, f"is truncated ({len(data)} of {file.size} bytes)")
                raise CorruptSnapshotError(path, "fails its SHA-256 check")
            for segment in file.segments:
                yield decode_segment(
                    data[segment.offset : segment.offset + segment.length], segment, path, file.layout
                )
            return
        for run in wanted_ranges(file.segments, wanted):
            start, end = run[0].offset, run[-1].offset + run[-1].length
            data = self._cat(path, start, end)
            for segment in run:
                offset = segment.offset - start
                yield decode_segment(data[offset : offset + segment.length], segment, path, file.layout)

    # ---- internals ------------------------------------------------------------------------

    def _cat(self, path: str, start: int | None = None, end: int | None = None) -> bytes:
        try:
            data: bytes = self.fs.cat_file(path, start=start, end=end)
        except FileNotFoundError:
            raise CorruptSnapshotError(path, "is missing") from None
        return data

    def write_manifest(
        self,
        directory: str,
        snapshot_id: int,
        files: Collection[SnapshotFile],
        partition_count: int,
        extra: dict[str, Any] | None,
    ) -> Manifest:
        body: dict[str, Any] = {
            "format": FORMAT,
            "job": self.job,
            "snapshot_id": snapshot_id,
            "partition_count": partition_count,
            "created": time.time(),
            "files": [f.to_json() for f in files],
            "extra": extra or {},
        }
        checksum = _body_checksum(body)
        atomic.replace_json(self.fs, f"{directory}/manifest.json", {**body, "checksum": checksum})
        return Manifest(
            directory,
            self.job,
            snapshot_id,
            partition_count,
            body["created"],
            tuple(files),
            checksum,
            body["extra"],
        )

    def _point_latest_at(self, manifest: Manifest) -> None:
        """Replace `LATEST` (atomically, durably): from now on `manifest`'s snapshot is committed."""
        body = {"snapshot_id": manifest.snapshot_id, "manifest": manifest.checksum}
        atomic.replace_json(self.fs, f"{self.job_dir}/LATEST", body)

    def _read_latest(self) -> dict[str, Any] | None:
        path = f"{self.job_dir}/LATEST"
        try:
            pointer: dict[str, Any] | None = atomic.read_json(self.fs, path)
            if pointer is None:
                return None
            int(pointer["snapshot_id"])
            str(pointer["manifest"])
        except (ValueError, KeyError, TypeError) as error:
            raise CorruptSnapshotError(path, f"cannot be read ({error})") from error
        return pointer

    def _snapshot_ids(self) -> list[int]:
        """Ids of the snapshot directories present, oldest first."""
        ids: list[int] = []
        directory = f"{self.job_dir}/snapshots"
        if not self.fs.exists(directory):  # none taken yet, or a completed job's (`finish`)
            return ids
        for path in self.fs.ls(directory, detail=False):
            name = path.rstrip("/").rsplit("/", 1)[-1]
            if name.isdigit():
                ids.append(int(name))
        return sorted(ids)

    def _fall_back_to(self, manifest: Manifest, damage: CorruptSnapshotError | None) -> None:
        """`LATEST` back to the intact `manifest`; the damaged newer snapshots are deleted."""
        _log.warning("job %r: falling back to snapshot %d (%s)", self.job, manifest.snapshot_id, damage)
        self._point_latest_at(manifest)
        for snapshot_id in self._snapshot_ids():
            if snapshot_id > manifest.snapshot_id:
                self._remove(self.snapshot_dir(snapshot_id))

    def drop_uncommitted(self) -> None:
        """Delete the snapshots newer than `LATEST` (written by a run that did not commit them),
        and from now on tidy as a committer does (`latest(fallback=True)` moves `LATEST` back past
        damage). Only for the driver that holds the job: another's running epoch writes them."""
        self._tidy = True
        self._drop_uncommitted()

    def _drop_uncommitted(self) -> None:
        latest = self.latest_id()
        if latest is None:
            self._check_latest_not_lost()
        for snapshot_id in self._snapshot_ids():
            if latest is None or snapshot_id > latest:
                self._remove(self.snapshot_dir(snapshot_id))

    def _check_latest_not_lost(self) -> None:
        """No `LATEST` in a job whose record says it runs (has not completed) and has committed
        a snapshot, or while two snapshots have manifests (a record written before the mark):
        `LATEST` was lost (a commit writes one manifest, then `LATEST`; a crash between the two
        leaves one manifest beyond it, never two, and an unmarked record). Taking that for a job
        that never committed would delete every snapshot and replay the job from its start into
        its sinks, so refuse, naming the way back. A completed job (whose tidying was cut short)
        and a directory without a record (a cancelled job's, partly deleted) are left to tidy."""
        try:
            record = self.read_record()
        except CorruptSnapshotError:
            record = None
        if record is None or record.completed is not None:
            return
        with_manifest = [
            i for i in self._snapshot_ids() if self.fs.exists(f"{self.snapshot_dir(i)}/manifest.json")
        ]
        if record.committed and not with_manifest:
            raise CorruptSnapshotError(
                f"{self.job_dir}/LATEST",
                f"is missing, and so is every snapshot of job {self.job!r}, whose record says it "
                "committed one: restore the job's directory from a backup, or delete it to start the "
                "job over from nothing",
            )
        if record.committed or len(with_manifest) >= 2:
            raise CorruptSnapshotError(
                f"{self.job_dir}/LATEST",
                f"is missing, yet snapshots {', '.join(map(str, with_manifest))} of job {self.job!r} "
                "have manifests: LATEST was lost, not never written; restore it from a backup, or "
                "delete the job's directory to start the job over from nothing",
            )

    def _apply_retention(self, latest: int) -> None:
        """Keep the last `retain` committed snapshots and every snapshot their incremental
        files apply on."""
        committed = [i for i in self._snapshot_ids() if i <= latest]
        kept = committed[-self.retain :]
        needed: set[int] = set()
        for snapshot_id in kept:
            try:
                manifest = self.load_manifest(self.snapshot_dir(snapshot_id))
            except CorruptSnapshotError:
                continue
            needed.update(i for f in manifest.files for i, _ in f.chain)
        for snapshot_id in committed[: -self.retain]:
            if snapshot_id not in needed:
                self._remove(self.snapshot_dir(snapshot_id))

    def _all_files(self, manifest: Manifest) -> Iterator[tuple[str, SnapshotFile]]:
        """(directory, file) of every file a restore of `manifest` reads, chains included."""
        seen: set[tuple[str, str]] = set()
        for file in manifest.files:
            for directory, one in [
                *((self.snapshot_dir(i), f) for i, f in file.chain),
                (manifest.directory, file),
            ]:
                if (directory, one.name) not in seen:
                    seen.add((directory, one.name))
                    yield directory, one

    def _remove(self, path: str) -> None:
        if self.fs.exists(path):
            self.fs.rm(path, recursive=True)
