"""Checks that need no Spark come before Spark starts: the Spark runner refuses these jobs in well
under a second without starting a session (before, a bad checkpoint root was a raw
NotADirectoryError after 90 s, and a missing one a clear error after 50 s)."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.core.errors import DagValidationError
from jetspark.runners.local import LocalRunner
from jetspark.runners.preflight import check_before_spark, check_checkpoint_paths
from jetspark.runners.spark import SparkRunner

EXACTLY_ONCE = ProcessingGuarantee.EXACTLY_ONCE


def small_dag() -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(3)))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, sink))
    return dag


def refused_by_spark_runner(dag: DAG, config: JobConfig) -> str:
    """The message the Spark runner refuses the job with; fails if it started a session."""
    runner = SparkRunner()
    started = time.monotonic()
    with pytest.raises(DagValidationError) as caught:
        runner.submit(dag, config)
    assert runner._spark is None, "a Spark session was started before the check"
    assert time.monotonic() - started < 1.0
    return str(caught.value)


def test_a_checkpoint_root_that_is_a_file_is_refused_before_spark_starts(tmp_path: Path) -> None:
    a_file = tmp_path / "ck"
    a_file.write_text("not a directory")
    config = JobConfig(name="job", processing_guarantee=EXACTLY_ONCE, checkpoint_root=str(a_file))
    message = refused_by_spark_runner(small_dag(), config)
    assert message == f"JobConfig.checkpoint_root {str(a_file)!r}: is a file, not a directory"


def test_a_checkpoint_root_under_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    root = str(tmp_path / "file" / "deeper" / "ck")
    with pytest.raises(DagValidationError, match=r"cannot be created: '.*file' is a file, not a directory"):
        check_checkpoint_paths(JobConfig(checkpoint_root=root))


NOBODY = 65534


def refusal_for_this_user(config: JobConfig) -> str | None:
    """What `check_checkpoint_paths(config)` says to an ordinary user: in this process, or, when
    the tests run as root (who may write anywhere, as in CI), in a forked child that became the
    user `nobody` first. None when it accepts the config."""

    def check() -> str | None:
        try:
            check_checkpoint_paths(config)
        except DagValidationError as error:
            return str(error)
        return None

    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return check()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: drop to nobody, check, send the answer, exit at once
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            answer = check()
            os.write(write, b"accepted" if answer is None else answer.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(pid, 0)
    assert text, "the child checked nothing"
    return None if text == "accepted" else text


def test_a_checkpoint_root_that_cannot_be_written_is_refused() -> None:
    base = Path(tempfile.mkdtemp(prefix="jetspark-preflight-"))  # /tmp: nobody may pass through
    base.chmod(0o755)
    locked = base / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        startpoints = refusal_for_this_user(JobConfig(startpoints_directory=str(locked / "sp")))
        assert startpoints is not None and re.search(
            r"startpoints_directory .*: cannot be created: this user", startpoints
        )
        root = refusal_for_this_user(JobConfig(checkpoint_root=str(locked)))
        assert root is not None and "is a directory this user cannot write to" in root, root
        assert refusal_for_this_user(JobConfig(checkpoint_root=str(base / "free"))) is not None  # base: 755
        base.chmod(0o777)
        assert refusal_for_this_user(JobConfig(checkpoint_root=str(base / "free"))) is None
    finally:
        locked.chmod(0o700)
        shutil.rmtree(base, ignore_errors=True)


def test_a_directory_that_can_be_made_and_remote_urls_pass(tmp_path: Path) -> None:
    check_checkpoint_paths(JobConfig(checkpoint_root=str(tmp_path / "new" / "ck")))
    check_checkpoint_paths(JobConfig(checkpoint_root=f"file://{tmp_path}"))
    check_checkpoint_paths(JobConfig(checkpoint_root="s3://bucket/ck"))  # not looked at
    assert not (tmp_path / "new").exists()  # the check creates nothing


@pytest.mark.parametrize("field", ["checkpoint_root", "startpoints_directory"])
def test_a_directory_under_proc_is_refused_even_for_root(field: str) -> None:
    """As root `os.access` allows writing anywhere; /proc takes no new directory all the same.
    The error names the field and the path instead of a raw OS error from the store later."""
    with pytest.raises(
        DagValidationError, match=rf"JobConfig.{field} '/proc/jetspark-checkpoints': cannot be created"
    ):
        check_checkpoint_paths(JobConfig(**{field: "/proc/jetspark-checkpoints"}))


def test_the_local_runner_checks_the_checkpoint_root_too(tmp_path: Path) -> None:
    a_file = tmp_path / "ck"
    a_file.write_text("")
    config = JobConfig(name="job", processing_guarantee=EXACTLY_ONCE, checkpoint_root=str(a_file))
    with pytest.raises(DagValidationError, match="is a file, not a directory"):
        LocalRunner().submit(small_dag(), config)


def test_exactly_once_without_a_checkpoint_root_is_refused_before_spark_starts() -> None:
    message = refused_by_spark_runner(small_dag(), JobConfig(name="job", processing_guarantee=EXACTLY_ONCE))
    assert message.startswith("job 'job': with processing guarantee exactly_once the Spark runner keeps")
    assert "set JobConfig.checkpoint_root" in message


def test_a_guarantee_without_a_job_name_or_with_a_bad_one_is_refused(tmp_path: Path) -> None:
    config = JobConfig(processing_guarantee=EXACTLY_ONCE, checkpoint_root=str(tmp_path))
    assert "set JobConfig.name" in refused_by_spark_runner(small_dag(), config)
    config = JobConfig(name="../escape", processing_guarantee=EXACTLY_ONCE, checkpoint_root=str(tmp_path))
    with pytest.raises(DagValidationError, match=r"JobConfig.name: job name '\.\./escape' cannot name"):
        check_before_spark(small_dag(), config)


def test_a_supplier_that_does_not_pickle_is_refused_naming_the_vertex() -> None:
    lock = threading.Lock()
    dag = small_dag()
    held = dag.new_vertex("holds-a-lock", P.map(lambda x: (lock, x)))
    dag.edge(Edge.from_(dag.get_vertex("source"), 1).to(held))
    message = refused_by_spark_runner(dag, JobConfig())
    assert message.startswith("vertex 'holds-a-lock': its ProcessorSupplier cannot be pickled")
    assert "cannot pickle '_thread.lock' object" in message


def test_a_key_function_that_does_not_pickle_is_refused_naming_the_edge() -> None:
    lock = threading.Lock()

    def key(item: Any) -> Any:
        return (lock, item)

    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(3)))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, sink).partitioned(key).distributed())
    message = refused_by_spark_runner(dag, JobConfig())
    assert message.startswith("edge source")
    assert "its key function or partitioner cannot be pickled" in message
