"""Jet's `WriteJdbcPTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.connector`) and the
`SinkStressTestUtil.test_withRestarts` it calls, ported.

Jet's PostgreSQL container is the test session's PostgreSQL server (`postgres_dsn`,
tests/conftest.py), with a table `(id int, name varchar(255))` per test. Jet's `Sinks.jdbc(query,
dataSourceSupplier, bindFn)` is `processors.postgres(dsn, insert, to_row)`; its jobs run on 2
members (the local runner's). Each test is named after the Jet case it ports.

Differences, by design:
- jetspark's sink takes a DSN, not a data source: Jet's data source whose `getConnection` fails
  twice (`testReconnect`) is `psycopg.connect` failing twice with `OperationalError` (a
  connection failure), patched for the test.
- `testFailJob_withNonTransientException`: Jet's `bindFn` throws `SQLNonTransientException`;
  `to_row` raises psycopg's `ProgrammingError`, and `join` raises `JobFailedError` (Jet:
  `CompletionException`).
- `test_transactional_withRestarts_*`: jetspark's sink is always two-phase (Jet's
  `exactlyOnce(false)` sink, which commits as it goes, has no counterpart); the `_atLeastOnce`
  cases run it under AT_LEAST_ONCE and check Jet's weaker condition (every item at least once).
  Jet's stream source of 1000 items with a 5 ms sleep per item, its restarts after random sleeps
  and its polling of the table until it is right are, here, a bounded source of 1000 items that
  stops at values the test chooses: it holds at 300, is restarted, is let on to 600 and restarted
  again while the new execution has just started (Jet: "possibly during initialization"), then
  runs to its end; the table must then be right. Jet's `restart(graceful=true)` is
  `LocalJob.restart()` (a terminal snapshot). Jet's forceful `restart(false)` (no terminal
  snapshot: back to the last snapshot) is a `RestartableError` raised by the source: once at
  value 450, after a snapshot was committed at 300, and once more as the restored execution
  starts.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import psycopg
import pytest

from jetspark import (
    DAG,
    AbstractProcessor,
    BroadcastKey,
    Edge,
    JobConfig,
    JobFailedError,
    ProcessingGuarantee,
    ProcessorContext,
    RestartableError,
)
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalJob, LocalRunner
from tests.waiting import wait_until

PERSON_COUNT = 10
NODE_COUNT = 2
TIMEOUT = 60


@pytest.fixture
def table(postgres_dsn: str) -> Iterator[str]:
    name = f"t_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {name} (id int, name varchar(255))")
    yield name
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE {name}")


def row_count(dsn: str, table: str) -> int:
    with psycopg.connect(dsn) as conn:
        found = conn.execute(f"SELECT count(*) FROM {table}").fetchone()
    return 0 if found is None else int(found[0])


def person(item: tuple[int, str]) -> tuple[int, str]:
    return item


def jdbc_dag(dsn: str, table: str, to_row: Callable[[Any], Any]) -> DAG:
    dag = DAG()
    source = dag.new_vertex("items", P.from_iterable(range(PERSON_COUNT)))
    entries = dag.new_vertex("map", P.map(lambda item: (item, str(item))))
    sink = dag.new_vertex("sink", P.postgres(dsn, f"INSERT INTO {table} VALUES (%s, %s)", to_row))
    dag.edge(Edge.between(source, entries))
    dag.edge(Edge.between(entries, sink))
    return dag


def test_WriteJdbcPTest__test(postgres_dsn: str, table: str) -> None:
    job = LocalRunner(NODE_COUNT).run(jdbc_dag(postgres_dsn, table, person), timeout=TIMEOUT)
    assert job.status is JobStatus.COMPLETED
    assert row_count(postgres_dsn, table) == PERSON_COUNT


def test_WriteJdbcPTest__testReconnect(
    postgres_dsn: str, table: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_connect = psycopg.connect
    lock = threading.Lock()
    remaining_failures = [2]

    def fail_twice(*args: Any, **kwargs: Any) -> Any:
        with lock:
            fail = remaining_failures[0] > 0
            remaining_failures[0] -= 1
        if fail:
            raise psycopg.OperationalError("connection failure")
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(psycopg, "connect", fail_twice)
    dag = jdbc_dag(postgres_dsn, table, person)
    LocalRunner(NODE_COUNT).run(dag, timeout=TIMEOUT)
    monkeypatch.undo()
    assert remaining_failures[0] < 0, "the connection failures were not injected"
    assert row_count(postgres_dsn, table) == PERSON_COUNT


def non_transient(item: tuple[int, str]) -> tuple[int, str]:
    raise psycopg.ProgrammingError("non-transient")


def test_WriteJdbcPTest__testFailJob_withNonTransientException(postgres_dsn: str, table: str) -> None:
    with pytest.raises(JobFailedError, match="non-transient"):
        LocalRunner(NODE_COUNT).run(jdbc_dag(postgres_dsn, table, non_transient), timeout=TIMEOUT)
    assert row_count(postgres_dsn, table) == 0


# ---- SinkStressTestUtil.test_withRestarts ---------------------------------------------------

NUM_ITEMS = 1000
FIRST_HOLD = 300
SECOND_HOLD = 600
FAIL_AT = 450


class Control:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.limit: int | None = FIRST_HOLD  # values at or past it wait; None: run to the end
        self.next_values: dict[int, int] = {}  # processor index -> the next value it emits
        self.fail_at: int | None = None  # the processor about to emit it raises RestartableError once
        self.fail_on_restore = False  # a restored processor raises RestartableError at once, once
        self.failures = 0
        self.restores = 0  # executions restored (counted by processor 0)

    def all_held(self) -> bool:
        with self.lock:
            limit = self.limit
            return (
                limit is not None
                and len(self.next_values) == NODE_COUNT
                and all(v >= limit for v in self.next_values.values())
            )


control = Control()


class SourceP(AbstractProcessor):
    """Emits the values of 0..NUM_ITEMS-1 whose remainder by the total parallelism is its global
    index, in order, not past `control.limit`; saves the next one."""

    def init_processor(self, context: ProcessorContext) -> None:
        self.index = context.global_processor_index
        self.step = context.total_parallelism
        self.next_value = self.index
        self.restored = False
        self._note()

    def _note(self) -> None:
        with control.lock:
            control.next_values[self.index] = self.next_value

    def complete(self) -> bool:
        with control.lock:
            if self.restored and control.fail_on_restore:
                control.fail_on_restore = False
                control.failures += 1
                raise RestartableError("forceful restart as the execution starts")
        while self.next_value < NUM_ITEMS:
            with control.lock:
                limit, fail_at = control.limit, control.fail_at
                if fail_at == self.next_value:
                    control.fail_at = None
                    control.failures += 1
                    raise RestartableError(f"forceful restart at {fail_at}")
            if limit is not None and self.next_value >= limit:
                return False
            if not self.try_emit(self.next_value):
                return False
            self.next_value += self.step
            self._note()
        return True

    def save_to_snapshot(self) -> bool:
        return self.try_emit_to_snapshot(BroadcastKey(self.index), self.next_value)

    def restore_from_snapshot_entry(self, key: Any, value: Any) -> None:
        if key.key == self.index:
            self.next_value = value

    def finish_snapshot_restore(self) -> bool:
        self.restored = True
        self._note()
        if self.index == 0:
            with control.lock:
                control.restores += 1
        return True


def to_row(item: int) -> tuple[int, str]:
    return item, f"name-{item}"


def restores() -> int:
    with control.lock:
        return control.restores


def release(limit: int | None) -> None:
    with control.lock:
        control.limit = limit


def status(job: LocalJob) -> JobStatus:
    """The status now (a call, so that type checkers do not carry over an earlier check)."""
    return job.status


def run_with_restarts(dsn: str, table: str, graceful: bool, exactly_once: bool) -> None:
    global control
    control = Control()
    dag = DAG()
    source = dag.new_vertex("src", SourceP, 1)
    sink = dag.new_vertex("sink", P.postgres(dsn, f"INSERT INTO {table} VALUES (%s, %s)", to_row))
    dag.edge(Edge.between(source, sink))
    guarantee = ProcessingGuarantee.EXACTLY_ONCE if exactly_once else ProcessingGuarantee.AT_LEAST_ONCE
    config = JobConfig(processing_guarantee=guarantee, snapshot_interval_millis=50)
    job = LocalRunner(NODE_COUNT).submit(dag, config)

    wait_until(control.all_held, "the source to hold at the first value")
    if graceful:
        job.restart()
        wait_until(lambda: restores() >= 1 or job.ended, "the first restart")
        assert job.status is JobStatus.RUNNING, job.error
        release(SECOND_HOLD)
        job.restart()  # at once: the new execution has just started
    else:
        committed = job.snapshot_count
        wait_until(lambda: job.snapshot_count >= committed + 2 or job.ended, "a snapshot at the first value")
        with control.lock:  # a failure past the snapshot, then another as the restored execution starts
            control.fail_at = FAIL_AT
            control.fail_on_restore = True
        release(SECOND_HOLD)
    wait_until(lambda: restores() >= 2 or job.ended, "the second restart")
    assert job.status is JobStatus.RUNNING, job.error
    release(None)
    job.join(TIMEOUT)

    assert status(job) is JobStatus.COMPLETED
    with psycopg.connect(dsn) as conn:
        actual = [row[0] for row in conn.execute(f"SELECT id FROM {table}").fetchall()]
        left = conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()
    if exactly_once:
        assert sorted(Counter(actual).items()) == [(i, 1) for i in range(NUM_ITEMS)]
    else:
        assert sorted(set(actual)) == list(range(NUM_ITEMS))
    assert left == [], "prepared transactions left behind"
    assert job.restarts == (0 if graceful else 2)
    assert control.failures == (0 if graceful else 2)


def test_WriteJdbcPTest__test_transactional_withRestarts_graceful_exOnce(
    postgres_dsn: str, table: str
) -> None:
    run_with_restarts(postgres_dsn, table, graceful=True, exactly_once=True)


def test_WriteJdbcPTest__test_transactional_withRestarts_forceful_exOnce(
    postgres_dsn: str, table: str
) -> None:
    run_with_restarts(postgres_dsn, table, graceful=False, exactly_once=True)


def test_WriteJdbcPTest__test_transactional_withRestarts_graceful_atLeastOnce(
    postgres_dsn: str, table: str
) -> None:
    run_with_restarts(postgres_dsn, table, graceful=True, exactly_once=False)


def test_WriteJdbcPTest__test_transactional_withRestarts_forceful_atLeastOnce(
    postgres_dsn: str, table: str
) -> None:
    run_with_restarts(postgres_dsn, table, graceful=False, exactly_once=False)
