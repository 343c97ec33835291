"""Scenarios as inert, validated, frozen data.

``parse_scenario(data, source)`` turns a TOML-shaped dict into a ``Scenario``
or raises ``ScenarioError`` with one line naming the file, the key and the
problem. Nothing here starts anything: a scenario is checked whole before any
actor exists.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

from schedulers.cluster import MachineClass
from schedulers.jobs import JobKind
from schedulers.omega import ConflictMode, TxnMode
from schedulers.placement import PLACEMENT_POLICIES
from schedulers.resources import RESOURCES
from schedulers.workload import DIST_KINDS, Dist, JobClass

ARCHITECTURES = ("omega",)


class ScenarioError(ValueError):
    """A scenario is malformed; str() is the one-line message for the user."""


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


FAULT_ACTIONS = ("kill_leader", "kill", "restart")


@dataclass(frozen=True)
class FaultSpec:
    at: float  # emulated seconds into the run
    action: str
    target: str = ""  # actor name, for kill and restart
    restart_after: float | None = None  # kill / kill_leader: restart the victim this much later


@dataclass(frozen=True)
class Scenario:
    name: str
    architecture: str
    seed: int
    time_scale: float
    duration: float
    cell: CellSpec
    workload: WorkloadSpec
    omega: OmegaSpec
    metrics: MetricsSpec = field(default_factory=MetricsSpec)
    substrate: SubstrateSpec = field(default_factory=SubstrateSpec)
    coordinator: CoordinatorSpec = field(default_factory=CoordinatorSpec)
    faults: tuple[FaultSpec, ...] = ()
    description: str = ""
    source: str = "<scenario>"


class _Table:
    """A TOML table being read: remembers which keys were consumed so leftover
    (unknown) keys can be reported, and prefixes errors with the key path."""

    def __init__(self, data: Any, path: str, source: str) -> None:
        self.source = source
        self.path = path
        if not isinstance(data, dict):
            self.fail(path, f"must be a table, got {type(data).__name__}")
        self.data: dict = data
        self.used: set[str] = set()

    def key(self, k: str) -> str:
        return f"{self.path}.{k}" if self.path else k

    def fail(self, key: str, problem: str) -> None:
        raise ScenarioError(f"{self.source}: {key or '<top level>'}: {problem}")

    def get(self, k: str, kind: type | tuple[type, ...], default: Any = ..., check: Callable[[Any], str | None] | None = None) -> Any:
        self.used.add(k)
        if k not in self.data:
            if default is ...:
                self.fail(self.key(k), "is required")
            return default
        v = self.data[k]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        # bool is an int in Python; a TOML `true` where a number belongs is a mistake.
        if isinstance(v, bool) and bool not in kinds:
            self.fail(self.key(k), f"expected {_names(kinds)}, got bool")
        if float in kinds and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        if not isinstance(v, kinds):
            self.fail(self.key(k), f"expected {_names(kinds)}, got {type(v).__name__}")
        if isinstance(v, float) and not math.isfinite(v):
            self.fail(self.key(k), "must be finite")
        if check is not None:
            problem = check(v)
            if problem:
                self.fail(self.key(k), f"{problem} (got {v!r})")
        return v

    def sub(self, k: str, default: Any = ...) -> "_Table":
        v = self.get(k, dict, {} if default is not ... else ...)
        return _Table(v, self.key(k), self.source)

    def done(self) -> None:
        extra = sorted(set(self.data) - self.used)
        if extra:
            self.fail(self.key(extra[0]), "unknown key")


def _names(kinds: tuple[type, ...]) -> str:
    return " or ".join("number" if t is float else t.__name__ for t in kinds)


def positive(v: float) -> str | None:
    return None if v > 0 else "must be > 0"


def non_negative(v: float) -> str | None:
    return None if v >= 0 else "must be >= 0"


def fraction(v: float) -> str | None:
    return None if 0 <= v < 1 else "must be in [0, 1)"


def one_of(options: tuple[str, ...]) -> Callable[[str], str | None]:
    return lambda v: None if v in options else f"must be one of {', '.join(options)}"


def _dist(t: _Table, k: str, bounded: bool = False, default: Any = ...) -> Dist:
    """A number means constant; a table names the distribution."""
    if k not in t.data and default is not ...:
        t.used.add(k)
        return default
    raw = t.get(k, (float, dict))
    key = t.key(k)
    if isinstance(raw, float):
        if raw <= 0:
            t.fail(key, f"must be > 0 (got {raw!r})")
        return Dist("constant", value=raw)
    d = _Table(raw, key, t.source)
    kind = d.get("dist", str, check=one_of(DIST_KINDS))
    if kind == "constant":
        dist = Dist("constant", value=d.get("value", float, check=positive))
    elif kind == "exponential":
        dist = Dist("exponential", mean=d.get("mean", float, check=positive))
    elif kind == "lognormal":
        dist = Dist("lognormal", mean=d.get("mean", float, check=positive), sigma=d.get("sigma", float, check=positive))
    elif kind == "uniform":
        low = d.get("low", float, check=positive)
        high = d.get("high", float, check=lambda v: None if v >= low else "must be >= low")
        dist = Dist("uniform", low=low, high=high)
    else:
        values = d.get("values", list, check=lambda v: None if v else "must not be empty")
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in values):
            d.fail(d.key("values"), "must be a list of numbers > 0")
        weights = d.get("weights", list, default=[])
        if weights and (len(weights) != len(values) or not all(isinstance(w, (int, float)) and w >= 0 for w in weights) or sum(weights) <= 0):
            d.fail(d.key("weights"), "must be one non-negative number per value, not all zero")
        dist = Dist("empirical", values=tuple(float(x) for x in values), weights=tuple(float(w) for w in weights))
    d.done()
    if bounded and math.isinf(dist.maximum()):
        t.fail(key, f"{kind} is unbounded; a request needs constant, uniform or empirical")
    return dist


def _machine_class(t: _Table, index: int) -> MachineClass:
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


def _job_class(t: _Table) -> JobClass:
    name = t.get("name", str)
    kind = JobKind(t.get("kind", str, default="batch", check=one_of(("batch", "service"))))
    ia_mode = t.get("interarrival_mode", str, default="exponential", check=one_of(("exponential", "fixed")))
    mean_ia = t.get("interarrival", float, check=positive)
    jc = JobClass(
        name=name,
        kind=kind,
        interarrival=Dist("exponential", mean=mean_ia),
        interarrival_mode=ia_mode,
        tasks=_dist(t, "tasks"),
        duration=_dist(t, "duration", default=Dist("constant", value=math.inf)) if kind is JobKind.SERVICE else _dist(t, "duration"),
        request=tuple(_dist(t, r, bounded=True) for r in RESOURCES),
        priority=t.get("priority", int, default=0),
    )
    t.done()
    return jc


def _scheduler(t: _Table, known_classes: set[str]) -> OmegaSchedulerSpec:
    classes = t.get("classes", list, check=lambda v: None if v else "must name at least one job class")
    for c in classes:
        if c not in known_classes:
            t.fail(t.key("classes"), f"unknown job class {c!r}")
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


def _array(t: _Table, k: str) -> list[_Table]:
    raw = t.get(k, list, check=lambda v: None if v else "must not be empty")
    return [_Table(x, f"{t.key(k)}[{i}]", t.source) for i, x in enumerate(raw)]


def parse_scenario(data: dict, source: str = "<scenario>") -> Scenario:
    top = _Table(data, "", source)
    name = top.get("name", str, default=source.rsplit("/", 1)[-1].removesuffix(".toml"))
    description = top.get("description", str, default="")
    arch = top.get("architecture", str, default="omega", check=one_of(ARCHITECTURES))
    seed = top.get("seed", int, default=0, check=lambda v: None if v >= 0 else "must be >= 0")
    time_scale = top.get("time_scale", float, default=100.0, check=positive)
    duration = top.get("duration", float, check=positive)

    ct = top.sub("cell")
    mclasses = tuple(_machine_class(x, i) for i, x in enumerate(_array(ct, "machine_classes")))
    cell = CellSpec(mclasses, ct.get("machines_per_actor", int, default=1, check=lambda v: None if v > 0 else "must be > 0"))
    ct.done()

    wt = top.sub("workload")
    jclasses = tuple(_job_class(x) for x in _array(wt, "classes"))
    names = [jc.name for jc in jclasses]
    if len(set(names)) != len(names):
        wt.fail(wt.key("classes"), "job class names must be unique")
    workload = WorkloadSpec(jclasses, wt.get("prefill_utilization", float, default=0.0, check=fraction))
    wt.done()
    _check_fit(wt, cell, jclasses)

    ot = top.sub("omega")
    scheds = tuple(_scheduler(x, set(names)) for x in _array(ot, "schedulers"))
    if len({s.name for s in scheds}) != len(scheds):
        ot.fail(ot.key("schedulers"), "scheduler names must be unique")
    served = {c for s in scheds for c in s.classes}
    for n in names:
        if n not in served:
            ot.fail(ot.key("schedulers"), f"no scheduler serves job class {n!r}")
    omega = OmegaSpec(
        schedulers=scheds,
        conflict_mode=ConflictMode(ot.get("conflict_mode", str, default="resource", check=one_of(tuple(m.value for m in ConflictMode)))),
        txn_mode=TxnMode(ot.get("transaction_mode", str, default="incremental", check=one_of(tuple(m.value for m in TxnMode)))),
        max_attempts=ot.get("max_attempts", int, default=1000, check=lambda v: None if v > 0 else "must be > 0"),
        retry_backoff=ot.get("retry_backoff", float, default=1.0, check=positive),
    )
    ot.done()

    mt = top.sub("metrics", default={})
    metrics = MetricsSpec(sample_interval=mt.get("sample_interval", float, default=5.0, check=positive))
    mt.done()
    st = top.sub("substrate", default={})
    substrate = SubstrateSpec(batch_interval=st.get("batch_interval", float, default=0.05, check=positive))
    st.done()
    coordinator = _coordinator(top.sub("coordinator", default={}))
    faults = tuple(_fault(x, duration, coordinator) for x in (_array(top, "faults") if "faults" in top.data else []))
    top.done()
    return Scenario(name, arch, seed, time_scale, duration, cell, workload, omega, metrics, substrate, coordinator,
                    tuple(sorted(faults, key=lambda f: f.at)), description, source)


def _coordinator(t: _Table) -> CoordinatorSpec:
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


def _fault(t: _Table, duration: float, coordinator: CoordinatorSpec) -> FaultSpec:
    at = t.get("at", float, check=lambda v: None if 0 < v < duration else f"must be inside the run (0, {duration:g})")
    action = t.get("action", str, check=one_of(FAULT_ACTIONS))
    target = t.get("target", str, default="")
    restart_after = t.get("restart_after", float, default=None, check=positive) if "restart_after" in t.data else None
    if restart_after is not None and action == "restart":
        t.fail(t.key("restart_after"), "only kill and kill_leader can restart their victim")
    if coordinator.replicas == 1:
        t.fail(t.key("action"), "coordinator faults need [coordinator] replicas >= 3")
    if action == "kill_leader":
        if target:
            t.fail(t.key("target"), "kill_leader picks its own target")
    else:
        names = {f"coordinator-{i}" for i in range(coordinator.replicas)}
        if target not in names:
            t.fail(t.key("target"), f"must name a coordinator replica, coordinator-0 to coordinator-{coordinator.replicas - 1} (got {target!r})")
    t.done()
    return FaultSpec(at, action, target, restart_after)


def _check_fit(t: _Table, cell: CellSpec, classes: tuple[JobClass, ...]) -> None:
    """A job class whose largest task fits no machine class would only ever be abandoned."""
    for i, jc in enumerate(classes):
        biggest = [d.maximum() for d in jc.request]
        if not any(all(b <= c + 1e-9 for b, c in zip(biggest, mc.capacity)) for mc in cell.machine_classes):
            asked = ", ".join(f"{r}={b:g}" for r, b in zip(RESOURCES, biggest))
            t.fail(f"{t.key('classes')}[{i}]", f"a task of job class {jc.name!r} ({asked}) fits no machine class")
