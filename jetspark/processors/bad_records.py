"""What a file source does with a record it cannot read: the `errors=` policy.

Spark calls these modes FAILFAST, DROPMALFORMED and `badRecordsPath`; jetspark's are:

- `"fail"` (the default): the job fails with an error naming the vertex, the file, the byte
  offset of the record and what is wrong with it;
- `"skip"`: the record is dropped and counted in the vertex's metric `bad_records`;
- `"dead_letter"`: the record goes, as a `BadRecord`, to the vertex's outbound edge of ordinal 1
  (good records go to ordinal 0), and is counted too. Route ordinal 1 to any sink, for example
  `write_jsonl` or `transactional_files`.

A skipped or dead-lettered record counts as read: the source's offset moves past it, so a job
restored from a snapshot does not meet it again.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

from jetspark.core.errors import BadRecordError, JobFailedError
from jetspark.core.outbox import Outbox

#: The `errors=` policies of the file sources.
ErrorPolicy = Literal["fail", "skip", "dead_letter"]
ERROR_POLICIES: tuple[str, ...] = ("fail", "skip", "dead_letter")
#: The metric (`Processor.custom_metrics`) counting records skipped or sent to the dead letters.
BAD_RECORDS_METRIC = "bad_records"
#: The outbound ordinal that receives `BadRecord`s under `errors="dead_letter"`.
DEAD_LETTER_ORDINAL = 1


class BadRecord(NamedTuple):
    """A record a file source could not read: where it is, why, and its raw bytes. Under
    `errors="dead_letter"` the source sends it to its outbound ordinal 1.

    ```pycon
    >>> import os, tempfile
    >>> from jetspark import DAG, Edge, processors as P
    >>> from jetspark.testing import run_dag
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "events.jsonl"), "w") as file:
    ...     _ = file.write('{"id": 1}\\n{"id": \\n{"id": 3}\\n')
    >>> dag = DAG()
    >>> events = dag.new_vertex("events", P.read_jsonl(folder, errors="dead_letter"))
    >>> good, bad = dag.new_vertex("good", P.collect()), dag.new_vertex("bad", P.collect())
    >>> _ = dag.edge(Edge.between(events, good)).edge(Edge.from_(events, 1).to(bad))
    >>> job = run_dag(dag)
    >>> sorted(event["id"] for event in job.result("good"))
    [1, 3]
    >>> [(os.path.basename(r.file), r.offset, r.raw) for r in job.result("bad")]
    [('events.jsonl', 10, b'{"id": ')]
    >>> job.result("bad")[0].error
    'not valid JSON: Expecting value: line 1 column 8 (char 7)'
    ```

    :ivar file: the path of the file.
    :ivar offset: the byte offset in the file where the record starts.
    :ivar error: what is wrong with the record.
    :ivar raw: the record's bytes (a line, without its newline).
    """

    file: str
    offset: int
    error: str
    raw: bytes


class RecordError(ValueError):
    """Raised by a format's parser for one record; the source adds the file and the offset."""


def check_policy(factory: str, errors: str) -> None:
    """Refuse an unknown policy when the source is built, naming the factory."""
    if errors not in ERROR_POLICIES:
        raise ValueError(
            f"{factory}: errors must be one of {', '.join(map(repr, ERROR_POLICIES))}, got {errors!r}"
        )


def check_dead_letter_edge(vertex: str, errors: str, bucket_count: int) -> None:
    """Under `dead_letter` the vertex needs its ordinal-1 edge; say so before anything is read."""
    if errors == "dead_letter" and bucket_count < DEAD_LETTER_ORDINAL + 1:
        raise JobFailedError(
            f"vertex {vertex!r}: errors='dead_letter' sends bad records to outbound ordinal "
            f"{DEAD_LETTER_ORDINAL}, but the vertex has {bucket_count} outbound edge(s); add an edge "
            f"from ordinal {DEAD_LETTER_ORDINAL} (Edge.from_(vertex, {DEAD_LETTER_ORDINAL})) to a sink"
        )


def bad_record_failure(vertex: str, bad: BadRecord) -> BadRecordError:
    """The error of `errors="fail"`: vertex, file, offset, cause, and how to go on instead."""
    return BadRecordError(
        f"vertex {vertex!r}: bad record in {bad.file} at byte {bad.offset}: {bad.error} "
        "(errors='skip' drops such records, errors='dead_letter' sends them to ordinal 1)",
        vertex=vertex,
    )


class BadRecords:
    """A source's side of the policy: the ordinal of good records, the room for a batch, and what
    happens to the bad lines of a batch. `count` is the `bad_records` metric."""

    def __init__(self, errors: ErrorPolicy) -> None:
        self.errors = errors
        self.count = 0
        #: Where good records go: ordinal 0 beside the dead letters, else every edge.
        self.ordinal = 0 if errors == "dead_letter" else -1
        self.vertex = ""

    def init(self, vertex: str, outbox: Outbox) -> None:
        check_dead_letter_edge(vertex, self.errors, outbox.bucket_count())
        self.vertex = vertex

    def room(self, outbox: Outbox) -> int:
        """How many units a batch may hold: each becomes at most one good or one bad record."""
        room = outbox.room(self.ordinal)
        if self.errors == "dead_letter":
            room = min(room, outbox.room(DEAD_LETTER_ORDINAL))
        return room

    def handle(
        self, outbox: Outbox, path: str, offset: int, lines: list[bytes], bad: list[tuple[int, str]]
    ) -> None:
        """The bad `lines[index]` of a batch whose first line starts at byte `offset` of `path`:
        fail, or count them (and, under dead_letter, emit them; the room was asked for)."""
        records = [
            BadRecord(path, offset + sum(map(len, lines[:index])) + index, reason, lines[index])
            for index, reason in bad
        ]
        if self.errors == "fail":
            raise bad_record_failure(self.vertex, records[0])
        self.count += len(records)
        if self.errors == "dead_letter":
            outbox.offer_batch(records, DEAD_LETTER_ORDINAL)
