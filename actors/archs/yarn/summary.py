"""YARN's own summary section, from a run's events (pure): per-queue usage
and entitlement, AM launch delay, container allocation latency, locality,
preemptions per queue, and Jain's fairness index across queues."""
from __future__ import annotations

import collections
from typing import Any

from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.analysis.stats import percentiles
from schedlab.schedulers.archs.yarn.events import (
    AM_ATTEMPT, AM_LAUNCHED, CONTAINER_ALLOCATED, NODE_RECOVERED, QUEUE_USAGE, RECOVERY_SETTLED, RM_ELECTED,
)
from schedlab.schedulers.archs.yarn.spec import RM_NAME, RM_ROLE
from schedlab.schedulers.events.shared import ACTOR_STARTED, FAULT, PREEMPTED

Events = dict[str, list[dict]]

MEM = 1  # resources are (cpu, mem): queue shares are compared on memory, as YARN's default calculator


def jain(xs: list[float]) -> float | None:
    """Jain's index (sum x)^2 / (n sum x^2): 1 when all equal, 1/n when one takes all."""
    if not xs:
        return None
    sq = sum(x * x for x in xs)
    return round(sum(xs) ** 2 / (len(xs) * sq), 6) if sq > 0 else None


def yarn_section(ev: dict[str, list[dict]], info: RunInfo, out: dict[str, Any]) -> dict[str, Any]:
    end = float(out["emulated_seconds"])
    samples = [e for e in ev.get(QUEUE_USAGE, []) if e["t"] <= end + 1e-6]
    used: dict[str, list[float]] = collections.defaultdict(list)
    ent: dict[str, list[float]] = collections.defaultdict(list)
    leaves: set[str] = set()
    pre_q: dict[str, int] = {}
    for s in samples:
        names = [q["queue"] for q in s["queues"]]
        for q in s["queues"]:
            if not any(n.startswith(q["queue"] + ".") for n in names):
                leaves.add(q["queue"])
            used[q["queue"]].append(q["used"][MEM])
            ent[q["queue"]].append(q["entitlement"][MEM])
    queues = {}
    ratios = []
    for q in sorted(leaves):
        u = sum(used[q]) / len(used[q])
        e = sum(ent[q]) / len(ent[q])
        pre_q[q] = sum(1 for p in ev.get(PREEMPTED, []) if p["queue"] == q)
        queues[q] = {"used_mem_mean": round(u, 6), "entitlement_mem_mean": round(e, 6),
                     "used_over_entitlement": round(u / e, 6) if e else None,
                     "preemptions": pre_q[q]}
        if e:
            ratios.append(u / e)
    allocs = ev.get(CONTAINER_ALLOCATED, [])
    levels = collections.Counter(a["locality"] for a in allocs)
    n = len(allocs)
    return {
        "queues": queues,
        "jain_index_queues": jain(ratios),
        "am_launch_delay_s": percentiles(e["delay"] for e in ev.get(AM_LAUNCHED, [])),
        "container_allocation_latency_s": percentiles(a["latency"] for a in allocs),
        "locality": {lvl: round(levels[lvl] / n, 6) if n else None for lvl in ("node_local", "rack_local", "off_switch")},
        "containers_allocated": n,
        "preemptions": sum(pre_q.values()),
        "am_attempts": dict(collections.Counter(e["reason"] for e in ev.get(AM_ATTEMPT, []))),
        "apps": {k: len(ev.get(f"app_{k}", [])) for k in ("submitted", "finished", "failed", "rejected")},
    }


def rm_failovers(ev: Events, scale: float) -> list[dict[str, Any]]:
    """One record per kill of the active ResourceManager. A single RM
    (``rms`` = 1): when its new incarnation started, when its
    work-preserving recovery window closed (every node re-registered or
    written off, every AM pool synced) and when it handed out its first
    container again: the outage a user's jobs saw. With standbys: the same,
    from the standby that won the lease (``new_leader``, ``elected_at_s``)
    and rebuilt by that same restart."""
    out = []
    for f in sorted(ev.get(FAULT, []), key=lambda e: e["t"]):
        if f.get("role") != RM_ROLE or not str(f.get("kind", "")).startswith("kill") or f.get("skipped"):
            continue
        if "was_leader" in f:  # an active/standby set
            if f["was_leader"]:
                out.append(_takeover(ev, f, scale))
            continue
        out.append(_restart(ev, f, scale))
    return out


def _window(ev: Events, f: dict, up: float | None, actor: str | None, scale: float) -> dict[str, Any]:
    """From an active RM's start (``up``, by ``actor`` if known) to its
    recovery window's close and its first container handed out."""
    def mine(e: dict) -> bool:
        return actor is None or e.get("actor") == actor

    settled = sorted(e["t"] for e in ev.get(RECOVERY_SETTLED, []) if mine(e))
    allocated = sorted(e["t"] for e in ev.get(CONTAINER_ALLOCATED, []) if mine(e))
    killed = f["t"]
    done = next((t for t in settled if up is not None and t >= up), None)
    first = next((t for t in allocated if done is not None and t >= done), None)
    window = [r for r in ev.get(NODE_RECOVERED, []) if mine(r) and up is not None
              and up <= r["t"] <= (done if done is not None else float("inf"))]
    return {
        "settled_at_s": round(done, 3) if done is not None else None,
        "first_allocation_at_s": round(first, 3) if first is not None else None,
        "nodes_reregistered": len(window),
        "containers_adopted": sum(int(r.get("adopted", 0)) for r in window),
        "containers_killed": sum(int(r.get("killed", 0)) for r in window),
        "downtime_emulated_s": round(first - killed, 3) if first is not None else None,
        "downtime_wall_s": round((first - killed) / scale, 4) if first is not None else None,
    }


def _restart(ev: Events, f: dict, scale: float) -> dict[str, Any]:
    killed = f["t"]
    starts = sorted(e["t"] for e in ev.get(ACTOR_STARTED, []) if e.get("actor") == RM_NAME)
    up = next((t for t in starts if t > killed), None)
    return {"role": RM_ROLE, "target": f["target"], "killed_at_s": round(killed, 3),
            "recovery": "work-preserving restart", "restarted_at_s": round(up, 3) if up is not None else None,
            **_window(ev, f, up, None, scale)}


def _takeover(ev: Events, f: dict, scale: float) -> dict[str, Any]:
    killed = f["t"]
    elected = sorted(ev.get(RM_ELECTED, []), key=lambda e: e["t"])
    new = next((e for e in elected if e["t"] >= killed and e["epoch"] > (f.get("term") or 0)), None)
    return {"role": RM_ROLE, "target": f["target"], "killed_at_s": round(killed, 3),
            "recovery": "standby takeover, work-preserving restart",
            "new_leader": new["rm"] if new else None,
            "elected_at_s": round(new["t"], 3) if new else None,
            "election_wall_s": round((new["t"] - killed) / scale, 4) if new else None,
            **_window(ev, f, new["t"] if new else None, new["rm"] if new else None, scale)}
