"""A real PostgreSQL server for the tests: `initdb` and `pg_ctl` from the Debian packages, in a
temporary directory, listening on a free loopback port, with prepared transactions enabled and
`wal_level=logical` (logical replication slots for change data capture).

As root the server runs as the `postgres` user (PostgreSQL refuses to run as root). `.ci/run`
installs the packages when they are missing; a machine without them fails the tests that need
the server, with a message that says what to install.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager


def _bindir() -> str:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        raise RuntimeError(
            "PostgreSQL is not installed: apt-get install postgresql (needs initdb and pg_ctl)"
        )
    return os.path.dirname(found[-1])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def postgres_server(extra_options: str = "") -> Iterator[str]:
    """Start a server; yield its DSN; stop it and delete its files. `extra_options` are more
    `-c name=value` settings (a benchmark's `track_commit_timestamp=on`, for example)."""
    bindir = _bindir()
    workdir = tempfile.mkdtemp(prefix="jetspark-pg-")
    data = os.path.join(workdir, "data")
    as_user: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(workdir, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    port = _free_port()

    def run(*command: str) -> None:
        subprocess.run([*as_user, *command], check=True, capture_output=True, timeout=120)

    run(f"{bindir}/initdb", "-D", data, "--auth=trust", "-U", "postgres", "--no-sync")
    options = (
        f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={workdir} "
        "-c max_prepared_transactions=64 -c fsync=off "
        # logical decoding, for the change data capture tests (jetspark.processors.postgres_cdc)
        "-c wal_level=logical -c max_replication_slots=32 -c max_wal_senders=8"
    )
    if extra_options:
        options = f"{options} {extra_options}"
    run(f"{bindir}/pg_ctl", "-D", data, "-o", options, "-l", os.path.join(workdir, "log"), "-w", "start")
    dsn = f"host=127.0.0.1 port={port} user=postgres dbname=postgres"
    try:
        _wait_ready(dsn)
        yield dsn
    finally:
        subprocess.run(
            [*as_user, f"{bindir}/pg_ctl", "-D", data, "-m", "immediate", "stop"], capture_output=True
        )
        shutil.rmtree(workdir, ignore_errors=True)


def roll_back_prepared(dsn: str) -> list[str]:
    """Roll back every prepared transaction on the server (each in its own database); return
    their ids."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(dsn, autocommit=True) as conn:
        left = conn.execute("SELECT gid, database FROM pg_prepared_xacts").fetchall()
    for gid, database in left:
        with psycopg.connect(dsn, dbname=database, autocommit=True) as conn:
            conn.execute(sql.SQL("ROLLBACK PREPARED {}").format(sql.Literal(gid)))
    return [gid for gid, _ in left]


def _wait_ready(dsn: str, timeout: float = 30) -> None:
    import psycopg

    deadline = time.monotonic() + timeout
    while True:
        try:
            psycopg.connect(dsn).close()
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
