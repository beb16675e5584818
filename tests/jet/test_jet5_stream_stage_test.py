"""Jet 5.x's `StreamStageTest` (hazelcast/hazelcast, `com.hazelcast.jet.pipeline`): the method 5.x
added that jetspark has a counterpart for (the 4.x methods are ported in
`test_jet_stream_stage.py`, whose pipeline-to-DAG helpers this port reuses: local runner, 2
members, local parallelism 2, `itemCount` 1024).

Added in 5.x: `fusing_testLocalParallelism`: `filter` and `map` with local parallelism 3, then
`flatMap` and `map` with local parallelism 5; Jet fuses each pair into one vertex that keeps the
pair's parallelism (`fused(filter, map)`: 3, `fused(flat-map, map-2)`: 5) and the output is every
input item plus one. jetspark's fused vertex keeps the name of the chain's last vertex (see the
4.x port's docstring), so the vertices are looked up as `map` and `map-2`, and that each runs
both steps of its pair is checked as in the 4.x port's fusion cases.
"""

from __future__ import annotations

from jetspark import DAG
from jetspark import processors as P
from tests.jet.test_jet_stream_stage import (
    ITEM_COUNT,
    chain_steps,
    execute,
    fused_dag,
    sequence,
    stream_stage_from_list,
    then,
    write_to_sink,
)


def test_StreamStageTest__fusing_testLocalParallelism() -> None:
    input_ = sequence(ITEM_COUNT)
    dag = DAG()
    stage = stream_stage_from_list(dag, input_)
    stage = then(dag, stage, "filter", P.filter(lambda item: item % 2 == 0), 3)
    stage = then(dag, stage, "map", P.map(lambda item: item // 2), 3)
    stage = then(dag, stage, "flat-map", P.flat_map(lambda item: (2 * item, 2 * item + 1)), 5)
    stage = then(dag, stage, "map-2", P.map(lambda item: item + 1), 5)
    write_to_sink(dag, stage)

    fused = fused_dag(dag)
    assert fused.get_vertex("map").local_parallelism == 3, fused.to_dot()  # Jet: fused(filter, map)
    assert chain_steps(fused, "map") == 2, fused.to_dot()
    assert fused.get_vertex("map-2").local_parallelism == 5, fused.to_dot()  # Jet: fused(flat-map, map-2)
    assert chain_steps(fused, "map-2") == 2, fused.to_dot()
    assert sorted(execute(dag)) == [t + 1 for t in input_]
