"""Writes the checkpoint stores make: durable files, and small files replaced atomically.

A committed snapshot must survive what the job promised it survives. Renaming a temporary file
over the old one makes a replacement atomic for a crash of the process; only `fsync` of the file
before the rename, and of the directory after it, makes it survive a power loss or a kernel crash
of the machine. On a local file system (a checkpoint root that is a path) both are done here; on
object stores (`s3://`, `gs://`) a finished PUT is durable already and fsspec's calls are used as
they are; `memory://` has nothing to sync.

Both stores keep their small records as JSON (the checkpoint store's `LATEST`, manifests and job
record; the startpoint store's startpoints): `replace_json` and `read_json` write and read them.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from jetspark.filesystems import is_local


def write_file(fs: Any, path: str, data: bytes) -> None:
    """Write `path` (its directory exists) and, on a local file system, sync it to the disk."""
    if not is_local(fs):
        fs.pipe_file(path, data)
        return
    with open(path, "wb") as file:
        file.write(data)
        file.flush()
        os.fsync(file.fileno())


def replace(fs: Any, path: str, data: bytes) -> None:
    """Replace `path` atomically (a temporary file renamed over it); on a local file system the
    file is synced before the rename and its directory after, so the new content is durable."""
    temporary = f"{path}.tmp-{uuid.uuid4().hex[:8]}"
    write_file(fs, temporary, data)
    if not is_local(fs):
        fs.mv(temporary, path)
        return
    os.replace(temporary, path)
    sync_directory(fs, os.path.dirname(path))


def sync_directory(fs: Any, directory: str) -> None:
    """Make the entries of `directory` (files created, renamed or removed in it) durable."""
    if not is_local(fs):
        return
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def replace_json(fs: Any, path: str, body: Any) -> None:
    """Replace `path` with `body` as JSON, atomically and durably (`replace`), creating its
    directory if need be. Keys are sorted: the same body always gives the same bytes."""
    fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
    replace(fs, path, json.dumps(body, sort_keys=True).encode())


def read_json(fs: Any, path: str) -> Any:
    """The JSON body of `path`, or None if there is no such file. A body that is not JSON raises
    `json.JSONDecodeError` (a ValueError); the caller names what the file is."""
    try:
        raw = fs.cat_file(path)
    except FileNotFoundError:
        return None
    return json.loads(raw)
