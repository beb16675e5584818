"""Jet's `AggregateOperation1Test` (hazelcast-jet-core, `com.hazelcast.jet.aggregate`), ported.

jetspark's `AggregateOperation` is Jet's `AggregateOperation1` (one input): `create`,
`accumulate`, `combine`, `deduct`, `export`, `finish`. Its functions return the accumulator
(Jet's mutate it), so Jet's `LongAccumulator` is a plain int. Each test is named after the Jet
case it ports.

Differences:
- `when_withIdentityFinish`: jetspark has no `with_identity_finish()`; an operation built without
  `finish` has the identity finish, which the port checks (Jet: `finishFn().apply(acc)` is `acc`).
- `when_withCombiningAccumulateFn_then_accumulateFnCombines`: no `with_combining_accumulate_fn()`;
  its counterpart is an operation whose `accumulate` is the original's `combine` (what
  `combine_by_key` does with the stage-1 accumulators it receives).
- `when_andThen_then_exportAndFinishChanged`: no `and_then(fn)`; `with_finish(fn)` sets `export`
  and `finish` to the one function given, so the port composes it with the original's `finish`
  (Jet composes `export` and `finish` each with `fn`: the same here, where both are the identity).

Skipped, with no counterpart: `accumulate0_synonymFor_accumulate` and
`when_askForNonexistentTag_then_exception` (jetspark's operations have one input and no tags), and
the classes about multi-input operations and their tags: `AggregateOperationTest` (7 cases),
`AggregateOperation2Test`, `AggregateOperation3Test` (co-aggregation of 2 or 3 inputs).
"""

from __future__ import annotations

from typing import Any

from jetspark import processors as P


def test_AggregateOperation1Test__when_build_then_allPartsThere() -> None:
    def create_fn() -> int:
        return 0

    def acc_fn0(acc: int, item: Any) -> int:
        return acc + 1

    def combine_fn(acc: int, other: int) -> int:
        return acc + other

    def deduct_fn(acc: int, other: int) -> int:
        return acc - other

    def export_fn(acc: int) -> int:
        return 1

    def finish_fn(acc: int) -> int:
        return 2

    op = P.AggregateOperation(
        create=create_fn,
        accumulate=acc_fn0,
        combine=combine_fn,
        deduct=deduct_fn,
        export=export_fn,
        finish=finish_fn,
    )

    assert op.create is create_fn
    assert op.accumulate is acc_fn0
    assert op.combine is combine_fn
    assert op.deduct is deduct_fn
    assert op.export is export_fn
    assert op.finish is finish_fn


def test_AggregateOperation1Test__when_withIdentityFinish() -> None:
    op = P.AggregateOperation(
        create=list, accumulate=lambda acc, item: [*acc, item], combine=lambda a, b: a + b
    )
    acc = op.create()
    assert op.finish(acc) is acc


def test_AggregateOperation1Test__when_withCombiningAccumulateFn_then_accumulateFnCombines() -> None:
    op = P.counting()
    combining = P.AggregateOperation(
        create=op.create, accumulate=op.combine, combine=op.combine, deduct=op.deduct, finish=op.finish
    )
    partial_acc1 = 2  # Jet: partialAcc1.set(2)
    partial_acc2 = 3
    combined_acc = combining.create()
    combined_acc = combining.accumulate(combined_acc, partial_acc1)
    combined_acc = combining.accumulate(combined_acc, partial_acc2)
    assert combined_acc == 5


def test_AggregateOperation1Test__when_andThen_then_exportAndFinishChanged() -> None:
    op = P.summing()
    inc_op = op.with_finish(lambda acc: op.finish(acc) + 1)
    acc = inc_op.accumulate(inc_op.create(), 13)
    assert inc_op.export(acc) == 14
    assert inc_op.finish(acc) == 14
