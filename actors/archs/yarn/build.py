"""What a YARN run starts: the ResourceManager and the AM pools; machine
hosts are the NodeManagers."""
from __future__ import annotations

import dataclasses

from schedlab.actors.archs.yarn.am_pool import AMPool, PoolConfig
from schedlab.actors.common.head_endpoint import HeadEndpoint
from schedlab.actors.archs.yarn.rm import ResourceManager, RMShellConfig
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.archs.yarn.spec import POOL_ROLE, RM_NAME, RM_ROLE, YarnSpec, pool_names


def _foreign(b: Build) -> tuple:
    """The prefill as the RM sees it: load it did not place."""
    pre = b.plan.prefill
    return tuple((int(m), (job.job_id, t), list(job.request))
                 for job, machines in zip(pre.jobs, pre.machines) for t, m in enumerate(machines.tolist()))


def build(b: Build) -> Topology:
    sc, plan = b.scenario, b.plan
    ys: YarnSpec = sc.section
    flush = sc.substrate.batch_interval
    cfg = RMShellConfig(spec=ys, capacity=plan.cell.capacity, rack=plan.cell.rack, foreign=_foreign(b),
                        machines_per_host=sc.cell.machines_per_actor, seed=sc.seed, liveness=sc.liveness,
                        sample_interval=sc.metrics.sample_interval)
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
