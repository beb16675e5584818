"""Jet's `JobMetrics_StressTest` (hazelcast-jet-core, `com.hazelcast.jet.core.metrics`), ported:
reading a job's metrics while it is restarted (or suspended and resumed) over and over.

Jet's job is one vertex of `IncrementingProcessor`s (one per core), whose static probes
`initCount` and `completeCount` count `init` and `complete()` calls over all processors and all
executions; every processor reports the same static values. One thread restarts the job 10 times
(or suspends and resumes it 10 times); another reads the job's metrics meanwhile: the sums over
the processors never decrease (a reading that does not hold every processor's value is skipped),
and at the end the summed `initCount` is `(RESTART_COUNT + 1) * TOTAL_PROCESSORS^2`.

Here: the local runner with one member (Jet's `createJetMember()`), local parallelism 4 (Jet's
core count). Jet's static probes are `custom_metrics()` returning the module's counters, summed
per vertex by `job.metrics()` as Jet's sum over the measurements; each processor also reports
`reporting = 1`, whose sum is Jet's measurement count (`initCountMeasurements.size()`). Jet
sleeps 1.2 s after each restart (its metrics collection interval); jetspark's metrics are read
from the running processors, so the restarting thread waits instead until the new execution's
processors were all initialized (a condition the processors notify), and the job is RUNNING
(Jet's `assertTrueEventually(RUNNING)`). Jet's final `assertTrueEventually` is a check once the
threads are done. Each test is named after the Jet case it ports.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from jetspark import DAG, AbstractProcessor, JobCancelledError, JobConfig, ProcessorContext
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner

RESTART_COUNT = 10
TOTAL_PROCESSORS = 4
TIMEOUT = 60


class Counts:
    def __init__(self) -> None:
        self.changed = threading.Condition()
        self.init_count = 0
        self.complete_count = 0

    def inited(self) -> None:
        with self.changed:
            self.init_count += 1
            self.changed.notify_all()

    def wait_for_inits(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.init_count >= count, TIMEOUT), self.init_count


counts = Counts()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    global counts
    counts = Counts()


class IncrementingProcessor(AbstractProcessor):
    def init_processor(self, context: ProcessorContext) -> None:
        counts.inited()

    def complete(self) -> bool:
        counts.complete_count += 1  # only the job's threads write it; a lost update is harmless
        return False

    def custom_metrics(self) -> dict[str, int]:
        return {"initCount": counts.init_count, "completeCount": counts.complete_count, "reporting": 1}


class ObtainMetricsThread(threading.Thread):
    def __init__(self, job: LocalJob) -> None:
        super().__init__(name="obtain-metrics")
        self.job = job
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            previous_init = previous_complete = 0
            while not self.stop.is_set():
                figures = self.job.metrics().get("p", {})
                if figures.get("reporting") != TOTAL_PROCESSORS:
                    continue
                init_sum, complete_sum = figures["initCount"], figures["completeCount"]
                assert init_sum >= previous_init, (
                    f"Metrics value should be increasing, current: {init_sum}, previous: {previous_init}"
                )
                previous_init = init_sum
                assert complete_sum >= previous_complete, (
                    f"Metrics value should be increasing, current: {complete_sum}, previous: {previous_complete}"
                )
                previous_complete = complete_sum
        except BaseException as error:
            self.error = error


def running_again(job: LocalJob, executions: int) -> None:
    counts.wait_for_inits(executions * TOTAL_PROCESSORS)
    assert job.status is JobStatus.RUNNING, job.error


def restart(job: LocalJob, executions: int) -> None:
    """Jet's `JobRestartThread`, one round."""
    job.restart()
    running_again(job, executions)


def suspend_resume(job: LocalJob, executions: int) -> None:
    """Jet's `JobSuspendResumeThread`, one round."""
    job.suspend(TIMEOUT)
    assert job.status is JobStatus.SUSPENDED
    assert job.resume() is job
    running_again(job, executions)


def stress_test(action: Callable[[LocalJob, int], None]) -> None:
    dag = DAG()
    dag.new_vertex("p", IncrementingProcessor)
    job = LocalRunner(1).submit(dag, JobConfig(default_local_parallelism=TOTAL_PROCESSORS))
    try:
        running_again(job, 1)
        errors: list[BaseException] = []

        def restarts() -> None:
            try:
                for round_ in range(RESTART_COUNT):
                    action(job, round_ + 2)
            except BaseException as error:
                errors.append(error)

        obtain = ObtainMetricsThread(job)
        restarter = threading.Thread(target=restarts, name="restarts")
        restarter.start()
        obtain.start()
        restarter.join(TIMEOUT)
        obtain.stop.set()
        obtain.join(TIMEOUT)
        if errors:
            raise errors[0]
        if obtain.error is not None:
            raise obtain.error

        figures = job.metrics()["p"]
        assert figures["reporting"] == TOTAL_PROCESSORS
        assert figures["initCount"] == (RESTART_COUNT + 1) * TOTAL_PROCESSORS * TOTAL_PROCESSORS
    finally:
        job.cancel()
        with pytest.raises(JobCancelledError):
            job.join(TIMEOUT)


def test_JobMetrics_StressTest__restart_stressTest() -> None:
    stress_test(restart)


def test_JobMetrics_StressTest__suspend_resume_stressTest() -> None:
    stress_test(suspend_resume)
