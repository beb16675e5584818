"""The DAG: named vertices joined by edges, validated before a job runs."""

from __future__ import annotations

import numbers
from collections.abc import Iterator

from jetspark.core.dag_dot import dag_to_dot
from jetspark.core.edge import DEFAULT_QUEUE_SIZE, RESERVED_PRIORITY, Edge, RoutingPolicy
from jetspark.core.errors import DagValidationError
from jetspark.core.processor import Processor
from jetspark.core.suppliers import ProcessorMetaSupplier, ProcessorSupplier, SupplierLike, to_meta_supplier


class Vertex:
    """A named step of the DAG; its processors come from `meta_supplier`.

    `local_parallelism` is the number of processors per member; -1 takes the meta supplier's
    preference, else the job's default. It is checked whenever it is set (here, by
    `with_local_parallelism` or by assignment), so a bad value names the vertex at once instead of
    failing in a supplier at run time or running no processor at all.
    """

    def __init__(self, name: str, supplier: SupplierLike, local_parallelism: int = -1) -> None:
        if not isinstance(name, str) or not name:
            raise DagValidationError(f"vertex name must be a non-empty string, got {name!r}")
        self.name = name
        self.local_parallelism = local_parallelism
        self.meta_supplier: ProcessorMetaSupplier = _meta_supplier_of(name, supplier)

    @property
    def local_parallelism(self) -> int:
        return self._local_parallelism

    @local_parallelism.setter
    def local_parallelism(self, value: int) -> None:
        self._local_parallelism = _checked_parallelism(self.name, value)

    def with_local_parallelism(self, local_parallelism: int) -> Vertex:
        self.local_parallelism = local_parallelism
        return self

    def __repr__(self) -> str:
        return f"Vertex({self.name!r}, local_parallelism={self.local_parallelism})"


def _meta_supplier_of(vertex: str, supplier: object) -> ProcessorMetaSupplier:
    """`to_meta_supplier`, with the mistakes a user makes named with the vertex: a supplier class
    where an instance belongs, and a processor object where its class belongs."""
    if isinstance(supplier, type) and issubclass(supplier, (ProcessorSupplier, ProcessorMetaSupplier)):
        raise TypeError(
            f"vertex {vertex!r}: {supplier.__name__} is a supplier class; pass an instance of it, "
            f"{supplier.__name__}()"
        )
    if isinstance(supplier, Processor):
        name = type(supplier).__name__
        raise TypeError(
            f"vertex {vertex!r}: got a {name} object; pass the class, {name}, or a function that "
            "makes a new processor on every call: each processor of the vertex needs its own"
        )
    try:
        return to_meta_supplier(supplier)  # type: ignore[arg-type]
    except TypeError as error:
        raise TypeError(f"vertex {vertex!r}: {error}") from None


def _checked_parallelism(vertex: str, value: object) -> int:
    """`value` as a local parallelism: an int (not a bool), -1 or >= 1; else an error naming `vertex`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(
            f"vertex {vertex!r}: local parallelism must be an int (-1 for the default, or >= 1), "
            f"got {value!r} of type {type(value).__name__}"
        )
    count = int(value)
    if count == 0 or count < -1:
        raise DagValidationError(
            f"vertex {vertex!r}: local parallelism must be -1 (default) or >= 1, got {count}"
        )
    return count


def _check_isolated_input(edge: Edge) -> None:
    """Refuse an edge that would interleave several upstream processors' streams into a vertex
    that must hear one alone (`ProcessorMetaSupplier.isolated_input_reason`). A local edge from
    a vertex of local parallelism 1 cannot (Jet's own tests use a plain edge there)."""
    destination = edge.destination
    assert destination is not None
    reason = destination.meta_supplier.isolated_input_reason()
    if reason is None:
        return
    if not edge.is_distributed and edge.source.local_parallelism == 1:
        return  # one upstream processor per member: each processor here hears (part of) its stream
    fix = f"Edge.between({spelled_vertex(edge.source)}, {spelled_vertex(destination)}).isolated()"
    if edge.routing is not RoutingPolicy.ISOLATED:
        raise DagValidationError(
            f"edge {edge.name}: vertex {destination.name!r} ({reason}) needs an isolated edge, "
            f"got {edge.routing.value}{' distributed' if edge.is_distributed else ''}: items of "
            f"several upstream processors would interleave and be dropped as late downstream; "
            f"use {fix}"
        )
    upstream, downstream = edge.source.local_parallelism, destination.local_parallelism
    if downstream != -1 and upstream > downstream:  # -1: the job's default, unknown here
        raise DagValidationError(
            f"edge {edge.name}: vertex {destination.name!r} ({reason}) has local parallelism "
            f"{downstream}, fewer than {edge.source.name!r}'s {upstream}: the isolated edge would "
            f"feed several upstream processors into one; give both the same local parallelism"
        )


def _check_keyed_input(edge: Edge) -> None:
    """Refuse an edge that would split one key's items across the processors of a vertex that
    must see each key in one processor (`ProcessorMetaSupplier.keyed_input_reason`): any edge
    not partitioned by key, unless the vertex has one processor per member (then one member is
    right: `planning.keyed_inputs` checks the member count when the job is planned)."""
    destination = edge.destination
    assert destination is not None
    reason = destination.meta_supplier.keyed_input_reason()
    if reason is None or edge.routing is RoutingPolicy.PARTITIONED or destination.local_parallelism == 1:
        return
    raise DagValidationError(
        f"edge {edge.name}: vertex {destination.name!r} ({reason}) needs an edge partitioned by its "
        f"key, got {edge.routing.value}{' distributed' if edge.is_distributed else ''}: one key's items "
        f"would be split across its processors and give wrong results; use "
        f"Edge.between({spelled_vertex(edge.source)}, {spelled_vertex(destination)}).partitioned(key_fn).distributed()"
    )


def _first_free(used: set[int]) -> int:
    return next(ordinal for ordinal in range(len(used) + 1) if ordinal not in used)


def spelled_vertex(vertex: Vertex) -> str:
    """The vertex as a reader would write it in code: its name, or a lookup when that is no identifier."""
    return vertex.name if vertex.name.isidentifier() else f"dag.get_vertex({vertex.name!r})"


class DAG:
    """Vertices and edges. Errors that can be found while building are raised at once; the rest
    by `validate()`, which every runner calls on submit."""

    def __init__(self) -> None:
        self._vertices: dict[str, Vertex] = {}
        self._edges: list[Edge] = []

    def new_vertex(self, name: str, supplier: SupplierLike, local_parallelism: int = -1) -> Vertex:
        """Create a vertex and add it."""
        return self.vertex(Vertex(name, supplier, local_parallelism))

    def new_unique_vertex(
        self, name_prefix: str, supplier: SupplierLike, local_parallelism: int = -1
    ) -> Vertex:
        """Create a vertex named `name_prefix`, or `name_prefix-2`, `-3`, ... when that name is taken."""
        name, suffix = name_prefix, 2
        while name in self._vertices:
            name, suffix = f"{name_prefix}-{suffix}", suffix + 1
        return self.new_vertex(name, supplier, local_parallelism)

    def vertex(self, vertex: Vertex) -> Vertex:
        """Add a vertex; its name must be unique in the DAG."""
        if vertex.name in self._vertices:
            raise DagValidationError(f"duplicate vertex name {vertex.name!r}")
        self._vertices[vertex.name] = vertex
        return vertex

    def edge(self, edge: Edge) -> DAG:
        """Add an edge between two vertices of this DAG."""
        if not isinstance(edge, Edge):
            raise TypeError(
                f"DAG.edge() takes an Edge, such as Edge.between(a, b) or Edge.from_(a, 1).to(b, 0); "
                f"got {edge!r} ({type(edge).__name__})"
            )
        if any(other is edge for other in self._edges):
            raise DagValidationError(
                f"edge {edge.name}: this Edge object is already in the DAG (its .to() or settings "
                "changed it in place, for the edge added before too): make a new Edge for each "
                "connection, Edge.between(a, b) or Edge.from_(a, n).to(b, m)"
            )
        if edge.destination is None:
            raise DagValidationError(f"edge from {edge.source.name!r} has no destination: call .to(vertex)")
        for end, vertex in (("source", edge.source), ("destination", edge.destination)):
            if self._vertices.get(vertex.name) is not vertex:
                raise DagValidationError(f"edge {edge.name}: {end} vertex {vertex.name!r} is not in this DAG")
        if edge.source is edge.destination:
            raise DagValidationError(
                f"edge {edge.name}: an edge from vertex {edge.source.name!r} to itself makes a cycle"
            )
        for other in self._edges:
            if other.source is edge.source and other.source_ordinal == edge.source_ordinal:
                raise DagValidationError(
                    f"edge {edge.name}: outbound ordinal {edge.source_ordinal} of vertex "
                    f"{edge.source.name!r} is already used by {other.name}; {self._ordinal_advice(edge)}"
                )
            if other.destination is edge.destination and other.dest_ordinal == edge.dest_ordinal:
                raise DagValidationError(
                    f"edge {edge.name}: inbound ordinal {edge.dest_ordinal} of vertex "
                    f"{edge.destination.name!r} is already used by {other.name}; {self._ordinal_advice(edge)}"
                )
        _check_isolated_input(edge)
        _check_keyed_input(edge)
        self._edges.append(edge)
        return self

    def _ordinal_advice(self, edge: Edge) -> str:
        """How to add `edge` on free ordinals (Jet's error advises `Edge.from().to()` too)."""
        assert edge.destination is not None
        used_out = {e.source_ordinal for e in self._edges if e.source is edge.source}
        used_in = {e.dest_ordinal for e in self._edges if e.destination is edge.destination}
        out = edge.source_ordinal if edge.source_ordinal not in used_out else _first_free(used_out)
        into = edge.dest_ordinal if edge.dest_ordinal not in used_in else _first_free(used_in)
        advice = (
            f"choose free ordinals with Edge.from_({spelled_vertex(edge.source)}, {out})"
            f".to({spelled_vertex(edge.destination)}, {into})"
        )
        if edge.source_ordinal == 0 and edge.dest_ordinal == 0:
            advice += " (Edge.between() uses ordinal 0 at both ends)"
        return advice

    def get_vertex(self, name: str) -> Vertex:
        try:
            return self._vertices[name]
        except KeyError:
            raise DagValidationError(f"no vertex named {name!r} in the DAG") from None

    @property
    def edges(self) -> list[Edge]:
        return list(self._edges)

    def inbound_edges(self, name: str) -> list[Edge]:
        """Edges into vertex `name`, sorted by destination ordinal."""
        edges = [e for e in self._edges if e.destination is not None and e.destination.name == name]
        return sorted(edges, key=lambda e: e.dest_ordinal)

    def outbound_edges(self, name: str) -> list[Edge]:
        """Edges out of vertex `name`, sorted by source ordinal."""
        return sorted((e for e in self._edges if e.source.name == name), key=lambda e: e.source_ordinal)

    def __iter__(self) -> Iterator[Vertex]:
        """The vertices in topological order (validates the DAG first)."""
        return iter(self.topological_order())

    def __len__(self) -> int:
        return len(self._vertices)

    def topological_order(self) -> list[Vertex]:
        """Vertices sorted so that every edge goes forward; raises on a cycle, naming its vertices."""
        indegree = {name: 0 for name in self._vertices}
        for e in self._edges:
            assert e.destination is not None
            indegree[e.destination.name] += 1
        ready = [name for name, deg in indegree.items() if deg == 0]
        order: list[Vertex] = []
        while ready:
            name = ready.pop(0)
            order.append(self._vertices[name])
            for e in self.outbound_edges(name):
                assert e.destination is not None
                indegree[e.destination.name] -= 1
                if indegree[e.destination.name] == 0:
                    ready.append(e.destination.name)
        if len(order) != len(self._vertices):
            stuck = {name for name, deg in indegree.items() if deg > 0}
            raise DagValidationError(
                f"the DAG has a cycle through vertices {sorted(self._on_cycles(stuck))}: "
                f"{self._cycle_in(stuck)}"
            )
        return order

    def _on_cycles(self, stuck: set[str]) -> set[str]:
        """The vertices among `stuck` that lie on a cycle (the others are only downstream of one)."""
        successors: dict[str, set[str]] = {name: set() for name in stuck}
        for e in self._edges:
            if e.destination is not None and e.source.name in stuck and e.destination.name in stuck:
                successors[e.source.name].add(e.destination.name)

        def returns_to(start: str) -> bool:
            seen: set[str] = set()
            frontier = list(successors[start])
            while frontier:
                name = frontier.pop()
                if name == start:
                    return True
                if name not in seen:
                    seen.add(name)
                    frontier.extend(successors[name])
            return False

        return {name for name in stuck if returns_to(name)}

    def _cycle_in(self, stuck: set[str]) -> str:
        """One cycle among `stuck` (vertices left by the topological sort), as `a -> b -> a`.

        Every stuck vertex has a stuck predecessor, so walking predecessors from any of them must
        meet a vertex twice: the walk from there on, reversed, is a cycle."""
        predecessor = {
            e.destination.name: e.source.name
            for e in self._edges
            if e.destination is not None and e.destination.name in stuck and e.source.name in stuck
        }
        walk = [min(stuck)]
        while walk[-1] not in walk[:-1]:
            walk.append(predecessor[walk[-1]])
        cycle = walk[walk.index(walk[-1]) :]
        return " -> ".join(reversed(cycle))

    def validate(self) -> None:
        """Check what cannot be checked while building: cycles, ordinal gaps, edge settings."""
        if not self._vertices:
            raise DagValidationError("the DAG has no vertices")
        for e in self._edges:
            for end, vertex in (("source", e.source), ("destination", e.destination)):
                if vertex is None or self._vertices.get(vertex.name) is not vertex:
                    name = "none" if vertex is None else repr(vertex.name)
                    raise DagValidationError(
                        f"edge {e.name}: its {end} vertex {name} is not in this DAG (was the Edge "
                        "changed after dag.edge()? make a new Edge for each connection)"
                    )
        self.topological_order()
        for vertex in self._vertices.values():
            for kind, ordinals in (
                ("inbound", [e.dest_ordinal for e in self.inbound_edges(vertex.name)]),
                ("outbound", [e.source_ordinal for e in self.outbound_edges(vertex.name)]),
            ):
                if ordinals != list(range(len(ordinals))):
                    raise DagValidationError(
                        f"vertex {vertex.name!r}: {kind} edge ordinals must be 0..{len(ordinals) - 1} "
                        f"without gaps, got {ordinals}"
                    )
        for e in self._edges:
            if e.priority == RESERVED_PRIORITY:
                raise DagValidationError(
                    f"edge {e.name}: priority {RESERVED_PRIORITY} is reserved for snapshot restore"
                )
            if e.routing is RoutingPolicy.ISOLATED and e.is_distributed:
                raise DagValidationError(f"edge {e.name}: an isolated edge cannot be distributed")
            if e.routing is RoutingPolicy.PARTITIONED and e.key_fn is None:
                raise DagValidationError(f"edge {e.name}: a partitioned edge needs a key function")
            if e.queue_size < 1:
                raise DagValidationError(f"edge {e.name}: queue size must be >= 1, got {e.queue_size}")
            _check_isolated_input(e)
            _check_keyed_input(e)

    def to_dot(
        self, default_local_parallelism: int = -1, default_queue_size: int = DEFAULT_QUEUE_SIZE
    ) -> str:
        """The DAG in Graphviz DOT, as Jet's `toDotString`: a vertex's local parallelism (`default`
        when the runner decides), an edge's routing and queue size, its ordinals where a vertex
        has several edges on that side."""
        return dag_to_dot(self, default_local_parallelism, default_queue_size)

    def __repr__(self) -> str:
        return f"DAG(vertices={list(self._vertices)}, edges={[e.name for e in self._edges]})"
