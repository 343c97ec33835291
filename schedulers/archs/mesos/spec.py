"""Mesos (two-level): the ``[mesos]`` section of a scenario (master,
allocator and frameworks) and the architecture's registration.

The master's allocator (DRF by default) offers free resources to framework
schedulers, which place their tasks inside the offers they accept; standby
masters take over through the coordinator group. Inert, validated, frozen
data like the rest of the scenario; parsed by ``parse_mesos`` with errors
naming the file, the key and the problem.
"""
from __future__ import annotations

from dataclasses import dataclass

from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.archs.mesos.order_policies import ALLOCATION_POLICIES
from schedlab.schedulers.placement.policies import PLACEMENT_POLICIES
from schedlab.schedulers.model.resources import RESOURCES
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, check_deciders, non_negative, one_of, positive, table_array
from schedlab.schedulers.archs.mesos.events import EVENTS

GRANULARITIES = ("cell", "agent")
FRAMEWORK_MODES = ("elastic", "rigid")


@dataclass(frozen=True)
class FrameworkSpec:
    """One framework scheduler.

    ``mode``: elastic frameworks launch whatever tasks fit (Hadoop); rigid
    ones hold resources until all of a job's tasks fit at once (MPI).
    ``min_offer`` (per resource) and ``preferred`` (machine class names or
    labels) filter offers; ``delay`` > 0 with ``data_replicas`` > 0 is delay
    scheduling: wait up to ``delay`` emulated seconds for a machine holding a
    task's data."""

    name: str
    classes: tuple[str, ...]
    t_job: float = 0.1
    t_task: float = 0.005
    policy: str = "random_first_fit"
    mode: str = "elastic"
    weight: float = 1.0
    priority: int = 0
    guarantee: float = 0.0  # dominant share the master protects by revocation
    min_offer: tuple[float, ...] = (0.0,) * len(RESOURCES)
    preferred: tuple[str, ...] = ()
    delay: float = 0.0
    data_replicas: int = 0
    refuse_seconds: float = 5.0


@dataclass(frozen=True)
class MesosSpec:
    frameworks: tuple[FrameworkSpec, ...]
    allocator: str = "drf"
    granularity: str = "cell"  # "cell": all free resources in one offer; "agent": per-agent slices
    allocation_interval: float = 1.0  # emulated s between allocation rounds
    offer_timeout: float = 30.0  # emulated s before an unanswered offer is rescinded
    max_attempts: int = 1000
    masters: int = 1  # > 1: standbys, leader chosen through the coordinator group
    master_lease_ms: float = 1000.0  # wall ms a leader's lease lasts without renewal
    revocation: bool = False
    starvation_timeout: float = 30.0  # emulated s below guarantee, with demand, before revoking


def _framework(t: Table, known_classes: set[str], machine_names: set[str]) -> FrameworkSpec:
    classes = t.names("classes", known_classes, "job class")
    mt = t.sub("min_offer", default={})
    min_offer = tuple(mt.get(r, float, default=0.0, check=non_negative) for r in RESOURCES)
    mt.done()
    preferred = t.get("preferred", list, default=[])
    for p in preferred:
        if not isinstance(p, str) or p not in machine_names:
            t.fail(t.key("preferred"), f"{p!r} is not a machine class name or label")
    spec = FrameworkSpec(
        name=t.get("name", str),
        classes=tuple(classes),
        t_job=t.get("t_job", float, default=0.1, check=non_negative),
        t_task=t.get("t_task", float, default=0.005, check=non_negative),
        policy=t.get("policy", str, default="random_first_fit", check=one_of(tuple(PLACEMENT_POLICIES))),
        mode=t.get("mode", str, default="elastic", check=one_of(FRAMEWORK_MODES)),
        weight=t.get("weight", float, default=1.0, check=positive),
        priority=t.get("priority", int, default=0),
        guarantee=t.get("guarantee", float, default=0.0, check=lambda v: None if 0 <= v <= 1 else "must be in [0, 1]"),
        min_offer=min_offer,
        preferred=tuple(preferred),
        delay=t.get("delay", float, default=0.0, check=non_negative),
        data_replicas=t.get("data_replicas", int, default=0, check=lambda v: None if v >= 0 else "must be >= 0"),
        refuse_seconds=t.get("refuse_seconds", float, default=5.0, check=non_negative),
    )
    if spec.delay > 0 and spec.data_replicas == 0:
        t.fail(t.key("delay"), "delay scheduling needs data_replicas > 0 (where each task's data lives)")
    t.done()
    return spec


def parse_mesos(t: Table, ctx: SectionContext) -> MesosSpec:
    job_classes, machine_classes, replicas = list(ctx.job_classes), ctx.machine_classes, ctx.coordinator.replicas
    machine_names = {mc.name for mc in machine_classes} | {lab for mc in machine_classes for lab in mc.labels}
    fws = tuple(_framework(x, set(job_classes), machine_names) for x in table_array(t, "frameworks"))
    check_deciders(t, "frameworks", fws, job_classes, "framework")
    if sum(f.guarantee for f in fws) > 1 + 1e-9:
        t.fail(t.key("frameworks"), "guarantees add up to more than the whole cell")
    masters = t.get("masters", int, default=1, check=lambda v: None if 1 <= v <= 9 else "must be 1 to 9")
    if masters > 1 and replicas < 3:
        t.fail(t.key("masters"), "standby masters elect their leader through the coordinator: set [coordinator] replicas >= 3")
    spec = MesosSpec(
        frameworks=fws,
        # Checked against the registry at parse time, so a policy a scenario
        # script registered (register_allocation_policy) is accepted.
        allocator=t.get("allocator", str, default="drf", check=one_of(tuple(ALLOCATION_POLICIES))),
        granularity=t.get("granularity", str, default="cell", check=one_of(GRANULARITIES)),
        allocation_interval=t.get("allocation_interval", float, default=1.0, check=positive),
        offer_timeout=t.get("offer_timeout", float, default=30.0, check=positive),
        max_attempts=t.get("max_attempts", int, default=1000, check=lambda v: None if v > 0 else "must be > 0"),
        masters=masters,
        master_lease_ms=t.get("master_lease_ms", float, default=1000.0, check=lambda v: None if v >= 50 else "must be >= 50"),
        revocation=t.get("revocation", bool, default=False),
        starvation_timeout=t.get("starvation_timeout", float, default=30.0, check=positive),
    )
    t.done()
    return spec


def framework_name(f: FrameworkSpec) -> str:
    return f"framework-{f.name}"


def master_name(i: int) -> str:
    return f"master-{i}"


def roster(sc: Scenario) -> dict[str, list[str]]:
    ms: MesosSpec = sc.section
    return {"framework": [framework_name(f) for f in ms.frameworks], "master": [master_name(i) for i in range(ms.masters)]}


def actors(sc: Scenario) -> list[tuple[str, int]]:
    return [("mesos.frameworks", len(sc.section.frameworks)), ("mesos.masters", sc.section.masters)]


def deciders(sc: Scenario) -> list[Decider]:
    return [Decider(f.name, f.t_job, f.t_task, f.policy) for f in sc.section.frameworks]


def check_sizes(top: Table, sc: Scenario, tasks: dict[str, float]) -> None:
    """A framework holds the input locations of every task it is routed
    (tasks x data_replicas machine ids)."""
    from schedlab.schedulers.scenario.limits import MAX_TASKS, count

    for i, f in enumerate(sc.section.frameworks):
        ids = sum(tasks[c] for c in f.classes) * min(f.data_replicas, sc.cell.machines)
        if ids > MAX_TASKS:
            top.fail(f"mesos.frameworks[{i}].data_replicas",
                     f"~{count(ids)} machine ids of task input for this framework to hold (tasks x data_replicas); "
                     f"at most {count(MAX_TASKS)}")


SPEC = ArchSpec(
    name="mesos",
    title="Mesos (two-level: resource offers)",
    events=EVENTS,
    parse=parse_mesos,
    roster=roster,
    actors=actors,
    deciders=deciders,
    roles=(
        Role("framework", routed=True, recovers=True, about="a Mesos framework scheduler"),
        Role("master", kill_leader="kill_master", about="a Mesos master; standbys take over"),
    ),
    peers={
        "machine": ("coordinator", "master"),
        "framework": ("master",),
        "coordinator": ("coordinator",),
        "master": ("coordinator", "framework", "machine"),
    },
    example=lambda classes: {"masters": 2, "frameworks": [{"name": "all", "classes": list(classes), "t_job": 0.5,
                                                           "t_task": 0.01}]},
    live="schedlab.actors.archs.mesos.architecture:ARCHITECTURE",
    check_sizes=check_sizes,
)
