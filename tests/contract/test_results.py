"""Rule: the contract's bool methods return True or False. Anything else, above all the None of a
forgotten `return`, is a `ProcessorContractError` naming the class and the method: read as False,
it would have the engine call the method again with the same input forever."""

from __future__ import annotations

from typing import Any

import pytest

from jetspark import processors as P
from jetspark.core import AbstractProcessor, Edge, JobConfig, Processor, ProcessorContractError
from jetspark.core.dag import DAG
from jetspark.core.errors import JobFailedError
from jetspark.core.inbox import Inbox
from jetspark.core.watermark import Watermark
from jetspark.runners.local import LocalRunner
from tests.contract.conftest import JOB_TIMEOUT
from tests.contract.harness import DONE, TaskletHarness

ITEM_METHODS = ["try_process_item", "try_process0"]
CALL_METHODS = [
    "try_process",
    "complete_edge",
    "complete",
    "try_process_watermark",
    "save_to_snapshot",
    "snapshot_commit_prepare",
    "snapshot_commit_finish",
    "finish_snapshot_restore",
]


class Forgetful(AbstractProcessor):
    """Returns `result` from `method` and behaves well everywhere else."""

    def __init__(self, method: str, result: Any) -> None:
        self.method = method
        self.result = result

    def _answer(self, method: str, normal: bool) -> Any:
        return self.result if method == self.method else normal

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self._answer("try_process_item", self.try_emit(item))  # type: ignore[no-any-return]

    def try_process(self) -> bool:
        return self._answer("try_process", True)  # type: ignore[no-any-return]

    def complete_edge(self, ordinal: int) -> bool:
        return self._answer("complete_edge", True)  # type: ignore[no-any-return]

    def complete(self) -> bool:
        return self._answer("complete", True)  # type: ignore[no-any-return]

    def try_process_watermark(self, watermark: Watermark) -> bool:
        return self._answer("try_process_watermark", True)  # type: ignore[no-any-return]

    def save_to_snapshot(self) -> bool:
        return self._answer("save_to_snapshot", True)  # type: ignore[no-any-return]

    def snapshot_commit_prepare(self) -> bool:
        return self._answer("snapshot_commit_prepare", True)  # type: ignore[no-any-return]

    def snapshot_commit_finish(self, success: bool) -> bool:
        return self._answer("snapshot_commit_finish", True)  # type: ignore[no-any-return]

    def restore_from_snapshot(self, inbox: Inbox) -> None:
        inbox.drain(lambda _entry: None)

    def finish_snapshot_restore(self) -> bool:
        return self._answer("finish_snapshot_restore", True)  # type: ignore[no-any-return]


class ForgetfulPerOrdinal(AbstractProcessor):
    def try_process0(self, item: Any) -> bool:
        self.try_emit(item)  # and no return
        return None  # type: ignore[return-value]


def drive(processor: Processor, method: str) -> None:
    """Take `processor` through the calls that reach `method`."""
    if method in ("save_to_snapshot", "snapshot_commit_prepare", "snapshot_commit_finish"):
        harness = TaskletHarness(processor, inbound=[(0, 1)], outbound=1)
        harness.snapshot.start(1)
        harness.feed(0, 0, "a", DONE)
    elif method == "finish_snapshot_restore":
        harness = TaskletHarness(processor, inbound=[(0, 1)], outbound=1, restore=[("key", "value")])
        harness.feed(0, 0, "a", DONE)
    else:
        harness = TaskletHarness(processor, inbound=[(0, 1)], outbound=1)
        harness.feed(0, 0, "a", Watermark(5), "b", DONE)
    harness.run(max_calls=100)


@pytest.mark.parametrize("result", [None, 0, "", "yes", 1])
@pytest.mark.parametrize("method", CALL_METHODS)
def test_a_call_method_that_returns_no_bool_fails_naming_class_and_method(method: str, result: Any) -> None:
    with pytest.raises(ProcessorContractError) as caught:
        drive(Forgetful(method, result), method)
    message = str(caught.value)
    assert f"Forgetful.{method}() returned {result!r}" in message
    assert "not True or False" in message
    if result is None:
        assert "a forgotten return?" in message
    line = getattr(Forgetful, method).__code__.co_firstlineno
    assert f"(Forgetful.{method} is at " in message and message.endswith(f"test_results.py:{line})"), (
        "it points at the method, not at the line that ran the job"
    )


@pytest.mark.parametrize("result", [None, 0, ""])
def test_try_process_item_that_returns_a_falsy_non_bool_fails_instead_of_getting_the_item_forever(
    result: Any,
) -> None:
    with pytest.raises(ProcessorContractError, match=rf"Forgetful\.try_process_item\(\) returned {result!r}"):
        drive(Forgetful("try_process_item", result), "try_process_item")


def test_a_truthy_result_of_try_process_item_counts_as_true() -> None:
    """Per item, only results that read as False are checked: that check costs nothing per item."""
    harness = TaskletHarness(Forgetful("try_process_item", 1), inbound=[(0, 1)], outbound=1)
    harness.feed(0, 0, "a", "b", DONE)
    harness.run(max_calls=100)
    assert harness.tasklet.is_done
    assert harness.output() == ["a", "b", DONE]


def test_a_forgotten_return_in_try_process0_names_try_process0() -> None:
    with pytest.raises(
        ProcessorContractError, match=r"ForgetfulPerOrdinal\.try_process0\(\) returned None"
    ) as caught:
        drive(ForgetfulPerOrdinal(), "try_process0")
    line = ForgetfulPerOrdinal.try_process0.__code__.co_firstlineno
    assert f"(ForgetfulPerOrdinal.try_process0 is at tests/contract/test_results.py:{line})" in str(
        caught.value
    )


def test_a_job_whose_processor_forgets_its_return_fails_at_once_instead_of_duplicating_items() -> None:
    """As a user meets it: the job fails naming the vertex, the class and the method; before, the
    item was offered again forever (111 k duplicates in 6 s) and the job never ended."""
    dag = DAG()
    source = dag.new_vertex("source", P.from_iterable(range(10)))
    forgot = dag.new_vertex("forgot", lambda: ForgetfulPerOrdinal())
    sink = dag.new_vertex("sink", P.collect())
    dag.edge(Edge.between(source, forgot)).edge(Edge.between(forgot, sink))
    job = LocalRunner().submit(dag, JobConfig())
    with pytest.raises(JobFailedError) as caught:
        job.join(JOB_TIMEOUT)
    assert caught.value.vertex == "forgot"
    assert isinstance(caught.value.__cause__, ProcessorContractError)
    assert "ForgetfulPerOrdinal.try_process0() returned None (a forgotten return?)" in str(caught.value)
    assert len(job.result("sink")) <= 1  # the one item offered before the error, if it got out
