"""A queue's two halves (`engine.queue`): an in-process queue is both; at a Spark stage boundary
the capture queue only sends and the replay queue only receives, and wiring gives each end the
half it uses."""

from __future__ import annotations

import pytest

from jetspark.core.abstract_processor import AbstractProcessor
from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG, Edge
from jetspark.core.processor import Processor
from jetspark.engine.queue import BoundedQueue, QueueReceiver, QueueSender
from jetspark.engine.snapshot import SnapshotContext
from jetspark.planning.pipeline import build_plan
from jetspark.processors import sinks, sources
from jetspark.runners.spark.shuffle_in import ShuffleReader
from jetspark.runners.spark.shuffle_out import CaptureQueue, TaskOutput
from jetspark.runners.wiring import wire


def test_an_in_process_queue_is_both_halves() -> None:
    queue = BoundedQueue(4, "q")
    assert isinstance(queue, QueueSender) and isinstance(queue, QueueReceiver)


def test_the_stage_boundary_queues_are_one_half_each() -> None:
    capture = CaptureQueue("c", 0, (0, 0), (1, 0), 1, 10, TaskOutput(), 4)
    replay = ShuffleReader(iter(())).replay_queue((0, (0, 0), (1, 0)), "r")
    assert isinstance(capture, QueueSender) and not isinstance(capture, QueueReceiver)
    assert isinstance(replay, QueueReceiver) and not isinstance(replay, QueueSender)
    assert not hasattr(capture, "take") and not hasattr(replay, "put_chunk")


def two_members_dag() -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", sources.from_iterable([1, 2, 3]))
    sink = dag.new_vertex("sink", sinks.noop())
    dag.edge(Edge.between(source, sink).distributed())
    return dag


def test_wiring_refuses_a_queue_that_cannot_receive_at_the_consumer() -> None:
    plan = build_plan(two_members_dag(), JobConfig(), 2, job_id="j")
    processors: dict[tuple[str, int, int], Processor] = {("sink", 0, 0): AbstractProcessor()}
    sending_only = CaptureQueue("c", 0, (1, 0), (0, 0), 1, 10, TaskOutput(), 4)
    with pytest.raises(AssertionError, match="cannot receive"):
        wire(plan, processors, SnapshotContext(1), None, {}, 16, lambda *_: sending_only)
