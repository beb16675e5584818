"""The checkpoint store: snapshots as checksummed files with a manifest and a LATEST pointer."""

from jetspark.checkpoint.entries import CorruptSnapshotError as CorruptSnapshotError
from jetspark.checkpoint.store import CheckpointStore as CheckpointStore
from jetspark.checkpoint.store import Manifest as Manifest
from jetspark.checkpoint.store import check_name as check_name
