"""The live half of an architecture's registration.

``schedlab.schedulers.arch.ArchSpec.live`` names an ``Architecture``: what
the architecture starts for a run (``build``, returning a
``actors.topology.Topology``) and how generic code shows what it did (its
summary section, its failover records, its rows in the run table and in
``schedlab compare``, its plots and leader changes in reports). Everything
is optional except ``build``; generic code asks the registry and never
names an architecture.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Callable

from schedlab.schedulers import arch as registry
from schedlab.schedulers.arch import ArchSpec
from schedlab.schedulers.events.contract import EventType

if TYPE_CHECKING:
    from schedlab.actors.analysis.run_info import RunInfo
    from schedlab.actors.analysis.report_parts import PlotSpec
    from schedlab.actors.topology import Build, Topology
    from schedlab.schedulers.scenario.spec import Scenario

Events = dict[str, list[dict]]


def conflicted(summary: dict, unit: str = "txns") -> tuple[str, float | None]:
    """The default 'refused' row: scheduling attempts whose commit conflicted."""
    txns = sum(s["attempts"] for s in summary["schedulers"])
    bad = sum(s["transactions"]["conflicted"] for s in summary["schedulers"])
    return f"{bad} / {txns} {unit}", (bad / txns if txns else None)


@dataclass(frozen=True)
class LeaderEvents:
    """An event that marks a leader change, for report timelines."""

    label: str  # the row's label: "<role> leader"
    event: EventType  # its declaration (the architecture's own events.py)
    who: Callable[[dict], str]  # the new leader's name, from the event


@dataclass(frozen=True)
class Architecture:
    name: str
    build: Callable[[Build], Topology]
    # summary.json[<name>]: its own numbers, from the run's events, what
    # run.py knew besides events (``info``: its ``extra`` is Topology.info) and the
    # summary so far (pure).
    summary: Callable[[Events, RunInfo, dict[str, Any]], dict[str, Any]] | None = None
    # Failover records of its own leader roles, beside the coordinator's.
    failovers: Callable[[Events, RunInfo], list[dict]] | None = None
    # compare and reports: 'the scheduler's work was refused', as text and a
    # ratio (conflicts, declined offers, refused placements).
    refused: Callable[[dict], tuple[str, float | None]] = conflicted
    refused_means: str = "commits that hit a conflict"  # one phrase, for reports
    # Extra rows for the run table, from the summary.
    table_rows: Callable[[dict], list[tuple[str, str]]] | None = None
    # Extra report plots (a function, so matplotlib-free PlotSpecs load lazily).
    plots: Callable[[], tuple[PlotSpec, ...]] | None = None
    leaders: tuple[LeaderEvents, ...] = ()
    # Objects Ray must pickle by value for this scenario (a user's allocator).
    ship: Callable[[Scenario], list[Any]] | None = None


@cache
def architecture(name: str) -> Architecture:
    """The live half of the registered architecture ``name``."""
    spec: ArchSpec = registry.spec_of(name)
    live = registry.live_half(spec)
    if not isinstance(live, Architecture) or live.name != spec.name:
        raise registry.RegistryError(f"architecture {name}: {spec.live} is not its Architecture")
    return live


def architectures() -> list[Architecture]:
    return [architecture(n) for n in registry.names()]


def of_summary(summary: dict) -> Architecture | None:
    """The architecture a saved summary came from, if it is still registered."""
    try:
        return architecture(summary["architecture"])
    except KeyError:
        return None
