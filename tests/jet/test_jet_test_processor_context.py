"""Jet's `TestProcessorContextTest` (hazelcast, `com.hazelcast.jet.core.test`), ported.

Jet's `TestProcessorContext` is the context its test kit gives a processor; jetspark's kit makes
its processor contexts with `jetspark.testing._context.processor_context` (the context every
processor of `verify_processor` gets). Jet sets the partition assignment by hand (the local member
`a0` owns partitions 0, 3 and 6); jetspark's assignment follows from the partition and member
counts (partition `p` belongs to member `p % M`, docs/architecture.md), so the port takes 7
partitions on 3 members, where member 0 owns 0, 3 and 6 as Jet's `a0` does. Jet's
`setLocalParallelism(n)` and `setLocalProcessorIndex(i)` are the layout's local parallelism and
the processor's local index. The test is named after the Jet case it ports.
"""

from __future__ import annotations

from jetspark import JobConfig
from jetspark.core.context import ProcessorContext
from jetspark.testing import Layout
from jetspark.testing._context import ContextSettings, processor_context

SETTINGS = ContextSettings(
    vertex_name="v", job_id="test", job_config=JobConfig(), partition_count=7, attributes={}
)
MEMBER_COUNT = 3
LOCAL_MEMBER = 0


def context(local_parallelism: int, local_index: int) -> ProcessorContext:
    return processor_context(
        SETTINGS, Layout(MEMBER_COUNT, local_parallelism), LOCAL_MEMBER, local_index, "test-1"
    )


def test_TestProcessorContextTest__test() -> None:
    assert list(context(1, 0).member_partitions) == [0, 3, 6]

    assert list(context(2, 0).processor_partitions) == [0, 6]
    assert list(context(2, 1).processor_partitions) == [3]

    assert list(context(3, 2).processor_partitions) == [6]

    assert list(context(4, 3).processor_partitions) == []
