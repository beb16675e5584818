"""docs/cdc.md's Python blocks run, against the test session's PostgreSQL server, and print what
the doc says they print (its ```text blocks)."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from tests.docs_blocks import code_blocks, run_python_blocks

DOC = Path(__file__).resolve().parents[2] / "docs" / "cdc.md"


def test_the_cdc_doc_runs_and_prints_what_it_says(postgres_dsn: str) -> None:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    output = io.StringIO()
    with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(output):
        env.setenv("JETSPARK_RUNNER", "local")
        env.setenv("JETSPARK_PG_DSN", postgres_dsn)
        blocks = run_python_blocks(DOC, namespace)
    assert len(blocks) == 3
    printed = "".join(block.code for block in code_blocks(DOC.read_text(), "text"))
    assert output.getvalue() == printed
