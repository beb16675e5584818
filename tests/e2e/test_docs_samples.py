"""The code samples of README.md and the user docs run, and print what the docs say they print.

Each doc's ```python blocks run in order as one program on the local runner (JETSPARK_RUNNER=local,
`__name__ == "__main__"`, as `jetspark run --local` would run a job file). A block that needs Spark
is marked `<!-- not-tested: why -->` in the doc; only its imports run (tests/docs_blocks.py). The
shell commands of README's first block are checked against the repository and `jetspark run
--local` is run as a subprocess, the way a reader would type it. docs/testing.md has its own test
(tests/testing/test_docs.py).
"""

from __future__ import annotations

import configparser
import contextlib
import io
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from jetspark import DAG, Edge, JobConfig, processors
from jetspark.runners.job import JobStatus
from jetspark.runners.local import LocalRunner
from tests.docs_blocks import Block, code_blocks, python_blocks, run_python_blocks

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GETTING_STARTED = ROOT / "docs" / "getting-started.md"
DOCS = [
    README,
    GETTING_STARTED,
    ROOT / "docs" / "processor-contract.md",
    ROOT / "docs" / "architecture.md",
    ROOT / "docs" / "spark.md",
    ROOT / "docs" / "fault-tolerance.md",
    ROOT / "docs" / "planning.md",
    ROOT / "docs" / "event-time.md",
    ROOT / "docs" / "startpoints.md",
    ROOT / "docs" / "files.md",
]
JETSPARK = Path(sys.executable).with_name("jetspark")  # the venv's console script


class Ran:
    """What running one doc's Python blocks left behind: its names, its output, the blocks run."""

    def __init__(self, doc: Path) -> None:
        self.namespace: dict[str, Any] = {"__name__": "__main__"}
        output = io.StringIO()
        with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(output):
            env.setenv("JETSPARK_RUNNER", "local")
            self.blocks: list[Block] = run_python_blocks(doc, self.namespace)
        self.stdout = output.getvalue()


@pytest.fixture(scope="module")
def ran() -> dict[Path, Ran]:
    return {doc: Ran(doc) for doc in DOCS}


def jetspark_run_local(job: Path, *args: str, cwd: Path) -> str:
    """`jetspark run --local job args...` in a fresh process; its stdout (stderr shown on failure)."""
    assert JETSPARK.exists(), f"no jetspark script next to {sys.executable}: pip install -e ."
    done = subprocess.run(
        [str(JETSPARK), "run", "--local", str(job), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# ---- every doc -------------------------------------------------------------------------------


@pytest.mark.parametrize("doc", DOCS, ids=lambda doc: doc.name)
def test_every_python_block_runs_unless_marked_with_a_reason(ran: dict[Path, Ran], doc: Path) -> None:
    """Running them happened in the fixture (a failure names the doc's line); here: nothing is lost."""
    blocks = python_blocks(doc)
    assert [block for block in blocks if block.not_tested is None] == ran[doc].blocks
    assert all(block.not_tested for block in blocks if block.not_tested is not None)


def test_the_docs_that_teach_by_example_have_samples_that_run(ran: dict[Path, Ran]) -> None:
    """Guards against the extraction silently finding nothing (a changed fence, a marker everywhere)."""
    assert len(ran[README].blocks) == 1
    assert len(ran[GETTING_STARTED].blocks) == 2
    assert [block.not_tested for block in python_blocks(GETTING_STARTED)] == [
        None,
        "needs a Spark session",
        None,
    ]


def test_blocks_are_found_with_their_marker_and_line() -> None:
    text = "intro\n\n<!-- not-tested: needs Spark -->\n```python\nx = 1\n```\n\n```sh\nls\n```\n```python\ny = x\n```\n"
    assert code_blocks(text, "python") == [
        Block("python", "x = 1\n", 5, "needs Spark"),
        Block("python", "y = x\n", 12, None),
    ]
    assert [block.lang for block in code_blocks(text)] == ["python", "sh", "python"]


def test_a_failing_block_is_reported_at_its_line_in_the_doc(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("text\n\n```python\nx = 1\n\ny = x / 0\n```\n")
    with pytest.raises(ZeroDivisionError) as failure:
        run_python_blocks(doc, {})
    assert (failure.traceback[-1].path, failure.traceback[-1].lineno + 1) == (doc, 6)


def test_a_marker_without_a_reason_is_refused(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- not-tested: -->\n```python\nimport os\n```\n")
    with pytest.raises(ValueError, match="must say why"):
        run_python_blocks(doc, {})


def test_a_marked_block_runs_its_imports_only(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text("<!-- not-tested: needs Spark -->\n```python\nimport os\nspark.stop()\n```\n")
    names: dict[str, Any] = {}
    assert run_python_blocks(doc, names) == []
    assert set(names) - {"__builtins__"} == {"os"}
    doc.write_text("<!-- not-tested: needs Spark -->\n```python\nfrom jetspark import NoSuchName\n```\n")
    with pytest.raises(ImportError, match="NoSuchName"):
        run_python_blocks(doc, {})


# ---- README ----------------------------------------------------------------------------------


def test_readme_dag_counts_each_word_once_given_a_sink(ran: dict[Path, Ran]) -> None:
    """The README leaves `count` without a sink ("add a sink vertex for its pairs"): add one and run."""
    names = ran[README].namespace
    dag: DAG = names["dag"]
    sink = dag.new_vertex("sink", processors.collect())
    dag.edge(Edge.between(names["count"], sink))
    job = LocalRunner(member_count=2).run(dag, JobConfig(), timeout=60)
    assert sorted(job.result("sink")) == sorted(Counter(["to", "be", "or", "not", "to", "be"]).items())
    assert job.metrics()["words"]["emitted"] == 6  # one words processor of two has the text


def test_readme_setup_commands_name_what_exists() -> None:
    commands = code_blocks(README.read_text())[0]
    assert commands.lang == "sh"
    scripts = re.findall(r"[\w./-]+\.py\b", commands.code)
    assert scripts == ["examples/word_count.py"]
    assert all((ROOT / script).is_file() for script in scripts)
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    assert "'.[test]'" in commands.code and "test" in setup["options.extras_require"]
    assert ".venv/bin/jetspark run" in commands.code
    assert "jetspark = jetspark.cli.main:main" in setup["options.entry_points"]["console_scripts"]


def test_readme_example_runs_with_jetspark_run_local() -> None:
    stdout = jetspark_run_local(ROOT / "examples" / "word_count.py", "--lines", "200", cwd=ROOT)
    lines = stdout.splitlines()
    assert re.fullmatch(r"2400 words, \d+ distinct, on LocalJob with 1 member\(s\)", lines[0]), stdout
    assert lines[1] == "top 10:"
    assert [line.split()[0] for line in lines[2:]] == [f"{rank}." for rank in range(1, 11)]


# ---- docs/architecture.md --------------------------------------------------------------------


def test_the_planning_sample_finds_the_files_sink_by_capability_in_a_frozen_plan(
    ran: dict[Path, Ran],
) -> None:
    assert ran[ROOT / "docs" / "architecture.md"].stdout == "['out']\nfrozen\n"


# ---- docs/event-time.md ----------------------------------------------------------------------


def test_the_event_time_sample_prints_what_the_doc_says(ran: dict[Path, Ran]) -> None:
    doc = ROOT / "docs" / "event-time.md"
    printed = next(block.code for block in code_blocks(doc.read_text()) if block.lang == "")
    assert ran[doc].stdout == printed


# ---- docs/files.md -----------------------------------------------------------------------------


def test_the_files_samples_print_what_the_doc_says(ran: dict[Path, Ran]) -> None:
    """Every ```text block of docs/files.md, in order, is what its samples print."""
    doc = ROOT / "docs" / "files.md"
    printed = "".join(block.code for block in code_blocks(doc.read_text(), "text"))
    assert ran[doc].stdout == printed


# ---- docs/getting-started.md -----------------------------------------------------------------


def printed_output() -> str:
    """The ```text block that follows "Each of them prints"."""
    text = GETTING_STARTED.read_text()
    return code_blocks(text[text.index("Each of them prints") :], "text")[0].code


def test_first_job_prints_what_the_doc_says(ran: dict[Path, Ran]) -> None:
    assert ran[GETTING_STARTED].stdout == printed_output()


def test_first_job_saved_as_a_file_runs_with_jetspark_run_local(tmp_path: Path) -> None:
    """The doc's word_count.py under `jetspark run --local word_count.py` prints the doc's output."""
    job_file = tmp_path / "word_count.py"
    job_file.write_text(python_blocks(GETTING_STARTED)[0].code)
    assert jetspark_run_local(job_file.relative_to(tmp_path), cwd=tmp_path) == printed_output()


def test_suspended_job_resumes_on_three_members_and_counts_every_item_once(ran: dict[Path, Ran]) -> None:
    job = ran[GETTING_STARTED].namespace["job"]
    assert job.status is JobStatus.COMPLETED
    assert job.member_count == 3
    assert job.snapshot_count >= 1
    assert sorted(job.result("sink")) == list(range(1_000))


def test_fault_tolerance_sample_resumes_from_the_store_and_prints_what_the_doc_says(
    ran: dict[Path, Ran],
) -> None:
    doc = ROOT / "docs" / "fault-tolerance.md"
    printed = re.search(r"prints `(\[.*?\])`", doc.read_text())
    assert printed is not None
    assert ran[doc].stdout.strip() == printed.group(1)
    again = ran[doc].namespace["again"]
    assert again.job_id == ran[doc].namespace["job"].job_id, "the second submission resumed the first job"


def test_planning_doc_prints_what_it_says(ran: dict[Path, Ran]) -> None:
    """docs/planning.md: explain()'s text (but the random job id) and the job's output."""
    doc = ROOT / "docs" / "planning.md"
    shown = [b.code for b in code_blocks(doc.read_text()) if b.lang == ""]
    expected = shown[0].replace("plan of job ...:", "")
    printed = ran[doc].stdout
    assert expected.split("\n", 1)[1] in printed
    assert "[0, 2, 4] 4\n" in printed


# ---- startpoints.md --------------------------------------------------------------------------


def test_startpoints_sample_prints_what_the_doc_says(ran: dict[Path, Ran]) -> None:
    doc = ROOT / "docs" / "startpoints.md"
    said = re.search(r"^prints `(.*)`\.$", doc.read_text(), re.MULTILINE)
    assert said is not None
    assert ran[doc].stdout == said.group(1) + "\n"
