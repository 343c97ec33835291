"""Sparrow (distributed sampling schedulers) and its Hawk hybrid: the
``[sparrow]`` section of a scenario and the architecture's registration.

``sparrow-<i>`` schedulers receive jobs (routed by job id) and place them
on the node monitors' worker queues by a sampling ``policy``; a node
monitor ``nodemon-<h>`` holds the ``worker.Worker`` cores of machine host
h's machines (``slots`` each) and hands the tasks it starts to its host.
With ``[sparrow.hybrid]`` (Hawk), jobs whose mean task duration is above
``cutoff`` go to one centralized scheduler, ``sparrow-central``.
``actors.archs.sparrow`` runs it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.archs.sparrow.hybrid import partition
from schedlab.schedulers.archs.sparrow.placement import check_d
from schedlab.schedulers.model.cluster import host_count
from schedlab.schedulers.scenario.fields import Field, parse_fields
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, fraction, non_negative, positive
from schedlab.schedulers.archs.sparrow.events import EVENTS

POLICIES = ("random", "per_task", "batch", "late_binding")
ROLE_SCHED, ROLE_CENTRAL, ROLE_NODEMON = "scheduler", "central", "nodemon"
CENTRAL = "sparrow-central"
CENTRAL_ID = -1  # the central scheduler's id in entries (distributed ones: 0..schedulers-1)


def scheduler_name(i: int) -> str:
    return CENTRAL if i == CENTRAL_ID else f"sparrow-{i}"


def nodemon_name(h: int) -> str:
    return f"nodemon-{h}"


@dataclass(frozen=True)
class HybridSpec:
    enabled: bool = True
    cutoff: float = 100.0  # mean task duration (s) above which a job is long
    short_fraction: float = 0.1  # of the workers, short-only
    steal: bool = True
    steal_attempts: int = 10


@dataclass(frozen=True)
class SparrowSpec:
    schedulers: int = 2
    policy: str = "late_binding"
    d: int = 2
    slots: int = 0  # per machine; 0: as many tasks of the workload's largest request as fit
    cutoff: float | None = None  # long/short cut for the summary when there is no hybrid
    t_job: float = 0.001  # emulated s a scheduler thinks per job
    t_task: float = 0.0001  # ... and per task
    retry: float = 1.0  # emulated s between a node monitor's retries of an unanswered GetTask
    steal_interval: float = 1.0  # emulated s between an idle worker's steal attempts
    hybrid: HybridSpec | None = None

    @property
    def hawk(self) -> bool:
        return self.hybrid is not None and self.hybrid.enabled

    @property
    def long_cutoff(self) -> float | None:
        return self.hybrid.cutoff if self.hybrid is not None else self.cutoff


_D = SparrowSpec()
_H = HybridSpec()

# [sparrow.hybrid]: Hawk (a centralized scheduler for long jobs).
HYBRID_FIELDS = (
    Field("enabled", bool, _H.enabled, doc="Run Hawk's central scheduler (false: the cut is only for the summary)."),
    Field("cutoff", float, unit="emulated s", check=positive, doc="Mean task duration above which a job is long."),
    Field("short_fraction", float, _H.short_fraction, check=fraction,
          doc="Share of the workers reserved for short jobs; below 1 (long jobs need a general worker)."),
    Field("steal", bool, _H.steal, doc="Idle workers steal short tasks queued behind long ones."),
    Field("steal_attempts", int, _H.steal_attempts, check=lambda v: None if v >= 0 else "must be >= 0",
          schema={"minimum": 0}, doc="Workers an idle one contacts per steal attempt."),
)

# Every key of [sparrow], in the order parse_sparrow reads them.
FIELDS = (
    Field("schedulers", int, _D.schedulers, check=lambda v: None if 1 <= v <= 256 else "must be in 1..256",
          schema={"minimum": 1, "maximum": 256}, doc="Distributed schedulers; jobs are routed to them by job id."),
    Field("policy", str, _D.policy, choices=POLICIES, doc="How tasks are placed: random, per_task, batch or late_binding sampling."),
    Field("d", int, _D.d, check=lambda v: None if v >= 1 else "must be >= 1", schema={"minimum": 1},
          doc="Probes per task (power of d choices)."),
    Field("slots", int, _D.slots, check=lambda v: None if 0 <= v <= 4096 else "must be in 0..4096 (0: auto)",
          schema={"minimum": 0, "maximum": 4096},
          doc="Slots per machine; 0: as many tasks of the workload's largest request as fit."),
    Field("cutoff", float, _D.cutoff, unit="emulated s", check=positive,
          doc="Long/short cut for the summary when there is no hybrid."),
    Field("t_job", float, _D.t_job, unit="emulated s", check=non_negative, doc="A scheduler's think time per job."),
    Field("t_task", float, _D.t_task, unit="emulated s", check=non_negative, doc="... and per task."),
    Field("retry", float, _D.retry, unit="emulated s", check=positive,
          doc="Between a node monitor's retries of an unanswered GetTask."),
    Field("steal_interval", float, _D.steal_interval, unit="emulated s", check=positive,
          doc="Between an idle worker's steal attempts."),
    Field("hybrid", dict, None, nested=True, of=HYBRID_FIELDS, doc="[sparrow.hybrid]: Hawk; absent, no central scheduler."),
)
def parse_sparrow(t: Table, ctx: SectionContext) -> SparrowSpec:
    n = sum(mc.count for mc in ctx.machine_classes)
    first = parse_fields(t, FIELDS[:3])
    try:
        check_d(first["d"], n)
    except ValueError as e:
        t.fail(t.key("d"), str(e))
    spec: dict[str, Any] = {**first, **parse_fields(t, FIELDS[3:])}
    hybrid = None
    if "hybrid" in t.data:
        h = t.sub("hybrid")
        hybrid = HybridSpec(**parse_fields(h, HYBRID_FIELDS))
        if hybrid.short_fraction >= 1.0:
            h.fail(h.key("short_fraction"), "must be < 1 (long jobs need a general worker)")
        try:
            partition(n, hybrid.short_fraction)
        except ValueError as e:
            h.fail(h.key("short_fraction"), str(e))
        h.done()
    t.done()
    return SparrowSpec(**spec, hybrid=hybrid)


def _hosts(sc: Scenario) -> int:
    return host_count(sc.cell.machines, sc.cell.machines_per_actor)


def roster(sc: Scenario) -> dict[str, list[str]]:
    s: SparrowSpec = sc.section
    out = {ROLE_SCHED: [scheduler_name(i) for i in range(s.schedulers)],
           ROLE_NODEMON: [nodemon_name(h) for h in range(_hosts(sc))]}
    if s.hawk:
        out[ROLE_CENTRAL] = [CENTRAL]
    return out


def actors(sc: Scenario) -> list[tuple[str, int]]:
    s: SparrowSpec = sc.section
    out = [("sparrow.schedulers", s.schedulers), ("sparrow.nodemons", _hosts(sc))]
    if s.hawk:
        out.append(("sparrow.hybrid", 1))
    return out


def deciders(sc: Scenario) -> list[Decider]:
    s: SparrowSpec = sc.section
    out = [Decider(scheduler_name(i), s.t_job, s.t_task) for i in range(s.schedulers)]
    if s.hawk:
        out.append(Decider(CENTRAL, s.t_job, s.t_task))
    return out


def example(classes: tuple[str, ...]) -> dict[str, Any]:
    return {"schedulers": 2, "policy": "late_binding", "d": 2, "slots": 0,
            "hybrid": {"cutoff": 40.0, "short_fraction": 0.2, "steal": True}}


SPEC = ArchSpec(
    name="sparrow",
    no_gang="each task is placed by its own probes, late-bound one by one",
    title="Sparrow (distributed sampling schedulers, late binding; Hawk hybrid)",
    events=EVENTS,
    parse=parse_sparrow,
    roster=roster,
    actors=actors,
    deciders=deciders,
    roles=(
        Role(ROLE_SCHED, routed=True, recovers=True, about="a distributed Sparrow scheduler (probes, places, late binds)"),
        Role(ROLE_CENTRAL, places=True, about="Hawk's centralized scheduler for long jobs (rebuilds from its peers)"),
        Role(ROLE_NODEMON, no_restart="a node monitor is its machines' daemon: kill the machine host instead",
             about="the node monitors of one machine host's machines (slots, worker queues)"),
    ),
    peers={"machine": (ROLE_NODEMON,), ROLE_NODEMON: ("machine", ROLE_SCHED, ROLE_CENTRAL),
           ROLE_SCHED: (ROLE_NODEMON, ROLE_CENTRAL), ROLE_CENTRAL: (ROLE_SCHED, ROLE_NODEMON)},
    example=example,
    live="schedlab.actors.archs.sparrow.architecture:ARCHITECTURE",
    section_required=False,
    max_replicas=1,
    fields=FIELDS,
    showcase="sparrow_sampling",
    no_further_resources=("Sparrow's node monitors run tasks in uniform worker slots and its schedulers know no resource types "
                          "(the paper's model); a further resource would make a slot fit only the machines that have it"),
)
