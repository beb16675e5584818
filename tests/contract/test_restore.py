"""Restore rules: restore_from_snapshot entries, finish_snapshot_restore, and where entries go when
the job resumes with another parallelism or member count."""

from __future__ import annotations

import functools
import itertools
from typing import Any

import pytest

from jetspark.core import AbstractProcessor, JobConfig, ProcessingGuarantee
from jetspark.core.dag import DAG
from jetspark.core.errors import JobFailedError, ProcessorContractError
from jetspark.core.partitioner import default_partitioner
from jetspark.core.watermark import BroadcastKey
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.recording import Behaviour, Recorder, RecordingProcessor
from tests.contract.scenarios import (
    EXACTLY_ONCE,
    between_false_and_retry,
    numbered,
    source_map_sink,
)


def state_entries(p: RecordingProcessor, keyed: int = 12) -> list[tuple[Any, Any]]:
    """What each map processor saves: `keyed` keys of its own and one broadcast entry."""
    entries: list[tuple[Any, Any]] = [(("k", p.label, i), i * 10) for i in range(keyed)]
    entries.append((BroadcastKey(("b", p.label)), p.label))
    return entries


def suspended_pipeline(
    engine: EngineSettings, recorder: Recorder, middle: Behaviour, map_parallelism: int = 1
) -> tuple[LocalJob, DAG]:
    """source -> map -> sink, streaming until suspended; the sources end at once after the resume."""
    source = Behaviour(emit=numbered("a", 6), complete_when=lambda p: p.generation > 0)
    dag = source_map_sink(engine, recorder, middle, source=source, map_parallelism=map_parallelism)
    job = engine.submit(dag, EXACTLY_ONCE)
    job.suspend(JOB_TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    recorder.generation = 1
    return job, dag


def saved_entries(job: LocalJob, vertex: str) -> list[tuple[Any, Any]]:
    assert job.last_snapshot is not None
    return job.last_snapshot.entries(vertex)


def test_restore_from_snapshot_gets_key_value_entries_and_finish_snapshot_restore_follows(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (restoreFromSnapshot): "The type of items in the inbox is Map.Entry, key and value types are
    exactly as they were saved ... If this method returns with items still present in the inbox, it
    will be called again ... It is never called with an empty inbox. After all items are processed,
    finishSnapshotRestore() is called" (retried while False, before any other method)."""
    middle = Behaviour(
        forward=True, take=3, snapshot=state_entries, false_times={"finish_snapshot_restore": 2}
    )
    job, _ = suspended_pipeline(engine, recorder, middle)
    saved = saved_entries(job, "map")
    job.resume().join(JOB_TIMEOUT)
    restored: list[tuple[Any, Any]] = []
    for p in recorder.processors("map", generation=1):
        calls = [c for c in p.calls if c.method != "is_cooperative"]
        assert calls[0].method == "init"
        methods = [c.method for c in calls[1:]]
        first_other = next(
            i for i, m in enumerate(methods) if m not in ("restore_from_snapshot", "finish_snapshot_restore")
        )
        head = methods[:first_other]
        assert head[-3:] == ["finish_snapshot_restore"] * 3, f"{p.label}: {head}"
        assert "restore_from_snapshot" not in head[head.index("finish_snapshot_restore") :]
        assert [c.result for c in p.calls_of("finish_snapshot_restore")] == [False, False, True]
        assert between_false_and_retry(p, "finish_snapshot_restore") == []
        for call in p.calls_of("restore_from_snapshot"):
            assert call.inbox, f"{p.label}: restore_from_snapshot with an empty inbox"
            assert all(isinstance(entry, tuple) and len(entry) == 2 for entry in call.inbox)
        restore_calls = p.calls_of("restore_from_snapshot")
        for call, following in itertools.pairwise(restore_calls):
            if call.left:
                assert call.inbox is not None
                assert following.inbox == call.inbox[len(call.inbox) - call.left :], p.label
        restored.extend(p.restored)
    keyed = sorted((k, v) for k, v in saved if not isinstance(k, BroadcastKey))
    assert sorted((k, v) for k, v in restored if not isinstance(k, BroadcastKey)) == keyed
    assert len(keyed) == 12 * engine.member_count


def test_try_process_first_called_after_finish_snapshot_restore(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (tryProcess): "If the job restores state from a snapshot, this method is called for the
    first time after finishSnapshotRestore()"."""
    middle = Behaviour(forward=True, snapshot=state_entries, false_times={"finish_snapshot_restore": 1})
    job, _ = suspended_pipeline(engine, recorder, middle)
    job.resume().join(JOB_TIMEOUT)
    for p in recorder.processors(generation=1):
        methods = p.methods()
        if "try_process" not in methods:
            continue
        assert "finish_snapshot_restore" in methods[: methods.index("try_process")], p.label
        finished = max(i for i, m in enumerate(methods) if m == "finish_snapshot_restore")
        assert finished < methods.index("try_process"), p.label


@pytest.mark.parametrize(
    ("parallelism", "members_after"),
    [((1, 1), None), ((2, 3), None), ((3, 1), None), ((2, 2), 2), ((1, 2), 1), ((2, 1), 3)],
    ids=["same", "lp2to3", "lp3to1", "members-to-2", "lp1to2-members-to-1", "lp2to1-members-to-3"],
)
def test_keyed_entries_restored_to_partition_owner_and_broadcast_entries_to_all(
    engine: EngineSettings, recorder: Recorder, parallelism: tuple[int, int], members_after: int | None
) -> None:
    """Rule (restore redistribution): "each snapshot entry is routed by the partition of its key to the
    processor that now owns that partition; a BroadcastKey entry goes to every processor of the
    vertex" — also when the job resumes with another local parallelism or member count."""
    before, after = parallelism
    middle = Behaviour(forward=True, snapshot=state_entries)
    job, dag = suspended_pipeline(engine, recorder, middle, map_parallelism=before)
    saved = saved_entries(job, "map")
    assert len(saved) == 13 * before * engine.member_count
    dag.get_vertex("map").with_local_parallelism(after)
    job.resume(member_count=members_after).join(JOB_TIMEOUT)
    restored_maps = recorder.processors("map", generation=1)
    assert len(restored_maps) == after * (members_after or engine.member_count)
    broadcast = sorted(((k, v) for k, v in saved if isinstance(k, BroadcastKey)), key=repr)
    keyed = [(k, v) for k, v in saved if not isinstance(k, BroadcastKey)]
    seen: list[tuple[Any, Any]] = []
    for p in restored_maps:
        assert p.context is not None
        owned = set(p.context.processor_partitions)
        mine = [(k, v) for k, v in p.restored if not isinstance(k, BroadcastKey)]
        for key, _ in mine:
            partition = default_partitioner(key, p.context.partition_count)
            assert partition in owned, f"{p.label} got {key!r} of partition {partition}, not its own"
        seen.extend(mine)
        got_broadcast = sorted(((k, v) for k, v in p.restored if isinstance(k, BroadcastKey)), key=repr)
        assert got_broadcast == broadcast, f"{p.label} did not get every broadcast entry"
    assert sorted(seen, key=repr) == sorted(keyed, key=repr), "a keyed entry was lost or restored twice"


def test_items_emitted_from_restore_from_snapshot_and_finish_snapshot_restore_are_delivered(
    engine: EngineSettings, recorder: Recorder
) -> None:
    """Rule (restoreFromSnapshot): "This method may emit items to the outbox" (and so may
    finishSnapshotRestore, which "tried to offer to the outbox"): after suspend() / resume(), what a
    processor emits while restoring reaches the downstream processors, each item once, the items of
    restore_from_snapshot before those of finish_snapshot_restore."""
    middle = Behaviour(
        forward=True,
        snapshot=lambda p: [(("k", p.label, i), i) for i in range(4)],
        restore_emit=lambda p, entry: ("restored", p.label, *entry),
        finish_restore_emit=lambda p: [("finished", p.label)],
    )
    job, _ = suspended_pipeline(engine, recorder, middle)
    saved = saved_entries(job, "map")
    assert len(saved) == 4 * engine.member_count
    assert not [i for i in recorder.received("sink", generation=0) if i[0] in ("restored", "finished")]
    job.resume().join(JOB_TIMEOUT)
    maps = recorder.processors("map", generation=1)
    emitted_by_maps: list[tuple[Any, ...]] = [
        ("restored", p.label, k, v) for p in maps for k, v in p.restored
    ]
    emitted_by_maps += [("finished", p.label) for p in maps]
    received = [i for i in recorder.received("sink", generation=1) if i[0] in ("restored", "finished")]
    assert sorted(received, key=repr) == sorted(emitted_by_maps, key=repr)
    assert sorted(k for _, _, k, _ in (i for i in received if i[0] == "restored")) == sorted(
        k for k, _ in saved
    )
    for sink in recorder.processors("sink", generation=1):
        items = [item for _, item in sink.received]
        for p in maps:
            restored_at = [n for n, i in enumerate(items) if i[0] == "restored" and i[1] == p.label]
            finished_at = [n for n, i in enumerate(items) if i == ("finished", p.label)]
            if restored_at and finished_at:
                assert max(restored_at) < finished_at[0], f"{sink.label}: {p.label}'s items out of order"
    if engine.batch_size == 1:
        assert any(c.left for p in maps for c in p.calls_of("restore_from_snapshot")), (
            "the outbox never pushed back on restore_from_snapshot"
        )


class Label:
    """A hashable snapshot key that can be changed in place (equality and hash follow `parts`)."""

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Label) and self.parts == other.parts

    def __hash__(self) -> int:
        return hash(tuple(self.parts))

    def __repr__(self) -> str:
        return f"Label({self.parts!r})"


class KeySaver(AbstractProcessor):
    """A source that streams nothing until it was restored; `save_to_snapshot` offers the key that
    `make_key` gives, then changes the key (or the value) in place, as Jet allows right after the
    offer was accepted. Restored entries go to `restored`."""

    def __init__(self, make_key: Any, restored: list[tuple[Any, Any]]) -> None:
        self._make_key = make_key
        self._restored = restored
        self._was_restored = False

    def init_processor(self, context: Any) -> None:
        self.key = self._make_key(context.global_processor_index)
        self.value = ["value", context.global_processor_index]

    def complete(self) -> bool:
        return self._was_restored

    def save_to_snapshot(self) -> bool:
        if not self.try_emit_to_snapshot(self.key, self.value):
            return False
        if isinstance(self.key, Label):
            self.key.parts.append("changed after the offer")
        self.value.append("changed after the offer")
        return True

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self._restored.append((key, value))

    def finish_snapshot_restore(self) -> bool:
        self._was_restored = True
        return True


#: Only the terminal snapshot of suspend(): each processor offers its entry exactly once.
TERMINAL_ONLY = JobConfig(
    processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, snapshot_interval_millis=600_000
)


def test_snapshot_key_and_value_are_restored_as_they_were_when_offered() -> None:
    """Rule (saveToSnapshot, Jet's OutboxImpl.offerToSnapshot): the key and the value are serialized
    when the offer is accepted, "so the caller can modify them right after"; a key changed in place
    after `try_emit_to_snapshot` returned True comes back as it was offered (after suspend/resume,
    also onto another member count)."""
    restored: list[tuple[Any, Any]] = []
    dag = DAG()
    dag.new_vertex("saver", functools.partial(KeySaver, lambda index: Label(["key", index]), restored), 2)
    job = LocalRunner(2).submit(dag, TERMINAL_ONLY)
    job.suspend(JOB_TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    job.resume(member_count=3).join(JOB_TIMEOUT)
    assert sorted(restored, key=repr) == sorted(
        ((Label(["key", i]), ["value", i]) for i in range(4)), key=repr
    )


def test_unhashable_snapshot_key_is_refused_when_offered_naming_the_processor() -> None:
    """Rule (offerToSnapshot): a snapshot key is routed on restore by its partition, so it must be
    hashable like a dict key. A list key is a `ProcessorContractError` at the offer, naming the
    processor, not a bare TypeError in a later `resume()` that leaves the job unrestorable."""
    restored: list[tuple[Any, Any]] = []
    dag = DAG()
    dag.new_vertex("saver", functools.partial(KeySaver, lambda index: ["key", index], restored), 1)
    job = LocalRunner(1).submit(dag, TERMINAL_ONLY)
    with pytest.raises(ValueError, match="ended \\(failed\\) before it could be suspended"):
        job.suspend(JOB_TIMEOUT)
    assert job.status is JobStatus.FAILED
    error = job.error
    assert isinstance(error, JobFailedError) and error.vertex == "saver"
    assert isinstance(error.__cause__, ProcessorContractError)
    message = str(error.__cause__)
    assert "vertex 'saver' processor #0" in message and "snapshot key ['key', 0]" in message
    assert "unhashable type list" in message
    assert restored == []
