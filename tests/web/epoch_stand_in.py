"""A job in epochs as the web UI and the Prometheus exporter read it, without Spark: the test
drives its `EpochLedger` (epochs started, committed, aborted, tasks' live reports) itself."""

from __future__ import annotations

from jetspark.core.dag import DAG
from jetspark.runners.job import Capabilities, EpochStats, JobHandle, JobStatus
from jetspark.runners.spark.epoch_stats import EpochLedger


class EpochJobStandIn(JobHandle):
    """What the web UI reads of an `EpochJob`: `epoch_stats()`, `metrics()` (the committed
    figures, `committed`) and `current_metrics()` (committed plus the running epoch's counts)."""

    def __init__(
        self,
        name: str,
        ledger: EpochLedger,
        committed: dict[str, dict[str, int]] | None = None,
        dag: DAG | None = None,
        epochs: tuple[int, int] = (0, 0),
    ) -> None:
        super().__init__()  # the registries that observe handles see it now
        self.name = name
        self.dag = dag
        self.status = JobStatus.RUNNING
        self.epochs_committed, self.epochs_aborted = epochs
        self.ledger = ledger
        self.committed: dict[str, dict[str, int]] = committed if committed is not None else {}

    def metrics(self) -> dict[str, dict[str, int]]:
        return self.committed

    def epoch_stats(self) -> EpochStats:
        return EpochStats(
            self.epochs_committed, self.epochs_aborted, None, (), None, None, tuple(self.ledger.epochs())
        )

    def current_metrics(self) -> dict[str, dict[str, int]]:  # as EpochJob's: committed plus live
        out = {vertex: dict(figures) for vertex, figures in self.metrics().items()}
        for vertex, figures in self.ledger.counts().items():
            out.setdefault(vertex, {}).update(figures)
        return out

    def capabilities(self) -> Capabilities:
        return Capabilities(live_metrics=True)
