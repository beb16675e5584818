"""jetspark's processor test kit: the counterpart of Hazelcast Jet's `TestSupport`, and more.

`verify_processor(supplier)` runs a processor through the real engine (outbox, inbox, watermark
coalescing, snapshot rules) in several modes, and every mode must give the expected output:

- inbox batches of 1 item and of up to 1024; outbox capacity 1 (with `process` called again while
  the outbox is still full) and 1024;
- snapshots never, at every point without restore, and with restore into a fresh instance at every
  point and every other point (points: before the first item, whenever the inbox empties, after
  each `complete()` that returned False having made progress);
- restore into another number of processors, keyed entries routed to the owner of their key's
  partition and `BroadcastKey` entries to every processor (something Jet's kit cannot test).

Every call is checked: progress, cooperative call duration, nothing emitted from
`snapshot_commit_finish` nor after `complete()` returned True (also from `close`), the re-offer
rule; every processor made is closed. A failure raises
`ProcessorVerificationError` whose message starts with the failure class (`FailureKind`), then
names the mode and shows the input, the expected and actual output as a diff, and the last calls.

Hypothesis integration lives in `jetspark.testing.strategies` and `jetspark.testing.stateful`; the
pytest plugin (fixtures, DAG output helpers) in `jetspark.testing.pytest_plugin`. Neither is
imported here, so the kit works without Hypothesis installed.
"""

from jetspark.testing._builder import ProcessorVerifier as ProcessorVerifier
from jetspark.testing._builder import verify_processor as verify_processor
from jetspark.testing._context import Layout as Layout
from jetspark.testing._dag import assert_dag_output as assert_dag_output
from jetspark.testing._dag import run_dag as run_dag
from jetspark.testing._kinds import FailureKind as FailureKind
from jetspark.testing._kinds import ProcessorVerificationError as ProcessorVerificationError
from jetspark.testing._report import same_items_any_order as SAME_ITEMS_ANY_ORDER
from jetspark.testing._verify import Verification as Verification

__all__ = [
    "SAME_ITEMS_ANY_ORDER",
    "FailureKind",
    "Layout",
    "ProcessorVerificationError",
    "ProcessorVerifier",
    "Verification",
    "assert_dag_output",
    "run_dag",
    "verify_processor",
]
