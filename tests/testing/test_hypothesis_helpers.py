"""The Hypothesis side of the kit: strategies, model checks with @given, the state machine."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import run_state_machine_as_test
from kit_examples import CountByKey, Dedup

from jetspark import IDLE_MESSAGE, Watermark
from jetspark import processors as P
from jetspark.testing import FailureKind, ProcessorVerificationError
from jetspark.testing import strategies as js
from jetspark.testing.stateful import processor_state_machine

FAST = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def dedup_model(items: list[Any]) -> list[Any]:
    return list(dict.fromkeys(x for x in items if not isinstance(x, Watermark)))


class DedupModel:
    def __init__(self) -> None:
        self.seen: set[Any] = set()

    def process(self, ordinal: int, item: Any) -> list[Any]:
        if item in self.seen:
            return []
        self.seen.add(item)
        return [item]


class ForgetfulDedup(Dedup):
    def save_to_snapshot(self) -> bool:
        return True


class WrongKeyDedup(Dedup):
    """Input partitioned by pair[0], state saved under the whole pair."""


# ---- strategies ---------------------------------------------------------------------------------


@FAST
@given(js.watermarked_streams(st.integers(), idle=True))
def test_watermarked_streams_rise(stream: list[Any]) -> None:
    stamps = [x.timestamp for x in stream if isinstance(x, Watermark) and x != IDLE_MESSAGE]
    assert stamps == sorted(set(stamps))


@FAST
@given(js.multi_ordinal_inputs([js.item_streams(max_size=5), js.watermarked_streams(max_size=5)]))
def test_multi_ordinal_inputs_have_a_priority_per_ordinal(multi: js.MultiInput) -> None:
    assert len(multi.inputs) == len(multi.priorities) == 2
    assert all(0 <= p <= 2 for p in multi.priorities)


@FAST
@given(js.snapshot_points(max_point=10))
def test_snapshot_points_are_small_positive_sets(points: frozenset[int]) -> None:
    assert points and all(1 <= p <= 10 for p in points)


# ---- @given against a model function ------------------------------------------------------------


@FAST
@given(js.watermarked_streams(st.integers(0, 6), max_size=12), js.snapshot_points(max_point=15))
def test_dedup_against_its_model(items: list[Any], points: frozenset[int]) -> None:
    js.check_against_model(
        Dedup,
        dedup_model,
        items,
        snapshot_points=points,
        ignore_watermarks=True,
        configure=lambda v: v.partitioned_input(lambda x: x),
    )


@FAST
@given(js.multi_ordinal_inputs([js.item_streams(st.sampled_from("abc"), max_size=6)] * 2))
def test_count_by_key_against_its_model_on_two_ordinals(multi: js.MultiInput) -> None:
    def model(*inputs: list[Any]) -> list[Any]:
        counts: dict[str, int] = {}
        for items in inputs:
            for item in items:
                counts[item] = counts.get(item, 0) + 1
        return sorted(counts.items())

    js.check_against_model(
        CountByKey,
        model,
        *multi.inputs,
        priorities=multi.priorities,
        any_order=True,
        configure=lambda v: v.partitioned_input(lambda x: x),
    )


def test_a_model_check_finds_a_processor_that_loses_state() -> None:
    @FAST
    @given(js.item_streams(st.integers(0, 3), max_size=8))
    def check(items: list[Any]) -> None:
        js.check_against_model(
            ForgetfulDedup, dedup_model, items, configure=lambda v: v.disable_redistribution()
        )

    with pytest.raises(ProcessorVerificationError) as info:
        check()
    assert info.value.kind is FailureKind.LOSES_STATE_ON_RESTORE


# ---- the state machine --------------------------------------------------------------------------

MACHINE_SETTINGS = settings(max_examples=30, stateful_step_count=12, deadline=None)
#: Finding a bug is quick, shrinking it slow: the tests that expect a failure skip shrinking.
FIND = settings(MACHINE_SETTINGS, max_examples=300, phases=[Phase.explicit, Phase.reuse, Phase.generate])


def test_a_correct_processor_passes_the_state_machine() -> None:
    machine = processor_state_machine(Dedup, DedupModel, st.integers(0, 5), partition_key=lambda x: x)
    run_state_machine_as_test(machine, settings=MACHINE_SETTINGS)


def test_the_state_machine_with_two_ordinals_and_a_completing_model() -> None:
    class CountModel:
        def __init__(self) -> None:
            self.counts: dict[str, int] = {}

        def process(self, ordinal: int, item: str) -> list[Any]:
            self.counts[item] = self.counts.get(item, 0) + 1
            return []

        def complete(self) -> list[Any]:
            return sorted(self.counts.items())

    machine = processor_state_machine(
        CountByKey, CountModel, st.sampled_from("abc"), ordinals=2, any_order=True
    )
    run_state_machine_as_test(machine, settings=MACHINE_SETTINGS)


def test_the_state_machine_finds_lost_state() -> None:
    machine = processor_state_machine(ForgetfulDedup, DedupModel, st.integers(0, 3), watermarks=False)
    with pytest.raises(ProcessorVerificationError) as info:
        run_state_machine_as_test(machine, settings=FIND)
    assert info.value.kind is FailureKind.LOSES_STATE_ON_RESTORE
    assert "output differs from the model" in str(info.value)


def test_the_state_machine_finds_mishandled_redistribution() -> None:
    machine = processor_state_machine(
        WrongKeyDedup,
        DedupModel,
        st.tuples(st.sampled_from("abcdef"), st.integers(0, 1)),
        partition_key=lambda pair: pair[0],
        watermarks=False,
    )
    with pytest.raises(ProcessorVerificationError) as info:
        run_state_machine_as_test(machine, settings=FIND)
    assert info.value.kind is FailureKind.MISHANDLES_REDISTRIBUTION


class UnnamingDedup(Dedup):
    """Says it names the keys it changed, and names none: an incremental snapshot loses them."""

    def changed_snapshot_keys(self) -> set[Any]:
        return set()


def test_the_state_machine_with_incremental_snapshots() -> None:
    machine = processor_state_machine(
        P.distinct(), DedupModel, st.integers(0, 5), watermarks=False, incremental=True
    )
    run_state_machine_as_test(machine, settings=MACHINE_SETTINGS)
    broken = processor_state_machine(
        UnnamingDedup, DedupModel, st.integers(0, 3), watermarks=False, incremental=True
    )
    with pytest.raises(ProcessorVerificationError) as info:
        run_state_machine_as_test(broken, settings=FIND)
    assert info.value.kind is FailureKind.LOSES_STATE_ON_RESTORE
