"""A processor method named one typo away from an engine method is warned of (`planning.method_names`)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from jetspark.core import AbstractProcessor
from jetspark.planning.method_names import misspelled, warn_of_misspelled_methods
from jetspark.processors.windows import _SlidingWindowP


class Typos(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return True

    def compelte(self) -> bool:  # complete
        return True

    def save_to_snaphsot(self) -> bool:  # save_to_snapshot
        return True

    def init_procesor(self, context: Any) -> None:  # init_processor
        pass


class Helpers(AbstractProcessor):
    """Names that extend an engine name, or are short words near one, are the user's helpers."""

    def processed(self) -> int:
        return 0

    def complete_all(self) -> bool:
        return True

    def try_process_items(self, items: Any) -> None:
        pass

    def restore(self) -> None:
        pass


def test_a_transposition_a_missing_or_an_added_letter_is_found_with_the_name_meant() -> None:
    assert sorted(misspelled(Typos)) == [
        ("compelte", "complete"),
        ("init_procesor", "init_processor"),
        ("save_to_snaphsot", "save_to_snapshot"),
    ]


def test_helpers_that_extend_or_shorten_an_engine_name_are_not_typos() -> None:
    assert misspelled(Helpers) == []


def test_a_subclass_inherits_its_bases_typos_and_jetsparks_own_classes_are_not_read() -> None:
    class Sub(Typos):
        pass

    assert ("compelte", "complete") in misspelled(Sub)
    assert misspelled(_SlidingWindowP) == []


def test_the_warning_names_the_vertex_the_class_both_names_and_comes_once_per_class(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Once(AbstractProcessor):
        def compelte(self) -> bool:
            return True

    with caplog.at_level(logging.WARNING, logger="jetspark.planning"):
        warn_of_misspelled_methods("sum", Once())
        warn_of_misspelled_methods("sum", Once())
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "vertex 'sum': Once.compelte() looks like a misspelling of complete(), which the engine "
        "calls; compelte() is never called by it"
    ]
