"""`jetspark startpoint set|list|delete`: startpoints of a job, set out of band.

jetspark startpoint set --root ROOT --job NAME --vertex V --split S [--processor N] [--new-job]
                        (--offset N | --timestamp MS | --oldest | --upcoming)
jetspark startpoint list --root ROOT --job NAME
jetspark startpoint delete --root ROOT --job NAME (--vertex V --split S [--processor N] | --all)

ROOT is the job's `JobConfig.checkpoint_root`; `--directory` names `JobConfig.startpoints_directory`
when the job sets one. A startpoint applies when the job is next planned (submitted, resumed or
restarted); see docs/startpoints.md. `set` refuses a job that never ran under ROOT (a typo in
--root or --job would otherwise write a startpoint nobody reads) unless `--new-job` says it has
not run yet, and a vertex that the job's last committed snapshot does not list.
"""

from __future__ import annotations

import argparse
import datetime
import sys
import time
from typing import Any

import fsspec

from jetspark.checkpoint.startpoints import (
    DEFAULT_EXPIRY_SECONDS,
    Oldest,
    SourcePartition,
    Specific,
    Startpoint,
    StartpointStore,
    Timestamp,
    Upcoming,
    startpoint_to_json,
)
from jetspark.checkpoint.store import CheckpointStore


def register(commands: Any) -> None:
    """Add the `startpoint` command to the `jetspark` parser's subcommands."""
    parser = commands.add_parser("startpoint", help="set, list or delete the startpoints of a job")
    actions = parser.add_subparsers(dest="action", required=True)
    for name, help_text in (
        ("set", "write a startpoint"),
        ("list", "list written startpoints and fan-outs"),
        ("delete", "delete a startpoint, or all of a job's"),
    ):
        action = actions.add_parser(name, help=help_text)
        action.add_argument("--root", required=True, help="the job's checkpoint root (path or fsspec URL)")
        action.add_argument("--job", required=True, help="the job's name (JobConfig.name)")
        action.add_argument("--directory", help="JobConfig.startpoints_directory, if the job sets one")
        if name == "list":
            continue
        action.add_argument("--vertex", required=name == "set", help="the source vertex")
        action.add_argument("--split", required=name == "set", help="the source partition (a file name)")
        action.add_argument("--processor", type=int, help="only for this processor (global index)")
        if name == "delete":
            action.add_argument("--all", action="store_true", help="delete every startpoint of the job")
            continue
        action.add_argument(
            "--new-job", action="store_true", help="the job has not run yet: do not check that it exists"
        )
        where = action.add_mutually_exclusive_group(required=True)
        where.add_argument("--offset", type=int, help="Specific: start at this offset")
        where.add_argument("--timestamp", type=int, help="Timestamp: first record at or after MS")
        where.add_argument("--oldest", action="store_true", help="Oldest: from the beginning")
        where.add_argument("--upcoming", action="store_true", help="Upcoming: only new records")


def _startpoint(args: argparse.Namespace) -> Startpoint:
    if args.offset is not None:
        return Specific(args.offset)
    if args.timestamp is not None:
        return Timestamp(args.timestamp)
    return Oldest() if args.oldest else Upcoming()


def _describe(startpoint: Startpoint) -> str:
    fields = startpoint_to_json(startpoint)
    created = datetime.datetime.fromtimestamp(fields.pop("created"), datetime.timezone.utc)
    kind = fields.pop("type")
    detail = " ".join(f"{k}={v}" for k, v in fields.items())
    return f"{kind}{' ' + detail if detail else ''} (created {created:%Y-%m-%d %H:%M:%S} UTC)"


def _unknown_target(args: argparse.Namespace, startpoints: StartpointStore) -> str | None:
    """Why `args.job` / `args.vertex` name nothing that exists under `args.root`, or None."""
    if args.new_job:
        return None
    fs, root = fsspec.core.url_to_fs(args.root)
    root = root.rstrip("/")
    if not fs.isdir(root):
        return f"checkpoint root {args.root!r} does not exist (--root is the job's JobConfig.checkpoint_root)"
    if not fs.isdir(f"{root}/{args.job}") and not startpoints.fs.isdir(startpoints.dir):
        jobs = sorted(
            name
            for name in (path.rstrip("/").rsplit("/", 1)[-1] for path in fs.ls(root, detail=False))
            if not name.startswith(".") and name != "exported" and fs.isdir(f"{root}/{name}")
        )
        return (
            f"job {args.job!r} has not run under {args.root!r} (jobs there: {', '.join(jobs) or 'none'}); "
            "check --root and --job, or add --new-job to set a startpoint before the job's first run"
        )
    store = CheckpointStore(args.root, args.job, tidy=False)  # reads only: a running job's files stay
    latest = store.latest_id()
    if latest is None:
        return None
    extra = store.load_manifest(store.snapshot_dir(latest)).extra
    vertices = extra.get("vertices")
    if vertices is not None and args.vertex not in vertices:
        return f"job {args.job!r} has no vertex {args.vertex!r} (its vertices: {', '.join(vertices)})"
    sources = extra.get("startpoint_sources")  # absent in snapshots taken before it was kept
    if sources is not None and args.vertex not in sources:
        return (
            f"vertex {args.vertex!r} of job {args.job!r} is not a source that takes startpoints "
            f"(those that do: {', '.join(sources) or 'none'})"
        )
    return None


def _missing_root(args: argparse.Namespace) -> str | None:
    """Why `list` or `delete` cannot look under `args.root` (it does not exist), or None: a
    mistyped root would otherwise read as a job without startpoints."""
    fs, root = fsspec.core.url_to_fs(args.root)
    if not fs.isdir(root.rstrip("/")):
        return f"checkpoint root {args.root!r} does not exist (--root is the job's JobConfig.checkpoint_root)"
    return None


def _for_processor(processor: int | None) -> str:
    return "" if processor is None else f" processor {processor}"


def run(args: argparse.Namespace) -> int:
    """Carry out `jetspark startpoint ...`; the exit status."""
    try:
        store = StartpointStore(args.root, args.job, args.directory)
        if args.action == "set":
            if "/" in args.split:
                print(
                    f"jetspark: --split {args.split!r} is a path; a split is a file name in the source's "
                    f"directory (for example {args.split.rstrip('/').rsplit('/', 1)[-1]!r})",
                    file=sys.stderr,
                )
                return 2
            startpoint = _startpoint(args)
            problem = _unknown_target(args, store)
            if problem is not None:
                print(f"jetspark: {problem}", file=sys.stderr)
                return 2
            store.write(SourcePartition(args.vertex, args.split), startpoint, args.processor)
            print(f"set {args.vertex}/{args.split}{_for_processor(args.processor)}: {_describe(startpoint)}")
        elif (problem := _missing_root(args)) is not None:  # list, delete
            print(f"jetspark: {problem}", file=sys.stderr)
            return 2
        elif args.action == "list":
            listed = 0
            for partition, processor, startpoint in store.written():
                where = f"{partition.vertex}/{partition.split}{_for_processor(processor)}"
                expired = time.time() - startpoint.created > DEFAULT_EXPIRY_SECONDS
                print(f"written {where}: {_describe(startpoint)}{' EXPIRED: not applied' if expired else ''}")
                listed += 1
            for (vertex, processor), splits in sorted(store.fan_outs().items()):
                for split, startpoint in sorted(splits.items()):
                    print(f"fan-out {vertex}/{split} processor {processor}: {_describe(startpoint)}")
                    listed += 1
            if not listed:
                print(f"no startpoints for job {args.job!r}")
        elif args.all:
            store.delete_all()
            print(f"deleted every startpoint of job {args.job!r}")
        elif args.vertex is None or args.split is None:
            print("jetspark startpoint delete: give --vertex and --split, or --all", file=sys.stderr)
            return 2
        elif store.delete(SourcePartition(args.vertex, args.split), args.processor):
            print(f"deleted {args.vertex}/{args.split}{_for_processor(args.processor)}")
        else:
            print(f"jetspark: no startpoint for {args.vertex}/{args.split}", file=sys.stderr)
            return 1
    except ValueError as error:
        print(f"jetspark: {error}", file=sys.stderr)
        return 2
    return 0
