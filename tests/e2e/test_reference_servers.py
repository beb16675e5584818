"""The reference examples that need a server run against a real one (tests/postgres_server.py)."""

from __future__ import annotations

import jetspark.processors as P
from jetspark.processors.postgres_cdc import drop_slot
from tests.unit.processors.test_reference_examples import NEEDS_A_SERVER, examples, run_example


def test_the_postgres_example_writes_and_reads_back_what_it_shows(postgres_dsn: str) -> None:
    assert NEEDS_A_SERVER["postgres"] == ("dsn",)
    (code,) = examples(P.postgres)
    assert run_example("postgres", code, dsn=postgres_dsn) == ""


def test_the_postgres_table_example_reads_what_it_shows(postgres_dsn: str) -> None:
    assert NEEDS_A_SERVER["postgres_table"] == ("dsn",)
    (code,) = examples(P.postgres_table)
    assert run_example("postgres_table", code, dsn=postgres_dsn) == ""


def test_the_postgres_cdc_example_streams_the_changes_it_shows(postgres_dsn: str) -> None:
    assert NEEDS_A_SERVER["postgres_cdc"] == ("dsn",)
    (code,) = examples(P.postgres_cdc)
    try:
        assert run_example("postgres_cdc", code, dsn=postgres_dsn) == ""
    finally:  # the example drops its slot at its end; a failed one must not leave it keeping WAL
        drop_slot(postgres_dsn, "accounts_slot")
