"""`KeyedState` marks every key a dict mutation changes, and saves what a snapshot needs."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark import KeyedState, keys_to_offer
from jetspark.core.keyed_state import DICT_ORDER_SHARE
from jetspark.core.outbox import Outbox
from jetspark.testing import verify_processor
from tests.keyed_tally import KeyedTally


class Saver:
    """What `save` uses of a processor: its outbox's `keys_to_save()` and the offers (the
    base `Outbox.offer_all_to_snapshot`, one by one); the offer accepts `room` entries per call
    of `save`, like a snapshot bucket that fills."""

    def __init__(self, keys_to_save: Any = None, room: int = 10**9) -> None:
        self.keys = keys_to_save
        self.room = room
        self.left = room
        self.offered: list[tuple[Any, Any]] = []
        self.outbox = self

    def keys_to_save(self) -> Any:
        return self.keys

    def try_emit_to_snapshot(self, key: Any, value: Any) -> bool:
        if self.left == 0:
            return False
        self.left -= 1
        self.offered.append((key, value))
        return True

    offer_to_snapshot = try_emit_to_snapshot
    offer_all_to_snapshot = Outbox.offer_all_to_snapshot

    def save_all(self, state: KeyedState[Any, Any]) -> int:
        """Calls `save` until it returns True; how many calls it took."""
        calls = 1
        while not state.save(self):
            self.left = self.room
            calls += 1
        return calls


def tracking(items: dict[str, int]) -> KeyedState[str, int]:
    """A state holding `items` whose tracking has started (as after a save)."""
    state: KeyedState[str, int] = KeyedState(items)
    Saver().save_all(state)
    assert state.changed_keys() == set()
    return state


MUTATIONS: dict[str, tuple[Callable[[KeyedState[str, int]], Any], set[str]]] = {
    "set": (lambda s: s.__setitem__("a", 9), {"a"}),
    "set a new key": (lambda s: s.__setitem__("z", 1), {"z"}),
    "del": (lambda s: s.__delitem__("b"), {"b"}),
    "pop": (lambda s: s.pop("a"), {"a"}),
    "pop a missing key with a default": (lambda s: s.pop("q", 0), set()),
    "popitem": (lambda s: s.popitem(), {"b"}),
    "setdefault (the value may change in place)": (lambda s: s.setdefault("a", 0), {"a"}),
    "update from a mapping and keywords": (lambda s: s.update({"a": 3}, c=4), {"a", "c"}),
    "update from pairs": (lambda s: s.update([("b", 7)]), {"b"}),
    "|=": (lambda s: s.__ior__({"d": 1}), {"d"}),
    "clear": (lambda s: s.clear(), {"a", "b"}),
    "touch": (lambda s: s.touch("a"), {"a"}),
    "get and contains change nothing": (lambda s: (s.get("a"), "b" in s, s["a"]), set()),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_every_dict_mutation_marks_the_keys_it_changes(name: str) -> None:
    mutate, changed = MUTATIONS[name]
    state = tracking({"a": 1, "b": 2})
    mutate(state)
    assert state.changed_keys() == changed


def test_before_the_first_save_or_restore_every_key_counts_as_changed() -> None:
    state: KeyedState[str, int] = KeyedState(a=1)
    state["b"] = 2
    assert state.changed_keys() == {"a", "b"}
    restored: KeyedState[str, int] = KeyedState()
    restored.restore("a", 1)
    restored["b"] = 2
    assert restored.changed_keys() == {"b"}, "a restored entry is in the snapshot already"


def test_a_full_save_offers_every_entry_and_an_incremental_one_only_the_named_keys_it_holds() -> None:
    state = tracking({"a": 1, "b": 2, "c": 3})
    full = Saver(keys_to_save=None)
    full.save_all(state)
    assert sorted(full.offered) == [("a", 1), ("b", 2), ("c", 3)]
    del state["c"]
    state["a"] = 10
    incremental = Saver(keys_to_save=state.changed_keys())
    incremental.save_all(state)
    assert incremental.offered == [("a", 10)], "a removed key is not offered (it becomes a deletion)"
    assert state.changed_keys() == set()


def test_a_save_stopped_by_a_full_bucket_goes_on_where_it_stopped() -> None:
    state: KeyedState[int, int] = KeyedState((k, k * k) for k in range(10))
    saver = Saver(room=3)
    assert saver.save_all(state) == 4
    assert sorted(saver.offered) == [(k, k * k) for k in range(10)], "each entry offered once"


def test_a_large_save_offers_a_chunk_a_call_so_that_a_cooperative_call_stays_short() -> None:
    state: KeyedState[int, int] = KeyedState((k, k) for k in range(70_000))
    saver = Saver()  # takes everything offered
    assert saver.save_all(state) == 3  # 32,768 entries a call
    assert sorted(saver.offered) == [(k, k) for k in range(70_000)]


def test_it_pickles_with_its_entries_and_tracking() -> None:
    state = tracking({"a": 1})
    state["b"] = 2
    copy = pickle.loads(pickle.dumps(state))
    assert type(copy) is KeyedState and copy == {"a": 1, "b": 2}
    assert copy.changed_keys() == {"b"}
    copy["c"] = 3
    assert copy.changed_keys() == {"b", "c"} and state.changed_keys() == {"b"}


def test_a_users_processor_on_it_passes_the_test_kit_with_incremental_snapshots() -> None:
    items = [(0, "a"), (1, "b"), (2, "a"), (3, "a"), (5, "b"), (6, "c")]
    expected = [("a", 1), ("b", 1), ("a", 2), ("a", 1), ("b", 2), ("c", 1)]
    (
        verify_processor(KeyedTally)
        .input(items)
        .partitioned_input(lambda item: item[1])
        .expect_output(expected, any_order=True)
    )


# ---- keys_to_offer: what a save offers, and in which order ---------------------------------------


def test_keys_to_offer_gives_every_held_key_in_a_full_save_and_the_changed_ones_held_in_an_incremental() -> (
    None
):
    held = {"a": 1, "b": 2, "c": 3}
    assert keys_to_offer(held, None) == ["a", "b", "c"]
    assert sorted(keys_to_offer(held, {"a", "c", "gone"})) == ["a", "c"], "a removed key is left out"
    assert keys_to_offer(held, set()) == []
    assert sorted(keys_to_offer(held, ["c", "gone"])) == ["c"], "any collection of changed keys"
    assert sorted(keys_to_offer({"x", "y"}, {"y", "z"})) == ["y"], "a set as the state"


def test_keys_to_offer_walks_the_state_in_its_order_when_many_keys_changed() -> None:
    # A set iterates in hash order; the dict's insertion order reads keys and values where they
    # lie in memory (much faster at scale). Which walk happened shows in the order offered.
    held = {f"key-{i}": i for i in reversed(range(2_000))}
    many = set(list(held)[: len(held) // DICT_ORDER_SHARE + 1])
    assert keys_to_offer(held, many) == [key for key in held if key in many]
    few = set(list(held)[:5])
    assert keys_to_offer(held, few) == list(few), "few changed keys: only they are visited"


@given(
    held=st.dictionaries(st.integers(-50, 50), st.integers(), max_size=60),
    only=st.one_of(st.none(), st.sets(st.integers(-60, 60), max_size=80)),
)
def test_keys_to_offer_is_the_held_changed_keys_each_once(
    held: dict[int, int], only: set[int] | None
) -> None:
    offered = keys_to_offer(held, only)
    assert len(offered) == len(set(offered))
    assert set(offered) == (set(held) if only is None else set(held) & only)


def test_an_incremental_save_of_many_changed_keys_offers_them_in_the_states_order() -> None:
    state = tracking({f"k{i}": i for i in reversed(range(100))})
    for key in list(state)[::2]:
        state[key] += 1
    saver = Saver(keys_to_save=state.changed_keys())
    saver.save_all(state)
    assert [key for key, _ in saver.offered] == [key for key in state if key in set(list(state)[::2])]
