"""The web farm's live registration: its build, its summary section
(request latency, per-server utilization and imbalance, refusals by
reason, sessions lost, requests lost with their servers) and its
balancers' failover records."""
from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.analysis.stats import percentiles
from schedlab.actors.arch import Architecture, LeaderEvents
from schedlab.actors.archs.webfarm.build import build
from schedlab.schedulers.archs.webfarm.events import LB_ELECTED, SERVER_HEALTH, SESSION_LOST
from schedlab.schedulers.archs.webfarm.spec import ROLE_LB
from schedlab.schedulers.events.shared import (
    FAULT, JOB_ATTEMPT, JOB_REJECTED, JOB_SUBMITTED, MACHINES_DOWN, TASKS_COMPLETED, TASKS_LAUNCHED, TASKS_LOST,
)


def _latency(values: list[float]) -> dict[str, float | None]:
    out = dict(percentiles(values))
    out["p999"] = round(float(np.percentile(values, 99.9)), 4) if values else None
    out["mean"] = round(float(np.mean(values)), 4) if values else None
    return out


def webfarm_summary(ev: dict[str, list[dict]], info: RunInfo, out: dict[str, Any]) -> dict[str, Any]:
    """Pure: every number from the run's events.

    A request's latency: its page's release (``job_submitted``) to its end
    on the host (``tasks_completed``); its queueing: release to the moment a
    worker took it (the launch's start). Utilization of a server: the
    service time it ran (ended in the run) over its workers times the run's
    duration; imbalance: the busiest server's utilization over the mean."""
    w = info.extra.get("webfarm", {})
    submitted = {e["job_id"]: e["t"] for e in ev.get(JOB_SUBMITTED, [])}
    start: dict[tuple[int, int], float] = {}
    for e in ev.get(TASKS_LAUNCHED, []):
        if e.get("prefill"):
            continue
        for row in e["tasks"]:
            start.setdefault((int(row[0]), int(row[1])), float(row[-1]))
    servers = int(w.get("servers") or 0)
    busy = np.zeros(servers)
    latency, queueing = [], []
    for e in ev.get(TASKS_COMPLETED, []):
        for j, t, m, at in e["tasks"]:
            key = (int(j), int(t))
            if j < 0 or key not in start:
                continue
            busy[int(m)] += float(at) - start[key]
            if j in submitted:
                latency.append(float(at) - submitted[j])
    for (j, _t), s in start.items():
        if j in submitted:
            queueing.append(max(0.0, s - submitted[j]))
    duration = float(out["emulated_seconds"])
    workers = np.asarray(w.get("workers") or [1] * servers, dtype=np.float64)
    util = busy / np.maximum(workers, 1) / duration if duration > 0 and servers else np.zeros(servers)
    refused: dict[str, int] = {}
    for e in ev.get(JOB_REJECTED, []):
        refused[e.get("reason", "?")] = refused.get(e.get("reason", "?"), 0) + 1
    lost = {(int(j), int(t)) for e in ev.get(MACHINES_DOWN, []) for j, t in e.get("lost", [])}
    lost |= {(int(j), int(t)) for e in ev.get(TASKS_LOST, []) for j, t in e.get("tasks", [])}
    health = ev.get(SERVER_HEALTH, [])
    return {
        **w,
        "requests": {"started": len(start), "completed": len(latency), "lost": len(lost)},
        "latency_s": _latency(latency),
        "queueing_s": _latency(queueing),
        "utilization": {"per_server": [round(float(x), 4) for x in util],
                        "mean": round(float(util.mean()), 4) if servers else None,
                        "max": round(float(util.max()), 4) if servers else None,
                        "imbalance": round(float(util.max() / util.mean()), 4) if servers and util.mean() > 0 else None},
        "pages_refused": dict(sorted(refused.items())),
        "sessions_lost": len(ev.get(SESSION_LOST, [])),
        "servers_marked_down": sum(1 for e in health if not e["healthy"]),
        "servers_marked_up": sum(1 for e in health if e["healthy"]),
    }


def lb_failovers(ev: dict[str, list[dict]], info: RunInfo) -> list[dict]:
    """One record per kill of the active balancer: when another (or the
    restarted one) became active, when it next routed a page (the takeover
    users feel), and the pages refused meanwhile (a client's timeout counts
    when the client gave up, ``gave_up_at``: it is logged only once no
    server is found to have taken the page in, a little later)."""
    scale = float(info.time_scale)
    elected = sorted(ev.get(LB_ELECTED, []), key=lambda e: e["t"])
    routed = sorted((e["t"], e["scheduler"]) for e in ev.get(JOB_ATTEMPT, []))
    refusals = sorted(e.get("gave_up_at", e["t"]) for e in ev.get(JOB_REJECTED, [])
                      if e.get("reason") in ("client_timeout", "no_server", "not_active"))
    lbs = int(info.extra.get("webfarm", {}).get("lbs") or 1)
    out = []
    for f in sorted(ev.get(FAULT, []), key=lambda e: e["t"]):
        if f.get("role") != ROLE_LB or f.get("kind") == "restart" or f.get("skipped"):
            continue
        if lbs > 1 and not f.get("was_leader"):
            continue  # a standby's death costs nothing
        killed, victim = f["t"], f["target"]
        new = next((e for e in elected if e["t"] >= killed and (lbs == 1 or e["lb"] != victim)), None)
        first = next((t for t, who in routed if t > killed and (new is None or who == new["lb"])), None)
        rec: dict[str, Any] = {
            "role": ROLE_LB, "target": victim, "killed_at_s": round(killed, 3), "recovery": "first page routed",
            "new_leader": new["lb"] if new else None,
            "elected_at_s": round(new["t"], 3) if new else None,
            "election_wall_s": round((new["t"] - killed) / scale, 4) if new else None,
            "first_routed_at_s": round(first, 3) if first is not None else None,
            "downtime_emulated_s": round(first - killed, 3) if first is not None else None,
            "downtime_wall_s": round((first - killed) / scale, 4) if first is not None else None,
        }
        end = first if first is not None else float("inf")
        rec["pages_refused_meanwhile"] = sum(1 for t in refusals if killed <= t <= end + 1e-9)
        out.append(rec)
    return out


def _rows(summary: dict) -> list[tuple[str, str]]:
    w = summary["webfarm"]
    lat, u = w["latency_s"], w["utilization"]
    return [
        ("webfarm", f"{w['policy']} ({w['info']}, d={w['d']}), sessions {w['sessions']}, {w['servers']} servers, "
                    f"{w['lbs']} balancer(s)"),
        ("latency", f"p50 {lat['p50']}s p99 {lat['p99']}s p99.9 {lat['p999']}s (mean {lat['mean']}s)"),
        ("servers", f"utilization mean {u['mean']} max {u['max']}, imbalance {u['imbalance']}"),
        ("refused", ", ".join(f"{k} {v}" for k, v in w["pages_refused"].items()) or "none"),
        ("lost", f"{w['requests']['lost']} requests with their servers, {w['sessions_lost']} sessions"),
    ]


def _refused(summary: dict) -> tuple[str, float | None]:
    submitted = summary["jobs"]["submitted"]
    bad = sum(summary["webfarm"]["pages_refused"].values())
    return f"{bad} / {submitted} pages", (bad / submitted if submitted else None)


ARCHITECTURE = Architecture(
    name="webfarm",
    build=build,
    summary=webfarm_summary,
    failovers=lb_failovers,
    table_rows=_rows,
    refused=_refused,
    refused_means="pages refused (full queue, dead server, no server, no active balancer, client timeout)",
    leaders=(LeaderEvents("lb leader", LB_ELECTED, lambda e: e["lb"]),),
)
