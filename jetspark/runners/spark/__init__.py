"""The Spark runner: the only package of jetspark that imports pyspark.

`SparkRunner(spark_session=None, member_count=None).submit(dag, config) -> SparkJob` runs a DAG
as one Spark job: each stage (vertices joined by local edges) is a Spark stage with one task per
member, and each distributed edge a shuffle. `from_rdd`/`from_dataframe` make sources over Spark
data; `write_dataframe` a sink whose output becomes a DataFrame; `write_epochs` appends each committed
epoch's output to a table, exactly once. See docs/spark.md.
"""

from jetspark.runners.spark.epoch_tables import write_epochs as write_epochs
from jetspark.runners.spark.runner import SparkJob as SparkJob
from jetspark.runners.spark.runner import SparkRunner as SparkRunner
from jetspark.runners.spark.session import JavaNotFoundError as JavaNotFoundError
from jetspark.runners.spark.session import get_session as get_session
from jetspark.runners.spark.sinks import write_dataframe as write_dataframe
from jetspark.runners.spark.sources import from_dataframe as from_dataframe
from jetspark.runners.spark.sources import from_rdd as from_rdd

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
