"""YARN's live registration: its build, its summary section (queues,
AM launch delay, allocation latency, locality, preemption, fairness), its
rows in the run table and its report plots (queue usage, preemptions,
locality)."""
from __future__ import annotations

from schedlab.actors.arch import Architecture, LeaderEvents
from schedlab.actors.archs.yarn.build import build
from schedlab.actors.archs.yarn.summary import rm_failovers, yarn_section
from schedlab.schedulers.archs.yarn.events import RM_ELECTED


def _rows(summary: dict) -> list[tuple[str, str]]:
    y = summary["yarn"]
    loc = y["locality"]
    queues = "  ".join(f"{q} {v['used_over_entitlement']}" for q, v in y["queues"].items())
    return [
        ("queues (used/entitled)", f"{queues}  Jain {y['jain_index_queues']}  preemptions {y['preemptions']}"),
        ("AM launch delay p50", f"{y['am_launch_delay_s']['p50']}s  alloc latency p50 {y['container_allocation_latency_s']['p50']}s"),
        ("locality", f"node {loc['node_local']}  rack {loc['rack_local']}  off {loc['off_switch']}"),
    ]


def _plots() -> tuple:
    """Imported on demand, as Mesos' are: building the registry needs no plot code."""
    from schedlab.actors.archs.yarn.report import PLOTS

    return PLOTS


ARCHITECTURE = Architecture(
    name="yarn",
    build=build,
    summary=yarn_section,
    failovers=lambda ev, info: rm_failovers(ev, float(info.time_scale)),
    table_rows=_rows,
    plots=_plots,
    refused_means="none: one ResourceManager decides alone, so nothing conflicts",
    leaders=(LeaderEvents("YARN ResourceManager", RM_ELECTED, lambda e: e.get("rm", e["actor"])),),
)
