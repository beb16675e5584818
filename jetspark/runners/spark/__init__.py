"""The Spark runner: the only package of jetspark that imports pyspark.

`SparkRunner(spark_session=None, member_count=None).submit(dag, config) -> SparkJob` runs a DAG
as one Spark job: each stage (vertices joined by local edges) is a Spark stage with one task per
member, and each distributed edge a shuffle. `from_rdd`/`from_dataframe` make sources over Spark
data; `write_dataframe` a sink whose output becomes a DataFrame; `write_epochs` appends each committed
epoch's output to a table, exactly once. See docs/spark.md.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jetspark.runners.spark.epoch_tables import write_epochs as write_epochs
    from jetspark.runners.spark.runner import SparkJob as SparkJob
    from jetspark.runners.spark.runner import SparkRunner as SparkRunner
    from jetspark.runners.spark.session import JavaNotFoundError as JavaNotFoundError
    from jetspark.runners.spark.session import get_session as get_session
    from jetspark.runners.spark.sinks import write_dataframe as write_dataframe
    from jetspark.runners.spark.sources import from_dataframe as from_dataframe
    from jetspark.runners.spark.sources import from_rdd as from_rdd

#: Imported when first asked for: a Spark task imports this package (its modules are in it) and
#: needs none of the driver's runner and planning code.
_HOMES = {
    "write_epochs": "jetspark.runners.spark.epoch_tables",
    "SparkJob": "jetspark.runners.spark.runner",
    "SparkRunner": "jetspark.runners.spark.runner",
    "JavaNotFoundError": "jetspark.runners.spark.session",
    "get_session": "jetspark.runners.spark.session",
    "write_dataframe": "jetspark.runners.spark.sinks",
    "from_dataframe": "jetspark.runners.spark.sources",
    "from_rdd": "jetspark.runners.spark.sources",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOMES])


__all__ = [
    "JavaNotFoundError",
    "SparkJob",
    "SparkRunner",
    "from_dataframe",
    "from_rdd",
    "get_session",
    "write_dataframe",
    "write_epochs",
]
