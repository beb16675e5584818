"""`FirstMemberOnly`: a vertex with one processor, on the lowest-numbered member only."""

from __future__ import annotations

from jetspark import processors as P
from jetspark.core.suppliers import FirstMemberOnly, resolve_member_supplier


def test_only_the_lowest_member_gets_the_supplier_and_one_processor() -> None:
    supplier = P.map(lambda x: x)
    meta = FirstMemberOnly(supplier)
    suppliers = meta.get([3, 1, 2])
    assert meta.preferred_local_parallelism() == 1
    assert [resolve_member_supplier(suppliers, m) for m in (1, 2, 3)] == [supplier, None, None]
