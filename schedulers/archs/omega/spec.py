"""Omega (shared state): the ``[omega]`` section and the architecture's
registration.

Schedulers each hold a full copy of the cell, think ``t_job + t_task x
tasks`` per job, and commit claims optimistically through the shared
cell state (``schedulers.shared_state``): a claim on a machine that changed
meanwhile conflicts (by resources or by sequence number), and the job is
tried again. The cell state is one actor, or a Raft-replicated state
machine on the coordinator group ([coordinator] replicas >= 3).
"""
from __future__ import annotations

from dataclasses import dataclass

from schedlab.schedulers.arch import ArchSpec, CssSetup, Decider, Role, SectionContext
from schedlab.schedulers.placement.device_claims import DEVICE_POLICIES
from schedlab.schedulers.placement.policies import PLACEMENT_POLICIES
from schedlab.schedulers.scenario.fields import Field, parse_fields
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, check_deciders, non_negative, positive, table_array
from schedlab.schedulers.shared_state.commit import ConflictMode, TxnMode
from schedlab.schedulers.archs.omega.events import EVENTS


@dataclass(frozen=True)
class OmegaSchedulerSpec:
    name: str
    classes: tuple[str, ...]
    count: int = 1
    t_job: float = 0.1
    t_task: float = 0.005
    policy: str = "random_first_fit"
    device_policy: str = "best_fit"


@dataclass(frozen=True)
class OmegaSpec:
    schedulers: tuple[OmegaSchedulerSpec, ...]
    conflict_mode: ConflictMode = ConflictMode.RESOURCE
    txn_mode: TxnMode = TxnMode.INCREMENTAL
    max_attempts: int = 1000
    retry_backoff: float = 1.0
    heartbeat: float = 10.0  # emulated s: a Borglet's poll, a kubelet's node status


_S = OmegaSchedulerSpec(name="", classes=())
_D = OmegaSpec(schedulers=())

# [[omega.schedulers]]: one scheduler (``count`` identical actors), in the
# order _scheduler reads its keys.
SCHEDULER_FIELDS = (
    Field("classes", list, nested=True, schema={"items": {"type": "string"}, "minItems": 1},
          doc="The job classes routed to this scheduler (at least one)."),
    Field("name", str, doc="The scheduler's name (unique)."),
    Field("count", int, _S.count, check=lambda v: None if v > 0 else "must be > 0", schema={"minimum": 1},
          doc="Identical scheduler actors sharing its jobs."),
    Field("t_job", float, _S.t_job, unit="emulated s", check=non_negative, doc="Think time per job."),
    Field("t_task", float, _S.t_task, unit="emulated s", check=non_negative, doc="... and per task."),
    Field("policy", str, _S.policy, choices=lambda: tuple(PLACEMENT_POLICIES), doc="Placement policy on its copy of the cell."),
    Field("device_policy", str, _S.device_policy, choices=DEVICE_POLICIES,
          doc="In a cell with devices ([cell] devices), how a task asking for some is placed: which machine and which "
              "of its devices (fgd: Fragmentation Gradient Descent; see the placement package)."),
)

# Every key of [omega], in the order parse_omega reads them.
FIELDS = (
    Field("schedulers", list, nested=True, of=SCHEDULER_FIELDS, doc="[[omega.schedulers]]: the schedulers."),
    Field("conflict_mode", str, _D.conflict_mode.value, choices=tuple(m.value for m in ConflictMode),
          doc="What makes a claim conflict: resource (it no longer fits) or sequence (the machine changed at all)."),
    Field("transaction_mode", str, _D.txn_mode.value, choices=tuple(m.value for m in TxnMode),
          doc="incremental (commit the claims that do not conflict) or all_or_nothing (gang)."),
    Field("max_attempts", int, _D.max_attempts, check=lambda v: None if v > 0 else "must be > 0", schema={"minimum": 1},
          doc="Commit attempts before a job is given up."),
    Field("retry_backoff", float, _D.retry_backoff, unit="emulated s", check=positive,
          doc="Before a job whose commit conflicted is tried again."),
    Field("heartbeat", float, _D.heartbeat, unit="emulated s", check=positive,
          doc="A machine host's liveness exchange with the cell state when nothing else is to exchange "
              "(commits ring the host; it is written off after 3 missed)."),
)


def _scheduler(t: Table, known_classes: set[str]) -> OmegaSchedulerSpec:
    classes = t.names("classes", known_classes, "job class")
    spec = OmegaSchedulerSpec(classes=tuple(classes), **parse_fields(t, SCHEDULER_FIELDS))
    t.done()
    return spec


def parse_omega(ot: Table, ctx: SectionContext) -> OmegaSpec:
    names = list(ctx.job_classes)
    scheds = tuple(_scheduler(x, set(names)) for x in table_array(ot, "schedulers"))
    check_deciders(ot, "schedulers", scheds, names, "scheduler")
    v = parse_fields(ot, FIELDS)
    omega = OmegaSpec(schedulers=scheds, conflict_mode=ConflictMode(v["conflict_mode"]),
                      txn_mode=TxnMode(v["transaction_mode"]), max_attempts=v["max_attempts"],
                      retry_backoff=v["retry_backoff"], heartbeat=v["heartbeat"])
    ot.done()
    return omega


def scheduler_name(spec: OmegaSchedulerSpec, i: int) -> str:
    return f"scheduler-{spec.name}-{i}"


def roster(sc: Scenario) -> dict[str, list[str]]:
    om: OmegaSpec = sc.section
    return {
        "scheduler": [scheduler_name(s, i) for s in om.schedulers for i in range(s.count)],
        # Replicated: the coordinator replicas are the cell state.
        "cellstate": [] if sc.coordinator.replicas > 1 else ["cellstate"],
    }


def actors(sc: Scenario) -> list[tuple[str, int]]:
    om: OmegaSpec = sc.section
    return [(f"omega.schedulers[{i}].count", s.count) for i, s in enumerate(om.schedulers)] + \
        [("omega", 0 if sc.coordinator.replicas > 1 else 1)]


def deciders(sc: Scenario) -> list[Decider]:
    return [Decider(s.name, s.t_job, s.t_task, s.policy) for s in sc.section.schedulers]


SPEC = ArchSpec(
    name="omega",
    title="Omega (shared state, optimistic concurrency)",
    events=EVENTS,
    parse=parse_omega,
    roster=roster,
    actors=actors,
    deciders=deciders,
    roles=(
        Role("scheduler", routed=True, recovers=True, about="an Omega scheduler"),
        Role("cellstate", no_restart="the single cell state keeps the only copy; set [coordinator] replicas >= 3",
             about="the single cell-state actor"),
    ),
    peers={
        "machine": ("cellstate", "coordinator"),
        "scheduler": ("cellstate", "coordinator"),
        "coordinator": ("coordinator",),
        "cellstate": ("scheduler", "machine"),
    },
    example=lambda classes: {"schedulers": [{"name": "all", "classes": list(classes), "count": 2, "t_job": 0.5,
                                             "t_task": 0.01}]},
    live="schedlab.actors.archs.omega.architecture:ARCHITECTURE",
    fields=FIELDS,
    showcase="quickstart",
    css_setups=(CssSetup("omega", "Omega", "omega.schedulers.0", "scheduler-batch-0"),),
    further_resources=("a resource vector: the shared cell state keeps every machine's free amount of each resource and a "
                       "commit checks them all (Omega's cell state, like Borg's, is a vector of resources)"),
    gang=("a gang job's claims go in one all-or-nothing transaction, and only once every task fits on the "
          "scheduler's copy: nothing is held while a gang waits (no partial gang, so none to time out), and a gang "
          "may wait behind smaller jobs that fit first"),
    devices=("each scheduler picks the machine and its devices on its copy of the cell (device_policy: fgd, best_fit, "
             "dot_product, gpu_packing, random_fit); the cell state keeps each device's free share and a commit checks "
             "the devices a claim names, so two schedulers' shares of one device conflict like any other claims"),
)
