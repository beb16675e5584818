"""Edges: the streams between vertices, with their routing policy, locality and priority."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from jetspark.core.errors import DagValidationError
from jetspark.core.partitioner import Partitioner, default_partitioner

if TYPE_CHECKING:
    from jetspark.core.dag import Vertex

#: Reserved for the snapshot-restore stream, which drains before every other edge.
RESERVED_PRIORITY = -(2**31)
DEFAULT_QUEUE_SIZE = 1024


class RoutingPolicy(enum.Enum):
    """Which downstream processor(s) receive an item. Special items (watermarks, barriers, the end
    of the stream) always go to every downstream processor."""

    UNICAST = "unicast"  #: any one processor, round-robin, skipping full queues
    ISOLATED = "isolated"  #: a fixed upstream -> downstream pairing, local only
    PARTITIONED = "partitioned"  #: the processor owning the partition of the item's key
    BROADCAST = "broadcast"  #: every processor
    FANOUT = "fanout"  #: one processor per member (round-robin locally), every member


def _check_vertex(vertex: object, end: str) -> None:
    """An edge joins Vertex objects; a name (as Beam or Bytewax users might pass) says so."""
    if isinstance(vertex, str):
        raise TypeError(
            f"an edge's {end} must be a Vertex, got the name {vertex!r}: pass the Vertex that "
            f"dag.new_vertex({vertex!r}, ...) returned, or dag.get_vertex({vertex!r})"
        )


def _whole_number(edge: Edge, what: str, value: object, least: int | None = None) -> None:
    """Refuse a setting that is not an int (a bool, a str or a float included) or is below `least`,
    naming the edge: later it would fail as a bare comparison error, or be used as it is."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"edge {edge.name}: {what} must be an int, got {value!r} ({type(value).__name__})")
    if least is not None and value < least:
        raise DagValidationError(f"edge {edge.name}: {what} must be >= {least}, got {value}")


def _constant_key(_item: Any, key: Any) -> Any:
    return key


class Edge:
    """A stream from `source` (at `source_ordinal`) to `destination` (at `dest_ordinal`).

    Build with `Edge.between(a, b)` or `Edge.from_(a, 1).to(b, 2)`, then refine with the fluent
    methods: a routing policy, `distributed()`, `with_priority(n)`, `with_queue_size(n)`.
    Defaults: unicast, local, priority 0, queue size 1024.
    """

    def __init__(self, source: Vertex, source_ordinal: int = 0) -> None:
        _check_vertex(source, "source")
        self.source = source
        self.source_ordinal = source_ordinal
        self.destination: Vertex | None = None
        self.dest_ordinal = 0
        self.routing = RoutingPolicy.UNICAST
        self.key_fn: Callable[[Any], Any] | None = None
        self.partitioner: Partitioner = default_partitioner
        self.is_distributed = False
        self.priority = 0
        self.queue_size = DEFAULT_QUEUE_SIZE
        self.queue_size_configured = False  # `to_dot` shows the job's default where not
        _whole_number(self, "source ordinal", source_ordinal, 0)

    # ---- construction ---------------------------------------------------------------------

    @staticmethod
    def between(source: Vertex, destination: Vertex) -> Edge:
        """An edge from ordinal 0 of `source` to ordinal 0 of `destination`."""
        return Edge(source, 0).to(destination, 0)

    @staticmethod
    def from_(source: Vertex, ordinal: int = 0) -> Edge:
        """An edge leaving `source` at `ordinal`; complete it with `to`."""
        return Edge(source, ordinal)

    def to(self, destination: Vertex, ordinal: int = 0) -> Edge:
        """Set the destination vertex and its inbound ordinal."""
        _check_vertex(destination, "destination")
        self.destination = destination
        self.dest_ordinal = ordinal
        _whole_number(self, "destination ordinal", ordinal, 0)
        return self

    # ---- routing --------------------------------------------------------------------------

    def unicast(self) -> Edge:
        self.routing = RoutingPolicy.UNICAST
        return self

    def isolated(self) -> Edge:
        """Pair processors on each member for good: each downstream processor hears from fixed
        upstream ones, so per-processor order and state follow the upstream processor.

        Local processor p upstream sends to the downstream processors c with
        `c % upstream_parallelism == p % downstream_parallelism` (Jet's pairing): to c = p,
        p + upstream_parallelism, ... when the downstream vertex has at least as many processors,
        else to c = p % downstream_parallelism alone. The edge must be local.
        """
        self.routing = RoutingPolicy.ISOLATED
        return self

    def broadcast(self) -> Edge:
        self.routing = RoutingPolicy.BROADCAST
        return self

    def fanout(self) -> Edge:
        self.routing = RoutingPolicy.FANOUT
        return self

    def partitioned(self, key_fn: Callable[[Any], Any], partitioner: Partitioner | None = None) -> Edge:
        """Route each item to the processor owning the partition of `key_fn(item)`."""
        if not callable(key_fn):
            raise TypeError(f"edge {self.name}: partitioned() needs a callable key function, got {key_fn!r}")
        self.routing = RoutingPolicy.PARTITIONED
        self.key_fn = key_fn
        self.partitioner = partitioner if partitioner is not None else default_partitioner
        return self

    def all_to_one(self, key: Any = "ALL") -> Edge:
        """Route every item to the one processor owning `key`'s partition."""
        try:
            hash(key)
        except TypeError:
            raise TypeError(
                f"edge {self.name}: all_to_one() needs a hashable key (a str, an int, a tuple), got "
                f"{key!r} of the unhashable type {type(key).__name__}"
            ) from None
        self.routing = RoutingPolicy.PARTITIONED
        self.key_fn = _ConstantKey(key)
        self.partitioner = default_partitioner
        return self

    # ---- other properties -----------------------------------------------------------------

    def distributed(self) -> Edge:
        """Let items cross members (a shuffle on Spark); local edges stay within a member."""
        self.is_distributed = True
        return self

    def local(self) -> Edge:
        self.is_distributed = False
        return self

    def with_priority(self, priority: int) -> Edge:
        """Lower priorities are drained completely (to `complete_edge`) before higher ones.

        Snapshots wait until every vertex upstream of a lower-priority edge has finished, so feed
        such edges from bounded sources.
        """
        _whole_number(self, "priority", priority)
        self.priority = priority
        return self

    def with_queue_size(self, size: int) -> Edge:
        """Capacity of each queue of this edge, in items."""
        _whole_number(self, "queue size", size, 1)
        self.queue_size = size
        self.queue_size_configured = True
        return self

    @property
    def constant_key(self) -> Any:
        """The key of an `all_to_one` edge, else None."""
        return self.key_fn.key if isinstance(self.key_fn, _ConstantKey) else None

    @property
    def has_constant_key(self) -> bool:
        """True for an `all_to_one` edge: every item goes to one partition, known when planning."""
        return isinstance(self.key_fn, _ConstantKey)

    @property
    def name(self) -> str:
        dest = self.destination.name if self.destination is not None else "?"
        return f"{self.source.name}[{self.source_ordinal}] -> {dest}[{self.dest_ordinal}]"

    def __repr__(self) -> str:
        parts = [self.routing.value]
        if self.is_distributed:
            parts.append("distributed")
        if self.priority:
            parts.append(f"priority={self.priority}")
        return f"Edge({self.name}, {', '.join(parts)})"


class _ConstantKey:
    """Key function of `all_to_one`: picklable, and tells the planner the one partition it needs."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __call__(self, _item: Any) -> Any:
        return self.key

    def __getstate__(self) -> Any:
        return self.key

    def __setstate__(self, state: Any) -> None:
        self.key = state
