"""The tests' PostgreSQL fixture: a prepared transaction an earlier test left (killed between a
prepare and its commit) must not make a later test's `DROP TABLE` wait behind its lock."""

from __future__ import annotations

import psycopg
import pytest

from tests.postgres_server import roll_back_prepared


def test_a_prepared_transaction_left_behind_is_rolled_back_and_frees_its_table(
    postgres_server_dsn: str,
) -> None:
    dsn = postgres_server_dsn
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS fixture_left")
        conn.execute("CREATE TABLE fixture_left (k int)")
    left = psycopg.connect(dsn)
    left.execute("INSERT INTO fixture_left VALUES (1)")
    left.execute("PREPARE TRANSACTION 'fixture-left-1'")
    left.close()  # the client is gone; the prepared transaction and its lock stay

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SET lock_timeout = '200ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            conn.execute("DROP TABLE fixture_left")  # waits behind the prepared transaction

    assert roll_back_prepared(dsn) == ["fixture-left-1"]

    with psycopg.connect(dsn, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM pg_prepared_xacts").fetchone() == (0,)
        conn.execute("SET lock_timeout = '10s'")
        conn.execute("DROP TABLE fixture_left")  # no longer waits
