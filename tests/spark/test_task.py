"""The Spark task layer without Spark: stages run one member at a time in this process, with the
shuffle done by hand, its records in random order (Spark keeps no order across map outputs).

`run_stage_task` is the code every Spark task runs; here it runs on the real engine with one
record per item (`record_items=1`), so replay order rests on sequence numbers alone.
"""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import pytest

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.planning.pipeline import build_plan
from jetspark.runners.local import LocalRunner
from jetspark.runners.spark.failures import TaskFailure, decode_failure
from jetspark.runners.spark.records import DRIVER, ResultRecord, dumps
from jetspark.runners.spark.task import TaskSpec, run_stage_task
from tests.e2e.shapes import SHAPES, normalized
from tests.spark import dags


def run_by_hand(dag: DAG, members: int, seed: int, record_items: int = 1) -> dict[str, list[Any]]:
    """Run every stage's members in turn; return the collected items per sink vertex."""
    plan = build_plan(dag, JobConfig(member_count=members), members)
    stages = plan.stages
    carriers = {s.index: (s.downstream[0] if s.downstream else DRIVER) for s in stages.stages}
    spec = dumps(TaskSpec(plan, carriers, 1024, record_items))
    inputs: dict[int, dict[int, list[Any]]] = {
        s.index: {m: [] for m in range(members)} for s in stages.stages
    }
    results: dict[str, list[Any]] = {}
    rng = random.Random(seed)
    for stage in stages.stages:
        for member in range(members):
            records = inputs[stage.index][member]
            rng.shuffle(records)
            for target, value in run_stage_task(spec, stage.index, None, member, records):
                if value.stage == DRIVER:
                    if isinstance(value, ResultRecord):
                        results.setdefault(value.vertex, []).extend(pickle.loads(value.payload))
                else:
                    assert value.stage > stage.index, "records only go to later stages"
                    inputs[value.stage][target].append((target, value))
    return results


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shapes_by_hand_with_shuffled_records(name: str) -> None:
    dag, expected = SHAPES[name](local_parallelism=2)
    results = run_by_hand(dag, members=3, seed=len(name))
    for sink, items in expected.items():
        assert normalized(results.get(sink, [])) == normalized(items), sink


@pytest.mark.parametrize(
    "shape",
    [dags.priorities, dags.diamond],
    ids=lambda shape: shape.__name__,
)
def test_order_sensitive_dags_by_hand_match_the_local_runner(shape: Any) -> None:
    by_hand = run_by_hand(shape(), members=2, seed=7)["sink"]
    local = LocalRunner().run(shape(), JobConfig(member_count=2), timeout=60).result("sink")

    def normal(item: Any) -> Any:
        """Where's pid (diamond) differs between runs, and a fan-out edge spreads a member's items
        over its processors by chunk (timing): there, only the receiving member is fixed."""
        if isinstance(item[1], tuple) and len(item[1]) == 4:
            return (item[0], item[1][:3], item[2] // 2)
        return item

    assert normalized(map(normal, by_hand)) == normalized(map(normal, local))
    if shape is dags.priorities:
        for index in {i for _, _, i in by_hand}:
            ordinals = [o for o, _, i in by_hand if i == index]
            assert ordinals == sorted(ordinals, reverse=True)


@pytest.mark.parametrize("where", ["supplier", "wiring"])
def test_a_failed_setup_closes_every_processor_made_once(where: str, tmp_path: Path) -> None:
    """b's supplier or b's is_cooperative() fails before anything runs: the task still closes
    every processor it made, once, and names the vertex."""
    path = str(tmp_path / "lifecycle")
    with pytest.raises(TaskFailure) as raised:
        run_by_hand(dags.setup_fails(path, where), members=1, seed=0)
    decoded = decode_failure(raised.value)
    assert decoded is not None and decoded.vertex == "b"
    made, closed = dags.made_and_closed(path)
    assert len(made) == (2 if where == "supplier" else 3)
    assert sorted(closed) == sorted(made)


@pytest.mark.parametrize("record_items", [1, 1024])
def test_watermarks_by_hand_are_coalesced_over_the_shuffled_producers(record_items: int) -> None:
    """A task reads its shuffle input lazily, pair after pair, so when a coalesced watermark rises
    depends on the read order; what must hold is Jet's rule: watermarks rise, every consumer ends
    with the producers' last one, and no item arrives behind a watermark already emitted."""
    by_hand = run_by_hand(dags.watermarks(), members=2, seed=7, record_items=record_items)["sink"]
    local = LocalRunner().run(dags.watermarks(), JobConfig(member_count=2), timeout=60).result("sink")
    items = [item for item in by_hand if item[0] != "wm"]
    assert sorted(item[1] for item in items) == sorted(item[1] for item in local if item[0] != "wm")
    for index in {item[2] for item in by_hand}:
        current = None
        seen = []
        for item in by_hand:
            if item[2] != index:
                continue
            if item[0] == "wm":
                assert current is None or item[1] > current, "watermarks rise"
                current = item[1]
                seen.append(current)
            else:
                assert current is None or item[1][1] >= current, f"{item} arrived behind watermark {current}"
        assert seen and seen[-1] == 100, f"processor {index} saw watermarks {seen}"
