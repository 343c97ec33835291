"""The keys of a scenario's common sections and of the tables in them
(machine classes, job classes), each described once (``fields.Field``):
``parse.parse_scenario`` reads them from here, and a key reference or a JSON
Schema (``fields.json_schema``) is generated from the same tables. A table
read by a parser elsewhere has its description beside it: an
architecture's section (``schedulers.archs.<name>.spec``), a fault
(``faults.plan``), a job class replaying a log (``swf_class``)."""
from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from schedlab.schedulers import arch as registry
from schedlab.schedulers import engine_names as engines
from schedlab.schedulers.faults.plan import FAULT_FIELDS
from schedlab.schedulers.model.jobs import JobKind
from schedlab.schedulers.model.workload import Dist
from schedlab.schedulers.scenario.css import CSS_FIELDS
from schedlab.schedulers.scenario.trace_workload import TRACE_FIELDS
from schedlab.schedulers.model.resources import DEFAULT, names_problem
from schedlab.schedulers.scenario.fields import REQUIRED, Computed, Field, parse_fields, per_resource, resource_neighbours
from schedlab.schedulers.scenario.gpu_trace import NODE_FIELDS, TRACE_CLASS
from schedlab.schedulers.scenario.swf_class import SWF_CLASS
from schedlab.schedulers.scenario.toml_table import Table, fraction, non_negative, positive, read_dist

# A run's events file formats ([metrics] events); the file is events.<format>.
EVENT_FORMATS = ("jsonl", "jsonl.gz")

TOP = (
    Field("name", str, Computed(lambda v: v["source"].rsplit("/", 1)[-1].removesuffix(".toml"), "the file's name"),
          doc="The scenario's name, in outputs."),
    Field("description", str, "", doc="What the scenario shows, for people."),
    Field("architecture", str, Computed(lambda v: registry.default_name(), "the registry's default architecture"),
          choices=registry.names, doc="The architecture the cell runs; its section is [<architecture>]."),
    Field("seed", int, 0, check=non_negative, doc="Seeds every random draw: same scenario and seed, same run on sim."),
    Field("engine", str, engines.DEFAULT, choices=engines.names,
          doc="ray (live, real concurrency, time scaled) or sim (one process, virtual clock, deterministic)."),
    Field("time_scale", float, 100.0, unit="emulated s per wall s", check=positive,
          doc="How fast a live run goes (the sim engine ignores it)."),
    Field("duration", float, unit="emulated s", check=positive, doc="How long the run lasts."),
    Field("cell", dict, nested=True, doc="[cell]: machine classes and machines per host actor."),
    Field("workload", dict, nested=True, doc="[workload]: job classes ([[workload.classes]]) or a CSS workload."),
    Field("coordinator", dict, {}, nested=True, doc="[coordinator]: the replicated coordinator group (Raft)."),
    Field("metrics", dict, {}, nested=True, doc="[metrics]: sampling."),
    Field("substrate", dict, {}, nested=True, doc="[substrate]: message batching and the sim engine's latency."),
    Field("liveness", dict, {}, nested=True, doc="[liveness]: when a loss of hosts is a disruption."),
    Field("faults", list, [], nested=True, of=FAULT_FIELDS, doc="[[faults]]: crashes and partitions, in emulated time."),
)

# [[cell.machine_classes]]: one class of identical machines, in the order
# its keys are read (``values``: ``index``, its place in the list).
MACHINE_CLASS = (
    Field("name", str, Computed(lambda v: f"class{v['index']}", "class<i>, i its place in the list"),
          doc="The class's name, which sections name its machines by."),
    per_resource(lambda r, base: Field(r, float, REQUIRED if base else 0.0, check=positive if base else non_negative,
                                       doc=f"Each machine's {r}." if base else
                                       "Each machine's amount of a further resource [cell] resources declares (default 0).")),
    Field("count", int, check=positive, schema={"minimum": 1}, doc="Machines of this class."),
    Field("racks", int, 1, check=positive, schema={"minimum": 1}, doc="Racks its machines are spread over (numbered cell-wide)."),
    Field("labels", list, [], schema={"items": {"type": "string"}},
          doc="Labels of its machines, which sections may name instead of the class."),
    Field("model", str, "", doc="Its devices' model (V100M32, T4, ...), when [cell] devices names a resource: "
                                 "each machine has that resource's amount of devices, all of this model."),
)

# Read before the machine classes: their keys are these names.
RESOURCES = Field("resources", list, list(DEFAULT), check=names_problem, schema={"items": {"type": "string"}},
                  doc="The cell's resource dimensions: cpu and mem, then any others by name (a GPU count, disk, ...); "
                      "every machine class, job class, quota and share has a key per resource.")

def resource_keys_taken() -> set[str]:
    """Names a resource may not take: the other keys of every table with a
    key per resource, here and in every registered architecture's section."""
    tables = [*SECTIONS_WITH_RESOURCES, *(spec.fields for spec in registry.registry().values())]
    return set().union(*(resource_neighbours(t) for t in tables))


CELL = (
    RESOURCES,
    Field("devices", str, None,
          doc="A further resource held as devices (GPUs): each machine has its amount of them, whole, of its class's "
              "model; a task asks for whole devices (a whole number) or a share of one device (below 1), on "
              "the models its class allows."),
    Field("machine_classes", list, [], nested=True, of=MACHINE_CLASS,
          doc="[[cell.machine_classes]]: name, count, capacity per resource, racks, labels, model "
              "(this, nodes, or both)."),
    Field("nodes", dict, None, nested=True, of=NODE_FIELDS,
          doc="A GPU trace's node list as machines (alike nodes one class, named by model), after any "
              "machine_classes: { format = \"openb\" or \"pai\", file = ..., max_nodes = N }."),
    Field("machines_per_actor", int, 1, check=positive, schema={"minimum": 1},
          doc="Machines one host actor carries (more: fewer actors, larger cells)."),
)

METRICS = (
    Field("sample_interval", float, 5.0, unit="emulated s", check=positive,
          doc="Between two samples of the cell's utilization."),
    Field("events", str, "jsonl", choices=EVENT_FORMATS,
          doc="The events file's format: 'jsonl' (events.jsonl) or 'jsonl.gz' (events.jsonl.gz, gzip-compressed, "
              "~8x smaller: for long or large runs; `schedlab export` writes it out plain)."),
)

SUBSTRATE = (
    Field("batch_interval", float, 0.05, unit="wall s", check=positive,
          doc="Between two flushes of an actor's batched messages and events (x time_scale in emulated s)."),
    Field("latency", (float, dict), None, nested=True, unit="emulated s",
          doc="The sim engine's one-way message latency: a number or a distribution table (default: SubstrateSpec's)."),
)

LIVENESS = (
    Field("disruption_share", float, 0.55, check=lambda v: None if 0 < v <= 1 else "must be in (0, 1]",
          schema={"exclusiveMinimum": 0, "maximum": 1},
          doc="Share of the hosts whose loss at once is a disruption, not a failure to act on."),
    Field("disruption_min_hosts", int, 2, check=lambda v: None if v >= 1 else "must be >= 1", schema={"minimum": 1},
          doc="The fewest hosts lost at once that can be a disruption."),
)


def _election(v: float | list) -> str | None:
    if isinstance(v, float):
        return None if v > 0 else "must be > 0"
    ok = len(v) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v) and 0 < v[0] <= v[1]
    return None if ok else "must be a number or [low, high] with 0 < low <= high"


def _below_election(v: float, got: Mapping[str, Any]) -> str | None:
    e = got["election_ms"]
    low = e if isinstance(e, float) else e[0]
    return None if v < low else f"must be below election_ms ({low:g})"


# Keys an earlier version read, and what replaced them (a one-line error).
COORDINATOR_REPLACED = {
    k: "replaced by heartbeat_ms and election_ms (emulated ms; the replicas sleep until a timer is due instead of ticking)"
    for k in ("tick_ms", "election_ticks", "heartbeat_ticks")
}

COORDINATOR = (
    Field("replicas", int, 1, check=lambda v: None if v == 1 or 3 <= v <= 9 else "must be 1 (no replication) or 3 to 9",
          schema={"minimum": 1, "maximum": 9},
          doc="Replicas of the coordinator group: 1 (none) or 3 to 9; an architecture may set its own default."),
    Field("election_ms", (float, list), 7500.0, check=_election, unit="emulated ms",
          doc="A follower's election timeout: a number x is drawn in [x, 2x) as etcd's --election-timeout is, "
              "[low, high] in that range (the Raft paper's). Raised to 100 wall ms (x time_scale) if below."),
    Field("heartbeat_ms", float, 2500.0, check=positive, unit="emulated ms", against=_below_election,
          doc="Between a leader's heartbeats (etcd's --heartbeat-interval); below election_ms. An idle group "
              "costs one heartbeat round per interval. Raised to 10 wall ms (x time_scale) if below."),
    Field("snapshot_threshold", int, 1000, check=lambda v: None if v > 0 else "must be > 0", schema={"minimum": 1},
          doc="Log entries between two snapshots of a replica's state."),
)

BURSTS = (
    Field("on", float, unit="emulated s", check=positive, doc="Mean length of an on period (jobs arrive)."),
    Field("off", float, unit="emulated s", check=positive, doc="Mean length of an off period (none arrive)."),
)


def _bursts(t: Table, got: Mapping[str, Any]) -> tuple[float, float] | None:
    """``bursts = { on = S, off = S }`` as (on, off), or None when absent."""
    if "bursts" not in t.data:
        return None
    b = t.sub("bursts")
    on, off = parse_fields(b, BURSTS).values()
    b.done()
    if got["interarrival_mode"] != "exponential":
        t.fail(t.key("bursts"), "bursts need interarrival_mode = \"exponential\" (the on periods are Poisson)")
    return on, off


def _duration(t: Table, got: Mapping[str, Any]) -> Dist:
    """A task's run time; a service's runs until the run ends unless given."""
    if got["kind"] == JobKind.SERVICE.value:
        return read_dist(t, "duration", default=Dist("constant", value=math.inf))
    return read_dist(t, "duration")


# [[workload.classes]]: one class of jobs drawn from distributions, in the
# order its keys are read. (A class replaying a log is ``swf_class.SWF_CLASS``.)
JOB_CLASS = (
    Field("name", str, doc="The class's name (unique), which sections route jobs by."),
    Field("kind", str, JobKind.BATCH.value, choices=tuple(k.value for k in JobKind),
          doc="batch: jobs end; service: its tasks run until the run ends, unless given a duration."),
    Field("interarrival_mode", str, "exponential", choices=("exponential", "fixed"),
          doc="exponential: Poisson arrivals; fixed: one job every interarrival."),
    Field("interarrival", float, unit="emulated s", check=positive, doc="Mean time between two jobs of the class."),
    Field("start", float, None, unit="emulated s", check=non_negative,
          doc="When its first job arrives (default: one interarrival after 0)."),
    Field("tasks", (float, dict), nested=True, read=lambda t, got: read_dist(t, "tasks"),
          doc="Tasks per job: a number or a distribution table."),
    Field("duration", (float, dict), Computed(lambda v: math.inf, "forever for a service; a batch class gives it"),
          nested=True, read=_duration, unit="emulated s",
          doc="Each task's run time: a number or a distribution table."),
    per_resource(lambda r, base: Field(
        r, (float, dict), REQUIRED if base else 0.0, nested=True,
        read=lambda t, got: read_dist(t, r, bounded=True, **({} if base else {"default": Dist("constant", value=0.0)})),
        doc=(f"Each task's {r}" if base else "Each task's amount of a further resource [cell] resources declares "
             "(default 0)") + ": a number or a bounded distribution table (constant, uniform, empirical).")),
    Field("priority", int, 0, doc="Its jobs' priority."),
    Field("models", list, [], schema={"items": {"type": "string"}},
          doc="The device models its tasks may run on, when [cell] devices names a resource (empty: any)."),
    Field("rigid", bool, False, doc="One duration drawn per job, all its tasks running for it (a parallel job)."),
    Field("gang", bool, False, doc="Its jobs are gangs: all tasks start together or none does, as each architecture "
                                   "does it (reference: gangs by architecture); one that cannot refuses the class."),
    Field("gang_timeout", float, 60.0, unit="emulated s", check=positive,
          doc="How long part of a gang may be held while the rest is gathered, where an architecture holds parts "
              "(a scheduler's Permit wait, a framework's held offers): then what was held is released and the gang "
              "tried again."),
    Field("bursts", dict, None, nested=True, of=BURSTS, read=_bursts,
          doc="Arrivals in on and off periods, both exponential (needs interarrival_mode = \"exponential\")."),
)

INFLATE = (
    Field("resource", str, Computed(lambda v: v["devices"] or "cpu", "[cell] devices' resource, else cpu"),
          doc="The resource whose arrived demand is counted (one [cell] resources declares)."),
    Field("until", float, 1.3, check=lambda v: None if 0 < v <= 5 else "must be in (0, 5]",
          schema={"exclusiveMinimum": 0, "maximum": 5},
          doc="Arrivals stop once their demand reaches this multiple of the cell's total of the resource."),
    Field("gap", float, 1.0, unit="emulated s", check=positive,
          doc="Between two arrivals: time for the architecture to place one before the next."),
)

WORKLOAD = (
    Field("classes", list, None, nested=True, any_of=(JOB_CLASS, SWF_CLASS, TRACE_CLASS),
          doc="[[workload.classes]]: the job classes (this or [workload.css]); a class with swf replays a log, "
              "one with gpu_trace a GPU trace's pods or tasks."),
    Field("css", dict, None, nested=True, of=CSS_FIELDS, doc="[workload.css]: a CSS workload, which makes the classes."),
    Field("trace", dict, None, nested=True, of=TRACE_FIELDS,
          doc="[workload.trace]: a converted cluster trace (schedlab trace convert), which makes the classes, the "
              "standing load and, unless [cell] gives machine classes, the cell's machines."),
    Field("prefill_utilization", float, 0.0, check=fraction,
          doc="Share of the cell filled with standing work before the run starts."),
    Field("inflate", dict, None, nested=True, of=INFLATE,
          doc="[workload.inflate]: workload inflation: one-task arrivals drawn from the classes that never leave, "
              "every gap s, until their demand for a resource reaches until times the cell's (instead of the "
              "classes' own arrivals); the summary's inflation block says how much was allocated."),
)


# The common tables with a key per resource (machine and job classes; a class replaying a log).
SECTIONS_WITH_RESOURCES = (MACHINE_CLASS, JOB_CLASS, SWF_CLASS)
