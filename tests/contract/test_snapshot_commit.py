"""Two-phase commit rules: what snapshot_commit_finish(success) is told, and that every processor gets
it exactly once for each snapshot it took part in, before close()."""

from __future__ import annotations

from jetspark.core.config import JobConfig
from jetspark.runners.job import JobStatus
from tests.contract.conftest import JOB_TIMEOUT, EngineSettings
from tests.contract.recording import Behaviour, Recorder
from tests.contract.scenarios import GUARANTEES, numbered, one_item_per_snapshot, source_map_sink, wait_for


@GUARANTEES
def test_snapshot_commit_finish_success_is_always_true_on_the_local_runner(
    engine: EngineSettings, recorder: Recorder, config: JobConfig
) -> None:
    """Rule (snapshotCommitFinish(success)): success is "true, if all members were successful in
    saveToSnapshot() and we're not doing Job.exportSnapshot()". The local runner keeps snapshots in
    memory and always commits them, so every processor is told True: for the regular snapshots,
    for the terminal snapshot of suspend(), and for those after resume()."""
    source = Behaviour(
        emit=numbered("a", 8),
        emit_gate=one_item_per_snapshot,
        complete_when=lambda p: p.generation > 0 and len(p.saves) >= 3,
    )
    job = engine.submit(source_map_sink(engine, recorder, Behaviour(forward=True), source=source), config)
    wait_for(lambda: job.snapshot_count >= 3, "3 snapshots taken")
    job.suspend(JOB_TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    recorder.generation = 1
    job.resume().join(JOB_TIMEOUT)
    for generation in (0, 1):
        for vertex in ("source", "map", "sink"):
            processors = recorder.processors(vertex, generation)
            assert processors
            for p in processors:
                calls = p.calls_of("snapshot_commit_finish")
                assert calls, f"generation {generation} {p.label}: no snapshot_commit_finish"
                assert all(c.args == (True,) for c in calls), (
                    f"generation {generation} {p.label}: {[c.args for c in calls]}"
                )


@GUARANTEES
def test_snapshot_commit_finish_once_per_snapshot_taken_part_in_and_before_close(
    engine: EngineSettings, recorder: Recorder, config: JobConfig
) -> None:
    """Rule (snapshotCommitFinish): Jet calls it for each snapshot the processor took part in (after
    its snapshotCommitPrepare), exactly once with a True result; "Once complete() returns true, this
    method can still be called to finish the snapshot that was started before this processor
    completed" — so a processor that completed before phase 2 of its last snapshot waits for it,
    and close() comes after that last snapshot_commit_finish."""
    source = Behaviour(emit=numbered("a", 3), complete_when=lambda p: len(p.saves) >= 2)
    slow_sink = Behaviour(false_times={"save_to_snapshot": 30})  # phase 1 ends well after the sources
    engine.run(
        source_map_sink(engine, recorder, Behaviour(forward=True), source=source, sink=slow_sink), config
    )
    completed_before_phase2 = 0
    for p in recorder.processors():
        calls = p.processing_calls()
        prepared = [i for i, c in enumerate(calls) if c.method == "snapshot_commit_prepare" and c.result]
        finished = [i for i, c in enumerate(calls) if c.method == "snapshot_commit_finish" and c.result]
        assert prepared, f"{p.label} took part in no snapshot"
        assert len(finished) == len(prepared), (
            f"{p.label}: took part in {len(prepared)} snapshots, snapshot_commit_finish returned True "
            f"{len(finished)} times"
        )
        for k, (prepare_at, finish_at) in enumerate(zip(prepared, finished, strict=True)):
            assert prepare_at < finish_at, f"{p.label}: snapshot {k} finished before it was prepared"
            if k + 1 < len(prepared):
                assert finish_at < prepared[k + 1], f"{p.label}: snapshot {k} finished after the next began"
        methods = p.methods()
        assert methods[-1] == "close", p.label
        last_finish = p.calls_of("snapshot_commit_finish")[-1]
        assert last_finish.seq < p.calls_of("close")[0].seq, f"{p.label} closed before its last commit finish"
        done_at = next(i for i, c in enumerate(calls) if c.method == "complete" and c.result)
        completed_before_phase2 += finished[-1] > done_at
    assert completed_before_phase2, "no processor completed before phase 2 of its last snapshot"
