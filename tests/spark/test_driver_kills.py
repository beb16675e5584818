"""The driver's whole process tree SIGKILLed from outside, at the three points where a job's life
was not exact before its identity became durable; then the same job submitted again until done.

The job (`driver_kill_job.py`) writes `(key, n)` rows to transactional files and to PostgreSQL.
Each test holds the driver at its point with a hold file, finds it there by watching the
checkpoint root and `pg_prepared_xacts`, kills the tree, and checks that the kill left what it
should (a prepared transaction, a manifest without `LATEST`, a completed record). After the
resubmits: every row once in the files and in the table, no prepared transaction and no `.tmp`
file left, and the completed job submitted once more writes nothing.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from examples.streaming_counts import expected_rows
from jetspark.processors.transactional import read_lines
from tests.spark.driver_kill_job import NAME
from tests.spark.processes import ROOT, kill_tree, run_driver_script, session_processes, with_root_on_path
from tests.waiting import wait_until

pytestmark = [pytest.mark.spark, pytest.mark.slow]

SCRIPT = Path(__file__).with_name("driver_kill_job.py")
COUNT = 6000
RATE = 4000  # items per second: the job spans several 300 ms epochs


def rows(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return sorted(f"{k},{n}" for k, n in conn.execute("SELECT k, n FROM counts").fetchall())


def prepared(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as conn:
        return [row[0] for row in conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()]


def temp_files(out: Path) -> list[str]:
    return sorted(n for n in os.listdir(out) if n.endswith(".tmp")) if out.is_dir() else []


def latest_id(job_dir: Path) -> int:
    try:
        return int(json.loads((job_dir / "LATEST").read_text())["snapshot_id"])
    except FileNotFoundError:
        return -1


def manifests_past_latest(job_dir: Path) -> list[int]:
    """Snapshots with a manifest newer than LATEST: written, never committed."""
    snapshots = job_dir / "snapshots"
    if not snapshots.is_dir():
        return []
    committed = latest_id(job_dir)
    return [
        int(p.name) for p in snapshots.iterdir() if (p / "manifest.json").exists() and int(p.name) > committed
    ]


class Setup:
    def __init__(self, tmp_path: Path, dsn: str) -> None:
        import psycopg

        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute("DROP TABLE IF EXISTS counts")
            conn.execute("CREATE TABLE counts (k int, n int)")
        self.dsn = dsn
        self.out = tmp_path / "out"
        self.root = tmp_path / "ck"
        self.holds = tmp_path / "holds"
        self.holds.mkdir()
        self.job_dir = self.root / NAME
        self.spec = json.dumps(
            {
                "out": str(self.out),
                "root": str(self.root),
                "dsn": dsn,
                "count": COUNT,
                "rate": RATE,
                "holds": str(self.holds),
            }
        )

    def kill_at(self, point: str, there: Callable[[], object]) -> None:
        """Run the driver held at `point`; SIGKILL its process tree once `there()` holds."""
        (self.holds / point).touch()
        driver = subprocess.Popen(
            [sys.executable, str(SCRIPT), self.spec],
            cwd=ROOT,
            env=with_root_on_path(dict(os.environ)),
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            wait_until(lambda: there() or driver.poll() is not None, f"the driver at {point}", timeout=300)
            assert driver.poll() is None, (
                f"the driver ended before it was killed: {driver.stderr.read()[-3000:]!r}"
            )  # type: ignore[union-attr]
        finally:
            kill_tree(driver)
            driver.stderr.close()  # type: ignore[union-attr]
        (self.holds / point).unlink()

    def submit(self) -> dict[str, Any]:
        report: dict[str, Any] = run_driver_script(SCRIPT, self.spec, timeout=400)
        return report

    def resubmit_until_done(self) -> dict[str, Any]:
        report = self.submit()
        assert report["ended"] == "completed", report
        return report

    def check_exact_and_clean(self) -> None:
        expected = expected_rows(COUNT)
        assert sorted(read_lines(str(self.out))) == expected, "the files hold every row once"
        assert rows(self.dsn) == expected, "the table holds every row once"
        assert prepared(self.dsn) == [], "no prepared transaction is left"
        assert temp_files(self.out) == [], "no uncommitted file is left"

    def check_completed_writes_nothing(self) -> None:
        files = sorted(os.listdir(self.out))
        table = rows(self.dsn)
        report = self.submit()
        assert report["ended"] == "already-completed", report
        assert sorted(os.listdir(self.out)) == files and rows(self.dsn) == table


@pytest.mark.timeout(900)
def test_killed_after_a_sink_prepared_before_the_first_latest(tmp_path: Path, postgres_dsn: str) -> None:
    setup = Setup(tmp_path, postgres_dsn)

    def prepared_and_held() -> bool:
        # `files`, `table` and `holder` are three stages of their own that Spark may run in any
        # order: wait for both sinks' prepares, not only PostgreSQL's
        reached = (setup.holds / "prepare.reached").exists()
        return bool(reached and prepared(postgres_dsn) and temp_files(setup.out))

    setup.kill_at("prepare", prepared_and_held)
    assert latest_id(setup.job_dir) == -1, "the kill came before the first LATEST"
    left = prepared(postgres_dsn)
    record = json.loads((setup.job_dir / "JOB").read_text())
    assert left and all(gid.startswith(f"{record['job_id']}-") for gid in left), left
    assert temp_files(setup.out), "the files sink left its prepared transactions too"

    report = setup.resubmit_until_done()
    assert report["job_id"] == record["job_id"], "the job keeps its durable id"
    setup.check_exact_and_clean()
    setup.check_completed_writes_nothing()


@pytest.mark.timeout(900)
@pytest.mark.parametrize(
    "point",
    ["latest", "sink-commit", "exit"],
    ids=[
        "between-a-manifest-and-its-latest",
        "between-latest-and-the-drivers-sink-commit",
        "after-completion",
    ],
)
def test_killed_at_a_driver_point(tmp_path: Path, postgres_dsn: str, point: str) -> None:
    """`latest`: the driver is held after writing the manifest of a snapshot >= 1, before moving
    LATEST; `sink-commit`: after moving LATEST, before committing the sinks' transactions of that
    snapshot itself (the next submit's restore commits them); `exit`: after the job completed,
    before the process exited."""
    setup = Setup(tmp_path, postgres_dsn)
    setup.kill_at(point, lambda: (setup.holds / f"{point}.reached").exists())
    if point == "latest":
        assert manifests_past_latest(setup.job_dir), "a manifest was written, LATEST not moved"
        assert latest_id(setup.job_dir) >= 0
        setup.resubmit_until_done()
    elif point == "sink-commit":
        committed = latest_id(setup.job_dir)
        assert committed >= 1 and not manifests_past_latest(setup.job_dir)
        left = prepared(postgres_dsn)
        assert left, "the committed snapshot's transactions are still prepared"
        setup.resubmit_until_done()
    else:
        assert json.loads((setup.job_dir / "JOB").read_text())["completed"] is not None
    setup.check_exact_and_clean()
    setup.check_completed_writes_nothing()


def daemons(sid: int) -> list[int]:
    """The `pyspark.daemon` processes of the driver's session."""
    found = []
    for pid in session_processes(sid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
        except FileNotFoundError:
            continue
        if b"pyspark.daemon" in command:
            found.append(pid)
    return found


@pytest.mark.timeout(900)
def test_python_worker_and_daemon_killed_mid_epoch(tmp_path: Path, postgres_dsn: str) -> None:
    """Once an epoch committed, `Holder` waits in `process` in a Python worker; the test SIGKILLs
    that worker and `pyspark.daemon`, then lets it go. The epoch aborts with the cause logged and
    kept; the job goes on and completes exactly."""
    setup = Setup(tmp_path, postgres_dsn)
    driver = subprocess.Popen(
        [sys.executable, str(SCRIPT), setup.spec],
        cwd=ROOT,
        env=with_root_on_path(dict(os.environ)),
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(
            lambda: latest_id(setup.job_dir) >= 0 or driver.poll() is not None, "a commit", timeout=300
        )
        (setup.holds / "process").touch()
        reached = setup.holds / "process.reached"
        wait_until(lambda: reached.exists() or driver.poll() is not None, "a held worker", timeout=300)
        assert driver.poll() is None, "the driver ended before the kill"
        wait_until(lambda: reached.read_text(), "the worker's pid")
        worker = int(reached.read_text())
        killed = [worker, *daemons(driver.pid)]
        for pid in killed:
            os.kill(pid, signal.SIGKILL)
        (setup.holds / "process").unlink()
        stdout, stderr = driver.communicate(timeout=400)
    finally:
        if driver.poll() is None:
            kill_tree(driver)
    assert driver.returncode == 0, stderr[-5000:]
    report = json.loads(stdout.strip().splitlines()[-1])
    assert len(killed) >= 2, f"no pyspark.daemon found: {killed}"
    assert report["ended"] == "completed" and report["aborted"] >= 1, report
    # The kill's own epoch aborts with "Python worker died"; a later one may abort on what the
    # killed daemon left (Spark's "Stream closed" while it starts a new one), so the last cause varies.
    assert report["last_abort"], report
    logged = [line for line in stderr.splitlines() if "aborted: " in line]
    # the JVM meets the dead worker reading its output ("died") or writing to it ("stream closed")
    assert any("aborted: Python worker" in line for line in logged), f"not logged with its cause: {logged}"
    print("\n".join(logged), file=sys.stderr)
    setup.check_exact_and_clean()
