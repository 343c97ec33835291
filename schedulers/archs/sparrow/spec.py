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
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, fraction, non_negative, one_of, positive
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


def parse_sparrow(t: Table, ctx: SectionContext) -> SparrowSpec:
    n = sum(mc.count for mc in ctx.machine_classes)
    schedulers = t.get("schedulers", int, default=2, check=lambda v: None if 1 <= v <= 256 else "must be in 1..256")
    policy = t.get("policy", str, default="late_binding", check=one_of(POLICIES))
    d = t.get("d", int, default=2, check=lambda v: None if v >= 1 else "must be >= 1")
    try:
        check_d(d, n)
    except ValueError as e:
        t.fail(t.key("d"), str(e))
    spec: dict[str, Any] = dict(
        schedulers=schedulers, policy=policy, d=d,
        slots=t.get("slots", int, default=0, check=lambda v: None if 0 <= v <= 4096 else "must be in 0..4096 (0: auto)"),
        cutoff=t.get("cutoff", float, default=None, check=positive),
        t_job=t.get("t_job", float, default=0.001, check=non_negative),
        t_task=t.get("t_task", float, default=0.0001, check=non_negative),
        retry=t.get("retry", float, default=1.0, check=positive),
        steal_interval=t.get("steal_interval", float, default=1.0, check=positive),
    )
    hybrid = None
    if "hybrid" in t.data:
        h = t.sub("hybrid")
        hybrid = HybridSpec(
            enabled=h.get("enabled", bool, default=True),
            cutoff=h.get("cutoff", float, check=positive),
            short_fraction=h.get("short_fraction", float, default=0.1, check=fraction),
            steal=h.get("steal", bool, default=True),
            steal_attempts=h.get("steal_attempts", int, default=10, check=lambda v: None if v >= 0 else "must be >= 0"),
        )
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
)
