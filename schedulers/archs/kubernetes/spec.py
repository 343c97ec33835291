"""Kubernetes' registration, pure: its ``[kubernetes]`` section
(``section.py``), who it starts, who decides, and the checks on the whole
scenario (a topology key no node has, a pod no node can hold).

The API store runs on the coordinator group (the group plays etcd: three
replicas by default); one kube-scheduler per profile
(``kube-scheduler-<profile>``, role ``scheduler``); the
kube-controller-manager (role ``controller``, the route jobs come by);
kubelets are the machine hosts."""
from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.archs.kubernetes.section import (
    FIELDS,
    KubeSpec,
    ProfileSpec,
    check_fit,
    check_topology_keys,
    parse_kubernetes,
)
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table
from schedlab.schedulers.archs.kubernetes.events import EVENTS

CONTROLLER = "kube-controller-manager"
CONTROLLER_ROLE = "controller"
SCHEDULER_ROLE = "scheduler"


def scheduler_name(profile: str) -> str:
    return f"kube-scheduler-{profile}"


def worker_names(p: ProfileSpec) -> list[str]:
    """The scheduler actors of a profile: one, or ``workers`` of them."""
    base = scheduler_name(p.name)
    return [base] if p.workers == 1 else [f"{base}-{i}" for i in range(p.workers)]


def _parse(t: Table, ctx: SectionContext) -> KubeSpec:
    return parse_kubernetes(t, ctx.job_classes, tuple(mc.name for mc in ctx.machine_classes))


def roster(sc: Scenario) -> dict[str, list[str]]:
    ks: KubeSpec = sc.section
    return {CONTROLLER_ROLE: [CONTROLLER], SCHEDULER_ROLE: [n for p in ks.profiles for n in worker_names(p)]}


def actors(sc: Scenario) -> list[tuple[str, int]]:
    return [(f"kubernetes.profiles[{i}].workers", p.workers) for i, p in enumerate(sc.section.profiles)] + \
        [("kubernetes", 1)]


def deciders(sc: Scenario) -> list[Decider]:
    return [Decider(n, 0.0, p.t_pod) for p in sc.section.profiles for n in worker_names(p)]


def check_sizes(top: Table, sc: Scenario, _tasks: dict[str, float]) -> None:
    ks: KubeSpec = sc.section
    check_topology_keys(top, ks)
    classes = [(jc.name, tuple(float(d.maximum()) for d in jc.request), i) for i, jc in enumerate(sc.workload.classes)]
    machines = [(mc.name, tuple(float(x) for x in np.asarray(mc.capacity))) for mc in sc.cell.machine_classes]
    check_fit(top, classes, machines, ks)


def example(classes: tuple[str, ...]) -> dict[str, Any]:
    """Two priority classes and a second profile that packs (MostAllocated),
    the first job class high priority on the default scheduler (Jobs: its
    pods run to completion), the others Deployments on the packer (their
    pods restarted in place when their run ends, so give them long or
    endless durations: a Deployment never frees its room)."""
    first, rest = classes[:1], classes[1:]
    workloads = [{"classes": list(first), "priority_class": "high", "kind": "job"}]
    if rest:
        workloads.append({"classes": list(rest), "scheduler_name": "packer", "kind": "deployment"})
    return {
        "priority_classes": [{"name": "high", "value": 1000}, {"name": "low", "value": 0, "global_default": True}],
        "profiles": [{"name": "default-scheduler"}, {"name": "packer", "scoring_strategy": "MostAllocated"}],
        "workloads": workloads,
    }


SPEC = ArchSpec(
    name="kubernetes",
    devices=("the DeviceShare plugin, as a GPU-sharing scheduler adds it (Alibaba's gpushare extender, the FGD "
             "paper's plugins): Filter on the node's devices and models, Score by the profile's device_policy (fgd, "
             "best_fit, dot_product, gpu_packing, random_fit), Reserve the devices it takes, written with the binding "
             "so the API store and the kubelet account each device"),
    gang=("a gang job's pods form a PodGroup of minMember = its tasks, and the kube-scheduler runs the Coscheduling "
          "plugin (scheduler-plugins): members wait at Permit, their room held, until the group is placed, and a "
          "partial group lets go of everything after gang_timeout (permitWaitingTimeSeconds) and is tried again"),
    title="Kubernetes (API store on the coordinator, scheduling framework, kubelets)",
    events=EVENTS,
    parse=_parse,
    roster=roster,
    actors=actors,
    deciders=deciders,
    roles=(
        Role(CONTROLLER_ROLE, routed=True, recovers=True,
             about="kube-controller-manager: turns jobs into pods, makes lost ones again"),
        Role(SCHEDULER_ROLE, places=True, about="a kube-scheduler (one profile)"),
    ),
    peers={
        "machine": ("coordinator",),
        SCHEDULER_ROLE: ("coordinator",),
        CONTROLLER_ROLE: ("coordinator",),
        "coordinator": ("coordinator",),
    },
    example=example,
    live="schedlab.actors.archs.kubernetes.architecture:ARCHITECTURE",
    section_required=False,  # a missing [kubernetes] means one default scheduler, no priorities
    default_replicas=3,
    min_replicas=3,
    check_sizes=check_sizes,
    fields=FIELDS,
    showcase="k8s_failover",
    further_resources=("extended resources: NodeResourcesFit filters on every resource and scores cpu and memory unless told "
                       "otherwise (upstream's default), as it does nvidia.com/gpu"),
)
