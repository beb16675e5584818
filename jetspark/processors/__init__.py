"""Built-in processors: public factories returning `ProcessorSupplier`s.

The implementation classes live in the submodules and are private: only the factories, the
`AggregateOperation` type and the `Chain` builder are public, so the implementations can change
without breaking anyone. Each factory's docstring is its specification.

- sources: `from_iterable`, `generator_stream`, `directory_stream`
- transforms: `map`, `filter`, `flat_map`, `fused` (with `Chain`)
- aggregation: `AggregateOperation`, `counting`, `summing`, `to_list`, `averaging`,
  `accumulate_by_key`, `combine_by_key`, `aggregate_by_key`, `entry_key`, `whole_item`
- sinks: `collect`, `logger`, `noop`, `files`, `batches`; exactly-once: `transactional_files`,
  `postgres` (subclass `processors.transactional.TransactionalSinkP` for another system)
"""

from jetspark.core.partitioner import whole_item as whole_item
from jetspark.processors.aggregate import AggregateOperation as AggregateOperation
from jetspark.processors.aggregate import accumulate_by_key as accumulate_by_key
from jetspark.processors.aggregate import aggregate_by_key as aggregate_by_key
from jetspark.processors.aggregate import averaging as averaging
from jetspark.processors.aggregate import combine_by_key as combine_by_key
from jetspark.processors.aggregate import counting as counting
from jetspark.processors.aggregate import entry_key as entry_key
from jetspark.processors.aggregate import summing as summing
from jetspark.processors.aggregate import to_list as to_list
from jetspark.processors.directory_source import directory_stream as directory_stream
from jetspark.processors.postgres import postgres as postgres
from jetspark.processors.sinks import batches as batches
from jetspark.processors.sinks import collect as collect
from jetspark.processors.sinks import files as files
from jetspark.processors.sinks import logger as logger
from jetspark.processors.sinks import noop as noop
from jetspark.processors.sources import from_iterable as from_iterable
from jetspark.processors.sources import generator_stream as generator_stream
from jetspark.processors.transactional import transactional_files as transactional_files
from jetspark.processors.transforms import Chain as Chain
from jetspark.processors.transforms import filter as filter
from jetspark.processors.transforms import flat_map as flat_map
from jetspark.processors.transforms import fused as fused
from jetspark.processors.transforms import map as map

__all__ = [
    "AggregateOperation",
    "Chain",
    "accumulate_by_key",
    "aggregate_by_key",
    "averaging",
    "batches",
    "collect",
    "combine_by_key",
    "counting",
    "directory_stream",
    "entry_key",
    "files",
    "filter",
    "flat_map",
    "from_iterable",
    "fused",
    "generator_stream",
    "logger",
    "map",
    "noop",
    "postgres",
    "summing",
    "to_list",
    "transactional_files",
    "whole_item",
]
