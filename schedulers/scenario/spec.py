"""A scenario as inert, validated, frozen data (``schedulers.scenario.parse``
makes one from a TOML file). Architecture-neutral: an architecture's own
``[<name>]`` section is ``Scenario.section``, whatever its ArchSpec parsed."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schedlab.schedulers.faults.liveness import LivenessSpec
from schedlab.schedulers.faults.plan import FaultSpec
from schedlab.schedulers.model.cluster import MachineClass
from schedlab.schedulers.model.resources import DEFAULT
from schedlab.schedulers.model.inflation import Inflation
from schedlab.schedulers.model.workload import Dist, JobClass, StandingJob

DEFAULT_LATENCY_S = 0.0005  # a datacenter network's one-way delay, for the sim engine


@dataclass(frozen=True)
class CellSpec:
    """``resources``: the names of every resource vector's entries in this
    scenario (``[cell] resources``), capacities, requests and shares alike."""

    machine_classes: tuple[MachineClass, ...]
    machines_per_actor: int = 1
    resources: tuple[str, ...] = DEFAULT
    devices: str | None = None  # a further resource held as devices (GPUs), or None

    @property
    def machines(self) -> int:
        return sum(mc.count for mc in self.machine_classes)


@dataclass(frozen=True)
class WorkloadSpec:
    """``standing``: jobs already running at the start, as a trace's initial
    cell state lists them (``[workload.css]``), placed before the synthetic
    prefill, until their cpu would reach ``standing_cpu_limit`` of the cell's."""

    classes: tuple[JobClass, ...]
    prefill_utilization: float = 0.0
    standing: tuple[StandingJob, ...] = ()
    standing_cpu_limit: float = 1.0
    inflate: Inflation | None = None  # [workload.inflate]: arrivals that never leave, drawn from the classes


@dataclass(frozen=True)
class MetricsSpec:
    sample_interval: float = 5.0  # emulated seconds between utilisation samples
    events: str = "jsonl"  # the events file's format (actors.common.event_files.EVENT_FILES)


@dataclass(frozen=True)
class SubstrateSpec:
    """How the emulation uses its engine. Launches, completions and events
    wait up to ``batch_interval`` wall seconds to travel together: longer
    means fewer messages (each costs ~0.5 ms of CPU on Ray here) but later
    resource returns. ``latency``: one message's delay on the sim engine,
    in emulated seconds (the live engine has Ray's own, measured)."""

    batch_interval: float = 0.05
    latency: Dist = field(default_factory=lambda: Dist("constant", value=DEFAULT_LATENCY_S))


@dataclass(frozen=True)
class CoordinatorSpec:
    """``replicas = 1`` is the plain cell-state actor; 3 or more run the cell
    state as a Raft-replicated state machine on coordinator replicas."""

    replicas: int = 1
    election_ms: float | tuple[float, float] = 7500.0  # emulated ms: x draws in [x, 2x); (low, high) in that range
    heartbeat_ms: float = 2500.0  # emulated ms between a leader's heartbeats
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
    section: Any  # the architecture's own [<architecture>] section, as its ArchSpec parsed it
    metrics: MetricsSpec = field(default_factory=MetricsSpec)
    substrate: SubstrateSpec = field(default_factory=SubstrateSpec)
    coordinator: CoordinatorSpec = field(default_factory=CoordinatorSpec)
    faults: tuple[FaultSpec, ...] = ()
    description: str = ""
    source: str = "<scenario>"
    liveness: LivenessSpec = field(default_factory=LivenessSpec)
    engine: str = "ray"  # what hosts the actors: "ray" (live) or "sim" (virtual clock)
