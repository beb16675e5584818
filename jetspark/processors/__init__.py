"""Built-in processors: public factories returning `ProcessorSupplier`s.

The implementation classes live in the submodules and are private: only the factories, the
`AggregateOperation` type and the `Chain` builder are public, so the implementations can change
without breaking anyone. Each factory's docstring is its specification.

- sources: `from_iterable`, `generator_stream`, `directory_stream`; PostgreSQL: `postgres_cdc` (a
  stream of row changes, `pgoutput.Change`), `postgres_table` (a table read in key ranges)
- file sources: `read_text`, `read_jsonl`, `read_csv`, `read_parquet`; bad records: `BadRecord`,
  `BAD_RECORDS_METRIC` (`errors=` "fail", "skip" or "dead_letter"); formats for
  `directory_stream`: `text_format`, `jsonl_format`, `csv_format`, `parquet_format`
- transforms: `map`, `filter`, `flat_map`, `fused` (with `Chain`)
- aggregation: `AggregateOperation`, `counting`, `summing`, `to_list`, `averaging`,
  `accumulate_by_key`, `combine_by_key`, `aggregate_by_key`, `entry_key`, `whole_item`; global
  (not keyed): `aggregate`, `accumulate`, `combine`
- event time: `EventTimePolicy`, `EventTimeMapper`, `insert_watermarks`
- windows: `WindowPolicy`, `WindowResult`, `FrameEntry`, `accumulate_by_frame`,
  `combine_to_sliding_window`, `aggregate_to_sliding_window`, `window_aggregate`,
  `aggregate_to_session_window` (late items are counted in the metric `LATE_ITEMS_METRIC`)
- joins: `hash_join`, `window_join` (output `pair` by default)
- ordering: `sort`, `distinct`, `top_n` (an `AggregateOperation`)
- sinks: `collect`, `logger`, `print`, `noop`, `files`, `batches`; exactly-once: `transactional_files`,
  `write_jsonl`, `write_csv`, `write_parquet` (partitioned by a column if asked),
  `postgres` (subclass `processors.transactional.TransactionalSinkP` for another system)
"""

from jetspark.core.partitioner import whole_item as whole_item
from jetspark.processors.aggregate import AggregateOperation as AggregateOperation
from jetspark.processors.aggregate import accumulate as accumulate
from jetspark.processors.aggregate import accumulate_by_key as accumulate_by_key
from jetspark.processors.aggregate import aggregate as aggregate
from jetspark.processors.aggregate import aggregate_by_key as aggregate_by_key
from jetspark.processors.aggregate import averaging as averaging
from jetspark.processors.aggregate import combine as combine
from jetspark.processors.aggregate import combine_by_key as combine_by_key
from jetspark.processors.aggregate import counting as counting
from jetspark.processors.aggregate import entry_key as entry_key
from jetspark.processors.aggregate import summing as summing
from jetspark.processors.aggregate import to_list as to_list
from jetspark.processors.bad_records import BAD_RECORDS_METRIC as BAD_RECORDS_METRIC
from jetspark.processors.bad_records import BadRecord as BadRecord
from jetspark.processors.directory_source import directory_stream as directory_stream
from jetspark.processors.event_time import EventTimeMapper as EventTimeMapper
from jetspark.processors.event_time import EventTimePolicy as EventTimePolicy
from jetspark.processors.event_time import insert_watermarks as insert_watermarks
from jetspark.processors.file_formats import csv_format as csv_format
from jetspark.processors.file_formats import jsonl_format as jsonl_format
from jetspark.processors.file_formats import parquet_format as parquet_format
from jetspark.processors.file_formats import text_format as text_format
from jetspark.processors.file_sinks import write_csv as write_csv
from jetspark.processors.file_sinks import write_jsonl as write_jsonl
from jetspark.processors.file_sinks import write_parquet as write_parquet
from jetspark.processors.file_sources import read_csv as read_csv
from jetspark.processors.file_sources import read_jsonl as read_jsonl
from jetspark.processors.file_sources import read_parquet as read_parquet
from jetspark.processors.file_sources import read_text as read_text
from jetspark.processors.joins import hash_join as hash_join
from jetspark.processors.joins import pair as pair
from jetspark.processors.joins import window_join as window_join
from jetspark.processors.ordering import distinct as distinct
from jetspark.processors.ordering import sort as sort
from jetspark.processors.ordering import top_n as top_n
from jetspark.processors.postgres import postgres as postgres
from jetspark.processors.postgres_cdc import postgres_cdc as postgres_cdc
from jetspark.processors.postgres_table import postgres_table as postgres_table
from jetspark.processors.sessions import aggregate_to_session_window as aggregate_to_session_window
from jetspark.processors.sinks import batches as batches
from jetspark.processors.sinks import collect as collect
from jetspark.processors.sinks import files as files
from jetspark.processors.sinks import logger as logger
from jetspark.processors.sinks import noop as noop
from jetspark.processors.sinks import print as print
from jetspark.processors.sources import from_iterable as from_iterable
from jetspark.processors.sources import generator_stream as generator_stream
from jetspark.processors.transactional import transactional_files as transactional_files
from jetspark.processors.transforms import Chain as Chain
from jetspark.processors.transforms import filter as filter
from jetspark.processors.transforms import flat_map as flat_map
from jetspark.processors.transforms import fused as fused
from jetspark.processors.transforms import map as map
from jetspark.processors.windows import LATE_ITEMS_METRIC as LATE_ITEMS_METRIC
from jetspark.processors.windows import FrameEntry as FrameEntry
from jetspark.processors.windows import WindowPolicy as WindowPolicy
from jetspark.processors.windows import WindowResult as WindowResult
from jetspark.processors.windows import accumulate_by_frame as accumulate_by_frame
from jetspark.processors.windows import aggregate_to_sliding_window as aggregate_to_sliding_window
from jetspark.processors.windows import combine_to_sliding_window as combine_to_sliding_window
from jetspark.processors.windows import frame_entry_key as frame_entry_key
from jetspark.processors.windows import window_aggregate as window_aggregate

__all__ = [
    "BAD_RECORDS_METRIC",
    "LATE_ITEMS_METRIC",
    "AggregateOperation",
    "BadRecord",
    "Chain",
    "EventTimeMapper",
    "EventTimePolicy",
    "FrameEntry",
    "WindowPolicy",
    "WindowResult",
    "accumulate",
    "accumulate_by_frame",
    "accumulate_by_key",
    "aggregate",
    "aggregate_by_key",
    "aggregate_to_session_window",
    "aggregate_to_sliding_window",
    "averaging",
    "batches",
    "collect",
    "combine",
    "combine_by_key",
    "combine_to_sliding_window",
    "counting",
    "csv_format",
    "directory_stream",
    "distinct",
    "entry_key",
    "files",
    "filter",
    "flat_map",
    "frame_entry_key",
    "from_iterable",
    "fused",
    "generator_stream",
    "hash_join",
    "insert_watermarks",
    "jsonl_format",
    "logger",
    "map",
    "noop",
    "pair",
    "parquet_format",
    "postgres",
    "postgres_cdc",
    "postgres_table",
    "print",
    "read_csv",
    "read_jsonl",
    "read_parquet",
    "read_text",
    "sort",
    "summing",
    "text_format",
    "to_list",
    "top_n",
    "transactional_files",
    "whole_item",
    "window_aggregate",
    "window_join",
    "write_csv",
    "write_jsonl",
    "write_parquet",
]
