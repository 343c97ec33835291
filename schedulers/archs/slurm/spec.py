"""SLURM: the ``[slurm]`` section of a scenario and the architecture's
registration.

```toml
[slurm]
controllers = 2               # 1: one slurmctld; 2: a primary and a backup electing the active one
                              #   through the coordinator group's lease ([coordinator] replicas >= 3)
select = "cons_tres"          # tasks get what they ask and share nodes (SLURM's default); "linear": whole
                              #   nodes, one task per node, exclusive (the classic backfill studies' model)
bf_max_job_test = 500         # queued jobs a backfill pass looks at, per partition
default_partition = "short"   # where a job class no partition names goes (default: the first partition)
sched_interval = 60.0         # emulated s between periodic passes; a pass also follows every submission and job end
estimate = { dist = "uniform", low = 1.0, high = 5.0 }  # how users over-estimate: a job with no estimate asks
                              #   its run time x this factor, rounded up to a minute (omit: the partition's default time)
time_limits = { batch = 900.0 }   # a job class's own --time (over its partition's max_time: refused)
accounts = { batch = 2.0 }    # fair-share shares per job class (an account each; default 1)
qos = { batch = 0.5 }         # QOS priority factor per job class, 0 to 1 (default 0)
half_life = 604800.0          # PriorityDecayHalfLife of fair-share usage (emulated s)
controller_lease_ms = 1000.0  # wall ms: how long the backup waits on a silent primary (SlurmctldTimeout)
pass_time = 0.05              # emulated s one scheduling pass takes

[slurm.priority]              # PriorityWeight*: multifactor priority
age = 1000.0
fairshare = 10000.0
job_size = 1000.0
partition = 1000.0
qos = 0.0
max_age = 604800.0            # PriorityMaxAge
favor_small = false           # PriorityFavorSmall

[[slurm.partitions]]
name = "short"
machine_classes = ["a"]       # its nodes (default: every machine); partitions may overlap
classes = ["batch"]           # job classes submitted to it (a class no partition names goes to the default)
max_time = 3600.0             # MaxTime
default_time = 600.0          # DefaultTime: a job with no estimate and no class limit
tier = 1                      # PriorityTier: higher tiers are scheduled first on shared nodes
backfill = "easy"             # "fcfs" (main scheduler only), "easy", "conservative"
preempt = false               # may requeue running jobs of lower tiers to start its own
```

``schedulers.archs.slurm.controller`` and ``ctld`` hold slurmctld's
decisions; ``actors.archs.slurm`` runs it.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.archs.slurm.backfill import Mode
from schedlab.schedulers.archs.slurm.controller import Partition
from schedlab.schedulers.archs.slurm.priority import DAY, Weights
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.model.seeding import rng_for
from schedlab.schedulers.model.workload import Dist
from schedlab.schedulers.scenario.fields import Computed, Field, parse_fields, read_field
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, non_negative, positive, read_dist, table_array
from schedlab.schedulers.archs.slurm.events import EVENTS

NAME = "slurmctld"  # the decider, and the route jobs go to with a backup (the active one takes it)
ROLE = "slurmctld"  # its actors are slurmctld-<i> (the role's name alone means one of them)
LEADER_KILL = "kill_slurmctld"  # kill the active controller (controllers = 2)
MODES: tuple[Mode, ...] = ("fcfs", "easy", "conservative")
SELECTS = ("cons_tres", "linear")


@dataclass(frozen=True)
class PartitionSpec:
    partition: Partition
    classes: tuple[str, ...]


@dataclass(frozen=True)
class SlurmSpec:
    partitions: tuple[PartitionSpec, ...]
    default_partition: str = ""  # "": the first
    controllers: int = 1
    select: str = "cons_tres"
    bf_max_job_test: int = 500
    sched_interval: float = 60.0
    estimate: Dist | None = None
    time_limits: dict[str, float] = field(default_factory=dict)
    accounts: dict[str, float] = field(default_factory=dict)
    qos: dict[str, float] = field(default_factory=dict)
    half_life: float = 7 * DAY
    weights: Weights = field(default_factory=Weights)
    controller_lease_ms: float = 1000.0
    pass_time: float = 0.05

    def partition_of(self, job_class: str) -> PartitionSpec:
        default = next((p for p in self.partitions if p.partition.name == self.default_partition), self.partitions[0])
        return next((p for p in self.partitions if job_class in p.classes), default)


def time_limit(s: SlurmSpec, job: Job, seed: int) -> float:
    """The time limit a job asks (its ``--time``): its class's own limit;
    else its user's estimate (a logged requested time), at most the
    partition's maximum; else its run time times an over-estimate factor
    drawn for it (rounded up to whole minutes, as users ask, at most the
    maximum); else the partition's default time. A job that runs forever
    (a service) asks the default: it is killed there."""
    p = s.partition_of(job.job_class).partition
    if job.job_class in s.time_limits:
        return s.time_limits[job.job_class]
    if job.estimate is not None:
        return min(job.estimate, p.max_time)
    runtime = max(job.durations)
    if s.estimate is None or math.isinf(runtime):
        return p.default_time
    factor = float(s.estimate.sample(rng_for(seed, f"slurm/estimate/{job.job_id}"), 1)[0])
    return min(math.ceil(runtime * factor / 60.0) * 60.0, p.max_time)


def controller_name(i: int) -> str:
    return f"{NAME}-{i}"


def controller_names(s: SlurmSpec) -> list[str]:
    return [controller_name(i) for i in range(s.controllers)]


def _nodes_of(pt: Table, ctx: SectionContext) -> tuple[int, ...]:
    known = {mc.name for mc in ctx.machine_classes}
    wanted = set(pt.names("machine_classes", known, "machine class")) if "machine_classes" in pt.data else known
    out: list = []
    first = 0
    for mc in ctx.machine_classes:
        if mc.name in wanted:
            out.extend(range(first, first + mc.count))
        first += mc.count
    return tuple(out)


def _per_class(t: Table, key: str, job_classes: tuple[str, ...], check: Any) -> dict[str, float]:
    raw = t.get(key, dict, default={})
    out = {}
    for cls, v in raw.items():
        if cls not in job_classes:
            t.fail(f"{t.key(key)}.{cls}", f"unknown job class {cls!r}")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            t.fail(f"{t.key(key)}.{cls}", f"expected number, got {type(v).__name__}")
        problem = check(float(v))
        if problem:
            t.fail(f"{t.key(key)}.{cls}", f"{problem} (got {v!r})")
        out[cls] = float(v)
    return out


def _per_class_field(name: str, check: Callable[[float], str | None], bounds: dict[str, Any], doc: str) -> Field:
    """A table job class -> number, read by ``_per_class`` (each class and value checked)."""
    return Field(name, dict, {}, nested=True, read=lambda t, got: _per_class(t, name, got["job_classes"], check),
                 schema={"additionalProperties": {"type": "number", **bounds}}, doc=doc)


_D = SlurmSpec(partitions=())
_W = Weights()
_P = Partition("", (), math.inf, 3600.0)

# [[slurm.partitions]]: one partition, in the order _partition reads its keys.
PARTITION_FIELDS = (
    Field("name", str, check=lambda v: None if v.strip() else "must not be empty", doc="The partition's name (unique)."),
    Field("machine_classes", list, None, nested=True, schema={"items": {"type": "string"}, "minItems": 1},
          doc="Its nodes, by machine class (default: every machine); partitions may overlap."),
    Field("classes", list, None, nested=True, schema={"items": {"type": "string"}, "minItems": 1},
          doc="Job classes submitted to it (a class no partition names goes to the default partition)."),
    Field("max_time", float, _P.max_time, unit="emulated s", check=positive, doc="MaxTime (default: none)."),
    Field("default_time", float, Computed(lambda v: min(v["max_time"], 3600.0), "max_time, at most 3600"),
          unit="emulated s", check=positive, doc="DefaultTime: a job with no estimate and no class limit; at most max_time."),
    Field("tier", int, _P.tier, check=lambda v: None if v >= 1 else "must be >= 1", schema={"minimum": 1},
          doc="PriorityTier: higher tiers are scheduled first on shared nodes."),
    Field("backfill", str, _P.backfill, choices=MODES, doc="fcfs (main scheduler only), easy or conservative."),
    Field("preempt", bool, _P.preempt, doc="May requeue running jobs of lower tiers to start its own."),
)

# [slurm.priority]: PriorityWeight* of the multifactor priority.
PRIORITY_FIELDS = (
    *(Field(k, float, getattr(_W, k), check=non_negative, doc=f"PriorityWeight of the {k} factor.")
      for k in ("age", "fairshare", "job_size", "partition", "qos")),
    Field("max_age", float, _W.max_age, unit="emulated s", check=positive, doc="PriorityMaxAge: the age factor is 1 from here on."),
    Field("favor_small", bool, _W.favor_small, doc="PriorityFavorSmall: the size factor rewards small jobs instead."),
)

# Every key of [slurm], in the order parse_slurm reads them.
FIELDS = (
    Field("partitions", list, nested=True, of=PARTITION_FIELDS, doc="[[slurm.partitions]]: the partitions."),
    Field("default_partition", str, Computed(lambda v: v["partitions"][0], "the first partition"),
          against=lambda v, got: None if v in got["partitions"]
          else f"unknown partition {v!r} (one of {', '.join(got['partitions'])})",
          doc="Where a job class no partition names goes."),
    Field("controllers", int, _D.controllers, check=lambda v: None if v in (1, 2) else "must be 1 or 2",
          schema={"minimum": 1, "maximum": 2},
          doc="1: one slurmctld; 2: a primary and a backup taking over through the coordinator's lease (replicas >= 3)."),
    _per_class_field("time_limits", lambda v: None if v > 0 else "must be > 0", {"exclusiveMinimum": 0},
                     "Job class -> its own --time, emulated s (over its partition's max_time: refused)."),
    Field("priority", dict, {}, nested=True, of=PRIORITY_FIELDS, doc="[slurm.priority]: multifactor priority weights."),
    Field("select", str, _D.select, choices=SELECTS,
          doc="cons_tres: tasks get what they ask and share nodes; linear: whole nodes, one task per node."),
    Field("bf_max_job_test", int, _D.bf_max_job_test, check=lambda v: None if v >= 1 else "must be >= 1",
          schema={"minimum": 1}, doc="Queued jobs a backfill pass looks at, per partition."),
    Field("sched_interval", float, _D.sched_interval, unit="emulated s", check=positive,
          doc="Between periodic passes (a pass also follows every submission and job end)."),
    Field("estimate", (float, dict), None, nested=True, read=lambda t, got: read_dist(t, "estimate", bounded=True, default=None),
          doc="How users over-estimate: a job's run time x this factor (>= 1, bounded), rounded up to a minute "
              "(omit: the partition's default time)."),
    _per_class_field("accounts", lambda v: None if v > 0 else "must be > 0", {"exclusiveMinimum": 0},
                     "Job class -> its account's fair-share shares (default 1)."),
    _per_class_field("qos", lambda v: None if 0 <= v <= 1 else "must be 0 to 1", {"minimum": 0, "maximum": 1},
                     "Job class -> its QOS priority factor, 0 to 1 (default 0)."),
    Field("half_life", float, _D.half_life, unit="emulated s", check=positive, doc="PriorityDecayHalfLife of fair-share usage."),
    Field("controller_lease_ms", float, _D.controller_lease_ms, unit="wall ms",
          check=lambda v: None if v >= 50 else "must be >= 50", schema={"minimum": 50},
          doc="How long the backup waits on a silent primary (SlurmctldTimeout)."),
    Field("pass_time", float, _D.pass_time, unit="emulated s", check=non_negative, doc="How long one scheduling pass takes."),
)
FIELD = {f.name: f for f in FIELDS}
PARTITION = {f.name: f for f in PARTITION_FIELDS}


def _partition(pt: Table, ctx: SectionContext) -> PartitionSpec:
    name = read_field(pt, PARTITION["name"])
    nodes = _nodes_of(pt, ctx)
    classes = tuple(pt.names("classes", set(ctx.job_classes), "job class")) if "classes" in pt.data else ()
    v = parse_fields(pt, PARTITION_FIELDS, skip=("name",))
    if v["default_time"] > v["max_time"]:
        pt.fail(pt.key("default_time"), f"is over max_time ({v['max_time']:g} s)")
    pt.done()
    return PartitionSpec(Partition(name, nodes, **v), classes)


def parse_slurm(t: Table, ctx: SectionContext) -> SlurmSpec:
    parts = tuple(_partition(pt, ctx) for pt in table_array(t, "partitions"))
    names = [p.partition.name for p in parts]
    if len(set(names)) != len(names):
        t.fail(t.key("partitions"), "partition names must be unique")
    for cls in ctx.job_classes:
        homes = [p.partition.name for p in parts if cls in p.classes]
        if len(homes) > 1:
            t.fail(t.key("partitions"), f"job class {cls!r} is in partitions {homes[0]!r} and {homes[1]!r}; give it one")
    got: dict[str, Any] = {"partitions": names, "job_classes": ctx.job_classes}
    default = read_field(t, FIELD["default_partition"], got)
    controllers = read_field(t, FIELD["controllers"])
    if controllers == 2 and ctx.coordinator.replicas < 3:
        t.fail(t.key("controllers"), "the backup controller takes over through the coordinator's lease: "
                                     "set [coordinator] replicas >= 3")
    if controllers == 1 and ctx.coordinator.replicas > 1:
        ctx.top.fail("coordinator.replicas", "one slurmctld runs no coordinator group: set replicas = 1, "
                                             "or slurm.controllers = 2 (a backup taking over through it)")
    limits = parse_fields(t, [FIELD["time_limits"]], values=got)["time_limits"]
    for cls, lim in limits.items():
        p = next((p for p in parts if cls in p.classes), next(p for p in parts if p.partition.name == default)).partition
        if lim > p.max_time:
            t.fail(f"{t.key('time_limits')}.{cls}", f"{lim:g} s is over partition {p.name}'s max_time {p.max_time:g} s")
    pt = t.sub("priority", default={})
    weights = Weights(**parse_fields(pt, PRIORITY_FIELDS))
    pt.done()
    spec = SlurmSpec(partitions=parts, default_partition=default, controllers=controllers, time_limits=limits,
                     weights=weights,
                     **parse_fields(t, FIELDS, values=got, skip=("default_partition", "controllers", "time_limits")))
    if spec.estimate is not None and _least(spec.estimate) < 1.0:
        t.fail(t.key("estimate"), "users over-estimate: the factor must be >= 1 (a limit below the run time only kills)")
    t.done()
    return spec


def _least(d: Dist) -> float:
    """The smallest value a bounded distribution draws."""
    return {"constant": d.value, "uniform": d.low}.get(d.kind, min(d.values) if d.values else d.value)


def check_sizes(top: Table, sc: Scenario, tasks: dict[str, float]) -> None:
    """Every job must be able to run somewhere: a job class whose jobs ask
    more nodes than its partition has (a rigid job waits for all at once),
    or a replayed log whose requested times exceed its partition's maximum,
    would be refused by sbatch; refused here, before anything starts."""
    s: SlurmSpec = sc.section
    for jc in sc.workload.classes:
        ps = s.partition_of(jc.name)
        p = ps.partition
        # An unbounded size (an exponential) is drawn: the rare job larger
        # than its partition is refused when submitted, as sbatch refuses it.
        most = max((tj.tasks for tj in jc.trace), default=0) if jc.trace else jc.tasks.maximum()
        if s.select == "linear" and most > len(p.nodes) and math.isfinite(most):
            top.fail(f"workload.classes.{jc.name}", f"jobs of up to {most:g} nodes; partition {p.name} has {len(p.nodes)}")
        over = [tj for tj in jc.trace if tj.estimate is not None and tj.estimate > p.max_time]
        if over:
            top.fail(f"workload.classes.{jc.name}", f"{len(over)} logged jobs ask more time than partition {p.name}'s "
                                                   f"max_time {p.max_time:g} s (the first asks {over[0].estimate:g} s)")


def roster(sc: Scenario) -> dict[str, list[str]]:
    return {ROLE: controller_names(sc.section)}


def actors(sc: Scenario) -> list[tuple[str, int]]:
    return [("slurm.controllers", sc.section.controllers)]


def deciders(sc: Scenario) -> list[Decider]:
    return [Decider(NAME, sc.section.pass_time, 0.0)]


def example(classes: tuple[str, ...]) -> dict[str, Any]:
    """Two partitions on the same nodes, the second of a higher tier, and a
    backup controller (the run needs [coordinator] replicas >= 3). Any
    cell: the partitions name no machine class."""
    first, rest = classes[:1], classes[1:]
    return {
        "controllers": 2, "sched_interval": 30.0, "estimate": {"dist": "uniform", "low": 1.0, "high": 3.0},
        "partitions": [
            {"name": "batch", "classes": list(first), "max_time": 3600.0, "default_time": 600.0, "backfill": "easy"},
            *([{"name": "long", "classes": list(rest), "max_time": 7200.0,
                "default_time": 300.0, "tier": 2, "backfill": "conservative"}] if rest else []),
        ],
    }


SPEC = ArchSpec(
    name="slurm",
    gang="every SLURM job is a gang: its nodes are allocated at once and its tasks start together, so a gang class runs as any job",
    title="SLURM (slurmctld with an optional backup; partitions, multifactor priority, EASY/conservative backfill)",
    events=EVENTS,
    parse=parse_slurm,
    roster=roster,
    actors=actors,
    deciders=deciders,
    roles=(Role(ROLE, routed=True, recovers=True, kill_leader=LEADER_KILL, leader_from=2,
                about="slurmctld: queues jobs per partition, backfills, kills at time limits; "
                      "with controllers = 2 a backup takes over"),),
    peers={"machine": (ROLE, "coordinator"), ROLE: ("coordinator", "machine"), "coordinator": ("coordinator",)},
    example=example,
    live="schedlab.actors.archs.slurm.architecture:ARCHITECTURE",
    check_sizes=check_sizes,
    fields=FIELDS,
    showcase="slurm_failover",
    further_resources=("generic resources (GRES, --gres=gpu:N): a node's count per resource and a job's per task, allocated "
                       "and freed with its CPUs"),
)
