"""`jetspark.filesystems.is_local`: the one answer to "is this checkpoint root (or sink path) the
machine's own disk", which the driver lock, the atomic writes, side inputs and epoch tables ask,
on executors too (whose py-files zip has no fsspec)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import fsspec
import pytest

from jetspark.filesystems import is_local

REPO_ROOT = Path(__file__).resolve().parents[2]


class Named:
    def __init__(self, protocol: str | tuple[str, ...]) -> None:
        self.protocol = protocol


def test_the_local_file_system_is_local_and_others_are_not(tmp_path: Path) -> None:
    assert is_local(fsspec.core.url_to_fs(str(tmp_path))[0])
    assert is_local(fsspec.core.url_to_fs(f"file://{tmp_path}")[0])
    assert not is_local(fsspec.filesystem("memory"))


@pytest.mark.parametrize(
    ("protocol", "local"),
    [("file", True), ("local", True), (("file", "local"), True), ("s3", False), (("s3", "s3a"), False)],
)
def test_a_protocol_given_as_one_name_or_several(protocol: str | tuple[str, ...], local: bool) -> None:
    assert is_local(Named(protocol)) is local


def test_executor_modules_that_ask_import_no_fsspec() -> None:
    """The epoch tasks and the epoch table sink are unpickled on executors without fsspec."""
    code = (
        "import sys; import jetspark.filesystems, jetspark.runners.spark.task, "
        "jetspark.runners.spark.epoch_task, jetspark.runners.spark.epoch_tables; "
        "print('fsspec' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
