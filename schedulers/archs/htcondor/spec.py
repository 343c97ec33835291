"""HTCondor (ClassAd matchmaking): the ``[htcondor]`` section of a scenario
and the architecture's registration.

A central manager (collector + negotiator, one actor) matches idle jobs to
unclaimed slots every ``negotiator_interval``; each submit machine's schedd
then claims the matched startd directly, starts the job through a shadow,
and reuses the claim for its user's next job. Every ClassAd expression is
parsed here (exit 2 naming key and column), and a job class no machine
class could ever run is refused here too. ``actors.archs.htcondor`` runs it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.archs.htcondor.classad import parse as parse_expr
from schedlab.schedulers.archs.htcondor.classad_lexer import ClassAdSyntaxError
from schedlab.schedulers.archs.htcondor.negotiator import never_matchable
from schedlab.schedulers.archs.htcondor.pool import JobAds, MachineAds, job_ad, slot_ad, slot_count
from schedlab.schedulers.model.cluster import host_count
from schedlab.schedulers.scenario.fields import Computed, Field, parse_fields
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, non_negative, positive
from schedlab.schedulers.archs.htcondor.events import EVENTS

COLLECTOR = "condor-collector"  # the central manager: collector and negotiator
ROLE_CM, ROLE_SCHEDD, ROLE_STARTD = "collector", "schedd", "startd"


def schedd_name(i: int) -> str:
    return f"schedd-{i}"


def startd_name(h: int) -> str:
    return f"startd-{h}"


@dataclass(frozen=True)
class CondorSpec:
    schedds: int = 1
    negotiator_interval: float = 20.0  # NEGOTIATOR_INTERVAL
    update_interval: float = 5.0  # startd ads to the collector (UPDATE_INTERVAL)
    match_timeout: float = 60.0  # a match or an idle claim nobody uses goes back to Unclaimed
    suspend_grace: float = 600.0  # MaxSuspendTime: owner back this long -> vacate
    priority_halflife: float = 86400.0  # PRIORITY_HALFLIFE
    t_cycle: float = 0.05  # negotiator's think per cycle
    t_eval: float = 0.0005  # ... per job-kind x slot evaluation
    t_shadow: float = 0.02  # schedd's think per claim activation (spawning a shadow)
    machines: tuple[tuple[str, MachineAds], ...] = ()  # machine class -> its ads (absent: defaults)
    jobs: tuple[tuple[str, JobAds], ...] = ()  # job class -> its user, schedd, expressions

    def machine_ads(self, cls: str) -> MachineAds:
        return dict(self.machines).get(cls, MachineAds())

    def job_ads(self, cls: str) -> JobAds:
        return dict(self.jobs)[cls]

    def classes_of(self, schedd: int) -> list[str]:
        return [c for c, j in self.jobs if j.schedd == schedd]


def _expr(t: Table, k: str) -> str | None:
    """An optional ClassAd expression, parsed now: a syntax error exits 2
    naming the key and the column."""
    text = t.get(k, str, default=None)
    if text is not None:
        try:
            parse_expr(text)
        except ClassAdSyntaxError as e:
            t.fail(t.key(k), f"ClassAd expression does not parse: {e}")
    return text


def _attrs(t: Table, k: str) -> tuple[tuple[str, object], ...]:
    """Extra ad attributes: a number, a boolean, or ClassAd expression text."""
    raw = t.sub(k, default={})
    out = []
    for name in sorted(raw.data):
        v = raw.get(name, (str, float, bool))
        if isinstance(v, str):
            try:
                parse_expr(v)
            except ClassAdSyntaxError as e:
                raw.fail(raw.key(name), f"ClassAd expression does not parse: {e}")
        out.append((name, v))
    raw.done()
    return tuple(out)


_D = CondorSpec()
_M = MachineAds()


def _expr_field(name: str, doc: str) -> Field:
    return Field(name, str, None, nested=True, read=lambda t, got: _expr(t, name), doc=f"{doc} (a ClassAd expression).")


ATTRS = Field("attrs", dict, {}, nested=True, read=lambda t, got: _attrs(t, "attrs"),
              schema={"additionalProperties": {"type": ["boolean", "number", "string"]}},
              doc="Extra ad attributes: a number, a boolean, or ClassAd expression text.")

# [htcondor.machines.<machine class>]: what its slots advertise.
MACHINE_FIELDS = (
    Field("slots", int, _M.slots, check=lambda v: None if 0 <= v <= 1024 else "must be in 0..1024",
          schema={"minimum": 0, "maximum": 1024}, doc="Slots per machine; 0: one per whole cpu (at least 1)."),
    Field("arch", str, _M.arch, doc="The Arch attribute."),
    Field("opsys", str, _M.opsys, doc="The OpSys attribute."),
    ATTRS,
    _expr_field("requirements", "START: which jobs the slot accepts"),
    _expr_field("rank", "Which jobs the slot prefers"),
    Field("owner_present", float, _M.owner_present, unit="emulated s", check=non_negative,
          doc="Mean time a desktop owner stays (0: a dedicated machine); with owner_away."),
    Field("owner_away", float, _M.owner_away, unit="emulated s", check=non_negative,
          doc="Mean time the owner is away (the machine is in the pool)."),
)

# [htcondor.jobs.<job class>]: its user, schedd and expressions.
JOB_FIELDS = (
    Field("user", str, Computed(lambda v: v["job_class"], "the job class's name"), doc="The submitting user."),
    Field("schedd", int, Computed(lambda v: v["index"] % v["schedds"], "the job class's index modulo schedds"),
          against=lambda v, got: None if 0 <= v < got["schedds"] else f"must name a schedd, 0..{got['schedds'] - 1}",
          schema={"minimum": 0}, doc="The schedd (0..schedds-1) its jobs are submitted to."),
    _expr_field("requirements", "Which slots its jobs accept"),
    _expr_field("rank", "Which slots its jobs prefer"),
    ATTRS,
)

# Every key of [htcondor], in the order parse_htcondor reads them.
FIELDS = (
    Field("schedds", int, _D.schedds, check=lambda v: None if 1 <= v <= 64 else "must be in 1..64",
          schema={"minimum": 1, "maximum": 64}, doc="Submit machines (schedds); job classes are spread over them."),
    Field("negotiator_interval", float, _D.negotiator_interval, unit="emulated s", check=positive,
          doc="Between negotiation cycles (NEGOTIATOR_INTERVAL)."),
    Field("update_interval", float, _D.update_interval, unit="emulated s", check=positive,
          doc="Between a startd's ads to the collector (UPDATE_INTERVAL)."),
    Field("match_timeout", float, _D.match_timeout, unit="emulated s", check=positive,
          doc="A match or an idle claim nobody uses goes back to Unclaimed after this."),
    Field("suspend_grace", float, _D.suspend_grace, unit="emulated s", check=non_negative,
          doc="MaxSuspendTime: the owner back this long vacates the job."),
    Field("priority_halflife", float, _D.priority_halflife, unit="emulated s", check=positive,
          doc="PRIORITY_HALFLIFE of user priorities."),
    Field("t_cycle", float, _D.t_cycle, unit="emulated s", check=non_negative, doc="The negotiator's think time per cycle."),
    Field("t_eval", float, _D.t_eval, unit="emulated s", check=non_negative, doc="... per job kind x slot evaluation."),
    Field("t_shadow", float, _D.t_shadow, unit="emulated s", check=non_negative,
          doc="A schedd's think time per claim activation (spawning a shadow)."),
    Field("machines", dict, {}, nested=True, each=MACHINE_FIELDS,
          doc="[htcondor.machines.<machine class>]: what its slots advertise (absent: the defaults)."),
    Field("jobs", dict, {}, nested=True, each=JOB_FIELDS,
          doc="[htcondor.jobs.<job class>]: its user, schedd and expressions (absent: its own user, schedds in turn)."),
)


# A slot ad's own attributes (pool.slot_ad): a further resource is an attribute too, by its name, and
# ClassAd names are case-insensitive, so a resource may not be called any of these.
SLOT_ATTRIBUTES = frozenset({"name", "machine", "slotid", "cpus", "memory", "disk", "totalcpus", "totalmemory", "arch",
                             "opsys", "machineclass", "rack", "labels", "requirements", "rank", "state", "activity"})


def parse_htcondor(t: Table, ctx: SectionContext) -> CondorSpec:
    for r in ctx.resources[2:]:
        if r.lower() in SLOT_ATTRIBUTES or f"total{r}".lower() in SLOT_ATTRIBUTES:
            ctx.top.fail("cell.resources", f"{r!r} would be the slot ad's own {r} attribute (ClassAd names ignore case): "
                                           "name the resource otherwise")
    spec = parse_fields(t, FIELDS)
    schedds = spec["schedds"]
    mclasses = {mc.name: mc for mc in ctx.machine_classes}
    mt = t.sub("machines", default={})
    machines = []
    for name in mt.data:
        if name not in mclasses:
            mt.fail(mt.key(name), f"no machine class {name!r} (one of {', '.join(mclasses)})")
        m = mt.sub(name)
        machines.append((name, MachineAds(**parse_fields(m, MACHINE_FIELDS))))
        if (machines[-1][1].owner_present > 0) != (machines[-1][1].owner_away > 0):
            m.fail(m.key("owner_present"), "owner_present and owner_away go together (both > 0: a desktop owner)")
        m.done()
    mt.done()
    jt = t.sub("jobs", default={})
    given = {}
    for name in jt.data:
        if name not in ctx.job_classes:
            jt.fail(jt.key(name), f"no job class {name!r} (one of {', '.join(ctx.job_classes)})")
        j = jt.sub(name)
        given[name] = JobAds(**parse_fields(j, JOB_FIELDS, values={
            "job_class": name, "index": ctx.job_classes.index(name), "schedds": schedds}))
        j.done()
    jt.done()
    jobs = tuple((c, given.get(c) or JobAds(user=c, schedd=i % schedds)) for i, c in enumerate(ctx.job_classes))
    out = CondorSpec(**spec, machines=tuple(machines), jobs=jobs)
    t.done()
    _refuse_unmatchable(t, ctx, out)
    return out


def _refuse_unmatchable(t: Table, ctx: SectionContext, spec: CondorSpec) -> None:
    """A job class whose Requirements no machine class's slot could ever
    satisfy (with the class's mean request) would wait forever: refused."""
    ads = []
    for i, mc in enumerate(ctx.machine_classes):
        m = spec.machine_ads(mc.name)
        ads.append(slot_ad(i, 0, mc.name, mc.capacity, slot_count(mc.capacity[0], m), m, mc.labels))
    requests = _mean_requests(ctx)
    for cls, j in spec.jobs:
        if cls in requests and never_matchable(job_ad(0, 0, cls, requests[cls], j), ads):
            t.fail(t.key(f"jobs.{cls}"), f"no machine can ever run job class {cls!r}: its Requirements and "
                                         f"request ({requests[cls][0]:g} cpu, {requests[cls][1]:g} mem) match no "
                                         "machine class's slot (Requirements both ways, Cpus, Memory)")


def _mean_requests(ctx: SectionContext) -> dict[str, tuple[float, float]]:
    """The job classes' mean requests, from the scenario's workload table."""
    out = {}
    for c in ctx.top.data.get("workload", {}).get("classes", []) if isinstance(ctx.top.data.get("workload"), dict) else []:
        if isinstance(c, dict) and isinstance(c.get("name"), str):
            out[c["name"]] = (_mean(c.get("cpu")), _mean(c.get("mem")))
    return out


def _mean(v: Any) -> float:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    if isinstance(v, dict):
        if "value" in v:
            return float(v["value"])
        if "mean" in v:
            return float(v["mean"])
        if "low" in v and "high" in v:
            return (float(v["low"]) + float(v["high"])) / 2
        if v.get("values"):
            return float(min(v["values"]))
    return 0.0


def _hosts(sc: Scenario) -> int:
    return host_count(sc.cell.machines, sc.cell.machines_per_actor)


def roster(sc: Scenario) -> dict[str, list[str]]:
    s: CondorSpec = sc.section
    return {ROLE_CM: [COLLECTOR], ROLE_SCHEDD: [schedd_name(i) for i in range(s.schedds)],
            ROLE_STARTD: [startd_name(h) for h in range(_hosts(sc))]}


def actors(sc: Scenario) -> list[tuple[str, int]]:
    s: CondorSpec = sc.section
    return [("htcondor", 1), ("htcondor.schedds", s.schedds), ("htcondor.startds", _hosts(sc))]


def deciders(sc: Scenario) -> list[Decider]:
    s: CondorSpec = sc.section
    return [Decider(COLLECTOR, s.t_cycle, s.t_eval)] + [Decider(schedd_name(i), s.t_shadow, 0.0) for i in range(s.schedds)]


def example(classes: tuple[str, ...]) -> dict[str, Any]:
    jobs: dict[str, Any] = {c: {"requirements": 'OpSys == "LINUX"', "rank": "TARGET.Cpus"} for c in classes}
    return {"schedds": 2, "negotiator_interval": 10.0, "update_interval": 2.0, "t_shadow": 0.05, "jobs": jobs}


SPEC = ArchSpec(
    name="htcondor",
    no_gang="HTCondor runs all-or-nothing jobs in its parallel universe (the dedicated scheduler), which is not modelled",
    title="HTCondor (ClassAd matchmaking: negotiator, schedds, startds, claims)",
    events=EVENTS,
    parse=parse_htcondor,
    roster=roster,
    actors=actors,
    deciders=deciders,
    roles=(
        Role(ROLE_CM, about="the central manager: collector (ads) and negotiator (periodic cycles)"),
        Role(ROLE_SCHEDD, routed=True, recovers=True, about="a submit machine's schedd: its users' queue, claims and shadows"),
        Role(ROLE_STARTD, no_restart="a startd is its execute machines' daemon: kill the machine host instead",
             about="the startds of one machine host's machines (slot state machines, owner policy)"),
    ),
    peers={"machine": (ROLE_STARTD,), ROLE_STARTD: ("machine", ROLE_SCHEDD, ROLE_CM),
           ROLE_SCHEDD: (ROLE_CM, ROLE_STARTD), ROLE_CM: (ROLE_SCHEDD, ROLE_STARTD)},
    example=example,
    live="schedlab.actors.archs.htcondor.architecture:ARCHITECTURE",
    section_required=False,  # a missing [htcondor] means one schedd and the defaults
    max_replicas=1,  # no coordinator group: the schedds' queues are the durable state
    fields=FIELDS,
    showcase="condor_matchmaking",
    further_resources=("machine ClassAd resources (as GPUs beside Cpus and Memory) and job requests (as RequestGPUs): "
                       "matchmaking requires every request to fit"),
)
