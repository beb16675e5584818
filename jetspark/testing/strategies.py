"""Hypothesis strategies for processor inputs, and `check_against_model` for `@given` tests.

    from hypothesis import given, strategies as st
    from jetspark.testing import strategies as js

    @given(js.item_streams(st.integers(0, 5)), js.snapshot_points())
    def test_dedup(items, points):
        js.check_against_model(Dedup, lambda xs: list(dict.fromkeys(xs)), items, snapshot_points=points)

Needs Hypothesis (a test dependency of jetspark, not a runtime one).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs
from hypothesis import strategies as st

from jetspark.core.suppliers import SupplierLike
from jetspark.core.watermark import IDLE_MESSAGE, Watermark
from jetspark.testing._builder import ProcessorVerifier, verify_processor
from jetspark.testing._verify import Verification


def item_streams(
    elements: st.SearchStrategy[Any] | None = None, *, min_size: int = 0, max_size: int = 30
) -> st.SearchStrategy[list[Any]]:
    """Lists of items (integers unless `elements` says otherwise)."""
    return st.lists(elements if elements is not None else st.integers(), min_size=min_size, max_size=max_size)


@st.composite
def watermarked_streams(
    draw: st.DrawFn,
    elements: st.SearchStrategy[Any] | None = None,
    *,
    min_size: int = 0,
    max_size: int = 30,
    start: int = 0,
    max_step: int = 10,
    idle: bool = False,
) -> list[Any]:
    """Items with `Watermark`s interleaved at random places, timestamps strictly rising from
    `start` by steps of 1 to `max_step` (as one edge must deliver them); with `idle`, the idle
    marker may appear too."""
    items = draw(item_streams(elements, min_size=min_size, max_size=max_size))
    out: list[Any] = []
    timestamp = start
    for item in [*items, None]:
        while draw(st.integers(0, 3)) == 3:  # shrinks towards fewer watermarks
            if idle and draw(st.booleans()):
                out.append(IDLE_MESSAGE)
            else:
                timestamp += draw(st.integers(1, max_step))
                out.append(Watermark(timestamp))
        if item is not None:
            out.append(item)
    return out


@attrs.frozen
class MultiInput:
    """Inputs per ordinal and their priorities, as `ProcessorVerifier.inputs` takes them."""

    inputs: list[list[Any]]
    priorities: list[int]


@st.composite
def multi_ordinal_inputs(
    draw: st.DrawFn,
    streams: Sequence[st.SearchStrategy[list[Any]]],
    *,
    priorities: bool = True,
) -> MultiInput:
    """One input per strategy in `streams`; with `priorities`, random priorities 0..2 per ordinal
    (else all 0)."""
    inputs = [draw(stream) for stream in streams]
    prios = [draw(st.integers(0, 2)) if priorities else 0 for _ in streams]
    return MultiInput(inputs, prios)


def snapshot_points(max_point: int = 40, max_size: int = 4) -> st.SearchStrategy[frozenset[int]]:
    """Sets of snapshot points (1 = before the first input; see `ProcessorVerifier.snapshot_points`)."""
    return st.frozensets(st.integers(1, max_point), min_size=1, max_size=max_size)


def check_against_model(
    supplier: SupplierLike,
    model: Callable[..., Sequence[Any]],
    *inputs: Sequence[Any],
    priorities: Sequence[int] | None = None,
    snapshot_points: frozenset[int] | None = None,
    any_order: bool = False,
    ignore_watermarks: bool = False,
    configure: Callable[[ProcessorVerifier], Any] | None = None,
) -> Verification:
    """Verify the processor on `inputs` (one sequence per ordinal) against `model(*inputs)`, the
    expected output of ordinal 0 computed by plain Python.

    `configure(verifier)` may set more options (partitioned input, parallelism, ...). Logging of
    calls is off: Hypothesis runs many examples, and a failure reports the last calls anyway.
    """
    verifier = verify_processor(supplier).inputs(inputs, priorities).disable_logging()
    if snapshot_points:
        verifier.snapshot_points(snapshot_points)
    if ignore_watermarks:
        verifier.ignore_output_watermarks()
    if configure is not None:
        configure(verifier)
    return verifier.expect_output(list(model(*inputs)), any_order=any_order)
