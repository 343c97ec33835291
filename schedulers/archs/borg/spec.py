"""Borg (monolithic, replicated): the ``[borg]`` section of a scenario (the
Borgmaster's scheduler) and the architecture's registration.

One Borgmaster, replicated on the coordinator group (Raft), schedules by
priority band with quota at admission, feasibility then scoring, and
preemption; Borglets (the machine hosts) are polled and silent ones marked
down. A stateless front end admits jobs into the replicated queue.
"""
from __future__ import annotations

from dataclasses import dataclass

from schedlab.schedulers.placement.device_claims import DEVICE_POLICIES
from schedlab.schedulers.archs.borg.placement import SCORING
from schedlab.schedulers.archs.borg.priority import BANDS
from schedlab.schedulers.arch import ArchSpec, CssSetup, Decider, Role, SectionContext
from schedlab.schedulers.scenario.fields import REQUIRED, Field, parse_fields, per_resource
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, non_negative, positive, table_array
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
    device_scoring: str = ""  # a cell with devices: a task asking some is placed by this device policy ("" scoring)
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


def _at_least_one(v: int) -> str | None:
    return None if v > 0 else "must be > 0"


_D = BorgSpec()

# [[borg.quota]]: a user's (job class's) limit in one priority band.
QUOTA_FIELDS = (
    Field("user", str, against=lambda v, got: None if v in got["job_classes"]
          else f"must be one of {', '.join(got['job_classes'])}",  # one_of's wording
          doc="The job class whose jobs the quota limits (Borg's users are job classes here)."),
    Field("band", str, choices=BAND_NAMES, doc="The priority band it limits."),
    per_resource(lambda r, base: Field(r, float, REQUIRED if base else 0.0, check=non_negative,
                                       doc="The band's limit of this resource for the user" + (
                                           "." if base else " (default 0: Borg's quota is a vector; none of it, none used)."))),
)

# Every key of [borg], in the order parse_borg reads them (the first bad one
# is the one reported).
FIELDS = (
    Field("quota", list, (), nested=True, of=QUOTA_FIELDS, doc="[[borg.quota]]: limits per user and band, checked at admission."),
    Field("requires", dict, {}, nested=True, schema={"additionalProperties": {"type": "array", "items": {"type": "string"}}},
          doc="Job class -> the machine class names or labels its tasks may run on."),
    Field("scoring", str, _D.scoring, choices=SCORING, doc="How feasible machines are scored."),
    Field("device_scoring", str, _D.device_scoring, choices=lambda: ("", *DEVICE_POLICIES),
          doc="In a cell with devices ([cell] devices), how machines are scored for a task asking for some: a "
              "device policy (fgd: Fragmentation Gradient Descent) over each machine's free whole devices (Borg "
              "counts them); empty: scoring applies to every task."),
    Field("sample", int, _D.sample, check=lambda v: None if v >= 0 else "must be >= 0", schema={"minimum": 0},
          doc="Relaxed randomization: score at most this many feasible machines (0: all)."),
    Field("spread_service", bool, _D.spread_service, doc="Service jobs: at most ceil(tasks / racks) tasks per rack."),
    Field("preemption", bool, _D.preemption, doc="A higher band may preempt lower ones' tasks."),
    Field("multi_path", bool, _D.multi_path, doc="A fast path for batch and best-effort jobs."),
    Field("t_job", float, _D.t_job, unit="emulated s", check=non_negative, doc="The Borgmaster's think time per job."),
    Field("t_task", float, _D.t_task, unit="emulated s", check=non_negative, doc="... and per task."),
    Field("batch_t_job", float, _D.batch_t_job, unit="emulated s", check=non_negative,
          doc="The fast path's think time per job (multi_path)."),
    Field("batch_t_task", float, _D.batch_t_task, unit="emulated s", check=non_negative, doc="... and per task."),
    Field("max_attempts", int, _D.max_attempts, check=_at_least_one, schema={"minimum": 1},
          doc="Scheduling attempts before a job is given up."),
    Field("retry_backoff", float, _D.retry_backoff, unit="emulated s", check=non_negative,
          doc="Before a job that placed nothing is tried again."),
    Field("poll_interval", float, _D.poll_interval, unit="emulated s", check=positive, doc="Between Borglet liveness polls."),
    Field("missed_polls", int, _D.missed_polls, check=_at_least_one, schema={"minimum": 1},
          doc="Polls a Borglet may miss before it is marked down."),
)


def parse_borg(t: Table, ctx: SectionContext) -> BorgSpec:
    job_classes, machine_classes = list(ctx.job_classes), ctx.machine_classes
    machine_names = {mc.name for mc in machine_classes} | {lab for mc in machine_classes for lab in mc.labels}
    quota = []
    for q in table_array(t, "quota") if "quota" in t.data else []:
        v = parse_fields(q, QUOTA_FIELDS[:2], values={"job_classes": tuple(job_classes)})
        quota.append(QuotaSpec(v["user"], v["band"], tuple(parse_fields(q, QUOTA_FIELDS[2:], values={"resources": ctx.resources}).values())))
        q.done()
    rt = t.sub("requires", default={})
    requires = []
    for cls in list(rt.data):
        if cls not in job_classes:
            rt.fail(rt.key(cls), "is not a job class")
        requires.append((cls, tuple(rt.names(cls, machine_names, "machine class or label"))))
    rt.done()
    borg = BorgSpec(quota=tuple(quota), requires=tuple(requires), **parse_fields(t, FIELDS))
    t.done()
    return borg


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
    no_gang="Borg schedules a job's tasks one at a time (the Borg paper describes no gang scheduling)",
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
    fields=FIELDS,
    showcase="borg_failover",
    css_setups=(CssSetup("mono_single", "monolithic, single path", "borg", "borgmaster-all", ("borg.multi_path=false",)),
                CssSetup("mono_multi", "monolithic, multi path", "borg", "borgmaster-service", ("borg.multi_path=true",))),
    further_resources=("a resource vector: feasibility, scoring, quotas (a limit per resource and priority band) and "
                       "preemption over every resource, as Borg's are"),
)
