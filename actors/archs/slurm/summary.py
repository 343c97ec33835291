"""SLURM's summary section and failover records, from a run's events (pure).

Bounded slowdown is Feitelson's: max(1, response / max(run, 10 s)), where
response is from submission to the end of the job's last run (a job
requeued counts its time lost) and run is its last run's length; jobs
killed at their limit count with the time they ran. Reservation delay:
how much later a job started than the first reservation a backfill pass
gave it (zero for EASY's head job when priorities do not change; a
higher-priority arrival or a failed node may move it)."""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from schedlab.actors.analysis.run_info import RunInfo
from schedlab.schedulers.archs.slurm.events import SLURMCTLD_ACTIVE, SLURM_END, SLURM_QUEUE, SLURM_START
from schedlab.schedulers.archs.slurm.spec import ROLE
from schedlab.schedulers.events.shared import FAULT, JOB_SUBMITTED, SCHEDULER_RECOVERED

Events = dict[str, list[dict]]
BSLD_THRESHOLD = 10.0


def _dist(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"mean": None, "p50": None, "p90": None, "max": None}
    a = np.asarray(xs, dtype=float)
    return {"mean": round(float(a.mean()), 4), "p50": round(float(np.percentile(a, 50)), 4),
            "p90": round(float(np.percentile(a, 90)), 4), "max": round(float(a.max()), 4)}


def slurm_section(ev: Events, info: RunInfo, out: dict[str, Any]) -> dict[str, Any]:
    end = float(out["emulated_seconds"])
    submitted = {e["job_id"]: e["t"] for e in ev.get(JOB_SUBMITTED, [])}
    starts = [e for e in ev.get(SLURM_START, []) if e["t"] <= end + 1e-6]
    first = [e for e in starts if e.get("first", True)]
    ends = [e for e in ev.get(SLURM_END, []) if e["t"] <= end + 1e-6]
    states = collections.Counter(e["state"] for e in ends)
    bsld, waits = [], [e["waited"] for e in first]
    for e in ends:
        if e["state"] in ("completed", "timeout") and e["job_id"] in submitted:
            response = e["t"] - submitted[e["job_id"]]
            bsld.append(max(1.0, response / max(e["ran"], BSLD_THRESHOLD)))
    delays = [max(0.0, e["t"] - e["reserved"]) for e in starts if e.get("reserved") is not None]
    queues: dict[str, list[int]] = collections.defaultdict(list)
    for s in ev.get(SLURM_QUEUE, []):
        if s["t"] <= end + 1e-6:
            for p, n in s["queued"].items():
                queues[p].append(int(n))
    timeouts = collections.Counter(e["partition"] for e in ends if e["state"] == "timeout")
    used: dict[str, float] = collections.defaultdict(float)  # account -> task-seconds its ended runs used
    for e in ends:
        used[e.get("account", "")] += e["nodes"] * e["ran"]
    total_use = sum(used.values())
    return {
        "jobs_started": len(first),
        "backfilled": sum(1 for e in first if e["backfilled"]),
        "backfill_fraction": round(sum(1 for e in first if e["backfilled"]) / len(first), 6) if first else None,
        "completed": states["completed"],
        "timeouts": states["timeout"],
        "timeouts_per_partition": dict(sorted(timeouts.items())),
        "requeued": dict(sorted(collections.Counter(e["reason"] for e in ends if e["state"] == "requeued").items())),
        "wait_s": _dist(waits),
        "bounded_slowdown": _dist(bsld),
        "reservations": len(delays),
        "reservation_delays": sum(1 for d in delays if d > 1e-6),
        "reservation_delay_max_s": round(max(delays), 6) if delays else 0.0,
        "usage_share": {a: round(u / total_use, 4) for a, u in sorted(used.items())} if total_use else {},
        "queue_per_partition": {p: {"mean": round(sum(v) / len(v), 3), "max": max(v)} for p, v in sorted(queues.items())},
    }


def controller_failovers(ev: Events, info: RunInfo) -> list[dict[str, Any]]:
    """One record per kill of the active controller: when a controller
    became active again (the restarted one, or the backup), when it had
    every daemon's word (``scheduler_recovered``) and when it started a job
    again: the outage users saw."""
    scale = float(info.time_scale)
    out = []
    actives = sorted(ev.get(SLURMCTLD_ACTIVE, []), key=lambda e: e["t"])
    recovered = sorted(ev.get(SCHEDULER_RECOVERED, []), key=lambda e: e["t"])
    starts = sorted(e["t"] for e in ev.get(SLURM_START, []))
    for f in sorted(ev.get(FAULT, []), key=lambda e: e["t"]):
        if f.get("role") != ROLE or not str(f.get("kind", "")).startswith("kill") or f.get("skipped"):
            continue
        if "was_leader" in f and not f["was_leader"]:
            continue
        killed = f["t"]
        new = next((e for e in actives if e["t"] >= killed and e.get("recovering")), None)
        done = next((e for e in recovered if new is not None and e["t"] >= new["t"]), None)
        again = next((t for t in starts if done is not None and t >= done["t"]), None)
        out.append({
            "role": ROLE, "target": f["target"], "killed_at_s": round(killed, 3),
            "recovery": "backup takeover from the saved state" if "was_leader" in f else "restart from the saved state",
            "new_leader": new["controller"] if new else None,
            "active_at_s": round(new["t"], 3) if new else None,
            "recovered_at_s": round(done["t"], 3) if done else None,
            "requeued": done["requeued"] if done else None,
            "first_start_at_s": round(again, 3) if again is not None else None,
            "downtime_emulated_s": round(again - killed, 3) if again is not None else None,
            "downtime_wall_s": round((again - killed) / scale, 4) if again is not None else None,
        })
    return out
