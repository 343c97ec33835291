"""What a Kubernetes run starts: the API store on the coordinator group
(its replicas run ``KubeAPIMachine``; the leader also runs the node
lifecycle controller: the shared host watch, writing silent kubelets'
nodes off), kube-controller-manager (the route jobs come by), one
kube-scheduler per profile; machine hosts are the kubelets, syncing with
the store as Borglets do with the Borgmaster (``BorgletEndpoint``)."""
from __future__ import annotations

from collections.abc import Mapping

from schedlab.actors.archs.borg.frontend import BorgletEndpoint
from schedlab.actors.archs.kubernetes.controllers import NAME as CONTROLLER, KubeControllerManager
from schedlab.actors.archs.kubernetes.scheduler import KubeScheduler, SchedulerConfig
from schedlab.actors.coordinator.watching_replica import WatchingReplica
from schedlab.actors.topology import Build, Topology
from schedlab.schedulers.archs.kubernetes.api_machine import KubeAPIMachineFactory
from schedlab.schedulers.archs.kubernetes.objects import Node, labels
from schedlab.schedulers.archs.kubernetes.pods import PodFactory
from schedlab.schedulers.archs.kubernetes.registry import user_plugins
from schedlab.schedulers.archs.kubernetes.section import KubeSpec, node_labels
from schedlab.schedulers.archs.kubernetes.spec import CONTROLLER_ROLE, SCHEDULER_ROLE, worker_names
from schedlab.schedulers.model.cluster import host_count
from schedlab.schedulers.placement.device_claims import device_view


def nodes_of(b: Build) -> tuple[Node, ...]:
    """Every machine as a Kubernetes node: its class's labels and taints,
    and hostname, rack and zone."""
    sc, plan = b.scenario, b.plan
    ks: KubeSpec = sc.section
    classes = [mc for mc in sc.cell.machine_classes for _ in range(mc.count)]
    taints = {n.machine_class: n.taints for n in ks.nodes}
    return tuple(Node(i, f"node-{i}", tuple(float(x) for x in plan.cell.capacity[i]),
                      labels(node_labels(ks, mc.name, i, int(plan.cell.rack[i]))), taints.get(mc.name, ()))
                 for i, mc in enumerate(classes))


def user_plugins_of(ks: KubeSpec) -> Mapping[str, object]:
    """The user plugins the scenario's profiles name (a scenario script
    registered them in this process)."""
    return user_plugins([n for p in ks.profiles for n in (p.plugins or ()) + tuple(dict(p.weights))])


def build(b: Build) -> Topology:
    sc, plan = b.scenario, b.plan
    ks: KubeSpec = sc.section
    flush, k, replicas = sc.substrate.batch_interval, sc.cell.machines_per_actor, sc.coordinator.replicas
    standing = [[job.job_id, t, m, list(job.request)]
                for job, ms in zip(plan.prefill.jobs, plan.prefill.machines) for t, m in enumerate(ms.tolist())]
    group = b.coordinator_group(KubeAPIMachineFactory(plan.cell.capacity, k, standing), sc.metrics.sample_interval,
                                WatchingReplica, {"hosts": host_count(plan.cell.size, k), "liveness": sc.liveness,
                                                  "heartbeat": ks.heartbeat})
    topo = Topology(BorgletEndpoint(replicas), group.spawn_all(), group,
                    info={"racks": [int(r) for r in plan.cell.rack]},  # the summary's pods per rack
                    heartbeat=ks.heartbeat)  # the API store's leader rings the kubelets its writes give work
    pods = PodFactory(ks)
    controller = b.members.spawn(CONTROLLER_ROLE, KubeControllerManager, CONTROLLER, b.rt, pods, replicas, b.metrics,
                                 flush)
    topo.route([jc.name for jc in sc.workload.classes], CONTROLLER, controller)
    nodes = nodes_of(b)
    plugins = tuple(user_plugins_of(ks).items())
    for p in ks.profiles:
        for i, name in enumerate(worker_names(p)):
            cfg = SchedulerConfig(p, nodes, pods, replicas, sc.seed, plugins, worker=i, resources=plan.cell.resources,
                                  gangs=any(jc.gang_timeout is not None for jc in sc.workload.classes),
                                  devices=device_view(plan.cell, sc.workload.classes))
            # Started with the routed actors; no job is routed to them (they
            # find their pods in the store), and their role ``places``: stopped
            # before the kubelets, as a bind after that would never start.
            topo.schedulers.append(b.members.spawn(SCHEDULER_ROLE, KubeScheduler, name, b.rt, name, cfg, b.metrics,
                                                   flush))
    # The summary's schedulers are the kube-schedulers (their binds are the txns).
    topo.names[:] = [n for p in ks.profiles for n in worker_names(p)]
    return topo
