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

from schedlab.schedulers.arch import ArchSpec, CssSetup, Decider, Role, SectionContext
from schedlab.schedulers.archs.mesos.order_policies import ALLOCATION_POLICIES
from schedlab.schedulers.placement.policies import PLACEMENT_POLICIES
from schedlab.schedulers.model.resources import BASE
from schedlab.schedulers.scenario.fields import Field, parse_fields, per_resource, read_field
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, check_deciders, non_negative, positive, table_array
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
    min_offer: tuple[float, ...] = (0.0,) * len(BASE)  # one per resource the cell declares
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
    heartbeat: float = 15.0  # emulated s: an idle agent's ping (Mesos' agent_ping_timeout)


def _at_least_one(v: int) -> str | None:
    return None if v > 0 else "must be > 0"


_F = FrameworkSpec(name="", classes=())
_D = MesosSpec(frameworks=())

# [[mesos.frameworks]]: one framework scheduler, in the order _framework
# reads its keys (classes and min_offer first, by the parser).
FRAMEWORK_FIELDS = (
    Field("classes", list, nested=True, doc="The job classes routed to this framework (at least one)."),
    Field("min_offer", dict, {}, nested=True, of=(per_resource(lambda r, base: Field(r, float, 0.0, check=non_negative)),),
          doc="Per resource: offers smaller than this are declined."),
    Field("preferred", list, [], nested=True, schema={"items": {"type": "string"}},
          doc="Machine class names or labels whose offers it prefers."),
    Field("name", str, doc="The framework's name (unique)."),
    Field("t_job", float, _F.t_job, unit="emulated s", check=non_negative, doc="Think time per job."),
    Field("t_task", float, _F.t_task, unit="emulated s", check=non_negative, doc="... and per task."),
    Field("policy", str, _F.policy, choices=lambda: tuple(PLACEMENT_POLICIES), doc="Placement policy inside an offer."),
    Field("mode", str, _F.mode, choices=FRAMEWORK_MODES,
          doc="elastic: launch whatever tasks fit (Hadoop); rigid: hold resources until a job's tasks all fit (MPI)."),
    Field("weight", float, _F.weight, check=positive, doc="Its weight in the allocator's fair sharing."),
    Field("priority", int, _F.priority, doc="Its priority (the priority allocator)."),
    Field("guarantee", float, _F.guarantee, check=lambda v: None if 0 <= v <= 1 else "must be in [0, 1]",
          schema={"minimum": 0, "maximum": 1}, doc="Dominant share the master protects by revocation."),
    Field("delay", float, _F.delay, unit="emulated s", check=non_negative,
          doc="Delay scheduling: how long to wait for a machine holding a task's data (needs data_replicas > 0)."),
    Field("data_replicas", int, _F.data_replicas, check=lambda v: None if v >= 0 else "must be >= 0", schema={"minimum": 0},
          doc="Machines holding each task's input data."),
    Field("refuse_seconds", float, _F.refuse_seconds, unit="emulated s", check=non_negative,
          doc="How long a declined offer's resources are not offered to it again."),
)

# Every key of [mesos], in the order parse_mesos reads them.
FIELDS = (
    Field("frameworks", list, nested=True, of=FRAMEWORK_FIELDS, doc="[[mesos.frameworks]]: the framework schedulers."),
    Field("masters", int, _D.masters, check=lambda v: None if 1 <= v <= 9 else "must be 1 to 9",
          schema={"minimum": 1, "maximum": 9},
          doc="Masters; > 1: standbys, the leader elected through the coordinator group (replicas >= 3)."),
    # Checked against the registry when read, so a policy a scenario script
    # registered (register_allocation_policy) is accepted.
    Field("allocator", str, _D.allocator, choices=lambda: tuple(ALLOCATION_POLICIES), doc="The allocation policy (DRF by default)."),
    Field("granularity", str, _D.granularity, choices=GRANULARITIES,
          doc="cell: all free resources in one offer; agent: per-agent slices."),
    Field("allocation_interval", float, _D.allocation_interval, unit="emulated s", check=positive,
          doc="Between allocation rounds."),
    Field("offer_timeout", float, _D.offer_timeout, unit="emulated s", check=positive,
          doc="Before an unanswered offer is rescinded."),
    Field("max_attempts", int, _D.max_attempts, check=_at_least_one, schema={"minimum": 1},
          doc="Placement attempts before a job is given up."),
    Field("master_lease_ms", float, _D.master_lease_ms, unit="wall ms", check=lambda v: None if v >= 50 else "must be >= 50",
          schema={"minimum": 50}, doc="How long a leading master's lease lasts without renewal."),
    Field("revocation", bool, _D.revocation, doc="Revoke resources from frameworks above their guarantee for starved ones."),
    Field("starvation_timeout", float, _D.starvation_timeout, unit="emulated s", check=positive,
          doc="How long a framework with demand stays below its guarantee before the master revokes."),
    Field("heartbeat", float, _D.heartbeat, unit="emulated s", check=positive,
          doc="An agent's ping to the master when nothing else is to exchange (launches ring the agent; "
              "Mesos' agent_ping_timeout; written off after 3 missed)."),
)
FIELD = {f.name: f for f in FIELDS}


def _framework(t: Table, known_classes: set[str], machine_names: set[str], resources: tuple[str, ...]) -> FrameworkSpec:
    classes = t.names("classes", known_classes, "job class")
    mt = t.sub("min_offer", default={})
    min_offer = tuple(parse_fields(mt, FRAMEWORK_FIELDS[1].of, values={"resources": resources}).values())
    mt.done()
    preferred = t.get("preferred", list, default=[])
    for p in preferred:
        if not isinstance(p, str) or p not in machine_names:
            t.fail(t.key("preferred"), f"{p!r} is not a machine class name or label")
    spec = FrameworkSpec(classes=tuple(classes), min_offer=min_offer, preferred=tuple(preferred),
                         **parse_fields(t, FRAMEWORK_FIELDS))
    if spec.delay > 0 and spec.data_replicas == 0:
        t.fail(t.key("delay"), "delay scheduling needs data_replicas > 0 (where each task's data lives)")
    t.done()
    return spec


def parse_mesos(t: Table, ctx: SectionContext) -> MesosSpec:
    job_classes, machine_classes, replicas = list(ctx.job_classes), ctx.machine_classes, ctx.coordinator.replicas
    machine_names = {mc.name for mc in machine_classes} | {lab for mc in machine_classes for lab in mc.labels}
    fws = tuple(_framework(x, set(job_classes), machine_names, ctx.resources) for x in table_array(t, "frameworks"))
    check_deciders(t, "frameworks", fws, job_classes, "framework")
    if sum(f.guarantee for f in fws) > 1 + 1e-9:
        t.fail(t.key("frameworks"), "guarantees add up to more than the whole cell")
    masters = read_field(t, FIELD["masters"])
    if masters > 1 and replicas < 3:
        t.fail(t.key("masters"), "standby masters elect their leader through the coordinator: set [coordinator] replicas >= 3")
    spec = MesosSpec(frameworks=fws, masters=masters, **parse_fields(t, FIELDS, skip=("masters",)))
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
    gang=("a gang job is placed as a rigid framework places every job: it holds slots from offers until it holds "
          "the whole gang, then launches it at once; what it holds it gives back after gang_timeout and gathers again"),
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
    fields=FIELDS,
    showcase="mesos_failover",
    css_setups=(CssSetup("mesos", "Mesos", "mesos.frameworks.1", "framework-service"),),
    further_resources=("scalar resources: offers carry every resource, DRF's dominant share is over all of them and "
                       "min_offer has a floor per resource (Mesos' gpus and custom scalars)"),
)
