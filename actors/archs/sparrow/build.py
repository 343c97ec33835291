"""What a Sparrow run starts: a node monitor actor per machine host (the
host polls it), the distributed schedulers (routed every job class, by job
id) and, with Hawk, the centralized scheduler for long jobs."""
from __future__ import annotations

import dataclasses

import numpy as np

from schedlab.actors.archs.sparrow.nodemon import NodeMonitor, NodemonConfig, NodemonEndpoint
from schedlab.actors.archs.sparrow.scheduler import CentralScheduler, SchedConfig, SparrowScheduler
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.model.resources import largest_request, slots_for
from schedlab.schedulers.archs.sparrow.spec import (
    CENTRAL, CENTRAL_ID, ROLE_CENTRAL, ROLE_NODEMON, ROLE_SCHED, SparrowSpec, nodemon_name, scheduler_name,
)
from schedlab.schedulers.model.cluster import host_count


def build(b: Build) -> Topology:
    sc, cell = b.scenario, b.plan.cell
    s: SparrowSpec = sc.section
    flush = sc.substrate.batch_interval
    k = sc.cell.machines_per_actor
    hosts = host_count(cell.size, k)
    largest = largest_request([j["request"] for j in b.plan.jobs], b.plan.cell.width)
    standing = b.plan.prefill.by_machine()
    hawk = s.hybrid if s.hawk else None
    nodemons = {}
    for h in range(hosts):
        ms = tuple(range(h * k, min(cell.size, (h + 1) * k)))
        cfg = NodemonConfig(
            host=h, machines=ms, capacity=np.asarray(cell.capacity[ms[0]:ms[-1] + 1]), largest=largest, slots=s.slots,
            standing=tuple(tuple(standing.get(m, ())) for m in ms), machines_per_host=k, cell_size=cell.size,
            seed=sc.seed, retry=s.retry, steal=bool(hawk and hawk.steal), steal_attempts=hawk.steal_attempts if hawk else 0,
            steal_interval=s.steal_interval, short_fraction=hawk.short_fraction if hawk else 0.0, hosts=hosts,
            sample_interval=sc.metrics.sample_interval,
            total=tuple(float(x) for x in cell.capacity.sum(axis=0)),
        )
        nodemons[h] = b.members.spawn(ROLE_NODEMON, NodeMonitor, nodemon_name(h), b.rt, cfg, b.metrics, flush)
    topo = Topology(NodemonEndpoint(nodemons), list(nodemons.values()), None)
    base = SchedConfig(index=0, policy=s.policy, d=s.d, workers=cell.size, machines_per_host=k, hosts=hosts,
                       peers=s.schedulers, t_job=s.t_job, t_task=s.t_task, seed=sc.seed, cutoff=s.long_cutoff,
                       hawk=s.hawk, short_fraction=hawk.short_fraction if hawk else 0.1, retry=s.retry)
    classes = [jc.name for jc in sc.workload.classes]
    for i in range(s.schedulers):
        sched = dataclasses.replace(base, index=i)
        h = b.members.spawn(ROLE_SCHED, SparrowScheduler, scheduler_name(i), b.rt, sched, b.metrics, flush,
                            again=(b.rt, dataclasses.replace(sched, restarted=True), b.metrics, flush))
        topo.route(classes, scheduler_name(i), h)
    if s.hawk:
        sched = dataclasses.replace(base, index=CENTRAL_ID)
        central = b.members.spawn(ROLE_CENTRAL, CentralScheduler, CENTRAL, b.rt, sched, b.metrics, flush,
                                  again=(b.rt, dataclasses.replace(sched, restarted=True), b.metrics, flush))
        topo.start_with_hosts.append(central)
        topo.names.append(CENTRAL)
    slots = [slots_for(cell.capacity[m], np.zeros(cell.capacity.shape[1]), largest, s.slots) for m in range(cell.size)]
    topo.info["sparrow"] = {
        "policy": s.policy, "d": s.d, "schedulers": s.schedulers, "nodemons": hosts, "slots": int(sum(slots)),
        "slots_per_machine": {"min": int(min(slots)), "max": int(max(slots))}, "largest_request": list(largest),
        "hybrid": None if hawk is None else {"cutoff": hawk.cutoff, "short_fraction": hawk.short_fraction,
                                           "steal": hawk.steal, "steal_attempts": hawk.steal_attempts},
        "cutoff": s.long_cutoff,
    }
    return topo
