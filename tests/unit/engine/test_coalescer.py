"""WatermarkCoalescer (engine/coalescer.py), rule by rule on hand-written sequences.

tests/property/test_coalescer_props.py checks random sequences against a model; these tests pin
the edge cases a random sequence finds only by chance (an input idle, active, then idle again;
the lowest timestamps; the exact error).
"""

from __future__ import annotations

import pytest

from jetspark.core.errors import ProcessorContractError
from jetspark.core.watermark import IDLE_MESSAGE, Watermark
from jetspark.engine.coalescer import WatermarkCoalescer


@pytest.mark.parametrize("first", [-(2**64), -(2**63), -127, -126, 0])
def test_a_first_watermark_of_any_int_however_low_is_forwarded(first: int) -> None:
    coalescer = WatermarkCoalescer(1, "c")
    assert coalescer.observe(0, Watermark(first)) == [Watermark(first)]
    assert coalescer.last_forwarded == first
    assert coalescer.observe(0, Watermark(first + 1)) == [Watermark(first + 1)]


@pytest.mark.parametrize("first", [-(2**64), -(2**63), -126])
def test_all_idle_after_a_very_low_first_watermark_forwards_it_and_then_idle(first: int) -> None:
    coalescer = WatermarkCoalescer(2, "c")
    assert coalescer.observe(0, Watermark(first)) == []  # queue 1 holds it back
    assert coalescer.observe(0, IDLE_MESSAGE) == []  # queue 1 still holds it back
    assert coalescer.observe(1, IDLE_MESSAGE) == [Watermark(first), IDLE_MESSAGE]


def test_last_forwarded_is_none_until_a_watermark_goes_out() -> None:
    coalescer = WatermarkCoalescer(2, "c")
    assert coalescer.last_forwarded is None
    coalescer.observe(0, Watermark(5))
    assert coalescer.last_forwarded is None  # queue 1 has sent nothing yet
    coalescer.observe(1, Watermark(7))
    assert coalescer.last_forwarded == 5


def test_a_watermark_equal_to_the_last_forwarded_is_not_forwarded_again() -> None:
    coalescer = WatermarkCoalescer(2, "c")
    assert coalescer.observe(0, Watermark(5)) == []
    assert coalescer.observe(1, Watermark(5)) == [Watermark(5)]
    assert coalescer.observe(0, Watermark(6)) == []  # the minimum is still 5
    assert coalescer.observe(1, Watermark(6)) == [Watermark(6)]


@pytest.mark.parametrize("second", [5, 4])
def test_a_watermark_that_does_not_rise_on_its_queue_is_an_error_naming_coalescer_queue_and_values(
    second: int,
) -> None:
    coalescer = WatermarkCoalescer(2, "edge 'e'")
    coalescer.observe(1, Watermark(5))
    with pytest.raises(ProcessorContractError) as error:
        coalescer.observe(1, Watermark(second))
    assert str(error.value) == (
        f"edge 'e': watermark {second} on input 1 is not greater than the previous one (5); "
        "watermarks must rise"
    )


def test_is_idle_is_true_from_the_idle_marker_until_the_next_watermark_or_item() -> None:
    coalescer = WatermarkCoalescer(2, "c")
    assert coalescer.is_idle(0) is False
    coalescer.observe(0, IDLE_MESSAGE)
    assert (coalescer.is_idle(0), coalescer.is_idle(1)) == (True, False)
    coalescer.observe(0, Watermark(1))
    assert coalescer.is_idle(0) is False
    coalescer.observe(0, IDLE_MESSAGE)
    coalescer.observe_item(0)
    assert coalescer.is_idle(0) is False
    coalescer.observe_item(1)  # an item on an active queue changes nothing
    assert coalescer.is_idle(1) is False


def test_all_idle_forwards_the_top_watermark_then_the_idle_marker_once() -> None:
    coalescer = WatermarkCoalescer(2, "c")
    assert coalescer.observe(0, Watermark(3)) == []
    assert coalescer.observe(1, Watermark(8)) == [Watermark(3)]
    assert coalescer.observe(1, IDLE_MESSAGE) == []  # queue 0 alone: still 3
    assert coalescer.observe(0, IDLE_MESSAGE) == [Watermark(8), IDLE_MESSAGE]
    assert coalescer.last_forwarded == 8
    assert coalescer.observe(0, IDLE_MESSAGE) == []
    assert coalescer.observe(1, IDLE_MESSAGE) == []


def test_all_idle_before_any_watermark_forwards_only_the_idle_marker() -> None:
    coalescer = WatermarkCoalescer(2, "c")
    assert coalescer.observe(0, IDLE_MESSAGE) == []
    assert coalescer.observe(1, IDLE_MESSAGE) == [IDLE_MESSAGE]
    assert coalescer.last_forwarded is None


def all_idle_after_forwarding_20() -> WatermarkCoalescer:
    """Queue 0 at 10, queue 1 at 20, both idle: 20 and the idle marker went out."""
    coalescer = WatermarkCoalescer(2, "c")
    coalescer.observe(0, Watermark(10))
    coalescer.observe(1, Watermark(20))
    coalescer.observe(1, IDLE_MESSAGE)
    assert coalescer.observe(0, IDLE_MESSAGE) == [Watermark(20), IDLE_MESSAGE]
    return coalescer


def test_an_input_idle_then_active_by_a_low_watermark_then_idle_again_forwards_idle_again() -> None:
    coalescer = all_idle_after_forwarding_20()
    # queue 0 rises to 15: active again, but below the 20 already forwarded, so nothing goes out
    assert coalescer.observe(0, Watermark(15)) == []
    assert coalescer.observe(0, IDLE_MESSAGE) == [IDLE_MESSAGE]
    assert coalescer.observe(0, IDLE_MESSAGE) == []


def test_an_input_idle_then_active_by_an_item_then_idle_again_forwards_idle_again() -> None:
    coalescer = all_idle_after_forwarding_20()
    coalescer.observe_item(0)
    assert coalescer.observe(0, IDLE_MESSAGE) == [IDLE_MESSAGE]
    assert coalescer.observe(0, IDLE_MESSAGE) == []


def test_an_item_from_an_idle_input_makes_it_hold_the_watermark_back_again() -> None:
    coalescer = WatermarkCoalescer(2, "c")
    coalescer.observe(0, Watermark(10))
    coalescer.observe(0, IDLE_MESSAGE)
    assert coalescer.observe(1, Watermark(30)) == [Watermark(30)]  # queue 0 idle: 30 alone
    coalescer.observe(1, IDLE_MESSAGE)
    coalescer.observe_item(1)  # queue 1 active again at 30
    assert coalescer.observe(1, Watermark(40)) == [Watermark(40)]
    coalescer.observe_item(0)  # queue 0 active again at 10: holds back until it passes 40
    assert coalescer.observe(1, Watermark(50)) == []
    assert coalescer.observe(0, Watermark(45)) == [Watermark(45)]


def test_a_finished_queue_no_longer_holds_the_watermark_back() -> None:
    coalescer = WatermarkCoalescer(3, "c")
    coalescer.observe(0, Watermark(10))
    coalescer.observe(1, Watermark(20))
    assert coalescer.queue_done(2) == [Watermark(10)]
    assert coalescer.queue_done(0) == [Watermark(20)]


def test_when_every_queue_is_done_nothing_is_forwarded_not_even_idle() -> None:
    coalescer = WatermarkCoalescer(2, "c")
    coalescer.observe(0, Watermark(10))
    assert coalescer.observe(1, IDLE_MESSAGE) == [Watermark(10)]
    assert coalescer.queue_done(0) == [IDLE_MESSAGE]  # queue 1 idle, queue 0 done
    assert coalescer.queue_done(1) == []
    fresh = WatermarkCoalescer(2, "c")
    assert fresh.queue_done(0) == []  # queue 1 live, without a watermark yet
    assert fresh.queue_done(1) == []
