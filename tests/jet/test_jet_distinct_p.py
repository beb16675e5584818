"""Jet's `DistinctPTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.processor`), ported.

Jet removed the class in commit a8dfa3c8 (2018-05-30); the port follows its last version,
`hazelcast-jet-core/src/test/java/com/hazelcast/jet/impl/processor/DistinctPTest.java` at
a8dfa3c8^. Jet's `Processors.distinctP(identity())` is jetspark's `processors.distinct()` (whose
key function is the whole item by default), `TestSupport.verifyProcessor` is
`jetspark.testing.verify_processor`. Each test is named after the Jet case it ports.

Skipped: none.
"""

from __future__ import annotations

from jetspark import processors as P
from jetspark.core.partitioner import whole_item
from jetspark.testing import verify_processor


def test_DistinctPTest__smokeTest() -> None:
    verify_processor(P.distinct(whole_item)).disable_snapshots().input([1, 2, 3, 2, 1, 4]).expect_output(
        [1, 2, 3, 4]
    )


def test_DistinctPTest__testEmpty() -> None:
    verify_processor(P.distinct(whole_item)).disable_snapshots().input([]).expect_output([])
