"""The keys of a scenario's common sections, each described once
(``fields.Field``): ``parse.parse_scenario`` reads them from here, and a key
reference or a JSON Schema (``fields.json_schema``) is generated from the
same tables. An architecture's own section has its table beside its parser
(``schedulers.archs.<name>.spec``)."""
from __future__ import annotations

from schedlab.schedulers import arch as registry
from schedlab.schedulers import engine_names as engines
from schedlab.schedulers.scenario.fields import Computed, Field
from schedlab.schedulers.scenario.toml_table import fraction, non_negative, positive


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
    Field("faults", list, [], nested=True, doc="[[faults]]: crashes and partitions, in emulated time."),
)

CELL = (
    Field("machine_classes", list, nested=True, doc="[[cell.machine_classes]]: name, count, capacity per resource, racks, labels."),
    Field("machines_per_actor", int, 1, check=lambda v: None if v > 0 else "must be > 0", schema={"minimum": 1},
          doc="Machines one host actor carries (more: fewer actors, larger cells)."),
)

METRICS = (
    Field("sample_interval", float, 5.0, unit="emulated s", check=positive,
          doc="Between two samples of the cell's utilization."),
)

SUBSTRATE = (
    Field("batch_interval", float, 0.05, unit="emulated s", check=positive,
          doc="Between two flushes of an actor's batched messages and events."),
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


def _ticks(v: list) -> str | None:
    ok = len(v) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in v) and 0 < v[0] <= v[1]
    return None if ok else "must be [low, high] integers with 0 < low <= high"


COORDINATOR = (
    Field("replicas", int, 1, check=lambda v: None if v == 1 or 3 <= v <= 9 else "must be 1 (no replication) or 3 to 9",
          schema={"minimum": 1, "maximum": 9},
          doc="Replicas of the coordinator group: 1 (none) or 3 to 9; an architecture may set its own default."),
    Field("election_ticks", list, [10, 20], check=_ticks, unit="ticks",
          schema={"items": {"type": "integer", "minimum": 1}, "minItems": 2, "maxItems": 2},
          doc="[low, high]: a follower's randomized election timeout."),
    Field("heartbeat_ticks", int, 3, check=lambda v: None if v > 0 else "must be > 0", unit="ticks", schema={"minimum": 1},
          against=lambda v, got: None if v < got["election_ticks"][0]
          else f"must be below election_ticks low ({got['election_ticks'][0]})",
          doc="Between a leader's heartbeats; below election_ticks low."),
    Field("tick_ms", float, 15.0, unit="wall ms",
          check=lambda v: None if v >= 5 else "must be >= 5 (timers are not precise below)", schema={"minimum": 5},
          doc="One tick of the group's timers."),
    Field("snapshot_threshold", int, 1000, check=lambda v: None if v > 0 else "must be > 0", schema={"minimum": 1},
          doc="Log entries between two snapshots of a replica's state."),
)

WORKLOAD = (
    Field("classes", list, None, nested=True, doc="[[workload.classes]]: the job classes (this or [workload.css])."),
    Field("css", dict, None, nested=True, doc="[workload.css]: a CSS workload, which makes the classes."),
    Field("prefill_utilization", float, 0.0, check=fraction,
          doc="Share of the cell filled with standing work before the run starts."),
)
