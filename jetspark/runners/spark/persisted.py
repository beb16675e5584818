"""A stage read by several later stages: computed once, in a Spark job of its own.

Each later stage reads such a stage through its own shuffle, and Spark runs the shuffles' map
stages as siblings, at the same time. Persisting the stage's RDD does not make Spark compute a
partition once: on one executor the block manager's lock makes the second reader wait for the
first one's copy, but two executors both compute a partition that neither has finished. A job in
epochs refuses a second run of a member's task (its claim marker), so the epoch aborted and ran
again with no fault at all; a batch job did the stage's work twice. Computing the persisted RDDs
first, upstream first, leaves the sibling stages only copies to read (from another executor's
block manager where needed): a lost copy is computed again, as any lost task is.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def compute_persisted(persisted: Sequence[Any]) -> None:
    """Compute and keep every partition of `persisted` (PySpark RDDs marked to persist, in stage
    order), one Spark job each, counted in the JVM: no Python worker reads the copies here."""
    for rdd in persisted:
        rdd._jrdd.count()
