"""Review of the session-13 changes (running_processor_index, directory_stream forgetting deleted
files, job names without a checkpoint store, `DAG.to_dot()` in Jet's format): each defect the
review reproduced, as a strict xfail that passes once it is fixed."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from jetspark import processors as P
from jetspark.core import DAG, Edge, JobAlreadyRunningError, JobConfig, ProcessingGuarantee
from jetspark.core.errors import JobCancelledError
from jetspark.core.suppliers import FirstMemberOnly
from jetspark.runners.local import JobStatus, LocalJob, LocalRunner
from tests.gates import Gate, gated_stream
from tests.jet.test_jet_stream_files_p import Driver, print_lines
from tests.waiting import wait_until

COUNT = 300


def _exactly_once(**more: object) -> JobConfig:
    return JobConfig(
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=15, **more
    )


def _stop(job: LocalJob) -> None:
    job.cancel()
    with pytest.raises(JobCancelledError):
        job.join(60)


# ---- (4) sources behind FirstMemberOnly, restored -------------------------------------------


@pytest.mark.parametrize(("members", "resume_members"), [(1, 3), (3, 3)])
def test_first_member_only_source_suspended_and_resumed_loses_nothing(
    tmp_path: Path, members: int, resume_members: int
) -> None:
    gate = Gate(tmp_path / "gate", hold_at=COUNT // 3)
    dag = DAG()
    source = dag.new_vertex("source", FirstMemberOnly(gated_stream(gate, count=COUNT)))
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, sink).distributed())
    job = LocalRunner(members).submit(dag, _exactly_once())
    wait_until(lambda: job.metrics()["source"]["emitted"] >= COUNT // 3, "the source to reach its gate")
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    gate.open()
    job.resume(member_count=resume_members).join(120)
    counts = Counter(job.result("sink"))
    assert max(counts.values()) == 1
    assert sorted(set(range(COUNT)) - set(counts))[:5] == [], "items never emitted after the restore"


def test_directory_stream_behind_first_member_only_reads_every_file(tmp_path: Path) -> None:
    # e.log's partition is member 1's on 2 members, z.log's member 0's (names sort e < z, and
    # one poll reads the files in name order: once z.log's line is in, e.log was passed over)
    (tmp_path / "e.log").write_text("from e\n")
    (tmp_path / "z.log").write_text("from z\n")
    dag = DAG()
    lines = dag.new_vertex(
        "lines", FirstMemberOnly(P.directory_stream(str(tmp_path), "*.log", poll_millis=5))
    )
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(lines, sink).distributed().all_to_one())
    job = LocalRunner(2).submit(dag)
    try:
        wait_until(lambda: "from z" in job.result("sink"), "z.log's line")
        got = list(job.result("sink"))
    finally:
        _stop(job)
    assert "from e" in got


# ---- (5) directory_stream and deleted files ---------------------------------------------------


def test_directory_stream_reads_a_log_rotated_between_two_polls_from_its_start(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    print_lines(log, *(f"old-{i}" for i in range(10)), mode="w")
    driver = Driver(tmp_path, "a.log")
    driver.assert_emitted_count(10)
    log.rename(tmp_path / "a.log.1")  # logrotate: rename, then the application's new file
    print_lines(log, "new-0", "new-1", mode="w")
    driver.call_until(12)  # raises JobFailedError: file a.log shrank from 60 to 12 bytes
    assert driver.lines[10:] == ["new-0", "new-1"]


def test_directory_stream_file_recreated_while_suspended_is_read_whole(tmp_path: Path) -> None:
    log = tmp_path / "a.log"
    print_lines(log, *(f"old-{i}" for i in range(5)), mode="w")
    dag = DAG()
    lines = dag.new_vertex("lines", P.directory_stream(str(tmp_path), "*.log", poll_millis=5))
    dag.edge(Edge.between(lines, dag.new_vertex("sink", P.collect())))
    job = LocalRunner(1).submit(dag, _exactly_once())
    wait_until(lambda: len(job.result("sink")) >= 5, "the old file's lines")
    job.suspend()
    assert job.status is JobStatus.SUSPENDED, job.error
    log.unlink()
    print_lines(log, *(f"new-{i}" for i in range(10)), mode="w")  # same line length as before
    job.resume()
    try:
        wait_until(lambda: "new-9" in job.result("sink"), "the new file's last line")
        got = Counter(job.result("sink"))
    finally:
        _stop(job)
    assert [f"new-{i}" for i in range(10) if got[f"new-{i}"] != 1] == []


# ---- (2) one job at a time per name ------------------------------------------------------------


def _tiny_dag() -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(3)))
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.collect())))
    return dag


def _gated_dag(gate: Gate) -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=COUNT))
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.collect())))
    return dag


def test_a_named_job_without_a_store_is_refused_while_the_name_runs_with_one(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=10)
    first = LocalRunner(1).submit(
        _gated_dag(gate), _exactly_once(name="counts", checkpoint_root=str(tmp_path / "ck"))
    )
    try:
        wait_until(lambda: len(first.result("sink")) >= 10, "the first job to run")
        with pytest.raises(JobAlreadyRunningError):
            LocalRunner(1).submit(_tiny_dag(), JobConfig(name="counts")).join(60)
    finally:
        _stop(first)


def test_a_named_job_with_a_store_is_refused_while_the_name_runs_without_one(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=10)
    first = LocalRunner(1).submit(_gated_dag(gate), JobConfig(name="counts"))
    try:
        wait_until(lambda: len(first.result("sink")) >= 10, "the first job to run")
        with pytest.raises(JobAlreadyRunningError):
            second = LocalRunner(1).submit(
                _tiny_dag(), _exactly_once(name="counts", checkpoint_root=str(tmp_path / "ck"))
            )
            second.join(60)
    finally:
        _stop(first)


def test_run_suspended_by_ctrl_c_can_be_run_again_as_its_message_says(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jetspark import api

    gate = Gate(tmp_path / "gate", hold_at=10)
    config = JobConfig(name="counts", processing_guarantee=ProcessingGuarantee.AT_LEAST_ONCE)

    def interrupted(job: LocalJob, *args: object, **kwargs: object) -> LocalJob:
        wait_until(lambda: len(job.result("sink")) >= 10, "the job to run")
        raise KeyboardInterrupt  # Ctrl-C while run() waits

    real_join = LocalJob.join
    monkeypatch.setattr(LocalJob, "join", interrupted)
    with pytest.raises(KeyboardInterrupt, match="suspended") as kept:  # sys.last_value
        api.run(_gated_dag(gate), config, runner=LocalRunner(1))
    monkeypatch.setattr(LocalJob, "join", real_join)
    gate.open()
    again = api.run(_gated_dag(gate), config, runner=LocalRunner(1), timeout=120)
    assert again.status is JobStatus.COMPLETED
    assert kept.value is not None


# ---- (1) to_dot ---------------------------------------------------------------------------------


def _dot_quoted_strings(line: str) -> list[str]:
    """The quoted strings of a DOT line as Graphviz's scanner (lib/cgraph/scan.l) reads them:
    inside quotes `\\"` is a quote and `\\\\` a pair kept as it is; a string left open is an
    error."""
    strings: list[str] = []
    i = 0
    while i < len(line):
        if line[i] != '"':
            i += 1
            continue
        i += 1
        text = []
        while True:
            if i >= len(line):
                raise SyntaxError(f"unterminated string in {line!r}")
            if line.startswith('\\"', i):
                text.append('"')
                i += 2
            elif line.startswith("\\\\", i):
                text.append("\\\\")
                i += 2
            elif line[i] == '"':
                i += 1
                break
            else:
                text.append(line[i])
                i += 1
        strings.append("".join(text))
    return strings


def test_to_dot_of_a_vertex_name_ending_in_a_backslash_is_valid_dot() -> None:
    dag = DAG()
    source = dag.new_vertex("read C:\\logs\\", P.noop(), 1)
    dag.edge(Edge.between(source, dag.new_vertex("sink", P.noop())))
    names = [_dot_quoted_strings(line) for line in dag.to_dot().splitlines()]
    assert ["read C:\\\\logs\\\\"] in names  # Graphviz's id, shown as read C:\logs\
