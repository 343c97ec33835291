"""What a run knew besides its events: ``RunInfo`` as the summary reads it,
``RunSetup`` as run.json holds it.

``RunInfo`` is what ``actors.run`` hands ``summarize`` (and each
architecture's summary and failover functions), typed rather than a dict: a
key misspelt or forgotten is a TypeError where the info is built, not a
silent default where it is read. The architecture's own facts (what its
build reported in ``Topology.info``: framework names, a rack per machine,
...) travel in ``extra``, read only by that architecture's own
summary code.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.schedulers.model.cluster import Cell
from schedlab.schedulers.model.resources import DEFAULT
from schedlab.schedulers.scenario.toml_table import read_text


@dataclass(frozen=True)
class RunInfo:
    scenario: str
    architecture: str
    engine: str  # "ray" or "sim"
    seed: int
    time_scale: float  # emulated seconds per wall second
    emulated_seconds: float  # the scenario's duration
    wall_seconds: float  # sim: its virtual clock's (what the run would have taken live)
    machines_per_actor: int
    substrate: dict[str, Any]  # the measured (or modelled) round trips: summary.json's ``substrate``
    host_actors: int | None = None  # None: not counted (a summary recomputed from events alone)
    # The deciders, in the summary's order; None: those that wrote txn events, by name.
    scheduler_names: tuple[str, ...] | None = None
    warnings: tuple[str, ...] = ()
    namespace: str | None = None
    replicas: int = 1  # coordinator replicas
    placement: dict[str, Any] | None = None  # multi-node: which node each machine host ran on
    extra: Mapping[str, Any] = field(default_factory=dict)  # the architecture's own (Topology.info)
    inflation: dict[str, Any] | None = None  # a workload-inflation run: {"resource": index, "until": multiple}
    trace: dict[str, Any] | None = None  # a replayed trace's recorded scheduling (actors.analysis.trace_reference)

    @classmethod
    def of_summary(cls, summary: dict[str, Any], **changes: Any) -> RunInfo:
        """The info a saved summary was computed from, as far as it says
        (re-summarising saved events; ``changes`` fills the rest)."""
        fields = dict(
            scenario=summary["scenario"], architecture=summary["architecture"], engine=summary["engine"],
            seed=summary["seed"], time_scale=summary["time_scale"], emulated_seconds=summary["emulated_seconds"],
            wall_seconds=summary["wall_seconds"], machines_per_actor=summary["cell"]["machines_per_actor"],
            substrate=summary["substrate"], host_actors=summary["cell"].get("host_actors"),
            scheduler_names=tuple(s["name"] for s in summary["schedulers"]),
            warnings=tuple(summary.get("warnings", ())), replicas=summary["coordinator"]["replicas"],
            placement=summary.get("placement"))
        fields.update(changes)
        return cls(**fields)


@dataclass(frozen=True)
class RunSetup:
    """``run.json``: what a run publishes as it starts, before any event:
    the chaos script attaches to a live run by it (address, namespace,
    engine), and ``schedlab check`` recomputes the invariants from it and the
    events (the cell's capacities and racks, machines per host actor,
    coordinator replicas). Written in this field order, as before."""

    scenario: str
    source: str
    architecture: str
    seed: int
    machines_per_actor: int
    replicas: int
    namespace: str
    address: str | None  # the Ray cluster's; None on the sim engine
    embedded: bool  # a Ray the run started itself (it ends with the run)
    engine: str
    capacity: list[list[float]]  # per machine, per dimension
    rack: list[int]  # per machine
    resources: list[str] = field(default_factory=lambda: list(DEFAULT))  # the dimensions' names
    devices: str | None = None  # the resource held as devices ([cell] devices)
    model: list[int] = field(default_factory=list)  # per machine, its device model's index in models (-1: none)
    models: list[str] = field(default_factory=list)

    def write(self, out: Path) -> None:
        (out / "run.json").write_text(json.dumps(asdict(self)) + "\n")

    @classmethod
    def read(cls, path: Path) -> RunSetup:
        """The run.json at ``path``. ValueError (JSON), KeyError (a key every
        run.json has) or TypeError when it is not one. Keys older runs did
        not write read as what those runs were: live (``engine``), one rack
        (``rack``), not embedded, cpu and mem (``resources``)."""
        data = json.loads(read_text(path, "run.json"))
        if not isinstance(data, dict):
            raise TypeError(f"a {type(data).__name__}, not an object")
        cap = data["capacity"]
        return cls(scenario=data["scenario"], source=data.get("source", ""), architecture=data["architecture"],
                   seed=data["seed"], machines_per_actor=int(data["machines_per_actor"]), replicas=int(data.get("replicas", 1)),
                   namespace=data["namespace"], address=data.get("address"), embedded=bool(data.get("embedded", False)),
                   engine=data.get("engine", "ray"), capacity=cap, rack=data.get("rack", [0] * len(cap)),
                   resources=list(data.get("resources", DEFAULT)), devices=data.get("devices"),
                   model=list(data.get("model", [])), models=list(data.get("models", [])))

    def cell(self) -> Cell:
        """The cell as the run saw it (one machine class: a saved run keeps no classes)."""
        cap = np.asarray(self.capacity, dtype=np.float64)
        return Cell(capacity=cap, rack=np.asarray(self.rack), machine_class=np.zeros(len(cap), dtype=np.int64), classes=(),
                    resources=tuple(self.resources),
                    device=None if self.devices is None else self.resources.index(self.devices),
                    model=np.asarray(self.model or [-1] * len(cap), dtype=np.int64), models=tuple(self.models))
