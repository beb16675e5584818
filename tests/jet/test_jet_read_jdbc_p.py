"""Jet's `ReadJdbcPTest` (hazelcast-jet-core, `com.hazelcast.jet.impl.connector`), ported.

Jet's table `items(id INT PRIMARY KEY, name VARCHAR(10))` of 100 rows `(i, 'name-i')`, in an H2
database, is a table of the test session's PostgreSQL server (`postgres_dsn`, tests/conftest.py),
one per test. Jet's `Sources.jdbc` runs a query the test writes; jetspark's counterpart is
`processors.postgres_table`, which reads a table by ranges of its key (its rows are dicts, mapped
to Jet's `(id, name)` entries). As Jet's, the jobs run on 2 members (the local runner's).

Differences, by design:
- `test_whenPartitionedQuery`: Jet's query splits the rows by `mod(id, parallelism) = index`;
  `postgres_table` splits them by key ranges, one per processor of the vertex (its total
  parallelism, 2 members x 2 here), and the sink must get every row once in any order
  (Jet's `assertAnyOrder`).
- `test_whenTotalParallelismOne`: Jet's non-partitioned `Sources.jdbc(url, query)` runs on one
  processor of the cluster; here `splits=1` makes one range, read in key order by one processor,
  and one sink processor (an all-to-one edge) must get the rows in that order (`assertOrdered`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner

ITEM_COUNT = 100
NODE_COUNT = 2
TIMEOUT = 60


@pytest.fixture
def table(postgres_dsn: str) -> Iterator[str]:
    name = f"items_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE {name} (id int PRIMARY KEY, name varchar(10))")
        with conn.cursor() as cursor:
            cursor.executemany(
                f"INSERT INTO {name} VALUES (%s, %s)", [(i, f"name-{i}") for i in range(ITEM_COUNT)]
            )
    yield name
    with psycopg.connect(postgres_dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE {name}")


TABLE_CONTENTS = [(i, f"name-{i}") for i in range(ITEM_COUNT)]


def entry(row: dict[str, Any]) -> tuple[int, str]:
    return row["id"], row["name"]


def read(source: Any, local_parallelism: int, ordered: bool) -> list[Any]:
    dag = DAG()
    rows = dag.new_vertex("source", source, local_parallelism)
    entries = dag.new_vertex("entries", P.map(entry), local_parallelism)
    sink = dag.new_vertex("sink", P.collect(), 1)
    dag.edge(Edge.between(rows, entries))
    edge = Edge.between(entries, sink)
    dag.edge(edge.distributed().all_to_one() if ordered else edge)
    job = LocalRunner(NODE_COUNT).run(dag, timeout=TIMEOUT)
    assert job.status is JobStatus.COMPLETED
    return job.result("sink")


def test_ReadJdbcPTest__test_whenPartitionedQuery(postgres_dsn: str, table: str) -> None:
    received = read(P.postgres_table(postgres_dsn, table, "id", fetch_size=7), 2, ordered=False)
    assert sorted(received) == TABLE_CONTENTS
    assert len(received) == ITEM_COUNT


def test_ReadJdbcPTest__test_whenTotalParallelismOne(postgres_dsn: str, table: str) -> None:
    received = read(P.postgres_table(postgres_dsn, table, "id", splits=1, fetch_size=7), 1, ordered=True)
    assert received == TABLE_CONTENTS
