"""The Python blocks of docs/testing.md run, and the tests they define pass."""

from __future__ import annotations

import inspect
import unittest
from pathlib import Path
from typing import Any

import pytest

from jetspark.runners.local import LocalRunner
from tests.docs_blocks import run_python_blocks

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


@pytest.fixture(scope="module")
def namespace() -> dict[str, Any]:
    names: dict[str, Any] = {"__name__": "docs_testing"}
    assert len(run_python_blocks(DOC, names)) >= 5
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
