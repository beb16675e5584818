"""The public contract of jetspark. Imports nothing else of jetspark, and never pyspark."""

from jetspark.core.abstract_processor import AbstractProcessor as AbstractProcessor
from jetspark.core.abstract_processor import FlatMapper as FlatMapper
from jetspark.core.config import AdaptiveParallelism as AdaptiveParallelism
from jetspark.core.config import JobConfig as JobConfig
from jetspark.core.config import ParallelismDecider as ParallelismDecider
from jetspark.core.config import ProcessingGuarantee as ProcessingGuarantee
from jetspark.core.context import MetaSupplierContext as MetaSupplierContext
from jetspark.core.context import ProcessorContext as ProcessorContext
from jetspark.core.context import SupplierContext as SupplierContext
from jetspark.core.dag import DAG as DAG
from jetspark.core.dag import Vertex as Vertex
from jetspark.core.edge import Edge as Edge
from jetspark.core.edge import RoutingPolicy as RoutingPolicy
from jetspark.core.errors import BadRecordError as BadRecordError
from jetspark.core.errors import DagValidationError as DagValidationError
from jetspark.core.errors import JetsparkError as JetsparkError
from jetspark.core.errors import JobAlreadyRunningError as JobAlreadyRunningError
from jetspark.core.errors import JobCancelledError as JobCancelledError
from jetspark.core.errors import JobFailedError as JobFailedError
from jetspark.core.errors import JobSuspendedError as JobSuspendedError
from jetspark.core.errors import JobTimeoutError as JobTimeoutError
from jetspark.core.errors import PartitioningError as PartitioningError
from jetspark.core.errors import PermanentError as PermanentError
from jetspark.core.errors import ProcessorContractError as ProcessorContractError
from jetspark.core.errors import RestartableError as RestartableError
from jetspark.core.errors import TopologyChangedError as TopologyChangedError
from jetspark.core.inbox import Inbox as Inbox
from jetspark.core.keyed_state import KeyedState as KeyedState
from jetspark.core.keyed_state import keys_to_offer as keys_to_offer
from jetspark.core.outbox import Outbox as Outbox
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT as DEFAULT_PARTITION_COUNT
from jetspark.core.partitioner import Partitioner as Partitioner
from jetspark.core.partitioner import default_partitioner as default_partitioner
from jetspark.core.partitioner import stable_hash as stable_hash
from jetspark.core.partitioner import whole_item as whole_item
from jetspark.core.processor import Processor as Processor
from jetspark.core.suppliers import ProcessorMetaSupplier as ProcessorMetaSupplier
from jetspark.core.suppliers import ProcessorSupplier as ProcessorSupplier
from jetspark.core.traverser import AppendableTraverser as AppendableTraverser
from jetspark.core.traverser import ResettableSingletonTraverser as ResettableSingletonTraverser
from jetspark.core.traverser import Traverser as Traverser
from jetspark.core.traverser import empty as empty_traverser
from jetspark.core.traverser import lazy as lazy_traverser
from jetspark.core.traverser import singleton as singleton_traverser
from jetspark.core.traverser import traverse_items as traverse_items
from jetspark.core.traverser import traverse_iterable as traverse_iterable
from jetspark.core.watermark import IDLE_MESSAGE as IDLE_MESSAGE
from jetspark.core.watermark import BroadcastKey as BroadcastKey
from jetspark.core.watermark import Watermark as Watermark

__all__ = [
    "DAG",
    "DEFAULT_PARTITION_COUNT",
    "IDLE_MESSAGE",
    "AbstractProcessor",
    "AdaptiveParallelism",
    "AppendableTraverser",
    "BadRecordError",
    "BroadcastKey",
    "DagValidationError",
    "Edge",
    "FlatMapper",
    "Inbox",
    "JetsparkError",
    "JobAlreadyRunningError",
    "JobCancelledError",
    "JobConfig",
    "JobFailedError",
    "JobSuspendedError",
    "JobTimeoutError",
    "KeyedState",
    "MetaSupplierContext",
    "Outbox",
    "ParallelismDecider",
    "Partitioner",
    "PartitioningError",
    "PermanentError",
    "ProcessingGuarantee",
    "Processor",
    "ProcessorContext",
    "ProcessorContractError",
    "ProcessorMetaSupplier",
    "ProcessorSupplier",
    "ResettableSingletonTraverser",
    "RestartableError",
    "RoutingPolicy",
    "SupplierContext",
    "TopologyChangedError",
    "Traverser",
    "Vertex",
    "Watermark",
    "default_partitioner",
    "empty_traverser",
    "keys_to_offer",
    "lazy_traverser",
    "singleton_traverser",
    "stable_hash",
    "traverse_items",
    "traverse_iterable",
    "whole_item",
]
