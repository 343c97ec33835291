"""Borg (monolithic, replicated): the ``[borg]`` section of a scenario (the
Borgmaster's scheduler) and the architecture's registration.

One Borgmaster, replicated on the coordinator group (Raft), schedules by
priority band with quota at admission, feasibility then scoring, and
preemption; Borglets (the machine hosts) are polled and silent ones marked
down. A stateless front end admits jobs into the replicated queue.
"""
from __future__ import annotations

from dataclasses import dataclass

from schedlab.schedulers.archs.borg.placement import SCORING
from schedlab.schedulers.archs.borg.priority import BANDS
from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.model.resources import RESOURCES
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, non_negative, one_of, positive, table_array
from schedlab.schedulers.archs.borg.events import EVENTS

BAND_NAMES = tuple(b for b, _ in BANDS)


@dataclass(frozen=True)
class QuotaSpec:
    user: str  # Borg users are job classes here
    band: str
    limit: tuple[float, ...]  # per resource


@dataclass(frozen=True)
class BorgSpec:
    scoring: str = "best_fit"
    sample: int = 0  # relaxed randomization: score at most this many feasible machines (0 = all)
    spread_service: bool = True  # service jobs: at most ceil(tasks / racks) tasks per rack
    preemption: bool = True
    multi_path: bool = False  # a fast path for batch and best-effort jobs
    t_job: float = 0.1
    t_task: float = 0.005
    batch_t_job: float = 0.1  # the fast path's think time (multi_path)
    batch_t_task: float = 0.005
    max_attempts: int = 1000
    retry_backoff: float = 10.0  # emulated s before a job that placed nothing is tried again
    poll_interval: float = 10.0  # emulated s between Borglet liveness checks
    missed_polls: int = 3
    quota: tuple[QuotaSpec, ...] = ()
    requires: tuple[tuple[str, tuple[str, ...]], ...] = ()  # job class -> machine class names / labels


def parse_borg(t: Table, ctx: SectionContext) -> BorgSpec:
    job_classes, machine_classes = list(ctx.job_classes), ctx.machine_classes
    machine_names = {mc.name for mc in machine_classes} | {lab for mc in machine_classes for lab in mc.labels}
    quota = []
    for q in table_array(t, "quota") if "quota" in t.data else []:
        user = q.get("user", str, check=one_of(tuple(job_classes)))
        spec = QuotaSpec(user, q.get("band", str, check=one_of(BAND_NAMES)),
                         tuple(q.get(r, float, check=non_negative) for r in RESOURCES))
        q.done()
        quota.append(spec)
    rt = t.sub("requires", default={})
    requires = []
    for cls in list(rt.data):
        if cls not in job_classes:
            rt.fail(rt.key(cls), "is not a job class")
        requires.append((cls, tuple(rt.names(cls, machine_names, "machine class or label"))))
    rt.done()
    spec = BorgSpec(
        scoring=t.get("scoring", str, default="best_fit", check=one_of(SCORING)),
        sample=t.get("sample", int, default=0, check=lambda v: None if v >= 0 else "must be >= 0"),
        spread_service=t.get("spread_service", bool, default=True),
        preemption=t.get("preemption", bool, default=True),
        multi_path=t.get("multi_path", bool, default=False),
        t_job=t.get("t_job", float, default=0.1, check=non_negative),
        t_task=t.get("t_task", float, default=0.005, check=non_negative),
        batch_t_job=t.get("batch_t_job", float, default=0.1, check=non_negative),
        batch_t_task=t.get("batch_t_task", float, default=0.005, check=non_negative),
        max_attempts=t.get("max_attempts", int, default=1000, check=lambda v: None if v > 0 else "must be > 0"),
        retry_backoff=t.get("retry_backoff", float, default=10.0, check=non_negative),
        poll_interval=t.get("poll_interval", float, default=10.0, check=positive),
        missed_polls=t.get("missed_polls", int, default=3, check=lambda v: None if v > 0 else "must be > 0"),
        quota=tuple(quota),
        requires=tuple(requires),
    )
    t.done()
    return spec


FRONTEND = "borg-frontend"


def roster(sc: Scenario) -> dict[str, list[str]]:
    return {"frontend": [FRONTEND]}  # the Borgmaster is the coordinator group


def actors(sc: Scenario) -> list[tuple[str, int]]:
    return [("borg", 1)]


def deciders(sc: Scenario) -> list[Decider]:
    b: BorgSpec = sc.section
    return [Decider("borgmaster", b.t_job, b.t_task)]


SPEC = ArchSpec(
    name="borg",
    title="Borg (monolithic, replicated Borgmaster)",
    events=EVENTS,
    parse=parse_borg,
    roster=roster,
    actors=actors,
    deciders=deciders,
    roles=(Role("frontend", routed=True, about="the Borg front end that admits jobs"),),
    peers={
        "machine": ("coordinator",),
        "coordinator": ("coordinator",),
        "frontend": ("coordinator",),
    },
    example=lambda classes: {"t_job": 0.5, "t_task": 0.01},
    live="schedlab.actors.archs.borg.architecture:ARCHITECTURE",
    section_required=False,  # a missing [borg] means the Borgmaster's defaults
    default_replicas=5,  # the Borgmaster is replicated by default (five replicas, as in Borg)
    min_replicas=3,
)
