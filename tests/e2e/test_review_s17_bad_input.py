"""Review s17: the mistakes a data engineer coming from PySpark, Beam or Bytewax makes while building
a DAG, its edges, suppliers and config, and what each one gets back, on the local runner and the
`jetspark` command (no Spark is started anywhere in this file).

The project's standard: bad input gets a clear one-line error naming what is wrong (vertex, edge,
ordinal, file, option), as early as possible (at DAG build or submit, before any processing), and
loses no data. The strict xfails below are the cases that fall short of it today (late, unclear or
misleading errors, silent acceptance, a hang, lost items); each asserts what the standard asks
for. The passing tests pin cases that are right and were not tested yet.
"""

from __future__ import annotations

import logging
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, AbstractProcessor, Edge, JobConfig, traverse_iterable
from jetspark import processors as P
from jetspark.api import PROGRESS_ENV, RUNNER_ENV
from jetspark.cli.main import main
from jetspark.core.errors import DagValidationError, JobFailedError
from jetspark.core.suppliers import ProcessorMetaSupplier, ProcessorSupplier
from jetspark.runners.local import LocalRunner
from jetspark.runners.spark.session import MASTER_ENV

TIMEOUT = 20


class Passthrough(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        return self.try_emit(item)


def chain(sink: Any = None) -> tuple[DAG, Any, Any]:
    """A DAG with a source `a` of 1, 2, 3 and a vertex `b` (a collecting sink unless given)."""
    dag = DAG()
    a = dag.new_vertex("a", P.from_iterable([1, 2, 3]))
    b = dag.new_vertex("b", sink if sink is not None else P.collect())
    return dag, a, b


def refusal(build: Callable[[], DAG], config: JobConfig | None = None) -> BaseException:
    """The error that building the DAG or submitting it raises, before any processor runs. A job
    that is submitted is run to its end (a failure there propagates) and the test then fails."""
    try:
        dag = build()
        job = LocalRunner(member_count=2).submit(dag, config)
    except Exception as error:
        return error
    job.join(TIMEOUT)
    pytest.fail("the mistake was accepted at build and submit, and the job ran")


def said(
    caplog: pytest.LogCaptureFixture,
    caught: list[warnings.WarningMessage],
    capsys: pytest.CaptureFixture[str],
) -> str:
    """Every warning jetspark logged, issued or printed to standard error, as one text."""
    logged = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    return "\n".join([*logged, *(str(w.message) for w in caught), capsys.readouterr().err])


# ---- edges: ordinals, priorities, queue sizes of the wrong type -----------------------------------


@pytest.mark.parametrize("ordinal", ["1", None])
def test_an_ordinal_that_is_not_an_int_is_refused_naming_the_edge(ordinal: Any) -> None:
    def build() -> DAG:
        dag, a, b = chain()
        a2 = dag.new_vertex("a2", P.from_iterable([4]))
        dag.edge(Edge.between(a, b))
        dag.edge(Edge.from_(a2).to(b, ordinal))
        return dag

    message = str(refusal(build))
    assert "a2" in message and "ordinal" in message, message


@pytest.mark.parametrize("priority", ["high", None])
def test_a_priority_that_is_not_an_int_is_refused_naming_the_edge(priority: Any) -> None:
    def build() -> DAG:
        dag, a, b = chain()
        dag.edge(Edge.between(a, b).with_priority(priority))
        return dag

    message = str(refusal(build))
    assert "a[0] -> b[0]" in message and "priority" in message, message


@pytest.mark.parametrize("size", ["10", 2.5])
def test_a_queue_size_that_is_not_an_int_is_refused_naming_the_edge(size: Any) -> None:
    def build() -> DAG:
        dag, a, b = chain()
        dag.edge(Edge.between(a, b).with_queue_size(size))
        return dag

    message = str(refusal(build))
    assert "a[0] -> b[0]" in message and "queue size" in message, message


@pytest.mark.parametrize("how", ["same edge twice", "edge object reused"])
def test_adding_one_edge_object_twice_says_so(how: str) -> None:
    dag, a, b = chain()
    c = dag.new_vertex("c", P.collect())
    edge = Edge.from_(a)
    dag.edge(edge.to(b))
    with pytest.raises(DagValidationError) as caught:
        dag.edge(edge if how == "same edge twice" else edge.to(c))
    message = str(caught.value)
    assert "Edge.from_(a, 1)" not in message, message
    assert "already in" in message or "already added" in message, message


@pytest.mark.parametrize("what", ["none", "tuple"])
def test_dag_edge_of_something_that_is_not_an_edge_says_what_it_takes(what: str) -> None:
    dag, a, b = chain()
    with pytest.raises(TypeError) as caught:
        dag.edge(None if what == "none" else (a, b))  # type: ignore[arg-type]
    assert "Edge.between" in str(caught.value), caught.value


def test_an_edge_retargeted_to_another_dags_vertex_is_refused_at_submit() -> None:
    def build() -> DAG:
        dag, a, b = chain()
        other = DAG().new_vertex("c", P.collect())
        edge = Edge.between(a, b)
        dag.edge(edge)
        edge.to(other)
        return dag

    error = refusal(build)
    assert isinstance(error, DagValidationError) and "'c'" in str(error), repr(error)


def test_an_all_to_one_edge_with_an_unhashable_key_names_the_edge() -> None:
    def build() -> DAG:
        dag, a, b = chain()
        dag.edge(Edge.between(a, b).all_to_one([1]))
        return dag

    message = str(refusal(build))
    assert "a[0] -> b[0]" in message and "unhashable" in message, message


def minus_one(key: Any, partition_count: int) -> int:
    return -1


def test_a_partitioner_returning_a_negative_partition_fails_naming_the_edge() -> None:
    dag, a, b = chain()
    dag.edge(Edge.between(a, b).partitioned(lambda item: item, minus_one).distributed())
    with pytest.raises(JobFailedError) as caught:
        LocalRunner(member_count=2).run(dag, timeout=TIMEOUT)
    assert "a[0] -> b[0]" in str(caught.value) and "-1" in str(caught.value), caught.value


# ---- vertices and their suppliers -------------------------------------------------------------


@pytest.mark.parametrize("supplier", [Passthrough(), None, [1, 2, 3]], ids=["instance", "none", "list"])
def test_a_supplier_that_is_no_supplier_names_the_vertex(supplier: Any) -> None:
    with pytest.raises(TypeError) as caught:
        DAG().new_vertex("m", supplier)
    assert "'m'" in str(caught.value), caught.value


class SharedSupplier(ProcessorSupplier):
    def get(self, count: int) -> list[Any]:
        one = Passthrough()
        return [one] * count


class TopLevelMeta(ProcessorMetaSupplier):
    def get(self, member_indexes: Any) -> Any:
        return {m: ProcessorSupplier.of(Passthrough) for m in member_indexes}


@pytest.mark.parametrize("kind", [SharedSupplier, TopLevelMeta], ids=["supplier-class", "meta-class"])
def test_a_supplier_class_instead_of_an_instance_is_refused_at_build(kind: type) -> None:
    with pytest.raises(TypeError) as caught:
        DAG().new_vertex("m", kind)
    assert "'m'" in str(caught.value) and f"{kind.__name__}()" in str(caught.value), caught.value


def test_a_processor_factory_not_called_says_to_call_it() -> None:
    dag, a, b = chain(sink=P.collect)
    dag.edge(Edge.between(a, b))
    with pytest.raises((DagValidationError, JobFailedError)) as caught:
        LocalRunner(member_count=2).run(dag, timeout=TIMEOUT)
    assert "collect()" in str(caught.value), caught.value


class NoneSupplier(ProcessorSupplier):
    def get(self, count: int) -> Any:
        return None


def test_a_supplier_get_returning_none_says_so() -> None:
    dag, a, b = chain()
    m = dag.new_vertex("m", NoneSupplier())
    dag.edge(Edge.between(a, m))
    dag.edge(Edge.between(m, b))
    with pytest.raises((DagValidationError, JobFailedError)) as caught:
        LocalRunner(member_count=2).run(dag, timeout=TIMEOUT)
    assert "'m'" in str(caught.value) and "returned None" in str(caught.value), caught.value


class Summing(AbstractProcessor):
    def init_processor(self, context: Any) -> None:
        self.total: int = 0
        self.results: Any = None

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.total += item
        return True

    def complete(self) -> bool:
        self.results = self.results or traverse_iterable([self.total])
        return self.emit_from_traverser(self.results)


@pytest.mark.parametrize("how", ["factory", "get"])
def test_a_supplier_returning_one_instance_for_every_processor_is_refused(how: str) -> None:
    shared = Summing()
    dag, a, b = chain()
    supplier: Any = (lambda: shared) if how == "factory" else SharedSupplier()
    # `get` makes one object per call, so it shares it only between a member's processors
    m = dag.new_vertex("m", supplier, local_parallelism=1 if how == "factory" else 2)
    dag.edge(Edge.between(a, m).distributed())
    dag.edge(Edge.between(m, b))
    with pytest.raises((DagValidationError, JobFailedError)) as caught:
        LocalRunner(member_count=2).run(dag, timeout=TIMEOUT)
    assert "'m'" in str(caught.value) and "same" in str(caught.value), caught.value


@pytest.mark.xfail(
    strict=True,
    reason="a built-in source (from_iterable) given an inbound edge is accepted at build and "
    "submit; the job fails only when the first item reaches it (NotImplementedError: "
    "_FromIterableP ... does not override try_process_item()), and never when none does; "
    "should be refused at dag.edge()/submit naming vertex 'm'",
)
def test_a_source_with_an_inbound_edge_is_refused_before_processing() -> None:
    def build() -> DAG:
        dag, a, b = chain()
        m = dag.new_vertex("m", P.from_iterable([7, 8]))
        dag.edge(Edge.between(a, m))
        dag.edge(Edge.between(m, b))
        return dag

    error = refusal(build)
    assert isinstance(error, DagValidationError) and "'m'" in str(error), repr(error)


@pytest.mark.parametrize(
    "mistake",
    [
        "transform without outbound edge",
        pytest.param(
            "sink with outbound edge",
            marks=pytest.mark.xfail(
                strict=True,
                reason="a collect sink given an outbound edge feeds nothing downstream, without a "
                "word (a sink never emits, so nothing is dropped to warn of; the DAG would have to "
                "know which vertices are sinks); should be refused or warned about, naming the vertex",
            ),
        ),
    ],
)
def test_items_with_nowhere_to_go_are_reported(
    mistake: str, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    dag, a, b = chain()
    named = "m"
    if mistake == "transform without outbound edge":
        dag = DAG()
        a = dag.new_vertex("a", P.from_iterable([1, 2, 3]))
        dag.edge(Edge.between(a, dag.new_vertex("m", P.map(lambda x: x * 10))))
    else:
        named = "b"
        dag.edge(Edge.between(a, b))
        dag.edge(Edge.between(b, dag.new_vertex("c", P.collect())))
    with caplog.at_level(logging.WARNING), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            LocalRunner(member_count=2).run(dag, timeout=TIMEOUT)
        except DagValidationError as error:
            assert f"'{named}'" in str(error), error
            return
    text = said(caplog, caught, capsys)
    assert f"'{named}'" in text, text


@pytest.mark.xfail(
    strict=True,
    reason="a collect sink with no inbound edge (the user forgot dag.edge) runs and its result is "
    "[] without a word (the planner prunes it silently); should be refused or warned about "
    "naming vertex 'b'",
)
def test_a_sink_without_an_inbound_edge_is_reported(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    dag, a, _sink = chain()
    m = dag.new_vertex("m", P.map(str))
    dag.edge(Edge.between(a, m))  # ... and m -> b forgotten
    with caplog.at_level(logging.WARNING), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            LocalRunner(member_count=2).run(dag, timeout=TIMEOUT)
        except DagValidationError as error:
            assert "'b'" in str(error), error
            return
    text = said(caplog, caught, capsys)
    assert "'b'" in text, text


class Misspelled(AbstractProcessor):
    def init_processor(self, context: Any) -> None:
        self.total = 0

    def try_process_item(self, ordinal: int, item: Any) -> bool:
        self.total += item
        return True

    def compelte(self) -> bool:  # the user meant complete()
        return self.try_emit(self.total)


def test_a_misspelled_processor_method_is_reported(
    caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    dag, a, b = chain()
    m = dag.new_vertex("m", Misspelled)
    dag.edge(Edge.between(a, m))
    dag.edge(Edge.between(m, b))
    with caplog.at_level(logging.WARNING), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            LocalRunner(member_count=1).run(dag, timeout=TIMEOUT)
        except Exception as error:
            assert "compelte" in str(error) and "complete" in str(error), error
            return
    text = said(caplog, caught, capsys)
    assert "compelte" in text and "complete" in text.replace("compelte", ""), text


# ---- runner and submit arguments ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("batch_size", 0),
        ("batch_size", -1),
        ("batch_size", "10"),
        ("max_restarts", "3"),
        ("max_restarts", 1.5),
    ],
)
def test_a_bad_local_runner_option_is_refused_naming_it(option: str, value: Any) -> None:
    with pytest.raises((TypeError, ValueError), match=option):
        LocalRunner(**{option: value})


@pytest.mark.parametrize("how", ["dict config", "swapped", "not a dag"])
def test_submit_of_the_wrong_arguments_says_what_it_takes(how: str) -> None:
    dag, a, b = chain()
    dag.edge(Edge.between(a, b))
    args: tuple[Any, ...] = {
        "dict config": (dag, {"member_count": 2}),
        "swapped": (JobConfig(), dag),
        "not a dag": ([a, b],),
    }[how]
    with pytest.raises(TypeError) as caught:
        LocalRunner().submit(*args)
    assert "DAG" in str(caught.value) and "JobConfig" in str(caught.value), caught.value


# ---- the jetspark command -------------------------------------------------------------------------


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    """`main` sets the runner's environment and runs the job file with its own argv and path."""
    monkeypatch.setenv(RUNNER_ENV, "local")
    monkeypatch.setenv(PROGRESS_ENV, "off")
    monkeypatch.delenv(MASTER_ENV, raising=False)
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))


def job_file(tmp_path: Path, text: str, name: str = "job.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


BUILT_NOT_RUN = """\
from jetspark import DAG, Edge
from jetspark import processors as P

dag = DAG()
source = dag.new_vertex("source", P.from_iterable([1, 2]))
dag.edge(Edge.between(source, dag.new_vertex("sink", P.print())))
"""


@pytest.mark.usefixtures("isolated")
def test_run_of_a_job_file_that_never_calls_run_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["run", "--local", str(job_file(tmp_path, BUILT_NOT_RUN))])
    error = capsys.readouterr().err
    assert status != 0 and "ended without calling jetspark.api.run(dag)" in error, (status, error)


CYCLE = """\
from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.api import run

dag = DAG()
a = dag.new_vertex("a", P.map(str))
b = dag.new_vertex("b", P.map(str))
dag.edge(Edge.between(a, b))
dag.edge(Edge.between(b, a))
run(dag)
"""

GAP = """\
from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.api import run

dag = DAG()
a = dag.new_vertex("a", P.from_iterable([1]))
a2 = dag.new_vertex("a2", P.from_iterable([2]))
b = dag.new_vertex("b", P.print())
dag.edge(Edge.between(a, b))
dag.edge(Edge.from_(a2).to(b, 2))
run(dag)
"""


@pytest.mark.usefixtures("isolated")
def test_dag_of_a_cyclic_dag_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["dag", str(job_file(tmp_path, CYCLE))])
    error = capsys.readouterr().err
    assert status != 0 and "the DAG has a cycle through vertices ['a', 'b']" in error, (status, error)


@pytest.mark.usefixtures("isolated")
def test_dag_of_an_invalid_dag_says_it_is_invalid(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["dag", str(job_file(tmp_path, GAP))])
    captured = capsys.readouterr()
    assert "without gaps" in captured.out + captured.err, captured


UNPICKLABLE_KEY = """\
import threading

from jetspark import DAG, Edge
from jetspark import processors as P
from jetspark.api import run

lock = threading.Lock()


def key(item):
    with lock:
        return item


dag = DAG()
source = dag.new_vertex("source", P.from_iterable([1, 2, 3]))
dag.edge(Edge.between(source, dag.new_vertex("sink", P.print())).partitioned(key).distributed())
run(dag)
"""


@pytest.mark.usefixtures("isolated")
def test_dag_plan_says_a_key_function_will_not_ship_to_spark(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = main(["dag", "--plan", str(job_file(tmp_path, UNPICKLABLE_KEY))])
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err, captured.err  # the job file itself is fine
    assert status == 0  # a warning: the plan may be for the local runner, where nothing is pickled
    assert "cannot be pickled" in captured.out + captured.err, (status, captured)


ECHO_RUNNER = """\
import os
import sys

print("runner", os.environ.get("JETSPARK_RUNNER"), "args", sys.argv[1:])
"""


@pytest.mark.usefixtures("isolated")
def test_local_after_the_job_file_is_pointed_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # The job file only prints what it sees: no runner, no Spark session is started.
    main(["run", str(job_file(tmp_path, ECHO_RUNNER)), "--local"])
    captured = capsys.readouterr()
    assert "runner spark" in captured.out, captured  # what happens now, the premise of the test
    assert "--local" in captured.err, captured


# ---- right, and not tested before -----------------------------------------------------------------


class MisspelledInput(AbstractProcessor):
    def try_process_items(self, ordinal: int, item: Any) -> bool:  # the user meant try_process_item
        return self.try_emit(item)


def test_a_misspelled_try_process_item_fails_naming_the_vertex_and_the_method() -> None:
    """The processor never overrides try_process_item: the first item fails the job naming the
    vertex, the class and the method it must override, rather than dropping the items."""
    dag, a, b = chain()
    m = dag.new_vertex("m", MisspelledInput)
    dag.edge(Edge.between(a, m))
    dag.edge(Edge.between(m, b))
    with pytest.raises(JobFailedError) as caught:
        LocalRunner(member_count=2).run(dag, timeout=TIMEOUT)
    message = str(caught.value)
    assert message.startswith("vertex 'm' processor #"), message
    assert "MisspelledInput received an item on ordinal 0" in message, message
    assert "does not override try_process_item()" in message, message


class Ignoring(AbstractProcessor):
    def try_process_item(self, ordinal: int, item: Any) -> bool:
        for copy in range(5):
            self.try_emit((item, copy))  # the refusal of a full outbox is ignored
        return True


def test_ignoring_a_refused_offer_fails_the_job_instead_of_dropping_items() -> None:
    """A Beam/Bytewax habit: emit and move on. With a queue of one the outbox refuses an offer;
    the next offer in the same call fails the job naming the vertex and the item, so no item is
    dropped silently."""
    dag = DAG()
    a = dag.new_vertex("a", P.from_iterable(range(500)))
    m = dag.new_vertex("m", Ignoring)
    b = dag.new_vertex("b", P.collect())
    dag.edge(Edge.between(a, m))
    dag.edge(Edge.between(m, b).with_queue_size(1))
    with pytest.raises(JobFailedError) as caught:
        LocalRunner(member_count=1).run(dag, timeout=TIMEOUT)
    message = str(caught.value)
    assert message.startswith("vertex 'm' processor #0 failed in try_process_item()"), message
    assert "offer() called again in the same call after it returned False" in message, message


class TooFew(ProcessorSupplier):
    def get(self, count: int) -> list[Any]:
        return [Passthrough()]


def test_a_supplier_making_too_few_processors_fails_before_any_item_is_collected() -> None:
    dag, a, b = chain()
    m = dag.new_vertex("m", TooFew(), local_parallelism=2)
    dag.edge(Edge.between(a, m))
    dag.edge(Edge.between(m, b))
    with pytest.raises(JobFailedError) as caught:
        LocalRunner(member_count=2).run(dag, timeout=TIMEOUT)
    assert "vertex 'm': supplier returned 1 processors on member 0, expected 2" in str(caught.value)


@pytest.mark.usefixtures("isolated")
def test_run_local_of_an_ordinal_gap_is_one_line_naming_the_vertex_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A gap (0 and 2) is found at submit: one line naming the vertex and its ordinals, pointing at
    the user's run(dag) line; no item is printed by the sink."""
    job = job_file(tmp_path, GAP)
    assert main(["run", "--local", str(job)]) == 1
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert lines[0] == (
        "jetspark: DagValidationError: vertex 'b': inbound edge ordinals must be 0..1 without gaps, got [0, 2]"
    ), captured.err
    assert lines[1].startswith(f"  at {job}:11 in <module>: run(dag)"), captured.err
    assert "Traceback" not in captured.err
    assert captured.out == "", captured.out  # the print sink never ran
