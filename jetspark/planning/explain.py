"""The plan in words: what `jetspark dag` and `JobHandle.explain()` print.

`explain(dag, config, member_count)` plans a DAG as a runner would (fusion, suppliers, pruning,
stages) without running anything and describes it; `explain_plan(plan, stages)` describes a plan
already built. Both list each stage with the members it runs on (its task count on Spark), each
vertex with its members and local parallelism, each edge with its routing, and then what pruning
left out and why (`pruning.describe`).
"""

from __future__ import annotations

from collections.abc import Mapping

from jetspark.core.config import JobConfig
from jetspark.core.dag import DAG
from jetspark.core.partitioner import DEFAULT_PARTITION_COUNT
from jetspark.planning.defs import EdgeDef
from jetspark.planning.pipeline import plan_execution, prepare
from jetspark.planning.plan import ExecutionPlan
from jetspark.planning.pruning import describe
from jetspark.planning.stages import StagePlan


def explain(
    dag: DAG,
    config: JobConfig | None = None,
    member_count: int = 2,
    partition_count: int = DEFAULT_PARTITION_COUNT,
) -> str:
    """Plan `dag` (validated, fused, pruned, cut into stages) and describe the plan."""
    config = config or JobConfig()
    plan = plan_execution(
        prepare(dag, config), config.member_count or member_count, partition_count=partition_count
    )
    return explain_plan(plan, plan.stages)


def _members(members: list[int] | tuple[int, ...], of: int) -> str:
    shown = ", ".join(map(str, members[:12])) + (", ..." if len(members) > 12 else "")
    return f"{len(members)} of {of} members ({shown})" if members else f"0 of {of} members"


def _edge(edge: EdgeDef) -> str:
    parts = [edge.routing.value]
    if edge.has_constant_key:
        parts.append(f"constant key {edge.constant_key!r}")
    parts.append("distributed" if edge.is_distributed else "local")
    if edge.priority:
        parts.append(f"priority {edge.priority}")
    return f"edge {edge.name}: {', '.join(parts)}"


def explain_plan(
    plan: ExecutionPlan, stages: StagePlan | None = None, task_counts: Mapping[int, int] | None = None
) -> str:
    """Describe `plan` (and its `stages`, when given; `task_counts`: a stage's tasks when the
    runner ran it on other than one task per member, as adaptive parallelism does)."""
    count = plan.member_count
    lines = [
        f"plan of job {plan.job_id}: {count} members, {plan.arrangement.partition_count} partitions",
    ]

    def vertex_lines(name: str, indent: str) -> list[str]:
        vp = plan.vertices[name]
        out = [
            f"{indent}vertex {name!r}: local parallelism {vp.local_parallelism}, on {_members(vp.members(), count)}"
        ]
        out.extend(f"{indent}  {_edge(edge)}" for edge in vp.outbound)
        return out

    if stages is not None:
        for stage in stages.stages:
            members = plan.stage_members(stage.vertices)
            tasks = (task_counts or {}).get(stage.index, len(members))
            lines.append(
                f"stage {stage.index} [{', '.join(stage.vertices)}]: {tasks} task(s) on Spark, "
                f"{_members(members, count)}"
            )
            for name in stage.vertices:
                lines.extend(vertex_lines(name, "  "))
    else:
        for name in plan.vertices:
            lines.extend(vertex_lines(name, ""))
    pruning = describe(plan.pruning)
    lines.append("pruning:" if pruning else "pruning: nothing pruned")
    lines.extend(f"  {line}" for line in pruning)
    metrics = plan.pruning.metrics()
    lines.append("plan metrics: " + ", ".join(f"{k} {v}" for k, v in metrics.items()))
    return "\n".join(lines)
