"""Scenarios as inert, validated, frozen data.

``parse_scenario(data, source)`` turns a TOML-shaped dict into a ``Scenario``
or raises ``ScenarioError`` with one line naming the file, the key and the
problem. Nothing here starts anything: a scenario is checked whole before any
actor exists.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field, replace

from schedlab.schedulers.model.cluster import MachineClass, host_count
from schedlab.schedulers.faults.plan import FaultSpec, Roster, parse_fault
from schedlab.schedulers.model.jobs import JobKind
from schedlab.schedulers.faults.liveness import LivenessSpec
from schedlab.schedulers.shared_state.commit import ConflictMode, TxnMode
from schedlab.schedulers.placement.policies import PLACEMENT_POLICIES
from schedlab.schedulers.model.resources import RESOURCES
from schedlab.schedulers.archs.borg.spec import BorgSpec, parse_borg
from schedlab.schedulers.scenario.limits import Limits, check_sizes, local_limits
from schedlab.schedulers.archs.mesos.spec import MesosSpec, parse_mesos
from schedlab.schedulers.scenario.toml_table import ScenarioError, check_deciders, table_array, read_dist, Table, fraction, non_negative, one_of, positive
from schedlab.schedulers.model.workload import Dist, JobClass

__all__ = ["ARCHITECTURES", "FaultSpec", "roster_for", "Scenario", "ScenarioError", "parse_comparison", "parse_scenario"]

ARCHITECTURES = ("omega", "mesos", "borg")


@dataclass(frozen=True)
class CellSpec:
    machine_classes: tuple[MachineClass, ...]
    machines_per_actor: int = 1

    @property
    def machines(self) -> int:
        return sum(mc.count for mc in self.machine_classes)


@dataclass(frozen=True)
class WorkloadSpec:
    classes: tuple[JobClass, ...]
    prefill_utilization: float = 0.0


@dataclass(frozen=True)
class OmegaSchedulerSpec:
    name: str
    classes: tuple[str, ...]
    count: int = 1
    t_job: float = 0.1
    t_task: float = 0.005
    policy: str = "random_first_fit"


@dataclass(frozen=True)
class OmegaSpec:
    schedulers: tuple[OmegaSchedulerSpec, ...]
    conflict_mode: ConflictMode = ConflictMode.RESOURCE
    txn_mode: TxnMode = TxnMode.INCREMENTAL
    max_attempts: int = 1000
    retry_backoff: float = 1.0


@dataclass(frozen=True)
class MetricsSpec:
    sample_interval: float = 5.0  # emulated seconds between utilisation samples


@dataclass(frozen=True)
class SubstrateSpec:
    """How the emulation uses Ray. Launches, completions and events wait up to
    ``batch_interval`` wall seconds to travel together: longer means fewer
    messages (each costs ~0.5 ms of CPU here) but later resource returns."""

    batch_interval: float = 0.05


@dataclass(frozen=True)
class CoordinatorSpec:
    """``replicas = 1`` is the plain cell-state actor; 3 or more run the cell
    state as a Raft-replicated state machine on coordinator replicas."""

    replicas: int = 1
    tick_ms: float = 15.0  # wall milliseconds per Raft tick
    election_ticks: tuple[int, int] = (10, 20)
    heartbeat_ticks: int = 3
    snapshot_threshold: int = 1000


@dataclass(frozen=True)
class Scenario:
    name: str
    architecture: str
    seed: int
    time_scale: float
    duration: float
    cell: CellSpec
    workload: WorkloadSpec
    omega: OmegaSpec | None
    metrics: MetricsSpec = field(default_factory=MetricsSpec)
    substrate: SubstrateSpec = field(default_factory=SubstrateSpec)
    coordinator: CoordinatorSpec = field(default_factory=CoordinatorSpec)
    faults: tuple[FaultSpec, ...] = ()
    description: str = ""
    source: str = "<scenario>"
    mesos: MesosSpec | None = None
    borg: BorgSpec | None = None
    liveness: LivenessSpec = field(default_factory=LivenessSpec)


def _machine_class(t: Table, index: int) -> MachineClass:
    name = t.get("name", str, default=f"class{index}")
    capacity = tuple(t.get(r, float, check=positive) for r in RESOURCES)
    mc = MachineClass(
        name=name,
        count=t.get("count", int, check=lambda v: None if v > 0 else "must be > 0"),
        capacity=capacity,
        racks=t.get("racks", int, default=1, check=lambda v: None if v > 0 else "must be > 0"),
        labels=tuple(t.get("labels", list, default=[])),
    )
    t.done()
    return mc


def _job_class(t: Table) -> JobClass:
    name = t.get("name", str)
    kind = JobKind(t.get("kind", str, default="batch", check=one_of(("batch", "service"))))
    ia_mode = t.get("interarrival_mode", str, default="exponential", check=one_of(("exponential", "fixed")))
    mean_ia = t.get("interarrival", float, check=positive)
    jc = JobClass(
        name=name,
        kind=kind,
        interarrival=Dist("exponential", mean=mean_ia),
        interarrival_mode=ia_mode,
        start=t.get("start", float, default=None, check=non_negative),
        tasks=read_dist(t, "tasks"),
        duration=read_dist(t, "duration", default=Dist("constant", value=math.inf)) if kind is JobKind.SERVICE else read_dist(t, "duration"),
        request=tuple(read_dist(t, r, bounded=True) for r in RESOURCES),
        priority=t.get("priority", int, default=0),
    )
    t.done()
    return jc


def _scheduler(t: Table, known_classes: set[str]) -> OmegaSchedulerSpec:
    classes = t.names("classes", known_classes, "job class")
    spec = OmegaSchedulerSpec(
        name=t.get("name", str),
        classes=tuple(classes),
        count=t.get("count", int, default=1, check=lambda v: None if v > 0 else "must be > 0"),
        t_job=t.get("t_job", float, default=0.1, check=non_negative),
        t_task=t.get("t_task", float, default=0.005, check=non_negative),
        policy=t.get("policy", str, default="random_first_fit", check=one_of(tuple(PLACEMENT_POLICIES))),
    )
    t.done()
    return spec


def parse_scenario(data: dict, source: str = "<scenario>", limits: Limits | None = None) -> Scenario:
    """``data`` as a Scenario, or ScenarioError (one line: file, key, problem).

    Also refuses a scenario too big to build under ``limits`` (default: this
    machine's, the embedded Ray's; ``scenario_limits.limits_for`` gives a
    cluster's), from its numbers alone and before anything O(machines) or
    O(jobs) is made, so a typo in a size fails in milliseconds."""
    top = Table(data, "", source)
    if "architectures" in data:
        top.fail("architectures", "this file compares architectures: run it with `schedlab compare`")
    name = top.get("name", str, default=source.rsplit("/", 1)[-1].removesuffix(".toml"))
    description = top.get("description", str, default="")
    arch = top.get("architecture", str, default="omega", check=one_of(ARCHITECTURES))
    seed = top.get("seed", int, default=0, check=lambda v: None if v >= 0 else "must be >= 0")
    time_scale = top.get("time_scale", float, default=100.0, check=positive)
    duration = top.get("duration", float, check=positive)

    ct = top.sub("cell")
    mclasses = tuple(_machine_class(x, i) for i, x in enumerate(table_array(ct, "machine_classes")))
    cell = CellSpec(mclasses, ct.get("machines_per_actor", int, default=1, check=lambda v: None if v > 0 else "must be > 0"))
    ct.done()

    wt = top.sub("workload")
    jclasses = tuple(_job_class(x) for x in table_array(wt, "classes"))
    names = [jc.name for jc in jclasses]
    if len(set(names)) != len(names):
        wt.fail(wt.key("classes"), "job class names must be unique")
    workload = WorkloadSpec(jclasses, wt.get("prefill_utilization", float, default=0.0, check=fraction))
    wt.done()
    _check_fit(wt, cell, jclasses)

    coord_data = top.data.get("coordinator", {})
    if arch == "borg" and isinstance(coord_data, dict) and "replicas" not in coord_data:
        # The Borgmaster is replicated by default (five replicas, as in Borg).
        top.data["coordinator"] = dict(coord_data, replicas=5)
    coordinator = _coordinator(top.sub("coordinator", default={}))
    omega = mesos = borg = None
    if arch == "omega":
        omega = _omega(top.sub("omega"), names)
    elif arch == "mesos":
        mesos = parse_mesos(top.sub("mesos"), names, mclasses, coordinator.replicas)
    else:
        if coordinator.replicas < 3:
            top.fail("coordinator.replicas", "the Borgmaster needs 3 or more replicas")
        borg = parse_borg(top.sub("borg", default={}), names, mclasses)
    for other in ARCHITECTURES:
        if other != arch and other in top.data:
            top.fail(other, f"is for architecture = {other!r}; this scenario is {arch!r}")

    mt = top.sub("metrics", default={})
    metrics = MetricsSpec(sample_interval=mt.get("sample_interval", float, default=5.0, check=positive))
    mt.done()
    st = top.sub("substrate", default={})
    substrate = SubstrateSpec(batch_interval=st.get("batch_interval", float, default=0.05, check=positive))
    st.done()
    lt = top.sub("liveness", default={})
    liveness = LivenessSpec(
        disruption_share=lt.get("disruption_share", float, default=0.55,
                                check=lambda v: None if 0 < v <= 1 else "must be in (0, 1]"),
        disruption_min_hosts=lt.get("disruption_min_hosts", int, default=2, check=lambda v: None if v >= 1 else "must be >= 1"),
    )
    lt.done()
    sc = Scenario(name, arch, seed, time_scale, duration, cell, workload, omega, metrics, substrate, coordinator,
                  (), description, source, mesos, borg, liveness)
    check_sizes(top, sc, limits or local_limits())  # before roster_for: it names every host actor
    roster = roster_for(sc)
    faults = tuple(parse_fault(x, duration, roster) for x in (table_array(top, "faults") if "faults" in top.data else []))
    top.done()
    return replace(sc, faults=tuple(sorted(faults, key=lambda f: f.at)))


def roster_for(sc: Scenario, nodes: tuple[str, ...] = ()) -> Roster:
    """The actors a run of ``sc`` starts, by role (what faults can hit)."""
    replicas = [f"coordinator-{i}" for i in range(sc.coordinator.replicas)] if sc.coordinator.replicas > 1 else []
    members: dict[str, list[str]] = {
        "machine": [f"machine-host-{i}" for i in range(host_count(sc.cell.machines, sc.cell.machines_per_actor))],
        "coordinator": replicas,
    }
    leaders = ["coordinator"] if replicas else []
    if sc.omega is not None:
        members["scheduler"] = [f"scheduler-{s.name}-{i}" for s in sc.omega.schedulers for i in range(s.count)]
        members["cellstate"] = [] if replicas else ["cellstate"]
    if sc.mesos is not None:
        members["framework"] = [f"framework-{f.name}" for f in sc.mesos.frameworks]
        members["master"] = [f"master-{i}" for i in range(sc.mesos.masters)]
        leaders.append("master")
    if sc.borg is not None:
        members["frontend"] = ["borg-frontend"]
    return Roster(members, frozenset({"machine", "scheduler", "framework", "coordinator", "master", "frontend"}),
                  nodes, tuple(leaders))


def _omega(ot: Table, names: list[str]) -> OmegaSpec:
    scheds = tuple(_scheduler(x, set(names)) for x in table_array(ot, "schedulers"))
    check_deciders(ot, "schedulers", scheds, names, "scheduler")
    omega = OmegaSpec(
        schedulers=scheds,
        conflict_mode=ConflictMode(ot.get("conflict_mode", str, default="resource", check=one_of(tuple(m.value for m in ConflictMode)))),
        txn_mode=TxnMode(ot.get("transaction_mode", str, default="incremental", check=one_of(tuple(m.value for m in TxnMode)))),
        max_attempts=ot.get("max_attempts", int, default=1000, check=lambda v: None if v > 0 else "must be > 0"),
        retry_backoff=ot.get("retry_backoff", float, default=1.0, check=positive),
    )
    ot.done()
    return omega


def _coordinator(t: Table) -> CoordinatorSpec:
    replicas = t.get("replicas", int, default=1, check=lambda v: None if v == 1 or 3 <= v <= 9 else "must be 1 (no replication) or 3 to 9")
    ticks = t.get("election_ticks", list, default=[10, 20])
    if len(ticks) != 2 or not all(isinstance(x, int) and not isinstance(x, bool) for x in ticks) or not 0 < ticks[0] <= ticks[1]:
        t.fail(t.key("election_ticks"), f"must be [low, high] integers with 0 < low <= high (got {ticks!r})")
    heartbeat = t.get("heartbeat_ticks", int, default=3, check=lambda v: None if v > 0 else "must be > 0")
    if heartbeat >= ticks[0]:
        t.fail(t.key("heartbeat_ticks"), f"must be below election_ticks low ({ticks[0]}) (got {heartbeat})")
    spec = CoordinatorSpec(
        replicas=replicas,
        tick_ms=t.get("tick_ms", float, default=15.0, check=lambda v: None if v >= 5 else "must be >= 5 (timers are not precise below)"),
        election_ticks=(ticks[0], ticks[1]),
        heartbeat_ticks=heartbeat,
        snapshot_threshold=t.get("snapshot_threshold", int, default=1000, check=lambda v: None if v > 0 else "must be > 0"),
    )
    t.done()
    return spec


def _check_fit(t: Table, cell: CellSpec, classes: tuple[JobClass, ...]) -> None:
    """A job class whose largest task fits no machine class would only ever be abandoned."""
    for i, jc in enumerate(classes):
        biggest = [d.maximum() for d in jc.request]
        if not any(all(b <= c + 1e-9 for b, c in zip(biggest, mc.capacity)) for mc in cell.machine_classes):
            asked = ", ".join(f"{r}={b:g}" for r, b in zip(RESOURCES, biggest))
            t.fail(f"{t.key('classes')}[{i}]", f"a task of job class {jc.name!r} ({asked}) fits no machine class")


def parse_comparison(data: dict, source: str = "<scenario>", limits: Limits | None = None) -> list[Scenario]:
    """One scenario per architecture to compare, same cell, workload and seed.

    ``architectures = ["borg", "mesos", "omega"]`` names them (default: every
    architecture with a section in the file, else the file's own); each gets
    the file with only its own section. A missing ``[borg]`` means Borg's
    defaults; Omega and Mesos need their sections (their schedulers)."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: <top level>: must be a table")
    archs = data.get("architectures")
    if archs is None:
        archs = [a for a in ARCHITECTURES if a in data] or [data.get("architecture", "omega")]
    if not isinstance(archs, list) or not archs or len(set(map(str, archs))) != len(archs):
        raise ScenarioError(f"{source}: architectures: must be a non-empty list of distinct names (got {archs!r})")
    out = []
    for a in archs:
        if a not in ARCHITECTURES:
            raise ScenarioError(f"{source}: architectures: {a!r} is not one of {', '.join(ARCHITECTURES)}")
        d = copy.deepcopy(data)
        d.pop("architectures", None)
        d["architecture"] = a
        for other in ARCHITECTURES:
            if other != a:
                d.pop(other, None)
        out.append(parse_scenario(d, source, limits))
    return out
