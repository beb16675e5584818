"""Incremental snapshots of the built-in processors give what full snapshots give.

For each built-in with `changed_snapshot_keys` (and a user's processor on `KeyedState`), Hypothesis draws a sequence of item batches,
watermarks and snapshots (some followed by a restore into a fresh processor). The same sequence
runs three times through the test kit's harness (the real outbox, inbox and watermark coalescer):
never snapshotted; with full snapshots; and with incremental ones, where a snapshot after the
first writes only the entries of the keys the processor named, plus deletions, and a restore
applies the deltas on the last full snapshot (`checkpoint.deltas.merge`), as a Spark epoch does.
The three outputs must hold the same items, and the same watermarks in the same order.
"""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jetspark import processors as P
from jetspark.core import Watermark
from jetspark.core.suppliers import SupplierLike
from jetspark.testing._verify import driven_harness
from tests.keyed_tally import KeyedTally

ts_of = operator.itemgetter(0)
key_of = operator.itemgetter(1)
keys = st.sampled_from("abcdefg")


@attrs.frozen
class Case:
    """A built-in, what its items look like, and its inputs."""

    supplier: Callable[[], SupplierLike]
    items: st.SearchStrategy[Any]
    ordinals: int = 1
    #: Items of ordinal 1 come first, then the edge ends (a hash join's build side).
    build_first: bool = False


timed = st.tuples(st.integers(0, 60), keys)
CASES = {
    "sliding window, one stage": Case(
        lambda: P.aggregate_to_sliding_window(key_of, ts_of, P.WindowPolicy.sliding(12, 4), P.counting()),
        timed,
    ),
    "tumbling window, one stage, to_list": Case(
        lambda: P.aggregate_to_sliding_window(key_of, ts_of, P.WindowPolicy.tumbling(10), P.to_list()),
        timed,
    ),
    "window stage 2 (sliding)": Case(
        lambda: P.combine_to_sliding_window(P.WindowPolicy.sliding(12, 4), P.counting()),
        st.builds(P.FrameEntry, st.integers(0, 15).map(lambda n: n * 4), keys, st.integers(1, 3)),
    ),
    "session window": Case(lambda: P.aggregate_to_session_window(key_of, ts_of, 5, P.counting()), timed),
    "window join": Case(
        lambda: P.window_join(key_of, key_of, ts_of, ts_of, P.WindowPolicy.sliding(10, 5)),
        timed,
        ordinals=2,
    ),
    "hash join, partitioned build": Case(
        lambda: P.hash_join(key_of, key_of, build="partitioned", outer=True),
        timed,
        ordinals=2,
        build_first=True,
    ),
    "distinct": Case(lambda: P.distinct(key_of), timed),
    "global aggregation stage 2": Case(lambda: P.combine(P.counting()), st.integers(1, 3)),
    "aggregate_by_key stage 2": Case(
        lambda: P.combine_by_key(P.counting()), st.tuples(keys, st.integers(1, 3))
    ),
    "a user's processor on KeyedState": Case(lambda: KeyedTally, timed),
}


@st.composite
def scripts(draw: Any, case: Case) -> list[tuple[Any, ...]]:
    """Steps: ("items", ordinal, batch), ("wm", timestamp), ("snap", restore), ("end", ordinal)."""
    steps: list[tuple[Any, ...]] = []
    wm = -5
    ordinals = list(range(case.ordinals))
    if case.build_first:
        for _ in range(draw(st.integers(0, 4))):
            steps.append(("items", 1, draw(st.lists(case.items, min_size=1, max_size=4))))
            if draw(st.booleans()):
                steps.append(("snap", draw(st.booleans())))
        steps.append(("end", 1))
        ordinals = [0]
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["items", "items", "wm", "snap"]))
        if kind == "items":
            steps.append(
                ("items", draw(st.sampled_from(ordinals)), draw(st.lists(case.items, min_size=1, max_size=4)))
            )
        elif kind == "wm" and not case.build_first:
            wm += draw(st.integers(1, 12))
            steps.append(("wm", wm))
        elif kind == "snap":
            steps.append(("snap", draw(st.booleans())))
    return steps


def run(case: Case, script: list[tuple[Any, ...]], snapshots: bool, incremental: bool) -> list[Any]:
    """The output of `script` on a fresh processor; snapshot steps are skipped without `snapshots`."""
    harness = driven_harness(
        case.supplier(),
        ordinals=case.ordinals,
        inbox_size=3,
        outbox_capacity=2,
        snapshots=snapshots,
        incremental=incremental,
    )
    for step in script:
        if step[0] == "items":
            harness.feed(step[1], step[2])
        elif step[0] == "wm":
            for ordinal in range(case.ordinals):
                harness.feed_watermark(ordinal, Watermark(step[1]))
        elif step[0] == "end":
            harness.end_input(step[1])
        elif snapshots:
            harness.snapshot(restore=step[1])
    for ordinal in range(case.ordinals):
        if not (case.build_first and ordinal == 1):
            harness.end_input(ordinal)
    harness.complete()
    harness.close(None)
    return harness.outputs[0]


def shape(output: list[Any]) -> tuple[Counter[str], list[Any]]:
    """The items (in any order: a restored dict may list its keys in another order) and the
    watermarks in order."""
    return Counter(repr(x) for x in output if not isinstance(x, Watermark)), [
        x for x in output if isinstance(x, Watermark)
    ]


@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_restoring_full_plus_deltas_gives_what_a_full_restore_and_no_snapshot_give(
    name: str, data: st.DataObject
) -> None:
    case = CASES[name]
    script = data.draw(scripts(case), label="script")
    plain = shape(run(case, script, snapshots=False, incremental=False))
    full = shape(run(case, script, snapshots=True, incremental=False))
    incremental = shape(run(case, script, snapshots=True, incremental=True))
    assert full == plain, "full snapshots changed the output"
    assert incremental == full, "incremental snapshots gave another output than full ones"
