"""A failed job's error names the processor's method the error came from (`engine.failure_site`)."""

from __future__ import annotations

from typing import Any

import pytest

from jetspark import DAG, Edge
from jetspark.core import AbstractProcessor
from jetspark.core.errors import JobFailedError
from jetspark.processors import collect, from_iterable, map
from jetspark.runners.local import LocalRunner


def failure_of(dag: DAG) -> JobFailedError:
    with pytest.raises(JobFailedError) as caught:
        LocalRunner().submit(dag).join()
    return caught.value


def source_into(vertex_supplier: Any, name: str = "step") -> DAG:
    dag = DAG()
    source = dag.new_vertex("source", from_iterable([1, 2, 0, 3]))
    step = dag.new_vertex(name, vertex_supplier)
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, step))
    dag.edge(Edge.between(step, sink))
    return dag


class Divide(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(self._inverse(item))

    def _inverse(self, item: int) -> float:
        return 1 / item


class FailsAtTheEnd(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)

    def complete(self) -> bool:
        raise KeyError("customer_id")


def test_a_users_processor_is_named_by_the_outermost_of_its_own_methods_not_its_helper() -> None:
    error = failure_of(source_into(Divide))
    assert str(error).startswith(
        "vertex 'step' processor #0 failed in try_process_item(): ZeroDivisionError: division by zero"
    )
    assert error.vertex == "step"


def test_an_error_whose_text_says_nothing_is_placed_by_its_method() -> None:
    error = failure_of(source_into(FailsAtTheEnd))
    assert str(error) == "vertex 'step' processor #0 failed in complete(): KeyError: 'customer_id'"


def test_a_built_in_is_named_by_the_contract_method_the_engine_called_not_a_helper() -> None:
    error = failure_of(source_into(map(lambda item: 1 / item)))
    message = str(error)
    assert message.startswith("vertex 'step' processor #0 failed in ") and "ZeroDivisionError" in message
    method = message.split("failed in ", 1)[1].split("()", 1)[0]
    assert method in {"process", "try_process"}, message


class ForgetsItsReturn(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.try_emit(item)  # type: ignore[return-value]  # the forgotten return on purpose


def test_an_error_the_engine_raises_about_a_processor_is_not_placed_in_a_method_again() -> None:
    message = str(failure_of(source_into(ForgetsItsReturn)))
    assert message.startswith("vertex 'step' processor #0 failed: ProcessorContractError: "), message
    assert "ForgetsItsReturn.try_process_item() returned None" in message


class ForgetsToSayCooperative(AbstractProcessor):
    def is_cooperative(self) -> bool:
        self.answer = False  # type: ignore[return-value]  # the forgotten return on purpose

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)


def test_is_cooperative_returning_none_fails_the_job_at_once_naming_the_method() -> None:
    message = str(failure_of(source_into(ForgetsToSayCooperative)))
    assert message.startswith("vertex 'step' processor #0 failed: ProcessorContractError: "), message
    assert "ForgetsToSayCooperative.is_cooperative() returned None (a forgotten return?)" in message
    assert "False to get a thread of its own" in message


class CannotSayCooperative(AbstractProcessor):
    def is_cooperative(self) -> bool:
        raise RuntimeError("no config")


def test_is_cooperative_raising_is_named() -> None:
    message = str(failure_of(source_into(CannotSayCooperative)))
    assert message == "vertex 'step' processor #0 failed in is_cooperative(): RuntimeError: no config"
