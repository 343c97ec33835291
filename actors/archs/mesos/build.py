"""What a Mesos run starts: the masters (a standby set electing its leader
through the coordinator group's lease when there is more than one) and the
framework schedulers; machine hosts are the agents."""
from __future__ import annotations

import numpy as np

from schedlab.actors.archs.mesos.framework import MesosFramework
from schedlab.actors.archs.mesos.link import AgentEndpoint, MasterLink
from schedlab.actors.archs.mesos.masters import MasterSet
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.archs.mesos.order_policies import get_allocation_policy
from schedlab.schedulers.archs.mesos.framework import FrameworkParams
from schedlab.schedulers.archs.mesos.master_state import MasterConfig
from schedlab.schedulers.archs.mesos.spec import MesosSpec, framework_name
from schedlab.schedulers.consensus.lease import LeaseMachineFactory
from schedlab.schedulers.model.cluster import host_count
from schedlab.schedulers.scenario.spec import Scenario


def _preferred(sc: Scenario, names: tuple[str, ...]) -> np.ndarray | None:
    if not names:
        return None
    mask = [mc.name in names or any(lab in names for lab in mc.labels) for mc in sc.cell.machine_classes for _ in range(mc.count)]
    return np.asarray(mask, dtype=bool)


def build(b: Build) -> Topology:
    sc, plan = b.scenario, b.plan
    ms: MesosSpec = sc.section
    flush, k, n = sc.substrate.batch_interval, sc.cell.machines_per_actor, plan.cell.size
    group = None
    if ms.masters > 1:
        group = b.coordinator_group(LeaseMachineFactory(), None)
        group.spawn_all()
    cfg = MasterConfig(
        capacity=plan.cell.capacity, machines_per_host=k, hosts=host_count(n, k),
        frameworks={framework_name(f): (f.weight, f.priority, f.guarantee) for f in ms.frameworks},
        policy=get_allocation_policy(ms.allocator), granularity=ms.granularity,
        allocation_interval=ms.allocation_interval, offer_timeout=ms.offer_timeout, revocation=ms.revocation,
        starvation_timeout=ms.starvation_timeout, masters=ms.masters, replicas=sc.coordinator.replicas,
        lease_wall_s=ms.master_lease_ms / 1e3, sample_interval=sc.metrics.sample_interval, liveness=sc.liveness,
        heartbeat=ms.heartbeat,
    )
    masters = MasterSet(cfg, b.rt, b.metrics, flush, b.members.on_spawn)
    master_handles = masters.spawn_all()
    link = MasterLink(ms.masters, sc.coordinator.replicas)
    core = master_handles if group is None else list(group.live.values())
    names = [framework_name(f) for f in ms.frameworks]
    topo = Topology(AgentEndpoint(link), core, group, controllers={"master": masters},
                    start_with_hosts=master_handles if group else [], info={"frameworks": names},
                    heartbeat=ms.heartbeat)  # the master rings agents it launches on
    for f in ms.frameworks:
        params = FrameworkParams(f.name, f.t_job, f.t_task, b.policies[f.name], f.mode, ms.max_attempts, f.delay,
                                 f.data_replicas, f.min_offer, _preferred(sc, f.preferred), f.refuse_seconds)
        name = framework_name(f)
        h = b.members.spawn("framework", MesosFramework, name, b.rt, params, n, sc.seed, link, b.metrics, flush,
                            cfg.lease_wall_s)
        topo.route(f.classes, name, h)
    return topo
