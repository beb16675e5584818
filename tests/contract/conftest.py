"""Engine settings for the contract suite: every scenario runs under each of them (as Beam Prism
runs its scenarios under several engine settings). An inbox batch of 1 item and an outbox capacity
of 1 (batch size 1) exercise back-pressure and re-offers on every item; queues of 1 item make
every producer wait for its consumer; 3 members make every distributed edge carry items,
watermarks and barriers from several producers into one inbox.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import attrs
import pytest

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG, Vertex
from jetspark.core.edge import Edge
from jetspark.engine.outbox_impl import DEFAULT_BATCH_SIZE
from jetspark.runners.local import LocalJob, LocalRunner
from tests.contract.recording import Recorder

JOB_TIMEOUT = 30.0


@attrs.frozen
class EngineSettings:
    batch_size: int
    queue_size: int
    member_count: int

    @property
    def id(self) -> str:
        return f"batch{self.batch_size}-queue{self.queue_size}-members{self.member_count}"

    def runner(self) -> LocalRunner:
        return LocalRunner(self.member_count, self.batch_size)

    def edge(self, source: Vertex, destination: Vertex, from_ordinal: int = 0, to_ordinal: int = 0) -> Edge:
        """A distributed edge (so that with several members each consumer has several producers)
        with this setting's queue size."""
        return (
            Edge.from_(source, from_ordinal)
            .to(destination, to_ordinal)
            .distributed()
            .with_queue_size(self.queue_size)
        )

    def submit(self, dag: DAG, config: JobConfig | None = None) -> LocalJob:
        return self.runner().submit(dag, config)

    def run(self, dag: DAG, config: JobConfig | None = None) -> LocalJob:
        """Run to the end (a hang fails the test after JOB_TIMEOUT seconds)."""
        return self.runner().run(dag, config, timeout=JOB_TIMEOUT)


SETTINGS = [
    EngineSettings(batch, queue, members)
    for batch, queue, members in itertools.product((1, DEFAULT_BATCH_SIZE), (1, 1024), (1, 3))
]


@pytest.fixture(params=SETTINGS, ids=[s.id for s in SETTINGS])
def engine(request: pytest.FixtureRequest) -> EngineSettings:
    """Each engine setting in turn: batch size (outbox capacity per call) 1 or default, queue
    size 1 or default, 1 or 3 members."""
    setting: EngineSettings = request.param
    return setting


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    yield Recorder()
