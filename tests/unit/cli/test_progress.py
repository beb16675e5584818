"""The terminal progress display: the figures it shows are the job's metrics, it is quiet when the
output is not a terminal, and `jetspark run` shows it on a pseudo-terminal unless `--quiet`."""

from __future__ import annotations

import io
import os
import pty
import re
import subprocess
import sys
import time
from pathlib import Path

from rich.console import Console

from jetspark import DAG, Edge, JobConfig
from jetspark.cli.progress import JobProgress, progress_display, spark_start_display
from jetspark.processors import collect, from_iterable
from jetspark.processors import map as map_p
from jetspark.runners.local import LocalJob, LocalRunner
from tests.gates import Gate, gated_stream
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[3]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def numbers_job(count: int) -> DAG:
    dag = DAG()
    source = dag.new_vertex("numbers", from_iterable(range(count)))
    square = dag.new_vertex("square", map_p(lambda x: x * x))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, square).distributed())
    dag.edge(Edge.between(square, sink))
    return dag


def figures_in(text: str) -> dict[str, tuple[int, int]]:
    """vertex -> (received, emitted) from the last table drawn in `text`."""
    found: dict[str, tuple[int, int]] = {}
    for line in ANSI.sub("", text).splitlines():
        match = re.match(r"\s*(\S+)(?: \(\+ [^)]*\))?\s+([\d,]+)\s+([\d,]+)", line)
        if match:
            found[match.group(1)] = (
                int(match.group(2).replace(",", "")),
                int(match.group(3).replace(",", "")),
            )
    return found


def test_the_display_shows_the_jobs_metrics_per_vertex() -> None:
    out = io.StringIO()
    job = LocalRunner(2).submit(numbers_job(5000), JobConfig(name="squares"))
    with progress_display(job, force_terminal=True, file=out, refresh=0.05):
        job.join(60)
    text = out.getvalue()
    assert "squares" in ANSI.sub("", text) and "completed" in ANSI.sub("", text)
    metrics = job.metrics()
    assert figures_in(text) == {v: (m["received"], m["emitted"]) for v, m in metrics.items()}
    assert figures_in(text)["numbers"] == (0, 5000)


def test_figures_while_running_are_read_from_the_job_and_rates_follow(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=300)
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=1000))
    sink = dag.new_vertex("sink", collect())
    dag.edge(Edge.between(source, sink))
    job: LocalJob = LocalRunner(1).submit(dag, JobConfig(name="held"))
    clock = [0.0]
    view = JobProgress(job, clock=lambda: clock[0])
    try:
        wait_until(lambda: job.metrics().get("sink", {}).get("received") == 300, "300 items in")
        view.read()
        clock[0] = 2.0
        gate.hold_at(700)
        wait_until(lambda: job.metrics().get("sink", {}).get("received") == 700, "700 items in")
        shown = drawn(view)
        assert figures_in(shown)["sink"] == (700, 0)
        assert re.search(r"sink\s+700\s+0\s+200\b", ANSI.sub("", shown)), shown  # (700 - 300) items in 2 s
    finally:
        gate.open()
        job.join(60)


def test_input_and_output_rates_are_named_and_become_the_runs_averages_at_the_end() -> None:
    clock = [0.0]
    job = LocalRunner(1).submit(numbers_job(1000), JobConfig(name="squares"))
    view = JobProgress(job, clock=lambda: clock[0])
    job.join(60)
    clock[0] = 4.0  # the job ran (as the display counts) 4 s
    shown = ANSI.sub("", drawn(view))
    assert re.search(r"vertex\s+received\s+emitted\s+in/s\s+out/s", shown), shown
    assert re.search(r"numbers\s+0\s+1,000\s+0\s+250\b", shown), shown  # a source: output only
    assert re.search(r"square\s+1,000\s+1,000\s+250\s+250\b", shown), shown
    assert "averaged over the run" in shown


def test_a_source_of_known_size_shows_its_share_emitted_and_the_time_left(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=300)
    dag = DAG()
    numbers = dag.new_vertex("numbers", from_iterable(range(1000)))
    held = dag.new_vertex("held", gated_stream(gate, count=1000))
    dag.edge(Edge.between(numbers, dag.new_vertex("sink", collect())))
    dag.edge(Edge.between(held, dag.new_vertex("held-sink", collect())))
    job: LocalJob = LocalRunner(1).submit(dag, JobConfig(name="sized"))
    clock = [0.0]
    view = JobProgress(job, clock=lambda: clock[0])
    try:
        wait_until(lambda: job.metrics().get("numbers", {}).get("emitted") == 1000, "numbers all out")
        wait_until(lambda: job.metrics().get("held", {}).get("emitted") == 300, "300 held items out")
        view.read()
        clock[0] = 2.0
        gate.hold_at(500)
        wait_until(lambda: job.metrics().get("held", {}).get("emitted") == 500, "500 held items out")
        shown = ANSI.sub("", drawn(view))
        assert "numbers: 100% of 1,000 items\n" in shown, shown
        assert "held: 50% of 1,000 items, about 5 s left" in shown, shown  # 500 left at 100/s
    finally:
        gate.open()
        job.join(60)
    assert "% of" not in ANSI.sub("", drawn(view))  # ended: no share, no time left


def test_a_line_says_when_nothing_moved_for_the_stall_time(tmp_path: Path) -> None:
    gate = Gate(tmp_path / "gate", hold_at=300)
    dag = DAG()
    source = dag.new_vertex("source", gated_stream(gate, count=1000))
    dag.edge(Edge.between(source, dag.new_vertex("sink", collect())))
    job: LocalJob = LocalRunner(1).submit(dag, JobConfig(name="held"))
    clock = [0.0]
    view = JobProgress(job, clock=lambda: clock[0], stall=30)
    try:
        wait_until(lambda: job.metrics().get("sink", {}).get("received") == 300, "300 items in")
        view.read()
        clock[0] = 29.0
        assert "no progress" not in ANSI.sub("", drawn(view))
        clock[0] = 31.0
        assert "no progress for 31 s" in ANSI.sub("", drawn(view))
        gate.hold_at(400)
        wait_until(lambda: job.metrics().get("sink", {}).get("received") == 400, "400 items in")
        clock[0] = 32.0
        assert "no progress" not in ANSI.sub("", drawn(view))  # it moved: the clock starts again
    finally:
        gate.open()
        job.join(60)
    assert "no progress" not in ANSI.sub("", drawn(view))  # an ended job is not stalled


def test_the_spark_start_line_shows_while_the_session_starts_and_how_long_it_took() -> None:
    out = io.StringIO()
    with spark_start_display("local[2]", force_terminal=True, file=out, refresh=0.01):
        wait_until(lambda: "Starting Spark (local[2]) ... " in ANSI.sub("", out.getvalue()), "the line")
    assert re.search(r"Spark \(local\[2\]\) started in \d+\.\d s", ANSI.sub("", out.getvalue()))
    quiet = io.StringIO()
    with spark_start_display("local[2]", file=quiet):
        pass
    assert quiet.getvalue() == ""  # not a terminal


def drawn(view: JobProgress) -> str:
    out = io.StringIO()
    Console(file=out, force_terminal=True, width=120).print(view.table())
    return out.getvalue()


def test_names_are_shown_as_they_are_not_as_markup() -> None:
    dag = DAG()
    source = dag.new_vertex("[bold]numbers[/bold]", from_iterable(range(10)))
    dag.edge(Edge.between(source, dag.new_vertex("sink", collect())))
    job = LocalRunner(1).run(dag, JobConfig(name="[red]x"), timeout=30)
    shown = ANSI.sub("", drawn(JobProgress(job)))
    assert "[bold]numbers[/bold]" in shown


def test_the_display_is_quiet_when_the_output_is_not_a_terminal() -> None:
    out = io.StringIO()
    job = LocalRunner(1).submit(numbers_job(100), JobConfig())
    with progress_display(job, file=out):
        job.join(60)
    assert out.getvalue() == ""


def run_on_a_terminal(*args: str, timeout: float = 120) -> str:
    """`jetspark run ...` with its standard error on a pseudo-terminal; what the terminal showed."""
    controller, terminal = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120", "TERM": "xterm"}
    process = subprocess.Popen(
        [sys.executable, "-m", "jetspark.cli.main", *args],
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=terminal,
        env=env,
    )
    os.close(terminal)
    shown = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            chunk = os.read(controller, 65536)
        except OSError:  # the other end closed: the process has ended
            break
        if not chunk:
            break
        shown += chunk
    process.wait(30)
    os.close(controller)
    assert process.returncode == 0, shown.decode(errors="replace")
    return shown.decode(errors="replace")


def test_jetspark_run_shows_the_display_on_a_terminal_and_not_with_quiet() -> None:
    example = str(ROOT / "examples" / "word_count.py")
    shown = run_on_a_terminal("run", "--local", example, "--lines", "2000")
    figures = figures_in(shown)
    assert figures["lines"] == (0, 2000) and figures["sink"][0] == figures["count"][1] > 0
    assert figures["count-prepare"][0] == 2000  # `words` is fused into it: it takes the lines
    assert "count-prepare (+ words)" in ANSI.sub("", shown), "the table says where `words` went"
    assert run_on_a_terminal("run", "--local", "--quiet", example, "--lines", "2000").strip() == ""
