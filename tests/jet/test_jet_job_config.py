"""Jet's `JobConfigTest` (hazelcast-jet-core, `com.hazelcast.jet.config`,
`hazelcast-jet-core/src/test/java/com/hazelcast/jet/config/JobConfigTest.java`), ported.

Jet's `setX(value)`/`getX()` are the attributes of jetspark's `JobConfig` (an attrs class whose
fields are checked on assignment too). Each test is named after the Jet case it ports.

Skipped, with no counterpart in jetspark's `JobConfig`:
- `when_enableSplitBrainProtection_thenReturnsEnabled`, `when_enableAutoScaling_thenReturnsEnabled`:
  no split-brain protection and no auto-scaling (a cluster of Jet members that come and go).
- `when_losslessRestartEnabled_then_openSourceMemberDoesNotStart`: no member config, no Hot Restart.
- `when_registerSerializerTwice_then_fails`, `when_registerSerializer`: no serializer
  registration (items and snapshot entries are pickled).
- `when_default_then_suspendOnFailureDisabled`, `when_suspendOnFailureSet_then_suspendOnFailureIsReturned`:
  no suspend-on-failure setting (a failed job fails).
"""

from __future__ import annotations

from jetspark.core.config import JobConfig, ProcessingGuarantee


def test_JobConfigTest__when_setName_thenReturnsName() -> None:
    # When
    config = JobConfig()
    name = "myJobName"
    config.name = name

    # Then
    assert config.name == name


def test_JobConfigTest__when_setProcessingGuarantee_thenReturnsProcessingGuarantee() -> None:
    # When
    config = JobConfig()
    config.processing_guarantee = ProcessingGuarantee.EXACTLY_ONCE

    # Then
    assert config.processing_guarantee is ProcessingGuarantee.EXACTLY_ONCE


def test_JobConfigTest__when_setSnapshotIntervalMillis_thenReturnsSnapshotIntervalMillis() -> None:
    # When
    config = JobConfig()
    config.snapshot_interval_millis = 50

    # Then
    assert config.snapshot_interval_millis == 50
