"""Jet 5.x's `ExecutionLifecycle_RestartableExceptionTest` (hazelcast/hazelcast,
`com.hazelcast.jet.core`): the method whose expectation 5.x changed (the 4.x methods are ported in
`test_jet_execution_lifecycle_restartable.py`, whose mocks and runner this port reuses: local
runner, 2 members, the job restarts `MAX_RESTARTS` times and then fails).

Changed in 5.x: `when_inProcessorSupplierGet` (4.x: `when_inProcessorSupplierGet_then_jobRestarted`)
checks that `MockPS.init` was called at least `2 * MEMBER_COUNT` times (the job restarted and the
suppliers were made again); 4.x checked `MockPS.close` (the 4.x port still does).
Renamed in 5.x, otherwise unchanged: `..._then_jobRestarted_cooperative` and friends became
`when_inProcessorProcess_cooperative` etc.

Skipped, with no counterpart: the `useLightJob=true` parameter of every method (light jobs fail
with the `RestartableException` instead of restarting; jetspark has no light jobs).
"""

from __future__ import annotations

import tests.jet.test_jet_execution_lifecycle_restartable as kit
from jetspark import DAG
from jetspark import processors as P


def test_ExecutionLifecycle_RestartableExceptionTest__when_inProcessorSupplierGet() -> None:
    kit.counts = kit.Counts()
    dag = DAG()
    dag.new_vertex("v", kit.PerMember(lambda: kit.MockPS(P.noop, get_error=True)))
    kit.run_until_given_up(dag)
    assert kit.counts.ps_init >= 2 * kit.MEMBER_COUNT, "MockPS.init not called enough times"
