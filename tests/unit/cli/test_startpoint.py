"""`jetspark startpoint set|list|delete` writes, shows and removes a job's startpoints in the store
a job reads them from; bad input is refused naming what is wrong."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from jetspark.checkpoint.startpoints import (
    Oldest,
    SourcePartition,
    Specific,
    StartpointStore,
    Timestamp,
    Upcoming,
    startpoint_from_json,
)
from jetspark.cli.main import main

ROOT = Path(__file__).resolve().parents[3]
A = SourcePartition("lines", "a.log")


def sp(root: Path, *args: str) -> int:
    return main(["startpoint", args[0], "--root", str(root), "--job", "job", *args[1:]])


def test_set_writes_each_kind_per_partition_or_per_processor(tmp_path: Path) -> None:
    store = StartpointStore(str(tmp_path), "job")
    assert sp(tmp_path, "set", "--new-job", "--vertex", "lines", "--split", "a.log", "--offset", "42") == 0
    written = store.read(A)
    assert isinstance(written, Specific) and written.offset == 42
    assert sp(tmp_path, "set", "--vertex", "lines", "--split", "a.log", "--timestamp", "1500") == 0
    written = store.read(A)
    assert isinstance(written, Timestamp) and written.timestamp == 1500
    assert sp(tmp_path, "set", "--vertex", "lines", "--split", "a.log", "--oldest") == 0
    assert isinstance(store.read(A), Oldest)
    assert sp(tmp_path, "set", "--vertex", "lines", "--split", "a.log", "--processor", "2", "--upcoming") == 0
    assert isinstance(store.read(A, processor=2), Upcoming)
    assert isinstance(store.read(A), Oldest)


def test_list_shows_written_startpoints_and_fan_outs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = StartpointStore(str(tmp_path), "job")
    store.write(A, Specific(7))
    store.write(SourcePartition("lines", "b.log"), Upcoming())
    store.fan_out(lambda p: 1 if p.split == "b.log" else None)
    assert sp(tmp_path, "list") == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split(" (created")[0] for line in out] == [
        "written lines/a.log: specific offset=7",
        "fan-out lines/b.log processor 1: upcoming",
    ]


def test_delete_one_or_all(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = StartpointStore(str(tmp_path), "job")
    store.write(A, Specific(7))
    store.write(A, Oldest(), processor=0)
    assert sp(tmp_path, "delete", "--vertex", "lines", "--split", "a.log") == 0
    assert store.read(A) is None and store.read(A, processor=0) is not None
    assert sp(tmp_path, "delete", "--vertex", "lines", "--split", "a.log") == 1
    assert "no startpoint for lines/a.log" in capsys.readouterr().err
    assert sp(tmp_path, "delete", "--all") == 0
    assert list(store.written()) == []
    assert sp(tmp_path, "delete") == 2
    assert "give --vertex and --split, or --all" in capsys.readouterr().err


def test_bad_input_is_refused_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sp(tmp_path, "set", "--vertex", "lines", "--split", "a.log", "--offset", "-3") == 2
    assert "offset must be an int >= 0" in capsys.readouterr().err
    assert main(["startpoint", "list", "--root", str(tmp_path), "--job", "../up"]) == 2
    assert "job name '../up'" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # argparse: exactly one kind
        sp(tmp_path, "set", "--vertex", "lines", "--split", "a.log", "--oldest", "--upcoming")
    assert sp(tmp_path, "set", "--vertex", "lines", "--split", "/data/logs/a.log", "--oldest") == 2
    assert "a split is a file name in the source's directory (for example 'a.log')" in capsys.readouterr().err
    assert list(StartpointStore(str(tmp_path), "job").written()) == []
    timestamp = {"type": "timestamp", "timestamp": "2500", "created": 1.0}
    with pytest.raises(ValueError, match="timestamp must be an int of milliseconds, got '2500'"):
        startpoint_from_json(timestamp)


def test_the_command_runs_as_a_program(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "jetspark.cli.main", "startpoint", "set", "--root", str(tmp_path)]
    command += ["--job", "job", "--new-job", "--vertex", "lines", "--split", "a.log", "--upcoming"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("set lines/a.log: upcoming")
    assert isinstance(StartpointStore(str(tmp_path), "job").read(A), Upcoming)


def ran_once(root: Path) -> None:
    """Run job "job" (a `lines` source and a `sink`) to its first committed snapshot."""
    from jetspark import processors as P
    from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
    from jetspark.runners.local import LocalRunner
    from tests.waiting import wait_until

    logs = root / "logs"
    logs.mkdir()
    (logs / "a.log").write_text("one\n")
    dag = DAG()
    lines = dag.new_vertex("lines", P.directory_stream(str(logs), "*.log", poll_millis=5))
    dag.edge(Edge.between(lines, dag.new_vertex("sink", P.collect())))
    config = JobConfig(
        name="job",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        checkpoint_root=str(root / "ck"),
        snapshot_interval_millis=10,
    )
    job = LocalRunner().submit(dag, config)
    wait_until(lambda: job.snapshot_count >= 1, "a committed snapshot")
    job.suspend()


def test_set_for_a_job_that_never_ran_there_is_an_error_naming_the_jobs_that_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran_once(tmp_path)
    root = str(tmp_path / "ck")
    code = main(
        [
            "startpoint",
            "set",
            "--root",
            root,
            "--job",
            "jbo",
            "--vertex",
            "lines",
            "--split",
            "a.log",
            "--oldest",
        ]
    )
    assert code == 2
    assert capsys.readouterr().err == (
        f"jetspark: job 'jbo' has not run under {root!r} (jobs there: job); check --root and --job, "
        "or add --new-job to set a startpoint before the job's first run\n"
    )
    assert StartpointStore(root, "jbo").read(A) is None  # nothing written


def test_set_for_a_vertex_the_job_does_not_have_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran_once(tmp_path)
    root = str(tmp_path / "ck")
    code = main(
        [
            "startpoint",
            "set",
            "--root",
            root,
            "--job",
            "job",
            "--vertex",
            "line",
            "--split",
            "a.log",
            "--oldest",
        ]
    )
    assert code == 2
    assert capsys.readouterr().err == "jetspark: job 'job' has no vertex 'line' (its vertices: lines, sink)\n"
    not_a_source = ["--root", root, "--job", "job", "--vertex", "sink", "--split", "a.log", "--oldest"]
    assert main(["startpoint", "set", *not_a_source]) == 2
    assert capsys.readouterr().err == (
        "jetspark: vertex 'sink' of job 'job' is not a source that takes startpoints (those that do: lines)\n"
    )
    code = main(
        [
            "startpoint",
            "set",
            "--root",
            root,
            "--job",
            "job",
            "--vertex",
            "lines",
            "--split",
            "a.log",
            "--oldest",
        ]
    )
    assert code == 0
    assert isinstance(StartpointStore(root, "job").read(A), Oldest)


def test_set_under_a_root_that_does_not_exist_is_an_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = str(tmp_path / "nowhere")
    assert (
        main(
            [
                "startpoint",
                "set",
                "--root",
                missing,
                "--job",
                "job",
                "--vertex",
                "lines",
                "--split",
                "a",
                "--oldest",
            ]
        )
        == 2
    )
    assert f"checkpoint root {missing!r} does not exist" in capsys.readouterr().err


def test_set_and_delete_name_the_processor_and_an_empty_list_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert sp(tmp_path, "list") == 0
    assert capsys.readouterr().out == "no startpoints for job 'job'\n"
    assert (
        sp(
            tmp_path,
            "set",
            "--new-job",
            "--vertex",
            "lines",
            "--split",
            "a.log",
            "--processor",
            "1",
            "--oldest",
        )
        == 0
    )
    assert capsys.readouterr().out.startswith("set lines/a.log processor 1: ")
    assert sp(tmp_path, "delete", "--vertex", "lines", "--split", "a.log", "--processor", "1") == 0
    assert capsys.readouterr().out == "deleted lines/a.log processor 1\n"
