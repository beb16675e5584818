"""`jetspark.runners.pickling`: code shipped by value keeps the user's file name and source lines,
whatever the cloudpickle version (3.1.3 and later rename it `<dynamic-code>`), even where the file
does not exist (an executor on another machine)."""

from __future__ import annotations

import pickle
import runpy
import subprocess
import sys
import textwrap
from pathlib import Path

from jetspark.runners.pickling import dumps_keeping_source

USER_JOB = textwrap.dedent(
    '''
    """A user's job file: its functions are not importable, so they travel by value."""


    def check(item):
        if item == 7:
            raise ValueError("item 7 is bad")
        return item


    def checker():
        return lambda item: check(item)
    '''
)

UNPICKLE_AND_CALL = textwrap.dedent(
    """
    import pickle, sys, traceback
    function = pickle.loads(open(sys.argv[1], "rb").read())
    try:
        function(7)
    except ValueError:
        traceback.print_exc()
    """
)


def _shipped(tmp_path: Path, name: str) -> Path:
    """Pickle `name` of a job file, then delete the file, as on an executor that never had it."""
    job = tmp_path / "user_job.py"
    job.write_text(USER_JOB)
    function = runpy.run_path(str(job), run_name="user_job")[name]
    if name == "checker":
        function = function()
    payload = tmp_path / "payload.pickle"
    payload.write_bytes(dumps_keeping_source(function))
    job.unlink()
    return payload


def _traceback_elsewhere(payload: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", UNPICKLE_AND_CALL, str(payload)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_function_fails_elsewhere_with_its_file_line_and_source_line(tmp_path: Path) -> None:
    trace = _traceback_elsewhere(_shipped(tmp_path, "check"))
    assert f'File "{tmp_path / "user_job.py"}", line 7, in check' in trace, trace
    assert 'raise ValueError("item 7 is bad")' in trace, trace
    assert "<dynamic-code>" not in trace


def test_nested_code_keeps_the_file_too(tmp_path: Path) -> None:
    """A lambda's code sits in its maker's constants: both come back with the real file name."""
    trace = _traceback_elsewhere(_shipped(tmp_path, "checker"))
    assert f'File "{tmp_path / "user_job.py"}", line 12, in <lambda>' in trace, trace
    assert f'File "{tmp_path / "user_job.py"}", line 7, in check' in trace, trace
    assert trace.count('raise ValueError("item 7 is bad")') == 1, trace


def test_code_keeps_its_file_name_when_unpickled_in_the_same_process(tmp_path: Path) -> None:
    job = tmp_path / "user_job.py"
    job.write_text(USER_JOB)
    check = runpy.run_path(str(job), run_name="user_job")["check"]
    restored = pickle.loads(dumps_keeping_source(check))
    assert restored.__code__.co_filename == str(job)
    assert restored(3) == 3


def _fail(item: object) -> object:
    raise ValueError(f"bad {item}")


def test_generated_chains_show_their_source_line_here_and_after_shipping(tmp_path: Path) -> None:
    """A fused map chain is generated code: its frame names the user's steps and shows the
    generated line, in this process and in another one it was shipped to."""
    from jetspark.processors._codegen import compile_chain

    chain = compile_chain([("map", _fail)], ["def run(item):"], ["return item"])
    try:
        chain(7)
    except ValueError:
        import traceback

        trace = traceback.format_exc()
    assert "run(_fail)" in trace and "item = _step0(item)" in trace, trace
    payload = tmp_path / "chain.pickle"
    payload.write_bytes(dumps_keeping_source(chain))
    shipped = _traceback_elsewhere(payload)
    assert "run(_fail)" in shipped and "item = _step0(item)" in shipped, shipped
