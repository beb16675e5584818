"""The Python blocks of docs/testing.md run, and the tests they define pass."""

from __future__ import annotations

import inspect
import re
import unittest
from pathlib import Path
from typing import Any

import pytest

from jetspark.runners.local import LocalRunner

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


@pytest.fixture(scope="module")
def namespace() -> dict[str, Any]:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) >= 5
    names: dict[str, Any] = {"__name__": "docs_testing"}
    exec(compile("\n".join(blocks), str(DOC), "exec"), names)
    return names


def test_the_doc_defines_tests_and_they_pass(namespace: dict[str, Any]) -> None:
    tests = {name: fn for name, fn in namespace.items() if name.startswith("test_") and callable(fn)}
    assert {
        "test_dedup",
        "test_forgetful_dedup_is_caught",
        "test_dedup_against_its_model",
        "test_dedup_in_a_dag",
    } <= set(tests)
    fixtures = {"jetspark_local_runner_factory": lambda n=1: LocalRunner(member_count=n)}
    for fn in tests.values():
        fn(*[fixtures[p] for p in inspect.signature(fn).parameters])


def test_the_doc_state_machine_passes(namespace: dict[str, Any]) -> None:
    result = unittest.TextTestRunner(stream=open("/dev/null", "w")).run(  # noqa: SIM115
        unittest.defaultTestLoader.loadTestsFromTestCase(namespace["TestDedupMachine"])
    )
    assert result.wasSuccessful(), result.failures + result.errors
