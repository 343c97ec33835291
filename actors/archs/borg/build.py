"""What a Borg run starts: the Borgmaster (the coordinator group's replicas
do its work; the leader schedules) and the stateless front end that admits
jobs; machine hosts are the Borglets."""
from __future__ import annotations

import numpy as np

from schedlab.schedulers.placement.device_claims import counted_view
from schedlab.actors.archs.borg.borgmaster import BorgmasterReplica
from schedlab.schedulers.archs.borg.scheduler import BorgParams
from schedlab.actors.archs.borg.frontend import BorgFrontend, BorgletEndpoint
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.archs.borg.cell_machine import BorgMachineFactory
from schedlab.schedulers.archs.borg.placement import PlacementParams
from schedlab.schedulers.archs.borg.spec import FRONTEND, BorgSpec
from schedlab.schedulers.model.cluster import host_count
from schedlab.schedulers.scenario.spec import Scenario


def _machine_mask(sc: Scenario, names: tuple[str, ...]) -> np.ndarray:
    return np.asarray([mc.name in names or any(lab in names for lab in mc.labels)
                       for mc in sc.cell.machine_classes for _ in range(mc.count)], dtype=bool)


def build(b: Build) -> Topology:
    sc, plan = b.scenario, b.plan
    bs: BorgSpec = sc.section
    flush, k, n = sc.substrate.batch_interval, sc.cell.machines_per_actor, plan.cell.size
    params = BorgParams(
        t_job=bs.t_job, t_task=bs.t_task, batch_t_job=bs.batch_t_job, batch_t_task=bs.batch_t_task,
        placement=PlacementParams(bs.scoring, bs.sample or None, False), spread_service=bs.spread_service,
        preemption=bs.preemption, multi_path=bs.multi_path, missed_polls=bs.missed_polls,
        # A Borglet polls when rung (a launch or kill waits), when a task
        # ended, and once per poll interval: never call it silent before it
        # missed several batch intervals (wall), whatever the emulated one.
        poll_interval=max(bs.poll_interval, 4 * flush * sc.time_scale),
        hosts=host_count(n, k), racks=plan.cell.rack, eligible={cls: _machine_mask(sc, names) for cls, names in bs.requires},
        retry_backoff=bs.retry_backoff, idle_wall=flush / 2, liveness=sc.liveness,
        devices=counted_view(plan.cell, sc.workload.classes, bs.device_scoring) if bs.device_scoring else None,
    )
    quota = {(q.user, q.band): list(q.limit) for q in bs.quota}
    standing = [[job.job_id, t, m, list(job.request), job.priority]
                for job, ms in zip(plan.prefill.jobs, plan.prefill.machines) for t, m in enumerate(ms.tolist())]
    factory = BorgMachineFactory(plan.cell.capacity, plan.prefill.free, k, quota, bs.max_attempts, standing, plan.cell.resources)
    group = b.coordinator_group(factory, sc.metrics.sample_interval, BorgmasterReplica, {"params": params})
    topo = Topology(BorgletEndpoint(sc.coordinator.replicas), group.spawn_all(), group,
                    quiesce_before_hosts=True, await_admission=True,
                    heartbeat=params.poll_interval)  # the leader rings the Borglets its writes give work
    front = b.members.spawn("frontend", BorgFrontend, FRONTEND, b.rt, sc.coordinator.replicas, b.metrics, flush)
    topo.schedulers.append(front)
    topo.names.extend(["borgmaster-all"] if not bs.multi_path else ["borgmaster-service", "borgmaster-batch"])
    for jc in sc.workload.classes:
        topo.routes[jc.name] = [(FRONTEND, front)]
    return topo
