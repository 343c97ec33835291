"""What a dispatcher run starts: the head node; machine hosts are its workers."""
from __future__ import annotations

import dataclasses

from schedlab.actors.common.head_endpoint import HeadEndpoint
from schedlab.actors.archs.dispatcher.head import Dispatcher, HeadConfig
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.archs.dispatcher.spec import NAME, ROLE, DispatcherSpec
from schedlab.schedulers.placement.device_claims import device_view


def build(b: Build) -> Topology:
    sc, plan = b.scenario, b.plan
    d: DispatcherSpec = sc.section
    flush = sc.substrate.batch_interval
    cfg = HeadConfig(
        capacity=plan.cell.capacity, free=plan.prefill.free, machines_per_host=sc.cell.machines_per_actor,
        queue=d.queue, placement=b.policies[NAME], t_job=d.t_job, t_task=d.t_task, seed=sc.seed,
        liveness=sc.liveness, sample_interval=sc.metrics.sample_interval, view=d.view, heartbeat=d.heartbeat,
        devices=device_view(plan.cell, sc.workload.classes, d.device_policy),
    )
    # A restarted head knows nothing: it rebuilds from its workers and the submitter.
    head = b.members.spawn(ROLE, Dispatcher, NAME, b.rt, cfg, b.metrics, flush,
                           again=(b.rt, dataclasses.replace(cfg, restarted=True), b.metrics, flush))
    topo = Topology(HeadEndpoint(head, NAME, "register_worker"), [head], None,
                    heartbeat=d.heartbeat)  # the head rings the workers it dispatches to
    topo.route([jc.name for jc in sc.workload.classes], NAME, head)
    return topo
