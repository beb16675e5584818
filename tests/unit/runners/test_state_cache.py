"""The worker's state cache (`runners.spark.state_cache`) with explicit snapshot ids: it hands back
kept processors only for exactly the committed snapshot they took, and closes what it drops."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.processor import Processor
from jetspark.runners.spark import state_cache


class Counting(AbstractProcessor):
    def __init__(self) -> None:
        super().__init__()
        self.closed = 0

    def close(self) -> None:
        self.closed += 1


class Transactional(Counting):
    def snapshot_commit_finish(self, success: bool) -> bool:
        return True


class OptedOut(Counting):
    keep_state_in_worker = False


class OwnInit(Counting):
    def init(self, outbox: Any, context: Any) -> None:
        super().init(outbox, context)


class Plain(Processor):
    def try_process_watermark(self, watermark: Any) -> bool:
        return True


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    state_cache.clear()
    yield
    state_cache.clear()


def keep(snapshot_id: int, file: tuple[str, str] | None = ("v0001-m00000-a7.snap", "abc")) -> list[Counting]:
    processors = [Counting(), Counting()]
    kept = state_cache.Kept(list(processors), snapshot_id, file, member_count=2, partition_count=271)
    state_cache.put("job", "counts", 0, kept)
    return processors


def take(restore_id: int, file: tuple[str, str] | None = ("v0001-m00000-a7.snap", "abc"), **kw: Any) -> Any:
    args = {"member_count": 2, "partition_count": 271, **kw}
    return state_cache.take(
        "job", "counts", 0, restore_id, file, args["member_count"], args["partition_count"]
    )


def test_processors_kept_at_snapshot_e_come_back_when_the_epoch_restores_that_committed_file() -> None:
    processors = keep(5)
    assert take(5).processors == processors
    assert [p.closed for p in processors] == [0, 0]
    assert state_cache.size() == 0  # taken out: a task that fails does not leave them behind


def test_a_worker_that_ran_e_missed_e_plus_1_and_gets_e_plus_2_restores_from_the_store() -> None:
    processors = keep(5)  # this worker ran epoch 5
    # epoch 6 ran elsewhere and committed snapshot 6; epoch 7 restores from it
    assert take(6, ("v0001-m00000-a19.snap", "def")) is None
    assert [p.closed for p in processors] == [1, 1]  # dropped and closed, once
    assert state_cache.size() == 0
    assert take(5) is None  # nothing is left to hand out


def test_same_id_but_another_file_is_a_miss() -> None:
    """Epoch e aborted after this worker kept its processors; the rerun of e committed another
    file: the id matches, the file does not."""
    keep(5)
    assert take(5, ("v0001-m00000-a23.snap", "abc")) is None
    keep(5)
    assert take(5, ("v0001-m00000-a7.snap", "other-sha")) is None
    keep(5)
    assert take(5, None) is None


def test_another_member_count_or_partition_count_is_a_miss() -> None:
    keep(5)
    assert take(5, member_count=3) is None
    keep(5)
    assert take(5, partition_count=-1) is None


def test_nothing_written_never_hits() -> None:
    keep(5, file=None)
    assert take(5, None) is None


def test_evict_older_closes_the_jobs_older_entries_and_keeps_the_rest() -> None:
    old = keep(4)
    state_cache.put("job", "counts", 1, state_cache.Kept([Counting()], 6, None, 2, 271))
    state_cache.evict_older("job", 5)
    assert [p.closed for p in old] == [1, 1]
    assert state_cache.size() == 1


def test_putting_again_closes_what_was_kept_under_the_key() -> None:
    first = keep(4)
    keep(5)
    assert [p.closed for p in first] == [1, 1]


def test_only_abstract_processors_without_their_own_commit_or_init_are_keepable() -> None:
    assert state_cache.keepable(Counting())
    assert not state_cache.keepable(Transactional())
    assert not state_cache.keepable(OptedOut())
    assert not state_cache.keepable(OwnInit())
    assert not state_cache.keepable(Plain())


class Supplier:
    """A supplier that records when it is closed, against its processors' closes."""

    def __init__(self, processors: list[Counting]) -> None:
        self.processors = processors
        self.closed_after: list[list[int]] = []

    def close(self, error: BaseException | None) -> None:
        self.closed_after.append([p.closed for p in self.processors])


def test_processors_made_by_another_plan_are_a_miss_and_closed_before_their_supplier() -> None:
    """A job submitted again under its id (maybe new processor code) plans anew: what the old
    plan's processors kept is closed, then the supplier that made them, not handed out."""
    processors = [Counting(), Counting()]
    supplier = Supplier(processors)
    kept = state_cache.Kept(
        list(processors),
        5,
        ("f", "s"),
        2,
        271,
        execution_id="first",
        supplier=supplier,  # type: ignore[arg-type]
    )
    state_cache.put("job", "counts", 0, kept)
    assert state_cache.take("job", "counts", 0, 5, ("f", "s"), 2, 271, "second") is None
    assert [p.closed for p in processors] == [1, 1]
    assert supplier.closed_after == [[1, 1]], "the supplier is closed once, after its processors"
    state_cache.put(
        "job", "counts", 0, state_cache.Kept(list(processors), 5, ("f", "s"), 2, 271, execution_id="x")
    )
    assert state_cache.take("job", "counts", 0, 5, ("f", "s"), 2, 271, "x") is not None


@pytest.mark.parametrize(
    ("processor", "keepable"),
    [(Counting(), True), (type("Blocking", (Counting,), {"is_cooperative": lambda self: False})(), False)],
)
def test_a_processor_bound_to_its_thread_is_not_kept(processor: Processor, keepable: bool) -> None:
    """The next epoch may call a kept processor from another thread: a non-cooperative one (its
    own thread per execution) or one whose close() must run on its thread is restored instead."""
    assert state_cache.keepable(processor) is keepable
    sqlite_like = type("SqliteLike", (Counting,), {"close_is_cooperative": lambda self: True})()
    assert state_cache.keepable(sqlite_like) is False


def test_a_worker_that_spark_does_not_reuse_keeps_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHON_WORKER_FACTORY_SECRET", "x")  # as in a PySpark worker
    monkeypatch.delenv("SPARK_REUSE_WORKER", raising=False)  # spark.python.worker.reuse=false
    assert state_cache.worker_is_reused() is False
    monkeypatch.setenv("SPARK_REUSE_WORKER", "1")
    assert state_cache.worker_is_reused() is True
