"""Borg's live registration: its build, its summary section (admission
refusals, preemptions, Borglets marked down, scheduling blackouts after
Borgmaster kills) and its leader changes for report timelines."""
from __future__ import annotations

from schedlab.actors.arch import Architecture, LeaderEvents, conflicted
from schedlab.actors.archs.borg.build import build
from schedlab.actors.archs.borg.summary import borg_section
from schedlab.schedulers.archs.borg.events import BORGMASTER_ELECTED


ARCHITECTURE = Architecture(
    name="borg",
    build=build,
    summary=lambda ev, info, out: borg_section(ev, [f for f in out["failovers"] if f["role"] == "coordinator"],
                                               float(out["time_scale"])),
    refused=lambda summary: conflicted(summary, "placements"),
    refused_means="placements refused when the replicated log applied them",
    leaders=(LeaderEvents("Borgmaster", BORGMASTER_ELECTED, lambda e: e["actor"]),),
)
