"""What an Omega run starts: the cell state (one actor, or the coordinator
group running the cell state machine) and the schedulers."""
from __future__ import annotations

from schedlab.actors.archs.omega.cellstate import CellState
from schedlab.actors.archs.omega.scheduler import OmegaScheduler
from schedlab.actors.common.cell_endpoint import DirectCell, ReplicatedCell
from schedlab.actors.coordinator.watching_replica import WatchingReplica
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.archs.omega.cell_machine import CellMachineFactory
from schedlab.schedulers.archs.omega.scheduler import SchedulerParams
from schedlab.schedulers.archs.omega.spec import OmegaSpec, scheduler_name
from schedlab.schedulers.model.cluster import host_count
from schedlab.schedulers.placement.device_claims import device_view


def build(b: Build) -> Topology:
    sc, plan, members = b.scenario, b.plan, b.members
    om: OmegaSpec = sc.section
    flush, k = sc.substrate.batch_interval, sc.cell.machines_per_actor
    if sc.coordinator.replicas == 1:
        cellstate = members.spawn(
            "cellstate", CellState, "cellstate", b.rt, plan.cell.capacity, plan.prefill.free,
            om.conflict_mode, om.txn_mode, b.metrics, sc.metrics.sample_interval, flush, k, sc.liveness, om.heartbeat,
        )
        topo = Topology(DirectCell(cellstate), [cellstate], None)
    else:
        factory = CellMachineFactory(plan.cell.capacity, plan.prefill.free, om.conflict_mode.value, om.txn_mode.value, k)
        group = b.coordinator_group(factory, sc.metrics.sample_interval, WatchingReplica,
                                    {"hosts": host_count(plan.cell.size, k), "liveness": sc.liveness,
                                     "heartbeat": om.heartbeat})
        topo = Topology(ReplicatedCell(sc.coordinator.replicas), group.spawn_all(), group)
    topo.heartbeat = om.heartbeat  # commits ring the hosts
    for spec in om.schedulers:
        view = device_view(plan.cell, sc.workload.classes, spec.device_policy)
        params = SchedulerParams(spec.name, spec.t_job, spec.t_task, b.policies[spec.name], om.max_attempts, om.retry_backoff,
                                 view)
        for i in range(spec.count):
            name = scheduler_name(spec, i)
            h = members.spawn("scheduler", OmegaScheduler, name, b.rt, name, params, sc.seed, topo.cell, b.metrics, flush)
            topo.route(spec.classes, name, h)
    return topo
