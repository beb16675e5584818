"""docs/tutorial.md, followed as a reader would: its table, its job file under `jetspark run
--local`, its query, and the interrupted run that resumes; against a real PostgreSQL server
(tests/postgres_server.py). The outputs must be the ones the tutorial shows.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.docs_blocks import code_blocks
from tests.waiting import wait_until

TUTORIAL = Path(__file__).resolve().parents[2] / "docs" / "tutorial.md"
JETSPARK = Path(sys.executable).with_name("jetspark")
TEXT = TUTORIAL.read_text()
(TABLE,) = [block.code for block in code_blocks(TEXT, "sql")]
JOB, QUERY = [block.code for block in code_blocks(TEXT, "python")]
QUERY_OUTPUT = code_blocks(TEXT[TEXT.index("## 4. Run it") :], "text")[0].code
INTERRUPTED = code_blocks(TEXT[TEXT.index("## 5.") :], "text")[0].code


def fresh_table(dsn: str) -> None:
    with psycopg.connect(dsn, autocommit=True) as db:
        db.execute("DROP TABLE IF EXISTS page_clicks")
        db.execute(TABLE)


def query(dsn: str) -> str:
    """The tutorial's query block, run as the reader runs it; what it prints."""
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(printed):
        env.setenv("DSN", dsn)
        exec(compile(QUERY, str(TUTORIAL), "exec"), {"__name__": "__main__"})
    return printed.getvalue()


def start_job(job_file: Path, dsn: str, *options: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [str(JETSPARK), "run", "--local", *options, job_file.name],
        cwd=job_file.parent,
        env={**os.environ, "DSN": dsn},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def rows(dsn: str) -> int:
    with psycopg.connect(dsn) as db:
        return int(db.execute("SELECT count(*) FROM page_clicks").fetchone()[0])


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_tutorial_job_writes_what_the_tutorial_shows(tmp_path: Path, postgres_dsn: str) -> None:
    fresh_table(postgres_dsn)
    job_file = tmp_path / "clicks.py"
    job_file.write_text(JOB)
    job = start_job(job_file, postgres_dsn)
    stdout, stderr = job.communicate(timeout=240)
    assert job.returncode == 0, stderr
    assert stdout == "late clicks: 0\n"
    assert query(postgres_dsn) == QUERY_OUTPUT


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_an_interrupted_run_resumes_and_writes_every_window_once(tmp_path: Path, postgres_dsn: str) -> None:
    """Step 4, then step 5 in the same directory, as a reader goes on: the completed job run
    again does nothing (and still prints its figures); emptied table, `--start-over`, Ctrl-C once
    some windows are in the table, then the command without `--start-over`."""
    fresh_table(postgres_dsn)
    job_file = tmp_path / "clicks.py"
    job_file.write_text(JOB)
    done = start_job(job_file, postgres_dsn)
    stdout, stderr = done.communicate(timeout=240)
    assert (done.returncode, stdout) == (0, "late clicks: 0\n"), stderr
    again = start_job(job_file, postgres_dsn)
    stdout, stderr = again.communicate(timeout=240)
    assert (again.returncode, stdout) == (0, "late clicks: 0\n"), stderr
    assert "already completed at" in stderr and "nothing to do" in stderr
    assert rows(postgres_dsn) == 93, "the completed job wrote nothing again"

    fresh_table(postgres_dsn)
    # The started-over run reads slowly, so that it is surely still running when the test
    # interrupts it; the source's rate is not part of its snapshot, and the next run is the doc's file.
    assert JOB.count("items_per_second=1000") == 1
    job_file.write_text(JOB.replace("items_per_second=1000", "items_per_second=50"))
    assert "jetspark run --local --start-over clicks.py" in INTERRUPTED
    first = start_job(job_file, postgres_dsn, "--start-over")
    try:
        wait_until(
            lambda: rows(postgres_dsn) > 0 or first.poll() is not None,
            "a first committed window",
            timeout=120,
        )
        assert first.poll() is None, first.communicate()[1]
        first.send_signal(signal.SIGINT)
        _, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 130, stderr
    assert stderr.strip().endswith(INTERRUPTED.splitlines()[1].removeprefix("^C")), stderr
    written = rows(postgres_dsn)
    assert 0 < written < 93
    assert (tmp_path / "checkpoints" / "page-clicks").is_dir()

    job_file.write_text(JOB)
    second = start_job(job_file, postgres_dsn)
    stdout, stderr = second.communicate(timeout=240)
    assert stdout == "late clicks: 0\n"
    assert second.returncode == 0, stderr
    assert query(postgres_dsn) == QUERY_OUTPUT
