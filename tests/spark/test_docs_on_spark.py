"""Doc samples that say they run on Spark too do: run through `jetspark.api.run` on the session."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from tests.docs_blocks import code_blocks, python_blocks

pytestmark = pytest.mark.spark

EVENT_TIME = Path(__file__).resolve().parents[2] / "docs" / "event-time.md"


def test_the_first_event_time_example_prints_the_same_on_spark(
    spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run(dag)` picks the running session when JETSPARK_RUNNER is unset; the output is the doc's."""
    monkeypatch.delenv("JETSPARK_RUNNER", raising=False)
    first = python_blocks(EVENT_TIME)[0]
    printed = next(block.code for block in code_blocks(EVENT_TIME.read_text()) if block.lang == "")
    namespace: dict[str, Any] = {"__name__": "__main__"}
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(first.code, str(EVENT_TIME), "exec"), namespace)
    assert type(namespace["job"]).__name__ == "SparkJob"
    assert output.getvalue() == printed


@pytest.mark.parametrize("name", ["from_rdd", "from_dataframe", "write_dataframe"])
def test_the_spark_data_reference_examples_print_what_they_show(spark: Any, name: str) -> None:
    import jetspark.runners.spark as spark_runner
    from tests.unit.processors.test_reference_examples import examples, run_example

    (code,) = examples(getattr(spark_runner, name))
    assert run_example(name, code, spark=spark) == ""


def test_the_write_epochs_reference_example_prints_what_it_shows(spark: Any, tmp_path: Path) -> None:
    import jetspark.runners.spark as spark_runner
    from tests.unit.processors.test_reference_examples import examples, run_example

    (code,) = examples(spark_runner.write_epochs)
    assert run_example("write_epochs", code, spark=spark, folder=str(tmp_path)) == ""


SPARK_DOC = Path(__file__).resolve().parents[2] / "docs" / "spark.md"


def test_the_dataframes_in_streaming_jobs_example_prints_what_the_doc_shows(spark: Any) -> None:
    """docs/spark.md, 'DataFrames in streaming jobs': the block and the output block after it."""
    blocks = code_blocks(SPARK_DOC.read_text())
    index = next(
        i for i, block in enumerate(blocks) if "write_epochs(" in block.code and block.lang == "python"
    )
    printed = blocks[index + 1]
    assert printed.lang == ""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        exec(compile(blocks[index].code, str(SPARK_DOC), "exec"), namespace)
    assert output.getvalue().rstrip("\n") == printed.code.rstrip("\n")  # show() ends with a blank line
