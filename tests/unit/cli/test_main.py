"""`jetspark run` / `submit` / `dag` command lines, without Spark: argument errors name the path and
what is expected instead; `submit` splits options, job file and job arguments; `dag` prints a DAG
without running the job."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jetspark.cli.main import SPARK_SUBMIT_FLAGS, main, split_submit


@pytest.mark.parametrize("command", [["run", "--local"], ["run"], ["submit"]])
def test_a_directory_as_the_job_file_is_reported_as_a_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """Rule (bad input named): a directory is not "not found"; the error says it is a directory and
    that a Python job file is expected, pointing at a job file inside it when there is one."""
    (tmp_path / "job.py").write_text("print('hi')\n")
    assert main([*command, str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert f"{str(tmp_path)!r} is a directory" in error, error
    assert "not found" not in error
    assert "a Python job file" in error and "job.py" in error, error


def test_a_missing_job_file_is_reported_as_not_found(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere.py"
    assert main(["run", "--local", str(missing)]) == 2
    assert f"job file {str(missing)!r} not found" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["run", "--local"], ["run"], ["submit"], ["dag"]])
@pytest.mark.parametrize(
    ("source", "line", "kind"),
    [
        ("x = 1\nif x\n    pass\n", 2, "SyntaxError"),
        ("def f():\n  a = 1\n    b = 2\n", 3, "IndentationError"),
    ],
)
def test_a_job_file_that_is_not_valid_python_is_named_with_its_line_before_anything_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], source: str, line: int, kind: str
) -> None:
    """`jetspark submit` started the JVM first and showed spark-submit's traceback; now every
    command says where, in one line, and exits 2 (a usage error) without starting anything."""
    job = tmp_path / "job.py"
    job.write_text(source)
    assert main([*command, str(job)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith(f"jetspark: {job}:{line}: {kind}: "), error
    assert "\n" not in error and "Traceback" not in error


# ---- jetspark submit: the job's arguments follow the job file ----------------------------------

SPARK_OPTIONS = st.lists(
    st.one_of(
        st.sampled_from(sorted(SPARK_SUBMIT_FLAGS)).map(lambda flag: [flag]),
        st.tuples(
            st.sampled_from(["--master", "--conf", "--py-files", "--name", "--driver-memory"]),
            st.text(alphabet="abcdefghij0123456789[]:=/.", min_size=1, max_size=12),
        ).map(list),
    ),
    max_size=4,
).map(lambda groups: [word for group in groups for word in group])
JOB_ARGS = st.lists(
    st.text(alphabet="abc-=0123456789.", min_size=1, max_size=8).filter(lambda w: w != "--"), max_size=5
)


@given(options=SPARK_OPTIONS, job_args=JOB_ARGS)
def test_split_submit_reads_options_then_the_job_file_then_the_job_arguments(
    options: list[str], job_args: list[str]
) -> None:
    """Property: whatever the options and the job's own arguments (which may look like options),
    the first word that is neither an option nor its value is the job file, and all after it go
    to the job unchanged."""
    assert split_submit([*options, "job.py", *job_args]) == (options, "job.py", job_args)


def test_split_submit_reads_the_older_form_and_refuses_a_missing_job_file() -> None:
    assert split_submit(["job.py", "--master", "local[2]", "--", "--lines", "5"]) == (
        ["--master", "local[2]"],
        "job.py",
        ["--lines", "5"],
    )
    with pytest.raises(ValueError, match="no job file given"):
        split_submit(["--master", "local[2]"])


def test_submit_without_a_job_file_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["submit", "--master", "local[2]"]) == 2
    assert "no job file given" in capsys.readouterr().err


# ---- jetspark dag: the DAG without running the job ---------------------------------------------

DAG_JOB = """
import sys
from jetspark import DAG, Edge
from jetspark.api import run
from jetspark.processors import collect, from_iterable, map

def boom(item):
    raise AssertionError("the job ran")

dag = DAG()
source = dag.new_vertex(sys.argv[1], from_iterable(range(3)))
step = dag.new_vertex("step", map(boom), local_parallelism=2)
sink = dag.new_vertex("sink", collect())
dag.edge(Edge.between(source, step).partitioned(str).distributed())
dag.edge(Edge.between(step, sink).with_priority(1))
run(dag)
raise AssertionError("run() returned")
"""


@pytest.fixture
def dag_job(tmp_path: Path) -> Path:
    job = tmp_path / "job.py"
    job.write_text(DAG_JOB)
    return job


def test_dag_prints_the_dag_as_text_without_running_the_job(
    dag_job: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["dag", str(dag_job), "numbers"]) == 0  # the job file's own argument names a vertex
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "DAG: 3 vertices, 2 edges",
        "vertices:",
        "  numbers  lp default",
        "  step     lp 2",
        "  sink     lp default",
        "edges:",
        "  numbers -> step  (partitioned, distributed)",
        "  step -> sink  (unicast, local, priority 1)",
    ]


def test_dag_prints_graphviz_dot_and_mermaid(dag_job: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dag", "--format", "dot", str(dag_job), "numbers"]) == 0
    dot = capsys.readouterr().out
    assert dot.startswith("digraph DAG {") and dot.rstrip().endswith("}")
    assert '"numbers" -> "step" [label="partitioned, distributed", style=bold];' in dot
    assert '"step" [label="step\\nlp 2"];' in dot
    assert main(["dag", "--format", "mermaid", str(dag_job), "numbers"]) == 0
    mermaid = capsys.readouterr().out.splitlines()
    assert mermaid[0] == "flowchart LR"
    assert '  v0 ==>|"partitioned, distributed"| v1' in mermaid
    assert '  v1 -->|"unicast, local, priority 1"| v2' in mermaid


@pytest.mark.parametrize("runner", ["LocalRunner(2)", "SparkRunner()"])
@pytest.mark.parametrize("plan", [[], ["--plan"]])
def test_dag_of_a_job_file_that_submits_to_a_runner_itself_shows_the_dag_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], runner: str, plan: list[str]
) -> None:
    """As examples/streaming_counts.py does: `SparkRunner().submit(dag, config)`, no `api.run`.
    `jetspark dag` used to run such a job to its end (no Spark session is started here either:
    the runner's submit hands the DAG back first)."""
    job = tmp_path / "job.py"
    job.write_text(
        DAG_JOB.replace(
            "run(dag)\n",
            f"from jetspark.runners.local import LocalRunner\n"
            f"from jetspark.runners.spark import SparkRunner\n{runner}.submit(dag).join()\n",
        )
    )
    assert main(["dag", *plan, str(job), "numbers"]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert ("numbers -> step" in out) if not plan else ("numbers" in out and "step" in out), out


def test_dag_of_a_file_that_never_calls_run_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    job = tmp_path / "nothing.py"
    job.write_text("x = 1\n")
    assert main(["dag", str(job)]) == 2
    assert "ended without calling jetspark.api.run(dag)" in capsys.readouterr().err


# ---- --start-over: a completed job runs again only when asked ----------------------------------

DURABLE_JOB = """
import sys
from jetspark import DAG, Edge, JobConfig, ProcessingGuarantee
from jetspark.api import run
from jetspark.processors import generator_stream, transactional_files

dag = DAG()
source = dag.new_vertex("source", generator_stream(count=100))
dag.edge(Edge.between(source, dag.new_vertex("sink", transactional_files(sys.argv[2]))))
config = JobConfig(
    name="cli", processing_guarantee=ProcessingGuarantee.EXACTLY_ONCE, checkpoint_root=sys.argv[1]
)
job = run(dag, config)
print("did nothing" if hasattr(job, "completed_at") else "ran")
"""


def test_a_completed_job_runs_again_only_with_start_over(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """(Without pytest's log capture the warning goes to standard error: logging's last resort.)"""
    from jetspark.api import START_OVER_ENV
    from jetspark.processors.transactional import read_lines

    # main() sets it in this process: setenv (not delenv of an unset name, which records nothing)
    # makes monkeypatch remove it afterwards, so later tests' `jetspark` children do not start over
    monkeypatch.setenv(START_OVER_ENV, "0")
    job = tmp_path / "job.py"
    job.write_text(DURABLE_JOB)
    command = ["run", "--local", "--quiet", str(job), str(tmp_path / "ck"), str(tmp_path / "out")]
    assert main(command) == 0
    assert capsys.readouterr().out.strip() == "ran"
    assert main(command) == 0
    assert capsys.readouterr().out.strip() == "did nothing" and "already completed at" in caplog.text
    assert len(read_lines(str(tmp_path / "out"))) == 100
    assert main([*command[:3], "--start-over", *command[3:]]) == 0
    assert capsys.readouterr().out.strip() == "ran"
    assert len(read_lines(str(tmp_path / "out"))) == 200, "started over: every line once more"
