"""The federation's summary, pure: from its own events (jobs released,
routed, transferred, held) and each site's events and summary.

Imbalance is submitted work per unit of capacity per site,
the busiest over the least busy (``max_min``) and over the mean
(``max_mean``), over the whole run and over sliding windows (one publish
interval long, half a one apart), which is where herding shows.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from schedlab.actors.analysis.stats import percentiles
from schedlab.schedulers.federation.events import (
    FED_FELL_BACK, FED_HELD, FED_PUBLISHED, FED_RELEASED, FED_ROUTED, FED_TRANSFER,
)
from schedlab.schedulers.events.shared import JOB_SCHEDULED, JOB_SUBMITTED, TASKS_COMPLETED
from schedlab.schedulers.federation import imbalance as im
from schedlab.schedulers.federation.spec import Federation


def _num(x: float) -> float | None:
    return None if math.isnan(x) else (round(x, 4) if math.isfinite(x) else None)


def routing(events: list[dict], site_events: list[list[dict]]) -> tuple[dict[int, dict], dict[int, dict], dict[int, list[int]]]:
    """(jobs released, where each was routed first, the sites each reached)
    from the federation's events and its sites' (in site order)."""
    released = {e["job_id"]: e for e in events if e["event"] == FED_RELEASED}
    routed: dict[int, dict] = {}
    for e in sorted((e for e in events if e["event"] == FED_ROUTED), key=lambda e: e["t"]):
        routed.setdefault(e["job_id"], e)
    # A site's own log is the record of what reached it: a front end killed
    # after handing jobs over but before shipping its events said nothing.
    at_sites: dict[int, list[int]] = {}
    for i, ev in enumerate(site_events):
        for e in ev:
            if e["event"] == JOB_SUBMITTED:
                at_sites.setdefault(e["job_id"], []).append(i)
                if e["job_id"] not in routed and e["job_id"] in released:
                    work = released[e["job_id"]]["work"]
                    routed[e["job_id"]] = {"job_id": e["job_id"], "t": e["t"], "site": i, "work": work}
    return released, routed, at_sites


def lost_jobs(events: list[dict], released: dict[int, dict], routed: dict[int, dict]) -> list[int]:
    """Jobs released that reached no site and are not held at the end: the
    federation's own invariant (each site keeps its own)."""
    held = {e["job_id"] for e in events if e["event"] == FED_HELD}
    return [j for j in released if j not in routed and j not in held]


def federation_summary(fed: Federation, events: list[dict], site_events: dict[str, list[dict]],
                       site_summaries: dict[str, dict], faults: list[dict], engine: str) -> dict[str, Any]:
    names = list(fed.site_names)
    released, routed, at_sites = routing(events, [site_events[n] for n in names])
    held = {e["job_id"] for e in events if e["event"] == FED_HELD}
    transfers = [e for e in events if e["event"] == FED_TRANSFER]
    records = [im.Accepted(e["t"], e["site"], e["work"]) for e in routed.values()]
    cap = list(fed.capacity)
    win = fed.join.publish_interval
    ws = im.windows(records, cap, window=win, step=win / 2, start=0.0, end=fed.duration) if records else []
    stats = im.window_stats(ws)
    over = im.overall(records, cap) if records else im.Imbalance(math.nan, math.nan)
    durations = {(j["job_id"], t): (d if d >= 0 else math.inf) for j in fed.jobs for t, d in enumerate(j["durations"])}
    sites = []
    waits_all: list[float] = []
    for i, name in enumerate(names):
        ev = site_events[name]
        s = site_summaries[name]
        scheduled = {e["job_id"]: e["t"] for e in ev if e["event"] == JOB_SCHEDULED}
        waits = [t - released[j]["t"] for j, t in scheduled.items() if j in released]
        waits_all += waits
        done = sum(durations.get((int(j), int(t)), 0.0) for e in ev if e["event"] == TASKS_COMPLETED
                   for j, t, _m, _at in e["tasks"] if j >= 0)
        sites.append({
            "name": name, "architecture": fed.sites[i].architecture, "machines": s["cell"]["machines"],
            "capacity_slots": round(cap[i], 3), "users": fed.users[i],
            "homed": sum(1 for j in fed.jobs if j["home"] == i),
            "routed": sum(1 for e in routed.values() if e["site"] == i),
            "work_per_capacity": round(sum(r.work for r in records if r.site == i) / cap[i], 4),
            "jobs": s["jobs"], "wait_from_release_s": percentiles(waits),
            "goodput_slot_s": round(done, 3), "utilization_cpu": s["utilization"].get("cpu_mean"),
            "invariants": s["invariants"],
        })
    held -= set(routed)  # a transfer cut off by the end may still have reached its site
    invariants = {"lost_jobs": len(lost_jobs(events, released, routed))}
    for s in sites:
        for k, v in s["invariants"].items():
            invariants[k] = invariants.get(k, 0) + int(v)
    return {
        "scenario": fed.name, "kind": "federation", "engine": engine, "seed": fed.seed, "time_scale": fed.time_scale,
        "emulated_seconds": fed.duration, "mode": fed.join.mode,
        "join": {k: v for k, v in fed.join.__dict__.items()},
        "jobs": {"released": len(released), "routed": len(routed), "held_at_end": len(held),
                 "transferred": len({e["job_id"] for e in transfers}),
                 "fell_back": sum(1 for e in events if e["event"] == FED_FELL_BACK),
                 # At least once: a front end killed mid-batch may have handed
                 # part of it over before its user sent the batch again.
                 "handed_twice": sum(1 for sites in at_sites.values() if len(sites) > 1),
                 "scheduled": sum(s["jobs"]["scheduled"] for s in sites),
                 "completed": sum(s["jobs"]["completed"] for s in sites)},
        "wait_from_release_s": percentiles(waits_all),
        "goodput_slot_s_per_s": round(sum(s["goodput_slot_s"] for s in sites) / fed.duration, 4),
        "imbalance": {
            "overall": {"max_min": _num(over.max_min), "max_mean": _num(over.max_mean)},
            "windows": {"window_s": win, "n": stats.n,
                        "with_an_idle_site": sum(1 for w in ws if math.isinf(w.imbalance.max_min)),
                        "median_max_min": _num(stats.median_max_min),
                        "worst_max_min": _num(stats.worst_max_min), "mean_max_mean": _num(stats.mean_max_mean)},
            "capacity_ratio": round(max(cap) / min(cap), 4),
        },
        "load_over_time": [[round(w.start, 3), *[round(x, 4) for x in w.loads]] for w in ws],
        "sites": sites,
        "faults": faults,
        "invariants": invariants,
        "published_loads_last": next((e["loads"] for e in reversed(events) if e["event"] == FED_PUBLISHED), None),
        "mean_job_work": round(float(np.mean([sum(d for d in j["durations"] if d >= 0) for j in fed.jobs])), 4)
        if fed.jobs else None,
    }
