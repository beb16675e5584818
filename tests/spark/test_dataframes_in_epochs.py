"""DataFrames in jobs with a processing guarantee: a DataFrame read once as a bounded side input
(`runners.spark.side_inputs`) and each committed epoch appended to a Parquet table exactly once
(`write_epochs`, `runners.spark.epoch_tables`), across an epoch that fails and runs again."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.core import JobConfig, ProcessingGuarantee
from jetspark.runners.job import JobStatus
from jetspark.runners.spark import SparkRunner, from_dataframe, write_epochs
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

pytestmark = pytest.mark.spark

ORDERS = 3000
CUSTOMERS = 20


def config(
    root: Path, name: str, guarantee: ProcessingGuarantee = ProcessingGuarantee.EXACTLY_ONCE
) -> JobConfig:
    return JobConfig(
        name=name, processing_guarantee=guarantee, snapshot_interval_millis=200, checkpoint_root=str(root)
    )


def fail_once_at(order: int, marker: Path, how: str) -> Any:
    """A step that fails once, on `order`, in whichever Python worker meets it first: it raises,
    or ("exit") its Python worker dies at once, as if killed."""

    def step(item: Any) -> Any:
        if item[0] == order and not os.path.exists(marker):
            marker.touch()
            if how == "exit":
                os._exit(17)
            raise RuntimeError(f"injected at order {order}")
        return item

    return step


def enrich_dag(customers: Any, gate: Gate, table: str, marker: Path, how: str) -> DAG:
    """orders (gated stream) -> hash join with the customers DataFrame -> fail once -> table."""
    dag = DAG()
    orders = dag.new_vertex("orders", gated_stream(gate, count=ORDERS))
    names = dag.new_vertex("customers", from_dataframe(customers))
    join = dag.new_vertex(
        "join",
        P.hash_join(lambda n: f"c{n % CUSTOMERS}", lambda row: row.id, lambda n, row: (n, row.id, row.name)),
    )
    dag.edge(Edge.between(orders, join).distributed())
    dag.edge(Edge.from_(names).to(join, 1).broadcast().distributed().with_priority(-1))
    failing = dag.new_vertex("failing", P.map(fail_once_at(1700, marker, how)))
    sink = dag.new_vertex("table", write_epochs(table, schema="n long, id string, name string"))
    dag.edge(Edge.between(join, failing)).edge(Edge.between(failing, sink).distributed())
    return dag


@pytest.mark.parametrize(
    ("guarantee", "how"),
    [(ProcessingGuarantee.EXACTLY_ONCE, "raise"), (ProcessingGuarantee.AT_LEAST_ONCE, "exit")],
)
def test_a_stream_enriched_from_a_dataframe_lands_in_the_table_once_across_a_failed_epoch(
    spark: Any, tmp_path: Path, guarantee: ProcessingGuarantee, how: str
) -> None:
    """The customers are a Parquet-backed DataFrame; once the job is submitted its files are
    replaced by other names: the restored epochs must still join with the copy read at submit.
    The stream waits at a gate until an epoch committed, then fails once at order 1700 (an
    exception, or its Python worker killed)."""
    source = str(tmp_path / "customers")
    rows = [(f"c{i}", f"name{i}") for i in range(CUSTOMERS)]
    spark.createDataFrame(rows, "id string, name string").repartition(3).write.parquet(source)
    customers = spark.read.parquet(source)
    gate = Gate(tmp_path / "gate", hold_at=1500)
    marker = tmp_path / "failed"
    table = str(tmp_path / "table")
    runner = SparkRunner(spark, restart_backoff=0.05)
    job = runner.submit(
        enrich_dag(customers, gate, table, marker, how), config(tmp_path / "ck", "enrich", guarantee)
    )
    renamed = [(f"c{i}", f"other{i}") for i in range(CUSTOMERS)]
    spark.createDataFrame(renamed, "id string, name string").write.mode("overwrite").parquet(source)
    wait_until(lambda: job.epochs_committed >= 1 or job.status is not JobStatus.RUNNING, timeout=120)
    assert not marker.exists(), "the stream went past its gate"
    gate.open()
    job.join(180)
    assert marker.exists(), "the failure was never injected"
    if how == "raise":
        # the abort names the exception; or, when the worker that raised it also held the other
        # member's processors (a relayed run, `handoff`), PySpark ends that worker after its
        # task's failure and the relaying task's report of the lost holder may reach Spark first
        assert job.epochs_aborted == 1, job.abort_causes
        assert "injected at order 1700" in str(job.last_abort) or (
            "that holds this member's processors stopped mid-epoch" in str(job.last_abort)
        ), job.last_abort
    else:  # a dead worker may cost Spark's retry of the task an abort of its own
        assert job.epochs_aborted >= 1
    written = [tuple(r) for r in spark.read.parquet(table).collect()]
    counts = Counter(n for n, _, _ in written)
    assert sorted(counts) == list(range(ORDERS)), "an order is missing from the table"
    assert [n for n, c in counts.items() if c > 1] == [], "an order is in the table twice"
    assert all(name == f"name{n % CUSTOMERS}" and cid == f"c{n % CUSTOMERS}" for n, cid, name in written)
    assert job.result("table") == [], "the table's items are not kept on the driver"
    assert sorted(os.listdir(tmp_path / "ck" / "enrich")) == ["DRIVER", "JOB"], (
        "the DataFrame's copy outlived the job"
    )
    assert not any(name.startswith("_jetspark") for name in os.listdir(table)), "staging was left"


def test_write_epochs_is_refused_in_a_batch_job_naming_the_vertex(spark: Any, tmp_path: Path) -> None:
    dag = DAG()
    numbers = dag.new_vertex("numbers", P.from_iterable(range(3)))
    dag.edge(Edge.between(numbers, dag.new_vertex("table", write_epochs(str(tmp_path / "t")))))
    with pytest.raises(ValueError, match="vertex 'table': write_epochs writes each committed epoch"):
        SparkRunner(spark).submit(dag)


def test_a_dataframe_side_input_is_copied_under_the_job_id_and_the_copy_goes_when_the_job_completes(
    spark: Any, tmp_path: Path
) -> None:
    """The copy is written by submit (before any epoch runs) and deleted with the snapshots."""
    source = str(tmp_path / "customers")
    spark.createDataFrame([("c0", "first")], "id string, name string").write.parquet(source)
    dag = DAG()
    orders = dag.new_vertex("orders", gated_stream(Gate(tmp_path / "gate", hold_at=None), count=10))
    names = dag.new_vertex("customers", from_dataframe(spark.read.parquet(source)))
    join = dag.new_vertex(
        "join", P.hash_join(lambda n: "c0", lambda row: row.id, lambda n, row: (n, row.name))
    )
    dag.edge(Edge.between(orders, join))
    dag.edge(Edge.from_(names).to(join, 1).broadcast().distributed().with_priority(-1))
    dag.edge(Edge.between(join, dag.new_vertex("sink", P.collect())))
    job = SparkRunner(spark).submit(dag, config(tmp_path / "ck", "once"))
    copies = tmp_path / "ck" / "once" / "side-inputs"
    assert [p.name for p in copies.iterdir()] == [job.job_id], "the copy is kept under the job's id"
    job.join(120)
    assert sorted(job.result("sink")) == [(n, "first") for n in range(10)]
    assert not copies.exists()


def squares_dag(gate: Gate, table: str) -> DAG:
    dag = DAG()
    numbers = dag.new_vertex("numbers", gated_stream(gate, count=2000))
    squares = dag.new_vertex("squares", P.map(lambda n: (n, n * n)))
    sink = dag.new_vertex("table", write_epochs(table, schema="n long, square long"))
    dag.edge(Edge.between(numbers, squares)).edge(Edge.between(squares, sink).distributed())
    return dag


def assert_each_square_once(spark: Any, table: str) -> None:
    written = sorted(tuple(r) for r in spark.read.parquet(table).collect())
    assert written == [(n, n * n) for n in range(2000)]


def once(original: Any, error: Exception) -> Any:
    """`original`, except that its first call raises `error`."""
    calls = []

    def patched(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise error
        return original(*args, **kwargs)

    return patched


def test_an_epoch_whose_commit_fails_after_its_table_was_staged_is_not_published(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver fails to move LATEST after staging the epoch's DataFrame: the staged files go,
    the epoch runs again and the table holds each row once."""
    from jetspark.checkpoint import CheckpointStore
    from jetspark.runners.spark.epoch_tables import _Table

    monkeypatch.setattr(
        CheckpointStore, "commit", once(CheckpointStore.commit, OSError("injected: no LATEST"))
    )
    staged: list[int] = []
    stage = _Table.stage
    monkeypatch.setattr(
        _Table,
        "stage",
        lambda self, spark, epoch, items: (staged.append(epoch), stage(self, spark, epoch, items)),
    )
    table = str(tmp_path / "table")
    gate = Gate(tmp_path / "gate", hold_at=1000)
    job = SparkRunner(spark, restart_backoff=0.05).submit(
        squares_dag(gate, table), config(tmp_path / "ck", "sq")
    )
    wait_until(lambda: job.epochs_committed >= 1 or job.status is not JobStatus.RUNNING, timeout=120)
    gate.open()
    job.join(180)
    assert job.epochs_aborted == 1 and "injected: no LATEST" in str(job.last_abort)
    assert staged[0] == staged[1], "the epoch whose commit failed had staged no table"
    assert_each_square_once(spark, table)


def test_a_driver_dying_between_commit_and_publish_leaves_the_epoch_to_the_next_submit(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Publishing the committed epoch fails once: the job fails with the staged files in place;
    submitted again it publishes them before its next epoch, and the table holds each row once."""
    from jetspark.core.errors import JobFailedError
    from jetspark.runners.spark.epoch_tables import _Table

    monkeypatch.setattr(_Table, "publish", once(_Table.publish, OSError("injected: driver died")))
    table = str(tmp_path / "table")
    gate = Gate(tmp_path / "gate", hold_at=1000)
    runner = SparkRunner(spark, restart_backoff=0.05)
    with pytest.raises(JobFailedError, match=r"settling its write_epochs tables .* injected: driver died"):
        runner.submit(squares_dag(gate, table), config(tmp_path / "ck", "sq")).join(180)
    assert os.listdir(tmp_path / "table") == ["_jetspark_staging"], "an epoch was published before it"
    gate.open()
    job = runner.submit(squares_dag(gate, table), config(tmp_path / "ck", "sq")).join(180)
    assert job.status is JobStatus.COMPLETED
    assert_each_square_once(spark, table)


SLOW_ROWS = 12_000


def slow_pass(armed: Path, fired: Path) -> Any:
    """Passes each customer row after 2 ms, so the side input cannot be read to its end before
    about (SLOW_ROWS / 2 processors - 2 x 1024 queued) x 2 ms, well past a 200 ms epoch; once
    `armed` exists, fails once on the next row."""

    def step(row: Any) -> Any:
        time.sleep(0.002)
        if armed.exists() and not fired.exists():
            fired.touch()
            raise RuntimeError(f"injected at customer {row.id}")
        return (row.id, row.name)

    return step


def test_a_side_input_restored_mid_read_emits_each_row_once(spark: Any, tmp_path: Path) -> None:
    """The DataFrame feeds no priority edge, so the first epoch commits while its copy is half
    read; then an epoch fails, and the restore goes on from the committed row offsets: the
    committed epochs emitted every row once, and the table holds each row once. (Behind a
    priority edge, a hash join's build side, the first epoch lasts until the side input is read
    to its end: the join takes no snapshot before its build edge is done.)"""
    from jetspark.checkpoint import CheckpointStore

    rows = [(f"c{i}", f"name{i}") for i in range(SLOW_ROWS)]
    customers = spark.createDataFrame(rows, "id string, name string").repartition(2)
    armed, fired = tmp_path / "armed", tmp_path / "fired"
    table = str(tmp_path / "table")
    dag = DAG()
    names = dag.new_vertex("customers", from_dataframe(customers))
    slow = dag.new_vertex("slow", P.map(slow_pass(armed, fired)))
    sink = dag.new_vertex("table", write_epochs(table, schema="id string, name string"))
    dag.edge(Edge.between(names, slow)).edge(Edge.between(slow, sink).distributed())
    job = SparkRunner(spark, restart_backoff=0.05).submit(dag, config(tmp_path / "ck", "slow"))
    wait_until(lambda: job.epochs_committed >= 1 or job.status is not JobStatus.RUNNING, timeout=180)
    manifest = CheckpointStore(str(tmp_path / "ck"), "slow").latest()
    assert manifest is not None
    assert not any(v == "customers" for v, _ in manifest.extra["completed"]), (
        "the side input was read at once"
    )
    armed.touch()
    job.join(400)
    assert fired.exists(), "the failure was never injected"
    assert job.epochs_aborted >= 1
    assert job.metrics()["customers"]["emitted"] == SLOW_ROWS, "the side input replayed rows"
    assert sorted(tuple(r) for r in spark.read.parquet(table).collect()) == sorted(rows)
