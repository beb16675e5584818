"""What the handles of Spark jobs share, batch (`runner.SparkJob`) or in epochs (`epochs.EpochJob`):
the session, the job group their Spark jobs run in, results and metrics as the driver received
them, Spark's view of the job (stages, UI links), and Spark errors read as the job's.

Neither kind inherits the other: each is its own way of running executions for the coordinator
(`runners.coordinator`), and this module imports neither.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.errors import JobFailedError
from jetspark.planning.pipeline import PreparedDag
from jetspark.planning.plan import ExecutionPlan
from jetspark.planning.stages import StagePlan
from jetspark.runners.job import Capabilities, JobHandle, JobStatus
from jetspark.runners.member import PENDING_FIGURES
from jetspark.runners.spark.adaptive import StageDecision
from jetspark.runners.spark.failures import decode_failure


class SparkHandle(JobHandle):
    """Base of the Spark runner's job handles: `result`, `metrics`, `explain`, `dataframe`,
    `spark_stages`, `spark_ui_links`."""

    runner = "spark"
    plan: ExecutionPlan  # planned at submit
    dag: DAG
    config: JobConfig
    member_count: int

    def __init__(
        self,
        spark: Any,
        prepared: PreparedDag,
        plan: ExecutionPlan,
        max_restarts: int = 0,
        backoff: float = 0.5,
    ) -> None:
        super().__init__()
        self.spark = spark
        #: The planned DAG (driver only: its meta suppliers hold RDDs, DataFrames, sinks' targets).
        self.prepared = prepared
        self.dag = prepared.dag
        self.config = prepared.config
        self.plan = plan
        self.job_id = plan.job_id
        self.member_count = plan.member_count
        self.name = self.config.name or f"job-{self.job_id}"
        self.group = f"jetspark-{self.job_id}"
        self.max_restarts = max_restarts
        self.backoff = backoff
        self._results: dict[str, list[Any]] = {}
        self._metrics: dict[str, dict[str, int]] = {}
        self._status: dict[str, dict[str, int]] = {}
        self._dataframes: dict[str, Any] = {}
        self._thread: threading.Thread | None = None
        #: Adaptive parallelism: what was decided for each stage after a shuffle (bytes per
        #: subpartition and each task's range), in stage order.
        self.adaptive_decisions: list[StageDecision] = []
        #: The task count of each stage as the runner built it (adaptive parallelism decides it
        #: per stage); empty before, and for a job in epochs (one task per live member).
        self.stage_tasks: dict[int, int] = {}

    @property
    def stages(self) -> StagePlan:
        """The job's stages, as planned (`ExecutionPlan.stages`)."""
        return self.plan.stages

    def capabilities(self) -> Capabilities:
        return Capabilities(live_metrics=True)

    def start(self) -> SparkHandle:
        from pyspark import InheritableThread

        self.status = JobStatus.RUNNING
        self._thread = InheritableThread(target=self._run, name=f"jetspark {self.name}", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        raise NotImplementedError

    def _group_running(self, sc: Any) -> bool:
        tracker = sc.statusTracker()
        return any(
            (info := tracker.getJobInfo(job_id)) is not None and info.status == "RUNNING"
            for job_id in tracker.getJobIdsForGroup(self.group)
        )

    def _wait_for_tasks_to_end(self, sc: Any, timeout: float) -> bool:
        """Wait until no task of the job's Spark jobs runs any more (a cancelled job's tasks end
        only once their Python workers stopped or were killed); False after `timeout` seconds."""
        tracker = sc.statusTracker()
        deadline = time.monotonic() + timeout
        while True:
            active = 0
            for job_id in tracker.getJobIdsForGroup(self.group):
                info = tracker.getJobInfo(job_id)
                for stage_id in info.stageIds if info is not None else ():
                    stage = tracker.getStageInfo(stage_id)
                    active += stage.numActiveTasks if stage is not None else 0
            if active == 0:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)  # Spark's status tracker offers no wait

    def _translate(self, failure: BaseException) -> BaseException:
        """A Spark error as the job's: the task's own error where it carries one."""
        if isinstance(failure, JobFailedError):
            return failure
        decoded = decode_failure(failure)
        if decoded is not None:
            return decoded
        summary = str(failure).strip().splitlines()
        first = summary[0] if summary else type(failure).__name__
        error = JobFailedError(f"job {self.name!r}: the Spark job failed: {first}")
        error.__cause__ = failure
        return error

    # ---- results --------------------------------------------------------------------------

    def explain(self) -> str:
        """The job's plan in words, stage by stage with each stage's task count."""
        from jetspark.planning.explain import explain_plan

        lines = [explain_plan(self.plan, self.plan.stages, self.stage_tasks)]
        for decision in self.adaptive_decisions:
            lines.append(
                f"adaptive: stage {decision.stage} on {len(decision.ranges)} task(s) for "
                f"{len(decision.sizes)} members, {sum(decision.sizes) + max(decision.broadcast_sizes, default=0):,} "
                f"bytes; member ranges {list(decision.ranges)}; task input bytes {list(decision.task_bytes)}"
            )
        return "\n".join(lines)

    def result(self, vertex: str) -> list[Any]:
        """Items a collecting sink vertex received."""
        self._known_vertex(vertex, self.prepared.names)
        return list(self._results.get(vertex, ()))

    def metrics(self) -> dict[str, dict[str, int]]:
        """Per vertex: items `received` into inboxes and `emitted` downstream, over all members;
        and the vertex's watermarks and pending counts at the end of its tasks (zero pending for a
        vertex pruned everywhere)."""
        out = {  # counts first, then what is pending: the local runner's order
            name: {**values, **{figure: values.get(figure, 0) for figure in PENDING_FIGURES}}
            for name, values in self._metrics.items()
        }
        for vertex, figures in self._status.items():
            out.setdefault(vertex, {}).update(figures)
        return out

    def spark_stages(self) -> list[dict[str, Any]]:
        """The Spark stages of the job's latest Spark job (a restart or an epoch is a new one), from
        Spark's status tracker: `stage_id`, `name`, `tasks`, `completed`, `active`, `failed`."""
        tracker = self.spark.sparkContext.statusTracker()
        job_ids = sorted(tracker.getJobIdsForGroup(self.group))
        if not job_ids:
            return []
        info = tracker.getJobInfo(job_ids[-1])
        stages = []
        for stage_id in sorted(info.stageIds) if info is not None else ():
            stage = tracker.getStageInfo(stage_id)
            if stage is None:  # skipped, or no longer retained
                continue
            stages.append(
                {
                    "stage_id": stage_id,
                    "name": stage.name,
                    "tasks": stage.numTasks,
                    "completed": stage.numCompletedTasks,
                    "active": stage.numActiveTasks,
                    "failed": stage.numFailedTasks,
                }
            )
        return stages

    def spark_ui_url(self) -> str | None:
        """The address of the session's Spark UI, None when it has none (`spark.ui.enabled`)."""
        url: str | None = self.spark.sparkContext.uiWebUrl
        return url or None

    def spark_ui_links(self) -> list[tuple[str, str]]:
        """(label, address) of each Spark job of this job in the Spark UI; none without a Spark UI."""
        base = self.spark_ui_url()
        if base is None:
            return []
        job_ids = sorted(self.spark.sparkContext.statusTracker().getJobIdsForGroup(self.group))
        return [(f"Spark job {i}", f"{base.rstrip('/')}/jobs/job/?id={i}") for i in job_ids]

    def dataframe(self, vertex: str, schema: Any = None) -> Any:
        """The DataFrame of a `write_dataframe` sink, or one built from any sink's collected items."""
        if vertex in self._dataframes and schema is None:
            return self._dataframes[vertex]
        return self.spark.createDataFrame(self.result(vertex), schema)
