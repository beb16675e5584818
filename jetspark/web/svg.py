"""A job's DAG drawn as SVG on the server: no script, no font or library from elsewhere.

Vertices stand in columns (`planning.pictures.columns`: every edge points rightwards), each a box
with its name, local parallelism and a line of live counts that the page's script fills in
(`data-vertex` names the vertex). Edges are curves labelled with routing, local or distributed
(drawn thick) and priority.
"""

from __future__ import annotations

from html import escape

from jetspark.core.dag import DAG
from jetspark.planning.pictures import columns, edge_label
from jetspark.runners.job import JobHandle

BOX_W, BOX_H = 190, 62
GAP_X, GAP_Y = 210, 40
MARGIN = 20


def dag_svg(dag: DAG, parallelism: dict[str, int] | None = None) -> str:
    """The SVG element (to embed in a page) of `dag`; `parallelism` the planned local parallelism."""
    layout = columns(dag)
    tallest = max((len(c) for c in layout), default=1)
    width = MARGIN * 2 + len(layout) * BOX_W + max(len(layout) - 1, 0) * GAP_X
    height = MARGIN * 2 + tallest * BOX_H + max(tallest - 1, 0) * GAP_Y
    place: dict[str, tuple[float, float]] = {}
    for c, names in enumerate(layout):
        offset = (tallest - len(names)) * (BOX_H + GAP_Y) / 2
        for r, name in enumerate(names):
            place[name] = (MARGIN + c * (BOX_W + GAP_X), MARGIN + offset + r * (BOX_H + GAP_Y))
    parts: list[str] = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="dag" role="img" aria-label="job DAG" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerUnits="userSpaceOnUse" markerWidth="10" '
        'markerHeight="10" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#555"/>'
        "</marker></defs>",
    ]
    seen: dict[tuple[str, str], int] = {}
    for edge in dag.edges:
        assert edge.destination is not None
        pair = (edge.source.name, edge.destination.name)
        nth = seen.get(pair, 0)
        seen[pair] = nth + 1
        parts.append(_edge(place[pair[0]], place[pair[1]], edge_label(edge), edge.is_distributed, nth))
    for index, vertex in enumerate(dag.topological_order()):
        lp = (parallelism or {}).get(vertex.name)
        lp_text = f"lp {lp}" if lp is not None else _declared(vertex.local_parallelism)
        parts.append(_box(index, vertex.name, lp_text, place[vertex.name]))
    parts.append("</svg>")
    return "".join(parts)


def _declared(local_parallelism: int) -> str:
    return "lp default" if local_parallelism == -1 else f"lp {local_parallelism}"


def _box(index: int, name: str, lp_text: str, at: tuple[float, float]) -> str:
    x, y = at
    attr = escape(name, quote=True)
    return (
        f'<g class="vertex" data-vertex="{attr}" id="vertex-{index}">'
        f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6"/>'
        f'<text x="{x + 10}" y="{y + 19}" class="name">{escape(name)}</text>'
        f'<text x="{x + 10}" y="{y + 36}" class="lp">{escape(lp_text)}</text>'
        f'<text x="{x + 10}" y="{y + 53}" class="counts" data-counts="{attr}"></text>'
        "</g>"
    )


def _edge(
    source: tuple[float, float], target: tuple[float, float], label: str, distributed: bool, nth: int
) -> str:
    x1, y1 = source[0] + BOX_W, source[1] + BOX_H / 2 + nth * 8
    x2, y2 = target[0], target[1] + BOX_H / 2 + nth * 8
    bend = max((x2 - x1) / 2, 30)
    path = f"M {x1} {y1} C {x1 + bend} {y1}, {x2 - bend} {y2}, {x2} {y2}"
    kind = "distributed" if distributed else "local"
    mid_x, mid_y = (x1 + x2) / 2, (y1 + y2) / 2 - 6 - nth * 12
    return (
        f'<g class="edge {kind}"><path d="{path}" marker-end="url(#arrow)"/>'
        f'<text x="{mid_x}" y="{mid_y}" text-anchor="middle">{escape(label)}</text></g>'
    )


def plan_parallelism(job: JobHandle | None) -> dict[str, int] | None:
    """The planned local parallelism of each vertex of `job`, when it has a plan."""
    plan = job.plan if job is not None else None
    if plan is None:
        return None
    return {name: vp.local_parallelism for name, vp in plan.vertices.items()}
