"""The Mesos part of summary.json, from events alone (pure, like summary.py).

* ``offers``: made, accepted, declined, rescinded (from the master's
  ``offers_made`` / ``offers_closed`` events);
* ``locked_resource_s``: resource-seconds that sat in outstanding offers;
* per framework: ramp-up (first slot held to all wanted slots held),
  completion time (submission to last task finished, batch jobs), locality
  fraction (share of launches on a machine holding the task's data),
  dominant share over time;
* ``failovers`` of the master: kill to every agent and framework
  re-registered with the new leader (MTTR).
"""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from schedlab.actors.analysis.stats import percentiles
from schedlab.schedulers.archs.mesos.events import (
    JOB_FIRST_SLOT, MASTER_ELECTED, MESOS_SAMPLE, OFFERS_CLOSED, OFFERS_MADE, REGISTERED, REVOKED, TASKS_PLACED,
)
from schedlab.schedulers.events.shared import FAULT, JOB_SCHEDULED, JOB_SUBMITTED, TASKS_COMPLETED, TASKS_LOST


def _series(points: list[tuple[float, float]], limit: int = 60) -> list[list[float]]:
    """At most ``limit`` evenly spaced points, so summary.json stays small."""
    if len(points) <= limit:
        return [[round(t, 3), round(v, 6)] for t, v in points]
    idx = np.linspace(0, len(points) - 1, limit).round().astype(int)
    return [[round(points[i][0], 3), round(points[i][1], 6)] for i in idx]


def mesos_section(ev: dict[str, list[dict]], frameworks: list[str], duration: float) -> dict[str, Any]:
    made = sum(len(e["offers"]) for e in ev.get(OFFERS_MADE, []))
    outcomes: collections.Counter[str] = collections.Counter()
    locked = np.zeros(2)
    for e in ev.get(OFFERS_CLOSED, []):
        for _oid, _fw, outcome, held_s, *res in e["offers"]:
            outcomes[outcome] += 1
            locked += held_s * np.asarray(res[:2], dtype=np.float64)

    submitted = {e["job_id"]: e for e in ev.get(JOB_SUBMITTED, [])}
    first_slot = {e["job_id"]: e["t"] for e in ev.get(JOB_FIRST_SLOT, [])}
    scheduled = {e["job_id"]: e["t"] for e in ev.get(JOB_SCHEDULED, [])}
    last_done: dict[int, float] = {}
    done_count: collections.Counter[int] = collections.Counter()
    for e in ev.get(TASKS_COMPLETED, []):
        for job, _task, _m, end in e["tasks"]:
            done_count[job] += 1
            last_done[job] = max(last_done.get(job, 0.0), float(end))
    local: collections.Counter[str] = collections.Counter()
    placed: collections.Counter[str] = collections.Counter()
    for e in ev.get(TASKS_PLACED, []):
        if e.get("locality"):
            placed[e["scheduler"]] += len(e["tasks"])
            local[e["scheduler"]] += sum(1 for t in e["tasks"] if t[3])
    shares: dict[str, list[tuple[float, float]]] = collections.defaultdict(list)
    for e in sorted(ev.get(MESOS_SAMPLE, []), key=lambda e: e["t"]):
        if 0 <= e["t"] <= duration:
            for fw, s in e["shares"].items():
                shares[fw].append((e["t"], s))

    samples = [e for e in ev.get(MESOS_SAMPLE, []) if 0 <= e["t"] <= duration]
    held = np.mean([e["held"] for e in samples], axis=0) if samples else np.zeros(2)
    in_offers = np.mean([e["locked"] for e in samples], axis=0) if samples else np.zeros(2)
    per_fw = {}
    for fw in frameworks:
        jobs = [j for j, e in submitted.items() if e["scheduler"] == fw]
        ramp = [scheduled[j] - first_slot[j] for j in jobs if j in scheduled and j in first_slot]
        completion = [last_done[j] - submitted[j]["t"] for j in jobs
                      if submitted[j]["kind"] == "batch" and done_count[j] >= submitted[j]["tasks"]]
        series = shares.get(fw, [])
        per_fw[fw] = {
            "ramp_up_s": percentiles(ramp),
            "completion_s": percentiles(completion),
            "locality_fraction": round(local[fw] / placed[fw], 6) if placed[fw] else None,
            "launches_with_locality": placed[fw],
            "dominant_share_mean": round(float(np.mean([s for _, s in series])), 6) if series else None,
            "dominant_share": _series(series),
        }
    return {
        "offers": {"made": made, "accepted": outcomes["accepted"], "declined": outcomes["declined"], "rescinded": outcomes["rescinded"]},
        "locked_resource_s": {"cpu": round(float(locked[0]), 3), "mem": round(float(locked[1]), 3)},
        # Mean share of the cell sitting in outstanding offers / held idle by rigid frameworks.
        "locked_mean": {"cpu": round(float(in_offers[0]), 6), "mem": round(float(in_offers[1]), 6)},
        "held_mean": {"cpu": round(float(held[0]), 6), "mem": round(float(held[1]), 6)},
        "revocations": sum(e["tasks"] for e in ev.get(REVOKED, [])),
        "tasks_lost_requeued": sum(len(e["tasks"]) for e in ev.get(TASKS_LOST, [])),
        # Every election, planned or not: a leader whose lease lapsed under load also starts a new epoch.
        "master_elections": len(ev.get(MASTER_ELECTED, [])),
        "frameworks": per_fw,
    }


def master_failovers(ev: dict[str, list[dict]], hosts: int, frameworks: list[str], scale: float) -> list[dict]:
    """One record per kill of the leading master: when a new leader was
    elected, and when the last agent and framework re-registered with it."""
    elected = sorted(ev.get(MASTER_ELECTED, []), key=lambda e: e["t"])
    regs = sorted(ev.get(REGISTERED, []), key=lambda e: e["t"])
    out = []
    for f in sorted(ev.get(FAULT, []), key=lambda e: e["t"]):
        if f.get("role") != "master" or not f.get("was_leader"):
            continue
        killed = f["t"]
        new = next((e for e in elected if e["t"] >= killed and e["epoch"] != f.get("term")), None)
        rec: dict[str, Any] = {"role": "master", "target": f["target"], "killed_at_s": round(killed, 3),
                               "recovery": "all re-registered",
                               "new_leader": new["master"] if new else None,
                               "elected_at_s": round(new["t"], 3) if new else None,
                               "election_wall_s": round((new["t"] - killed) / scale, 4) if new else None,
                               "downtime_emulated_s": None, "downtime_wall_s": None}
        if new is not None:
            seen: dict[str, float] = {}
            for r in regs:
                if r["epoch"] == new["epoch"] and r["t"] >= killed:
                    seen.setdefault(r["who"], r["t"])
            want = {f"machine-host-{h}" for h in range(hosts)} | set(frameworks)
            if want <= set(seen):
                done = max(seen[w] for w in want)
                rec["reregistered_at_s"] = round(done, 3)
                rec["downtime_emulated_s"] = round(done - killed, 3)
                rec["downtime_wall_s"] = round((done - killed) / scale, 4)
            rec["reregistered"] = f"{len(want & set(seen))}/{len(want)}"
        out.append(rec)
    return out
