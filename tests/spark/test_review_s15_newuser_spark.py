"""A new user's order pipeline on Spark (fifteenth session's review, notes in
/work/notes/s15/newuser/): JSON Lines orders -> the user's own `Enrich` -> a per-customer
`KeyedState` count -> `write_jsonl`, and `Enrich` -> the `postgres` sink with COPY.

Under EXACTLY_ONCE the job stayed exact through every kill the review tried (the driver's
process tree SIGKILLed before the first commit, mid-job, between a manifest and `LATEST`, after
completion; a Python worker or `pyspark.daemon` killed under `local[2,4]`; Ctrl-C and a kill
during the suspension; PostgreSQL crashed for 8 s; resumes on 3 and on 1 member). The first test
below keeps a small version of that job exact across a suspension and a resubmission.

What did not hold (one strict xfail remains, the last):

- (not a test: documented meanwhile by 4baca8d as at-least-once) a job without a guarantee into
  the `postgres` sink keeps the rows of a failed run, and the run from the beginning writes them
  again (3,001,430 rows for 2,699,677 orders after a Python worker was killed under `local[2,4]`);
- (found here, fixed on main meanwhile by 4baca8d, so now a passing test) a job resubmitted after
  its vertex was renamed dropped that vertex's state without a word;
- without any failure, a processor that emits its totals from `complete()` (the README's `Count`
  pattern, on a KeyedState) for longer than an epoch is restored from the store in later epochs,
  and its `complete()` starts over every epoch: totals written many times, the job never ends.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobConfig, KeyedState, ProcessingGuarantee
from jetspark import processors as P
from jetspark.checkpoint import CheckpointStore
from jetspark.core.errors import JobTimeoutError
from jetspark.runners.job import JobStatus
from jetspark.runners.spark import SparkRunner
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

pytestmark = pytest.mark.spark

CUSTOMERS = 7


def order(n: int) -> dict[str, Any]:
    """Order n: customer n % 7; every fifth order is cancelled; amount n."""
    return {
        "order_id": n,
        "customer": f"c{n % CUSTOMERS}",
        "amount": n,
        "status": "cancelled" if n % 5 == 0 else "paid",
    }


class Enrich(AbstractProcessor):
    """The user's own filter and map: drops cancelled orders, makes a compact row."""

    def try_process_item(self, ordinal: int, item: dict[str, Any]) -> bool:
        if item["status"] == "cancelled":
            return True
        return self.try_emit((item["order_id"], item["customer"], item["amount"]))


class CustomerTotals(AbstractProcessor):
    """The user's own keyed count in a KeyedState: a row per order (customer, n-th order, running sum)."""

    def init_processor(self, context: Any) -> None:
        self.state: KeyedState[str, tuple[int, int]] = KeyedState()

    def try_process_item(self, ordinal: int, row: tuple[int, str, int]) -> bool:
        _, customer, amount = row
        n, total = self.state.get(customer, (0, 0))
        if not self.try_emit({"customer": customer, "n": n + 1}):
            return False
        self.state[customer] = (n + 1, total + amount)
        return True

    def save_to_snapshot(self) -> bool:
        return self.state.save(self)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.state.restore(key, value)

    def changed_snapshot_keys(self) -> Any:
        return self.state.changed_keys()


def customer_of(row: tuple[int, str, int]) -> str:
    return row[1]


def order_dag(gate: Gate, count: int, out: str, dsn: str, table: str, totals: str = "totals") -> DAG:
    dag = DAG()
    source = dag.new_vertex("orders", gated_stream(gate, count=count, fn=order))
    enrich = dag.new_vertex("enrich", Enrich)
    dag.edge(Edge.between(source, enrich))
    tally = dag.new_vertex(totals, CustomerTotals)
    dag.edge(Edge.from_(enrich, 0).to(tally).partitioned(customer_of).distributed())
    dag.edge(Edge.between(tally, dag.new_vertex("out", P.write_jsonl(out))))
    db = dag.new_vertex("db", P.postgres(dsn, f"COPY {table} (order_id, customer, amount) FROM STDIN"))
    dag.edge(Edge.from_(enrich, 1).to(db).distributed())
    return dag


def expected_rows(count: int) -> list[tuple[str, int]]:
    seen: dict[str, int] = {}
    rows = []
    for n in range(count):
        if n % 5:
            customer = f"c{n % CUSTOMERS}"
            seen[customer] = seen.get(customer, 0) + 1
            rows.append((customer, seen[customer]))
    return sorted(rows)


def written_rows(out: Path) -> list[tuple[str, int]]:
    rows = []
    for part in out.rglob("*.jsonl"):
        if not part.name.startswith("."):
            for line in part.read_text().splitlines():
                record = json.loads(line)
                rows.append((record["customer"], record["n"]))
    return sorted(rows)


def fresh_table(dsn: str, table: str, columns: str) -> None:
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}")
        conn.execute(f"CREATE TABLE {table} ({columns})")


def epochs_config(root: Path, name: str, member_count: int = 2) -> JobConfig:
    return JobConfig(
        name=name,
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=300,
        checkpoint_root=str(root),
        member_count=member_count,
    )


@pytest.mark.timeout(300)
def test_the_users_order_pipeline_is_exact_in_files_and_table_across_a_suspension_and_a_resubmission(
    spark: Any, tmp_path: Path, postgres_dsn: str
) -> None:
    """Own processors (a filter, a KeyedState count), write_jsonl and a COPY into PostgreSQL from
    the same processor's two ordinals: suspended mid-stream, submitted again from a new runner on
    another member count, every row is once in the files and in the table, nothing prepared is left."""
    import psycopg

    count, table = 6000, "review_s15_orders"
    fresh_table(postgres_dsn, table, "order_id bigint, customer text, amount bigint")
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=count // 2)
    dag = order_dag(gate, count, str(out), postgres_dsn, table)
    job = SparkRunner(spark).submit(dag, epochs_config(root, "orders"))
    store = CheckpointStore(str(root), "orders", tidy=False)
    wait_until(lambda: store.latest_id() is not None, "a committed epoch", timeout=120)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED
    gate.open()
    again = SparkRunner(spark).submit(
        order_dag(gate, count, str(out), postgres_dsn, table), epochs_config(root, "orders", 3)
    )
    again.join(180)
    assert again.job_id == job.job_id
    assert written_rows(out) == expected_rows(count)
    with psycopg.connect(postgres_dsn) as conn:
        ids = sorted(row[0] for row in conn.execute(f"SELECT order_id FROM {table}"))
        prepared = conn.execute("SELECT count(*) FROM pg_prepared_xacts").fetchone()
    assert ids == [n for n in range(count) if n % 5]
    assert prepared == (0,)


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.mark.timeout(300)
def test_a_resubmitted_job_whose_stateful_vertex_was_renamed_says_its_state_is_dropped(
    spark: Any, tmp_path: Path, postgres_dsn: str
) -> None:
    count, table = 4000, "review_s15_renamed"
    fresh_table(postgres_dsn, table, "order_id bigint, customer text, amount bigint")
    out, root = tmp_path / "out", tmp_path / "ck"
    gate = Gate(tmp_path / "gate", hold_at=count // 2)
    job = SparkRunner(spark).submit(
        order_dag(gate, count, str(out), postgres_dsn, table, "tally"), epochs_config(root, "renamed-job")
    )
    store = CheckpointStore(str(root), "renamed-job", tidy=False)
    wait_until(lambda: store.latest_id() is not None, "a committed epoch", timeout=120)
    job.suspend()
    assert job.status is JobStatus.SUSPENDED
    gate.open()
    collected = _Collect()
    logging.getLogger("jetspark").addHandler(collected)
    refused: Exception | None = None
    try:
        renamed = order_dag(gate, count, str(out), postgres_dsn, table, "per-customer")
        try:
            SparkRunner(spark).submit(renamed, epochs_config(root, "renamed-job")).join(180)
        except Exception as error:  # a refusal naming the vertex would do too
            refused = error
    finally:
        logging.getLogger("jetspark").removeHandler(collected)
    said = [m for m in collected.messages if "'tally'" in m] + (
        [str(refused)] if refused and "tally" in str(refused) else []
    )
    assert said, (
        f"nothing named the dropped state of vertex 'tally'; rows exact: {written_rows(out) == expected_rows(count)}; "
        f"warnings: {collected.messages}"
    )


class TotalsAtTheEnd(AbstractProcessor):
    """The README's and getting-started's `Count` pattern on a KeyedState: count per key, then
    emit the totals from `complete()` through an iterator made once, one total per call (a slow
    downstream, so `complete()` spans several epochs). Its snapshot saves the counts, not how far
    `complete()` got: in Jet that matters only after a failure's restore."""

    pause = 0.002  # seconds per complete() call

    def init_processor(self, context: Any) -> None:
        self.state: KeyedState[int, int] = KeyedState()
        self.totals: Any = None

    def try_process_item(self, ordinal: int, item: int) -> bool:
        self.state[item] = self.state.get(item, 0) + 1
        return True

    def complete(self) -> bool:
        if self.totals is None:
            self.totals = iter(sorted(self.state.items()))
            self.pending: Any = None
        if self.pending is None:
            self.pending = next(self.totals, None)
            if self.pending is None:
                return True
        import time

        if self.pause:
            time.sleep(self.pause)
        if not self.try_emit(f"{self.pending[0]},{self.pending[1]}"):
            return False
        self.pending = None
        return False

    def save_to_snapshot(self) -> bool:
        return self.state.save(self)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        self.state.restore(key, value)

    def changed_snapshot_keys(self) -> Any:
        return self.state.changed_keys()


@pytest.mark.timeout(180)
def test_totals_emitted_by_complete_across_epochs_are_written_once_without_any_failure(
    spark: Any, tmp_path: Path
) -> None:
    from jetspark.processors.transactional import read_lines

    keys, out = 1500, str(tmp_path / "out")
    dag = DAG()
    # member 1's share is tiny: its processor completes at once, member 0's goes on for seconds
    items = [k for k in range(keys) for _ in range(2)] + [keys + 1]
    source = dag.new_vertex("items", P.from_iterable(items))
    totals = dag.new_vertex("totals", TotalsAtTheEnd)
    dag.edge(Edge.between(source, totals).partitioned(lambda k: 0 if k < keys else 1).distributed())
    dag.edge(Edge.between(totals, dag.new_vertex("out", P.transactional_files(out))))
    config = JobConfig(
        name="totals-at-the-end",
        processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE,
        snapshot_interval_millis=300,
        checkpoint_root=str(tmp_path / "ck"),
        member_count=2,
    )
    job = SparkRunner(spark).submit(dag, config)
    ended = True
    try:
        job.join(60)  # the work is about 3 s of complete() calls
    except JobTimeoutError:
        ended = False
        job.cancel()
    lines = read_lines(out)
    aborted = getattr(job, "epochs_aborted", None)
    assert ended and aborted == 0, (
        f"still running after 60 s, {aborted} epochs aborted; {len(lines)} lines for "
        f"{keys + 1} totals, {len(set(lines))} distinct"
    )
    assert sorted(lines) == sorted([f"{k},2" for k in range(keys)] + [f"{keys + 1},1"])
