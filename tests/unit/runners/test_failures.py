"""`describe_failure`: one line that says why a Spark job failed, from the texts Spark gives."""

from __future__ import annotations

import pytest

from jetspark.core.errors import JobFailedError
from jetspark.runners.spark.failures import describe_failure, encode_failure

CALLING = "An error occurred while calling z:org.apache.spark.api.python.PythonRDD.collectAndServe.\n"
LOST = (
    ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 1 in stage 7.0 failed 1 "
    "times, most recent failure: Lost task 1.0 in stage 7.0 (TID 31) (localhost executor driver): "
)


def test_a_killed_python_worker_is_named_with_its_stage_task_and_attempt() -> None:
    error = Exception(
        CALLING + LOST + "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed). "
        "Consider setting ...\n\tat org.apache.spark.api.python.BasePythonRunner...\nCaused by: java.io.EOFException"
    )
    assert describe_failure(error) == (
        "Python worker died (exited unexpectedly: killed, or os._exit) "
        "(Spark stage 7, task 1, attempt 0; localhost executor driver)"
    )


@pytest.mark.parametrize("exception", ["Stream closed", "Broken pipe"])
def test_a_stream_closed_under_a_python_task_names_the_dead_worker(exception: str) -> None:
    """Killing a worker with pyspark.daemon can reach the JVM as its reader's or writer's
    IOException (a "Broken pipe" failed tests/spark/test_driver_kills.py once in CI)."""
    error = Exception(
        CALLING + LOST + f"java.io.IOException: {exception}\n\tat java.io.BufferedOutputStream..."
    )
    assert describe_failure(error) == (
        f"Python worker's stream closed (the worker or pyspark.daemon died: {exception}) "
        "(Spark stage 7, task 1, attempt 0; localhost executor driver)"
    )


def test_a_daemon_that_died_starting_is_named_though_spark_passes_the_failure_unwrapped() -> None:
    """Spark 4 raises this task failure without "Lost task ...": the SparkException's own line
    says what happened (the kill probe of session 13 found the bare py4j header logged)."""
    error = Exception(
        CALLING + ": org.apache.spark.SparkException: EOFException occurred while reading the port number "
        "from pyspark.daemon's stdout.\n\tat org.apache.spark.api.python.PythonWorkerFactory..."
    )
    assert describe_failure(error) == (
        "Python worker could not start (pyspark.daemon died: EOFException occurred while reading the "
        "port number from pyspark.daemon's stdout.)"
    )
    other = Exception(
        CALLING + ": org.apache.spark.SparkException: Job 3 cancelled part of cancelled job group x\n"
    )
    assert describe_failure(other) == "SparkException: Job 3 cancelled part of cancelled job group x"


def test_a_lost_executor_is_named() -> None:
    error = Exception(
        CALLING + LOST + "ExecutorLostFailure (executor 1 exited caused by one of the running tasks)"
    )
    assert describe_failure(error).startswith(
        "executor lost (executor 1 exited caused by one of the running tasks"
    )


def test_an_exception_from_the_python_worker_is_its_last_traceback_line_not_the_header() -> None:
    error = Exception(
        "An exception was thrown from the Python worker:\nTraceback (most recent call last):\n"
        '  File "worker.py", line 4327, in invoke_udf\n    run_process()\n'
        '  File "job.py", line 10, in f\n    raise OSError(28, "No space left on device")\n'
        "OSError: [Errno 28] No space left on device\n"
    )
    assert describe_failure(error) == "OSError: [Errno 28] No space left on device"


def test_a_processors_exception_is_its_type_message_vertex_and_processor() -> None:
    cause = RuntimeError("injected at 1700")
    failed = JobFailedError("vertex 'fused' processor 3 failed", vertex="fused", processor_index=3)
    failed.__cause__ = cause
    carried = encode_failure(failed, None, None)
    error = Exception(CALLING + LOST + f"org.apache.spark.api.python.PythonException: {carried}")
    assert describe_failure(error) == (
        "RuntimeError: injected at 1700 in vertex 'fused', processor 3 "
        "(Spark stage 7, task 1, attempt 0; localhost executor driver)"
    )
