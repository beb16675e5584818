"""A decoder of PostgreSQL's `pgoutput` logical replication messages (protocol version 1).

The messages are the ones `pg_logical_slot_peek_binary_changes(slot, ..., 'proto_version', '1',
'publication_names', pub)` returns, one per row, as documented in PostgreSQL's "Logical
Replication Message Formats". `Decoder.feed(message)` keeps the relations it was told about and
the open transaction, and returns the transaction's changes, whole, when its Commit arrives: a
change is never handed out before its transaction committed. No I/O here; the source that reads
the slot is `postgres_cdc`.

Values arrive as text (PostgreSQL's output functions); `types` maps a column's type OID to a
function of that text (see `TYPED` for the common built-in types). A TOASTed value an update did
not change arrives as "unchanged": it is `UNCHANGED_TOAST` in `after` (PostgreSQL does not send it).
"""

from __future__ import annotations

import datetime
import struct
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, NamedTuple

#: Microseconds from the Unix epoch to PostgreSQL's epoch (2000-01-01 UTC).
_PG_EPOCH = datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc)


class _Unchanged:
    """The value of a TOASTed column that an update left as it was; PostgreSQL does not send it."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNCHANGED_TOAST"

    def __reduce__(self) -> str:
        return "UNCHANGED_TOAST"  # pickles as the module global: one instance everywhere


UNCHANGED_TOAST = _Unchanged()


class Change(NamedTuple):
    """One row change of a committed transaction, as the CDC source emits it.

    `op` is "insert", "update", "delete" or "truncate". `before` holds the old row's values for an
    update or delete when PostgreSQL sends them (the replica identity's columns, or every column
    with `REPLICA IDENTITY FULL`; None otherwise, and for inserts and truncates); `after` the new
    row's (None for deletes and truncates). `lsn` is the end of the transaction's commit record
    (every change of a transaction shares it; it is the source's offset), `seq` the change's
    position in its transaction (from 0), so `(lsn, seq)` identifies a change. `commit_time` is the
    commit's time (UTC), `xid` the transaction id.
    """

    op: str
    schema: str
    table: str
    before: dict[str, Any] | None
    after: dict[str, Any] | None
    lsn: int
    seq: int
    commit_time: datetime.datetime
    xid: int


class Column(NamedTuple):
    name: str
    type_oid: int
    is_key: bool


class Relation(NamedTuple):
    """A table as a Relation message describes it: the names and types of its columns."""

    oid: int
    schema: str
    table: str
    columns: tuple[Column, ...]


class PgoutputError(ValueError):
    """A message the decoder cannot read, or one that refers to a relation never described."""


def format_lsn(lsn: int) -> str:
    """An LSN in PostgreSQL's text form, `X/X` (hex)."""
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def parse_lsn(text: str) -> int:
    """An LSN from its text form `X/X`."""
    high, _, low = text.partition("/")
    if not low:
        raise ValueError(f"not an LSN: {text!r} (expected the form X/X, for example 0/16B3748)")
    return (int(high, 16) << 32) | int(low, 16)


def _boolean(text: str) -> bool:
    return text == "t"


#: Converters of the common built-in types by OID: integers, floats, numeric (as `Decimal`),
#: booleans; any other type stays text. Pass `types=TYPED` to the CDC source, or a mapping of
#: your own (OIDs: `SELECT oid, typname FROM pg_type`).
TYPED: Mapping[int, Callable[[str], Any]] = {
    16: _boolean,  # bool
    20: int,  # int8
    21: int,  # int2
    23: int,  # int4
    26: int,  # oid
    700: float,  # float4
    701: float,  # float8
    1700: Decimal,  # numeric
}


class _Reader:
    """Big-endian fields of one message, read in order."""

    __slots__ = ("data", "at")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def byte(self) -> int:
        value = self.data[self.at]
        self.at += 1
        return value

    def int16(self) -> int:
        (value,) = struct.unpack_from(">h", self.data, self.at)
        self.at += 2
        return int(value)

    def int32(self) -> int:
        (value,) = struct.unpack_from(">i", self.data, self.at)
        self.at += 4
        return int(value)

    def uint32(self) -> int:
        (value,) = struct.unpack_from(">I", self.data, self.at)
        self.at += 4
        return int(value)

    def int64(self) -> int:
        (value,) = struct.unpack_from(">q", self.data, self.at)
        self.at += 8
        return int(value)

    def string(self) -> str:
        end = self.data.index(b"\0", self.at)
        value = self.data[self.at : end].decode("utf-8")
        self.at = end + 1
        return value

    def raw(self, length: int) -> bytes:
        value = self.data[self.at : self.at + length]
        self.at += length
        return value


class _Transaction:
    __slots__ = ("xid", "final_lsn", "commit_time", "pending")

    def __init__(self, xid: int, final_lsn: int, commit_time: datetime.datetime) -> None:
        self.xid = xid
        self.final_lsn = final_lsn
        self.commit_time = commit_time
        #: (op, relation, before, after) in the order of the messages
        self.pending: list[tuple[str, Relation, dict[str, Any] | None, dict[str, Any] | None]] = []


class Committed(NamedTuple):
    """What a Commit message completes: the transaction's end LSN, commit time and changes."""

    end_lsn: int
    changes: list[Change]
    commit_time: datetime.datetime


class Decoder:
    """Feeds on pgoutput messages in order; see the module docstring."""

    def __init__(self, types: Mapping[int, Callable[[str], Any]] | None = None) -> None:
        self.types = dict(types or {})
        self.relations: dict[int, Relation] = {}
        self._txn: _Transaction | None = None

    def feed(self, message: bytes) -> Committed | None:
        """Decode one message; a Commit returns its transaction's changes, anything else None."""
        reader = _Reader(bytes(message))
        kind = chr(reader.byte())
        if kind == "B":
            final_lsn = reader.int64()
            commit_time = _timestamp(reader.int64())
            self._txn = _Transaction(reader.uint32(), final_lsn, commit_time)
        elif kind == "C":
            reader.byte()  # flags, unused
            reader.int64()  # the commit record's own LSN (Begin's final LSN)
            end_lsn = reader.int64()
            return self._commit(end_lsn, _timestamp(reader.int64()))
        elif kind == "R":
            self._relation(reader)
        elif kind == "I":
            relation = self._relation_of(reader.uint32())
            self._expect(reader, "N")
            self._add("insert", relation, None, self._tuple(reader, relation))
        elif kind == "U":
            relation = self._relation_of(reader.uint32())
            before = None
            tag = chr(reader.byte())
            if tag in ("K", "O"):
                before = self._tuple(reader, relation, key_only=tag == "K")
                tag = chr(reader.byte())
            if tag != "N":
                raise PgoutputError(f"pgoutput Update of {relation.table}: expected 'N', got {tag!r}")
            self._add("update", relation, before, self._tuple(reader, relation))
        elif kind == "D":
            relation = self._relation_of(reader.uint32())
            tag = chr(reader.byte())
            if tag not in ("K", "O"):
                raise PgoutputError(f"pgoutput Delete of {relation.table}: expected 'K' or 'O', got {tag!r}")
            self._add("delete", relation, self._tuple(reader, relation, key_only=tag == "K"), None)
        elif kind == "T":
            count = reader.int32()
            reader.byte()  # options: CASCADE, RESTART IDENTITY
            for _ in range(count):
                self._add("truncate", self._relation_of(reader.uint32()), None, None)
        elif kind in ("Y", "O", "M"):
            pass  # a type's name, a replication origin, a logical message: nothing to emit
        else:
            raise PgoutputError(f"pgoutput message of unknown kind {kind!r} ({len(message)} bytes)")
        return None

    def _commit(self, end_lsn: int, commit_time: datetime.datetime) -> Committed:
        txn = self._txn
        if txn is None:
            raise PgoutputError("pgoutput Commit without a Begin")
        self._txn = None
        changes = [
            Change(op, relation.schema, relation.table, before, after, end_lsn, seq, commit_time, txn.xid)
            for seq, (op, relation, before, after) in enumerate(txn.pending)
        ]
        return Committed(end_lsn, changes, commit_time)

    def _add(
        self, op: str, relation: Relation, before: dict[str, Any] | None, after: dict[str, Any] | None
    ) -> None:
        if self._txn is None:
            raise PgoutputError(f"pgoutput {op} of {relation.table} outside a transaction")
        self._txn.pending.append((op, relation, before, after))

    def _relation(self, reader: _Reader) -> None:
        oid = reader.uint32()
        schema = reader.string() or "pg_catalog"  # the protocol sends "" for pg_catalog
        table = reader.string()
        reader.byte()  # replica identity setting
        columns = []
        for _ in range(reader.int16()):
            flags = reader.byte()
            name = reader.string()
            type_oid = reader.uint32()
            reader.int32()  # type modifier
            columns.append(Column(name, type_oid, bool(flags & 1)))
        self.relations[oid] = Relation(oid, schema, table, tuple(columns))

    def _relation_of(self, oid: int) -> Relation:
        try:
            return self.relations[oid]
        except KeyError:
            raise PgoutputError(f"pgoutput change of relation {oid} before its Relation message") from None

    @staticmethod
    def _expect(reader: _Reader, tag: str) -> None:
        got = chr(reader.byte())
        if got != tag:
            raise PgoutputError(f"pgoutput: expected tuple tag {tag!r}, got {got!r}")

    def _tuple(self, reader: _Reader, relation: Relation, key_only: bool = False) -> dict[str, Any]:
        count = reader.int16()
        if count != len(relation.columns):
            raise PgoutputError(
                f"pgoutput tuple of {relation.schema}.{relation.table} has {count} columns, its "
                f"Relation message {len(relation.columns)}"
            )
        values: dict[str, Any] = {}
        types = self.types
        for column in relation.columns:
            kind = chr(reader.byte())
            if kind == "n":
                value: Any = None
            elif kind == "u":
                value = UNCHANGED_TOAST
            elif kind == "t":
                text = reader.raw(reader.int32()).decode("utf-8")
                convert = types.get(column.type_oid)
                value = text if convert is None else convert(text)
            else:
                raise PgoutputError(
                    f"pgoutput tuple of {relation.table}, column {column.name}: unknown kind {kind!r}"
                )
            if key_only and not column.is_key:
                continue  # an old key tuple sends null for the other columns: leave them out
            values[column.name] = value
        return values


def _timestamp(micros: int) -> datetime.datetime:
    return _PG_EPOCH + datetime.timedelta(microseconds=micros)
