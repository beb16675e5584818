"""The pgoutput decoder on messages captured from a real PostgreSQL 15 server.

Captured with `pg_logical_slot_peek_binary_changes(slot, NULL, NULL, 'proto_version', '1',
'publication_names', 'p')` after, on `t (id int primary key, v text, n numeric, b bool)` with
`REPLICA IDENTITY FULL` and `k (id int primary key, big text, w int)` (default identity):

    BEGIN; INSERT INTO t VALUES (1, 'a', 1.5, true), (2, NULL, 2, false); COMMIT
    UPDATE t SET v = 'b' WHERE id = 1
    DELETE FROM t WHERE id = 2
    INSERT INTO k VALUES (1, 'small', 0)
    UPDATE k SET id = 3 WHERE id = 1
    DELETE FROM k WHERE id = 3
    INSERT INTO k SELECT 5, string_agg(md5(i::text), ''), 0 FROM generate_series(1, 1000) i
    UPDATE k SET w = 1 WHERE id = 5      -- big is TOASTed and unchanged: sent as 'u'
    TRUNCATE t

The 32 kB Insert message of the seventh statement is left out (its Begin and Commit are kept).
"""

from __future__ import annotations

import datetime
import pickle
from decimal import Decimal

import pytest

from jetspark.processors.pgoutput import (
    TYPED,
    UNCHANGED_TOAST,
    Change,
    Decoder,
    PgoutputError,
    format_lsn,
    parse_lsn,
)

CAPTURED = [
    "420000000001532a880003041a236efcce000002d8",
    "52000040007075626c69630074006600040169640000000017ffffffff01760000000019ffffffff016e00000006a4ffffffff01620000000010ffffffff",
    "49000040004e00047400000001317400000001617400000003312e35740000000174",
    "49000040004e00047400000001326e740000000132740000000166",
    "43000000000001532a880000000001532ab80003041a236efcce",
    "420000000001532b200003041a236eff5e000002d9",
    "55000040004f00047400000001317400000001617400000003312e357400000001744e00047400000001317400000001627400000003312e35740000000174",
    "43000000000001532b200000000001532b500003041a236eff5e",
    "420000000001532b980003041a236f0b5c000002da",
    "44000040004f00047400000001326e740000000132740000000166",
    "43000000000001532b980000000001532bc80003041a236f0b5c",
    "420000000001532cb00003041a236f0ccd000002db",
    "52000040077075626c6963006b006400030169640000000017ffffffff006269670000000019ffffffff00770000000017ffffffff",
    "49000040074e00037400000001317400000005736d616c6c740000000130",
    "43000000000001532cb00000000001532ce00003041a236f0ccd",
    "420000000001532d800003041a236f16cc000002dc",
    "55000040074b00037400000001316e6e4e00037400000001337400000005736d616c6c740000000130",
    "43000000000001532d800000000001532db00003041a236f16cc",
    "420000000001532df00003041a236f1776000002dd",
    "44000040074b00037400000001336e6e",
    "43000000000001532df00000000001532e200003041a236f1776",
    "42000000000153b5400003041a236f2520000002de",
    "4300000000000153b540000000000153b5700003041a236f2520",
    "42000000000153b6080003041a236f55e3000002df",
    "55000040074e000374000000013575740000000131",
    "4300000000000153b608000000000153b6380003041a236f55e3",
    "42000000000153c1d00003041a236f9b49000002e0",
    "52000040007075626c69630074006600040169640000000017ffffffff01760000000019ffffffff016e00000006a4ffffffff01620000000010ffffffff",
    "54000000010000004000",
    "4300000000000153c1d0000000000153c3400003041a236f9b49",
]


def decode_all(decoder: Decoder, messages: list[str]) -> list[tuple[int, list[Change]]]:
    committed = []
    for message in messages:
        result = decoder.feed(bytes.fromhex(message))
        if result is not None:
            committed.append((result.end_lsn, result.changes))
    return committed


def test_every_captured_transaction_comes_out_at_its_commit_in_order() -> None:
    transactions = decode_all(Decoder(), CAPTURED)
    ops = [[(c.op, c.table) for c in changes] for _, changes in transactions]
    assert ops == [
        [("insert", "t"), ("insert", "t")],
        [("update", "t")],
        [("delete", "t")],
        [("insert", "k")],
        [("update", "k")],
        [("delete", "k")],
        [],  # its Insert message was left out of the capture
        [("update", "k")],
        [("truncate", "t")],
    ]
    ends = [end for end, _ in transactions]
    assert ends == sorted(ends) and len(set(ends)) == len(ends)
    assert format_lsn(ends[0]) == "0/1532AB8"
    for end, changes in transactions:
        assert [c.seq for c in changes] == list(range(len(changes)))
        assert all(c.lsn == end and c.schema == "public" for c in changes)


def test_values_are_text_by_default_with_nulls_before_and_after() -> None:
    transactions = [changes for _, changes in decode_all(Decoder(), CAPTURED)]
    first, second = transactions[0]
    assert first.after == {"id": "1", "v": "a", "n": "1.5", "b": "t"} and first.before is None
    assert second.after == {"id": "2", "v": None, "n": "2", "b": "f"}
    (update,) = transactions[1]
    assert update.before == {"id": "1", "v": "a", "n": "1.5", "b": "t"}  # REPLICA IDENTITY FULL: old row
    assert update.after == {"id": "1", "v": "b", "n": "1.5", "b": "t"}
    (delete,) = transactions[2]
    assert delete.before == {"id": "2", "v": None, "n": "2", "b": "f"} and delete.after is None
    assert first.xid == 0x2D8 and update.xid == 0x2D9
    assert first.commit_time.tzinfo is datetime.timezone.utc
    assert first.commit_time.year >= 2024


def test_a_key_change_sends_the_old_key_only_and_a_delete_the_key() -> None:
    transactions = [changes for _, changes in decode_all(Decoder(), CAPTURED)]
    (key_update,) = transactions[4]
    assert key_update.before == {"id": "1"}
    assert key_update.after == {"id": "3", "big": "small", "w": "0"}
    (key_delete,) = transactions[5]
    assert key_delete.before == {"id": "3"} and key_delete.after is None


def test_an_unchanged_toasted_value_is_marked_not_guessed() -> None:
    (update,) = decode_all(Decoder(), CAPTURED)[7][1]
    assert update.after == {"id": "5", "big": UNCHANGED_TOAST, "w": "1"} and update.before is None
    assert pickle.loads(pickle.dumps(update)).after["big"] is UNCHANGED_TOAST


def test_types_convert_by_type_oid() -> None:
    first = decode_all(Decoder(TYPED), CAPTURED)[0][1][0]
    assert first.after == {"id": 1, "v": "a", "n": Decimal("1.5"), "b": True}
    assert decode_all(Decoder({25: str.upper}), CAPTURED)[0][1][0].after["v"] == "A"


def test_truncate_names_each_table() -> None:
    (truncate,) = decode_all(Decoder(), CAPTURED)[8][1]
    assert truncate.op == "truncate" and truncate.before is None and truncate.after is None


def test_a_change_before_its_relation_message_is_an_error_naming_the_relation() -> None:
    begin, _relation, insert = CAPTURED[0], CAPTURED[1], CAPTURED[2]
    decoder = Decoder()
    decoder.feed(bytes.fromhex(begin))
    with pytest.raises(PgoutputError, match="relation 16384 before its Relation message"):
        decoder.feed(bytes.fromhex(insert))


def test_nothing_comes_out_before_the_commit() -> None:
    decoder = Decoder()
    assert [decoder.feed(bytes.fromhex(m)) for m in CAPTURED[:4]] == [None] * 4
    assert decoder.feed(bytes.fromhex(CAPTURED[4])) is not None


def test_an_unknown_message_kind_is_refused() -> None:
    with pytest.raises(PgoutputError, match="unknown kind 'Z'"):
        Decoder().feed(b"Z")


def test_lsn_text_round_trips() -> None:
    assert parse_lsn("0/1532AB8") == 0x1532AB8
    assert parse_lsn("16/B374D848") == (0x16 << 32) | 0xB374D848
    assert format_lsn(parse_lsn("16/B374D848")) == "16/B374D848"
    with pytest.raises(ValueError, match="not an LSN"):
        parse_lsn("1532AB8")
