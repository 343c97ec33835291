"""What a SLURM run starts: slurmctld (or a primary and a backup electing
through the coordinator group); machine hosts are the node daemons."""
from __future__ import annotations

import dataclasses

from schedlab.actors.archs.slurm.slurmctld import CtldConfig, SlurmController
from schedlab.actors.archs.slurm.slurmctld_ha import ControllerSet
from schedlab.actors.common.head_endpoint import HeadEndpoint
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.archs.slurm.spec import NAME, ROLE, SlurmSpec, controller_name
from schedlab.schedulers.consensus.fenced_store import FencedStoreFactory


def _foreign(b: Build) -> tuple[tuple[int, int, int, float, tuple[float, ...]], ...]:
    """The prefill as slurmctld sees it: load it did not place, holding its
    nodes until it ends."""
    return tuple((m, job.job_id, t, float(job.durations[t]), tuple(job.request)) for m, job, t in b.plan.prefill.placed())


def build(b: Build) -> Topology:
    sc, plan = b.scenario, b.plan
    s: SlurmSpec = sc.section
    flush = sc.substrate.batch_interval
    cfg = CtldConfig(spec=s, capacity=plan.cell.capacity, machines_per_host=sc.cell.machines_per_actor,
                     foreign=_foreign(b), seed=sc.seed, liveness=sc.liveness,
                     sample_interval=sc.metrics.sample_interval, state_file=str(b.out / "slurmctld.state"),
                     replicas=sc.coordinator.replicas)
    classes = [jc.name for jc in sc.workload.classes]
    if s.controllers == 1:
        # A restarted controller reads the state its predecessor saved.
        # Its route is its name: a restarted one takes it back by name.
        name = controller_name(0)
        ctl = b.members.spawn(ROLE, SlurmController, name, b.rt, cfg, b.metrics, flush,
                              again=(b.rt, dataclasses.replace(cfg, restarted=True), b.metrics, flush))
        topo = Topology(HeadEndpoint(ctl, name, "register_node"), [ctl], None)
        topo.route(classes, name, ctl)
        topo.names[:] = [NAME]  # the summary's scheduler: the decider its txns name
        return topo
    group = b.coordinator_group(FencedStoreFactory(), None)
    group.spawn_all()
    pair = ControllerSet(cfg, b.rt, b.metrics, flush, b.members.on_spawn)
    handles = pair.spawn_all()
    topo = Topology(HeadEndpoint(handles[0], NAME, "register_node", lease_replicas=cfg.replicas), handles, group,
                    controllers={ROLE: pair}, start_with_hosts=handles)
    topo.route(classes, NAME, handles[0], holder=controller_name(0))
    return topo
