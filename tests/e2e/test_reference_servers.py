"""The reference examples that need a server run against a real one (tests/postgres_server.py)."""

from __future__ import annotations

import jetspark.processors as P
from tests.unit.processors.test_reference_examples import NEEDS_A_SERVER, examples, run_example


def test_the_postgres_example_writes_and_reads_back_what_it_shows(postgres_dsn: str) -> None:
    assert NEEDS_A_SERVER["postgres"] == ("dsn",)
    (code,) = examples(P.postgres)
    assert run_example("postgres", code, dsn=postgres_dsn) == ""
