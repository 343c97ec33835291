"""What a YARN run starts: the ResourceManager (or, with ``[yarn] rms`` > 1,
an active/standby set electing the active one through the coordinator
group's lease) and the AM pools; machine hosts are the NodeManagers."""
from __future__ import annotations

import dataclasses

from schedlab.schedulers.placement.device_claims import counted_view
from schedlab.actors.archs.yarn.am_pool import AMPool, PoolConfig
from schedlab.actors.archs.yarn.rm import ResourceManager, RMShellConfig
from schedlab.actors.archs.yarn.rms import RMSet
from schedlab.actors.common.head_endpoint import HeadEndpoint
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.archs.yarn.spec import (
    POOL_ROLE,
    RM_NAME,
    RM_ROLE,
    YarnSpec,
    pool_names,
    rm_name,
)
from schedlab.schedulers.consensus.fenced_store import FencedStoreFactory


def _foreign(b: Build) -> tuple:
    """The prefill as the RM sees it: load it did not place."""
    pre = b.plan.prefill
    return tuple((int(m), (job.job_id, t), list(job.request))
                 for job, machines in zip(pre.jobs, pre.machines) for t, m in enumerate(machines.tolist()))


def build(b: Build) -> Topology:
    sc, plan = b.scenario, b.plan
    ys: YarnSpec = sc.section
    flush = sc.substrate.batch_interval
    replicas = sc.coordinator.replicas
    cfg = RMShellConfig(spec=ys, capacity=plan.cell.capacity, rack=plan.cell.rack, foreign=_foreign(b),
                        machines_per_host=sc.cell.machines_per_actor, seed=sc.seed, liveness=sc.liveness,
                        sample_interval=sc.metrics.sample_interval, replicas=replicas,
                        lease_wall_s=ys.rm_lease_ms / 1e3,
                        devices=counted_view(plan.cell, sc.workload.classes, ys.device_policy) if ys.device_policy else None)
    if ys.rms > 1:
        return _standbys(b, cfg, flush)
    # A restarted RM knows nothing: it rebuilds from the nodes, the submitter and the AMs.
    rm = b.members.spawn(RM_ROLE, ResourceManager, RM_NAME, b.rt, cfg, b.metrics, flush,
                         again=(b.rt, dataclasses.replace(cfg, restarted=True), b.metrics, flush))
    names = pool_names(ys)
    pools = [b.members.spawn(POOL_ROLE, AMPool, name, b.rt, name, PoolConfig(ys, i), rm, b.metrics, flush)
             for i, name in enumerate(names)]
    core = [rm, *pools]
    topo = Topology(HeadEndpoint(rm, RM_NAME, "register_node"), core, None)
    topo.route([jc.name for jc in sc.workload.classes], RM_NAME, rm)

    def restarted(role: str, name: str, handle: object) -> None:
        # The core list is what the run stops at the end: the live incarnation.
        order = [RM_NAME, *names]
        if name in order:
            core[order.index(name)] = handle

    b.members.on_restart.append(restarted)
    return topo


def _standbys(b: Build, cfg: RMShellConfig, flush: float) -> Topology:
    """``rms`` ResourceManagers (``rm-<i>``) campaigning for the coordinator
    group's lease. NodeManagers and AM pools find the active one through
    the lease; the submitter's route (``resourcemanager``) is moved by each
    RM that becomes active."""
    sc = b.scenario
    ys: YarnSpec = sc.section
    group = b.coordinator_group(FencedStoreFactory(), None)
    group.spawn_all()
    rms = RMSet(cfg, b.rt, b.metrics, flush, b.members.on_spawn)
    handles = rms.spawn_all()
    pools = [b.members.spawn(POOL_ROLE, AMPool, name, b.rt, name, PoolConfig(ys, i, cfg.replicas), handles[0],
                             b.metrics, flush)
             for i, name in enumerate(pool_names(ys))]
    topo = Topology(HeadEndpoint(handles[0], RM_NAME, "register_node", lease_replicas=cfg.replicas),
                    [*handles, *pools], group, controllers={RM_ROLE: rms}, start_with_hosts=[*handles, *pools],
                    stop_also=pools)
    topo.route([jc.name for jc in sc.workload.classes], RM_NAME, handles[0], holder=rm_name(0))
    names = pool_names(ys)

    def restarted(role: str, name: str, handle: object) -> None:
        if name in names:  # what the run stops at the end: the live incarnation
            pools[names.index(name)] = handle

    b.members.on_restart.append(restarted)
    return topo
