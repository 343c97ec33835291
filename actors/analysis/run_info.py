"""What a run knew besides its events, as the summary reads it.

``RunInfo`` replaces the untyped ``info`` dict ``actors.run`` used to hand
``summarize`` (and each architecture's summary and failover functions): a
key misspelt or forgotten is now a TypeError where the info is built, not a
silent default where it is read. The architecture's own facts (what its
build reported in ``Topology.info``: Mesos' framework names, a rack per
machine, ...) travel in ``extra``, read only by that architecture's own
summary code.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


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
