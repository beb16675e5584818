"""A Hypothesis rule-based state machine that tests a processor against a plain Python model.

    class DedupModel:
        def __init__(self): self.seen = set()
        def process(self, ordinal, item):
            if item in self.seen: return []
            self.seen.add(item); return [item]

    TestDedup = processor_state_machine(Dedup, DedupModel, st.integers(0, 5),
                                        partition_key=lambda x: x).TestCase

The machine interleaves input batches, watermarks, the end of inputs, snapshots, snapshot +
restore into a fresh instance and (with `partition_key`) restore into another number of
processors, at random; after every step the processor's output so far must equal the model's.
At the end it ends the inputs and calls `complete()` (the model's `complete()` too, if it has one).

The model needs `process(ordinal, item) -> iterable of outputs`; optionally
`watermark(watermark) -> iterable` (default: the watermark is forwarded, as `AbstractProcessor`
does; it receives the watermark coalesced over the inputs, as the processor does) and
`complete() -> iterable` (default: nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from jetspark.core.suppliers import SupplierLike
from jetspark.core.watermark import Watermark
from jetspark.engine.coalescer import WatermarkCoalescer
from jetspark.testing._calls import CallLog
from jetspark.testing._context import Layout
from jetspark.testing._kinds import FailureKind, ProcessorVerificationError, Violation
from jetspark.testing._modes import Group, Mode
from jetspark.testing._report import EXPLANATIONS, describe_mismatch, same_items_any_order
from jetspark.testing._routing import InputRouting
from jetspark.testing._settings import ALL_ORDINALS, Settings
from jetspark.testing._verify import new_harness

DEFAULT_LAYOUTS = (Layout(1, 1), Layout(2, 1), Layout(1, 3))


def processor_state_machine(
    supplier: SupplierLike,
    model: Callable[[], Any],
    items: st.SearchStrategy[Any],
    *,
    ordinals: int = 1,
    watermarks: bool = True,
    any_order: bool = False,
    partition_key: Callable[[Any], Any] | None = None,
    layouts: Sequence[Layout] = DEFAULT_LAYOUTS,
    max_batch: int = 4,
    outbox_capacity: int = 1,
    complete: bool = True,
    compare_each_step: bool = True,
    incremental: bool = False,
) -> type[RuleBasedStateMachine]:
    """A state machine class testing `supplier`'s processor against `model()`; run it with
    `.TestCase` (unittest/pytest) or `hypothesis.stateful.run_state_machine_as_test`.

    With `incremental`, a processor with `changed_snapshot_keys` is snapshotted incrementally
    after its first snapshot (a full one every few), and restored from the deltas applied on it.

    With `partition_key` the inputs are partitioned by it and restores may go into any of
    `layouts`; outputs of several processors are then compared in any order.
    """

    class ProcessorMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            settings = Settings(
                inputs=[[] for _ in range(ordinals)],
                priorities=[0] * ordinals,
                logging=False,
                outbox_capacity=outbox_capacity,
            )
            if partition_key is not None:
                settings.routings[ALL_ORDINALS] = InputRouting(key_fn=partition_key)
            mode = Mode(
                group=Group.RESTORE,
                inbox_size=max_batch,
                outbox_capacity=outbox_capacity,
                snapshots=True,
                layouts=(layouts[0],),
                multi=partition_key is not None,
                incremental=incremental,
                name="stateful",
            )
            self.log = CallLog(logging_enabled=False, mode="stateful")
            self.harness = new_harness(supplier, settings, mode, self.log, 1)
            self.model = model()
            self.expected: list[Any] = []
            self.open = list(range(ordinals))
            self.last_watermark = [0] * ordinals
            self.model_coalescer = WatermarkCoalescer(ordinals, "model")
            self.history: list[str] = []
            self.broken = False
            self._run(self.harness.start)

        # ---- rules ----------------------------------------------------------------------

        @precondition(lambda self: bool(self.open))
        @rule(data=st.data())
        def feed(self, data: st.DataObject) -> None:
            ordinal = data.draw(st.sampled_from(self.open), label="ordinal")
            batch = data.draw(st.lists(items, min_size=1, max_size=max_batch), label="items")
            self._run(self.harness.feed, ordinal, batch)
            for item in batch:
                self.expected.extend(self.model.process(ordinal, item))

        @precondition(lambda self: watermarks and bool(self.open))
        @rule(data=st.data(), step=st.integers(1, 10))
        def watermark(self, data: st.DataObject, step: int) -> None:
            ordinal = data.draw(st.sampled_from(self.open), label="ordinal")
            self.last_watermark[ordinal] += step
            watermark = Watermark(self.last_watermark[ordinal])
            self._run(self.harness.feed_watermark, ordinal, watermark)
            self._model_watermarks(self.model_coalescer.observe(ordinal, watermark))

        @precondition(lambda self: len(self.open) > 1)
        @rule(data=st.data())
        def end_input(self, data: st.DataObject) -> None:
            ordinal = data.draw(st.sampled_from(self.open), label="ordinal")
            self._end(ordinal)

        @rule()
        def snapshot(self) -> None:
            self.history.append("snapshot")
            self._run(self.harness.snapshot, False)

        @rule()
        def snapshot_and_restore(self) -> None:
            self.history.append("restore")
            self._run(self.harness.snapshot, True, self.harness.layout)

        if partition_key is not None:

            @rule(layout=st.sampled_from(list(layouts)))
            def restore_into(self, layout: Layout) -> None:
                self.history.append("redistribute" if layout != self.harness.layout else "restore")
                self._run(self.harness.snapshot, True, layout)

        @invariant()
        def output_matches_model(self) -> None:
            if compare_each_step and not self.broken:
                self._compare("after the steps above")

        def teardown(self) -> None:
            try:
                if not self.broken:
                    for ordinal in list(self.open):
                        self._end(ordinal)
                    if complete:
                        self._run(self.harness.complete)
                        self.expected.extend(getattr(self.model, "complete", _nothing)())
                    self._compare("at the end (inputs ended, complete() called)")
            finally:
                if self.broken:
                    self.harness.close(None)
                else:  # an offer from close() is a violation, reported as the others are
                    self._run(self.harness.close, None)

        # ---- helpers --------------------------------------------------------------------

        def _end(self, ordinal: int) -> None:
            self.open.remove(ordinal)
            self._run(self.harness.end_input, ordinal)
            self._model_watermarks(self.model_coalescer.queue_done(ordinal))

        def _model_watermarks(self, forwarded: Iterable[Watermark]) -> None:
            for watermark in forwarded:
                on_watermark = getattr(self.model, "watermark", None)
                self.expected.extend([watermark] if on_watermark is None else on_watermark(watermark))

        def _run(self, fn: Callable[..., Any], *args: Any) -> None:
            try:
                fn(*args)
            except Violation as violation:
                self.broken = True
                kind = (
                    violation.kind if violation.kind is not FailureKind.RAISED else self._kind(violation.kind)
                )
                raise self._failure(kind, violation.message) from violation.__cause__
            except BaseException:
                self.broken = True
                raise

        def _kind(self, default: FailureKind) -> FailureKind:
            """Hypothesis shrinks the steps: a snapshot or restore left in them is needed to fail."""
            for step, kind in (
                ("redistribute", FailureKind.MISHANDLES_REDISTRIBUTION),
                ("restore", FailureKind.LOSES_STATE_ON_RESTORE),
                ("snapshot", FailureKind.SNAPSHOT_CHANGES_OUTPUT),
            ):
                if step in self.history:
                    return kind
            return default

        def _compare(self, when: str) -> None:
            actual = self.harness.outputs[0]
            unordered = any_order or partition_key is not None
            ok = same_items_any_order(self.expected, actual) if unordered else self.expected == actual
            if not ok:
                diff = describe_mismatch([self.expected], [actual], lambda _o: unordered)
                self.broken = True
                raise self._failure(
                    self._kind(FailureKind.WRONG_OUTPUT), f"output differs from the model {when}\n{diff}"
                )

        def _failure(self, kind: FailureKind, message: str) -> ProcessorVerificationError:
            calls = "\n".join(f"  {record}" for record in self.log.last())
            text = f"[{kind.title}] {message}\n{EXPLANATIONS[kind]}\nlast calls (newest last):\n{calls}"
            return ProcessorVerificationError(text, kind, "stateful")

    ProcessorMachine.__name__ = ProcessorMachine.__qualname__ = f"{_name(supplier)}Machine"
    return ProcessorMachine


def _nothing() -> list[Any]:
    return []


def _name(supplier: SupplierLike) -> str:
    return str(getattr(supplier, "__name__", type(supplier).__name__)).strip("_") or "Processor"
