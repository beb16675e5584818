"""`gc_paused`: no automatic collection inside the block, the collector as it was after it (also
when the block raises), and a tasklet's `save_to_snapshot` call runs inside one."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from jetspark.engine.gc_pause import gc_paused
from jetspark.engine.queue import BoundedQueue
from tests.unit.engine.test_tasklet import Counting, run_until_barrier, source_tasklet


@pytest.fixture(autouse=True)
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_is_off_inside_and_on_again_after() -> None:
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_is_on_again_after_the_block_raised() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


class SeesTheCollector(Counting):
    """Records, in each save, whether the collector is on."""

    def __init__(self) -> None:
        super().__init__(per_call=1)
        self.enabled_at_save: list[bool] = []

    def save_to_snapshot(self) -> bool:
        self.enabled_at_save.append(gc.isenabled())
        return super().save_to_snapshot()


def test_a_tasklet_saves_with_the_collector_paused_and_resumes_it() -> None:
    processor = SeesTheCollector()
    queue = BoundedQueue(4)
    tasklet, snapshots = source_tasklet(processor, queue, batch_size=2)
    tasklet.call()
    queue.take()
    snapshots.start(0)
    run_until_barrier(tasklet, queue)
    assert processor.enabled_at_save == [False]
    assert gc.isenabled()
