"""A processor that takes watermarks and emits none is named in one warning (`forwarding_watch`),
driven in a real tasklet; one that forwards them, or has no outbound edge, is not."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from jetspark.core import AbstractProcessor, Watermark
from jetspark.engine import forwarding_watch
from tests.contract.harness import TaskletHarness


class Swallows(AbstractProcessor):
    def try_process_watermark(self, watermark: Watermark) -> bool:
        return True  # forgot to forward it


class Forwards(AbstractProcessor):
    pass  # AbstractProcessor.try_process_watermark emits it


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    """No wait before the warning; a fresh once-per-vertex memory; the warnings logged."""
    monkeypatch.setattr(forwarding_watch, "SWALLOWED_WATERMARK_SECONDS", 0.0)
    monkeypatch.setattr(forwarding_watch, "_warned", set())
    caplog.set_level(logging.WARNING)
    return caplog


def watermarks(processor: AbstractProcessor, outbound: int, *timestamps: int, vertex: str = "enrich") -> Any:
    harness = TaskletHarness(processor, inbound=[(0, 1)], outbound=outbound, vertex=vertex)
    harness.feed(0, 0, *(Watermark(t) for t in timestamps))
    harness.run()
    return harness


def test_a_processor_that_takes_watermarks_and_emits_none_is_named_once(
    quick: pytest.LogCaptureFixture,
) -> None:
    watermarks(Swallows(), 1, 10)
    assert quick.messages == [], "one watermark held back is no sign yet"
    watermarks(Swallows(), 1, 10, 20, 30)
    watermarks(Swallows(), 1, 10, 20, 30)  # another processor of the same vertex and job
    assert len(quick.messages) == 1, quick.messages
    assert quick.messages[0].startswith(
        "vertex 'enrich': try_process_watermark took 2 watermarks in 0 s and emitted none"
    )
    assert "return super().try_process_watermark(watermark)" in quick.messages[0]


def test_a_processor_that_forwards_them_or_a_sink_is_not_named(quick: pytest.LogCaptureFixture) -> None:
    forwarded = watermarks(Forwards(), 1, 10, 20, 30)
    assert forwarded.output() == [Watermark(10), Watermark(20), Watermark(30)]
    watermarks(Swallows(), 0, 10, 20, 30, vertex="sink")  # no outbound edge: nothing to forward to
    assert quick.messages == []


def test_without_seconds_the_warning_waits_for_its_count(
    quick: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(forwarding_watch, "SWALLOWED_WATERMARK_SECONDS", 3600.0)
    count = forwarding_watch.SWALLOWED_WATERMARK_COUNT
    watermarks(Swallows(), 1, *range(1, count))
    assert quick.messages == []
    watermarks(Swallows(), 1, *range(1, count + 1))
    assert len(quick.messages) == 1 and f"took {count} watermarks" in quick.messages[0]
