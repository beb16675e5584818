"""Each built-in processor's reference page (generated from its docstring, tools/mkdocs_hooks.py)
documents every parameter and shows a runnable example whose output is what the example shows.

An example is a ```pycon block of the docstring, run here with doctest; a ```pycon block is
Markdown to mkdocs, so the site shows it as code, with its output.
"""

from __future__ import annotations

import doctest
import inspect
from typing import Any

import pytest

import jetspark.processors as P
from tests.docs_blocks import code_blocks

#: Exported names that are not a processor, an operation or a type of their own, with why.
NO_EXAMPLE = {
    "BAD_RECORDS_METRIC": "a metric's name (a str); read_jsonl's example reads it from job.metrics()",
    "LATE_ITEMS_METRIC": "a metric's name (a str); event-time.md shows it read from job.metrics()",
    "entry_key": "an operator.itemgetter; aggregate_by_key's example partitions by it",
    "frame_entry_key": "an operator.itemgetter; window_aggregate partitions by it",
    "whole_item": "defined and documented in jetspark.core.partitioner",
}
#: Examples that need a server, with the names the test gives them (tests/e2e/test_reference_servers.py).
NEEDS_A_SERVER = {"postgres": ("dsn",), "postgres_cdc": ("dsn",), "postgres_table": ("dsn",)}
NAMES = sorted(P.__all__, key=str.lower)


def examples(obj: Any) -> list[str]:
    return [block.code for block in code_blocks(inspect.getdoc(obj) or "", "pycon")]


def run_example(name: str, code: str, **names: Any) -> str:
    """Doctest's report of `code` run with `names` defined ('' when every output matched)."""
    test = doctest.DocTestParser().get_doctest(code, {"__name__": f"example_{name}", **names}, name, None, 0)
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=report.append, clear_globs=True)
    return "".join(report)


@pytest.mark.parametrize("name", [name for name in NAMES if name not in NO_EXAMPLE])
def test_every_processor_has_an_example(name: str) -> None:
    assert examples(getattr(P, name)), f"jetspark.processors.{name}: its docstring has no ```pycon example"


@pytest.mark.parametrize("name", [n for n in NAMES if n not in NO_EXAMPLE and n not in NEEDS_A_SERVER])
def test_the_example_runs_and_prints_what_it_shows(name: str) -> None:
    """(The examples that need a server run in tests/e2e/test_reference_servers.py, which starts it.)"""
    found = examples(getattr(P, name))
    for code in found:
        assert ">>>" in code, f"{name}: an example without a >>> line shows no output"
        assert run_example(name, code) == ""


@pytest.mark.parametrize("name", [name for name in NAMES if name not in NO_EXAMPLE])
def test_every_parameter_has_a_line_in_the_table(name: str) -> None:
    obj = getattr(P, name)
    signature = inspect.signature(obj.__init__ if inspect.isclass(obj) else obj)
    doc = inspect.getdoc(obj) or ""
    # attrs classes and NamedTuples document their fields as attributes (`:ivar NAME:`): the
    # page's generator sees no __init__ to match `:param` lines against
    field = (
        ":ivar"
        if inspect.isclass(obj) and ("__attrs_attrs__" in vars(obj) or "_fields" in vars(obj))
        else ":param"
    )
    missing = [
        parameter
        for parameter in signature.parameters
        if parameter not in ("self", "args", "kwargs") and f"{field} {parameter}:" not in doc
    ]
    assert not missing, f"jetspark.processors.{name}: no '{field} NAME:' line for {missing}"


def test_a_wrong_output_is_reported() -> None:
    assert "Expected:\n    3\nGot:\n    2" in run_example("sum", ">>> 1 + 1\n3\n")
