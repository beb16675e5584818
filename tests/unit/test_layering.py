"""The layering contracts of setup.cfg (import-linter), checked as part of the test run."""

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_import_contracts_are_kept() -> None:
    lint_imports = Path(sys.executable).parent / "lint-imports"
    assert lint_imports.exists(), f"{lint_imports} is missing: pip install -e '.[test]'"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")])),
    }
    result = subprocess.run(
        [str(lint_imports), "--no-cache", "--no-logo"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


def test_a_spark_task_loads_no_driver_only_planning() -> None:
    """What a Spark task imports to unpickle its spec and run (`runners.spark.task`,
    `epoch_task`) brings in the plan's records, not the pipeline, fusion or the driver's runner."""
    code = (
        "import sys, jetspark.runners.spark.task, jetspark.runners.spark.epoch_task\n"
        "print(' '.join(sorted(sys.modules)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    loaded = set(result.stdout.split())
    assert "jetspark.planning.plan" in loaded
    driver_only = {
        "jetspark.planning.pipeline",
        "jetspark.planning.fusion",
        "jetspark.planning.explain",
        "jetspark.runners.spark.runner",
        "jetspark.runners.coordinator",
    }
    assert loaded & driver_only == set()
