"""SLURM's live registration: its build, its summary section (backfill,
bounded slowdown, time-limit kills, reservation delays, queues per
partition), its failover records and its rows in the run table."""
from __future__ import annotations

from schedlab.actors.arch import Architecture, LeaderEvents
from schedlab.actors.archs.slurm.build import build
from schedlab.actors.archs.slurm.summary import controller_failovers, slurm_section
from schedlab.schedulers.archs.slurm.events import SLURMCTLD_ACTIVE


def _rows(summary: dict) -> list[tuple[str, str]]:
    s = summary["slurm"]
    queues = "  ".join(f"{p} {q['mean']}" for p, q in s["queue_per_partition"].items())
    return [
        ("backfill", f"{s['backfilled']} of {s['jobs_started']} started ({s['backfill_fraction']})  "
                     f"reservation delays {s['reservation_delays']} of {s['reservations']}"),
        ("bounded slowdown", f"mean {s['bounded_slowdown']['mean']}  p90 {s['bounded_slowdown']['p90']}  "
                             f"wait p50 {s['wait_s']['p50']}s"),
        ("ends", f"completed {s['completed']}  timeout {s['timeouts']}  requeued {s['requeued']}"),
        ("queued (mean)", queues),
    ]


ARCHITECTURE = Architecture(
    name="slurm",
    build=build,
    summary=slurm_section,
    failovers=controller_failovers,
    table_rows=_rows,
    refused_means="none: one slurmctld decides alone, so nothing conflicts",
    leaders=(LeaderEvents("slurmctld", SLURMCTLD_ACTIVE, lambda e: e.get("controller", e["actor"])),),
)
