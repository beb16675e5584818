"""`jetspark run` / `jetspark submit` argument errors, without Spark: each names the path and what is
expected instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from jetspark.cli.main import main


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
