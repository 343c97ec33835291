"""YARN's live registration: its build and its summary section (queues,
AM launch delay, allocation latency, locality, preemption, fairness)."""
from __future__ import annotations

from schedlab.actors.arch import Architecture, LeaderEvents
from schedlab.actors.archs.yarn.build import build
from schedlab.actors.archs.yarn.summary import rm_failovers, yarn_section


def _rows(summary: dict) -> list[tuple[str, str]]:
    y = summary["yarn"]
    loc = y["locality"]
    queues = "  ".join(f"{q} {v['used_over_entitlement']}" for q, v in y["queues"].items())
    return [
        ("queues (used/entitled)", f"{queues}  Jain {y['jain_index_queues']}  preemptions {y['preemptions']}"),
        ("AM launch delay p50", f"{y['am_launch_delay_s']['p50']}s  alloc latency p50 {y['container_allocation_latency_s']['p50']}s"),
        ("locality", f"node {loc['node_local']}  rack {loc['rack_local']}  off {loc['off_switch']}"),
    ]


ARCHITECTURE = Architecture(
    name="yarn",
    build=build,
    summary=yarn_section,
    failovers=lambda ev, info: rm_failovers(ev, float(info["time_scale"])),
    table_rows=_rows,
    refused_means="none: one ResourceManager decides alone, so nothing conflicts",
    leaders=(LeaderEvents("YARN ResourceManager", "rm_elected", lambda e: e.get("rm", e["actor"])),),
)
