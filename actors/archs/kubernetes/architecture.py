"""Kubernetes' live registration: its build and its summary section
(pods/s, queue-to-bind latency, cycles, filtered-out nodes per plugin,
preemptions per priority, bind conflicts between profiles, pod startup
latency)."""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from schedlab.actors.arch import Architecture
from schedlab.actors.archs.kubernetes.build import build, user_plugins_of

Events = dict[str, list[dict]]


def _pct(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"p50": None, "p99": None}
    a = np.asarray(xs, dtype=float)
    return {"p50": round(float(np.percentile(a, 50)), 4), "p99": round(float(np.percentile(a, 99)), 4)}


def k8s_section(ev: Events, info: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """From the schedulers' events: a pod is created when its job is
    submitted (the controller creates its pods then), bound at its
    scheduler's first accepted bind, running at its kubelet's launch."""
    end = float(out["emulated_seconds"])
    submitted = {e["job_id"]: e["t"] for e in ev.get("job_submitted", [])}
    bound: dict[tuple[int, int], float] = {}
    where: dict[tuple[int, int], int] = {}
    conflicts: collections.Counter[str] = collections.Counter()
    for e in sorted(ev.get("txn", []), key=lambda e: e["t"]):
        conflicts[e["scheduler"]] += int(e.get("conflicted", 0))
        for task, node in e.get("placed", []):
            bound.setdefault((int(e["job_id"]), int(task)), e["t"])
            where.setdefault((int(e["job_id"]), int(task)), int(node))
    running: dict[tuple[int, int], float] = {}
    for e in ev.get("tasks_launched", []):
        if e.get("prefill"):
            continue
        for t in e["tasks"]:
            running.setdefault((int(t[0]), int(t[1])), e["t"])
    latency = [t - submitted[j] for (j, _t), t in bound.items() if j in submitted]
    startup = [t - submitted[j] for (j, _t), t in running.items() if j in submitted]
    filtered: collections.Counter[str] = collections.Counter()
    cycles = unschedulable = 0
    for e in ev.get("k8s_cycle", []):
        cycles += int(e["cycles"])
        unschedulable += int(e["unschedulable"])
        filtered.update({k: int(v) for k, v in e["filtered"].items()})
    victims: collections.Counter[int] = collections.Counter(int(e["priority"]) for e in ev.get("preempted", []))
    preemptors: collections.Counter[int] = collections.Counter(int(e["by_priority"]) for e in ev.get("preempted", []))
    return {
        "pods_bound": len(bound),
        "pods_per_second": round(len(bound) / end, 4) if end else None,
        "scheduling_latency_s": _pct(latency),
        "pod_startup_latency_s": _pct(startup),
        "cycles": cycles,
        "unschedulable_cycles": unschedulable,
        "filtered_out_by_plugin": dict(sorted(filtered.items())),
        "preemptions": sum(victims.values()),
        "victims_by_priority": {str(k): v for k, v in sorted(victims.items())},
        "preemptors_by_priority": {str(k): v for k, v in sorted(preemptors.items())},
        "bind_conflicts": dict(sorted(conflicts.items())),
        "relists": len(ev.get("k8s_relist", [])),
        "pods_per_rack": _per_rack(ev, where, info.get("racks")),
        "nodes_used": _nodes_used(ev, where),
    }


def _nodes_used(ev: Events, where: dict[tuple[int, int], int]) -> dict[str, int]:
    """Per job class, how many nodes its pods were first bound to (packing
    uses few, anti-affinity one per pod)."""
    cls = {e["job_id"]: e["job_class"] for e in ev.get("job_submitted", [])}
    used: dict[str, set[int]] = {}
    for (job, _task), node in where.items():
        if job in cls:
            used.setdefault(cls[job], set()).add(node)
    return {c: len(ns) for c, ns in sorted(used.items())}


def _per_rack(ev: Events, where: dict[tuple[int, int], int], racks: list[int] | None) -> dict[str, list[int]]:
    """Per job class, the pods first bound in each rack: what topology
    spread and anti-affinity change (k8s_spread)."""
    if not racks:
        return {}
    cls = {e["job_id"]: e["job_class"] for e in ev.get("job_submitted", [])}
    width = max(racks) + 1
    out: dict[str, list[int]] = {}
    for (job, _task), node in where.items():
        if job in cls:
            out.setdefault(cls[job], [0] * width)[racks[node]] += 1
    return dict(sorted(out.items()))


def _rows(summary: dict) -> list[tuple[str, str]]:
    k = summary["kubernetes"]
    lat, start = k["scheduling_latency_s"], k["pod_startup_latency_s"]
    conflicts = "  ".join(f"{s} {n}" for s, n in k["bind_conflicts"].items())
    return [
        ("pods", f"bound {k['pods_bound']} ({k['pods_per_second']}/s)  queue-to-bind p50/p99 {lat['p50']} / {lat['p99']}s"
                 f"  startup p99 {start['p99']}s"),
        ("cycles", f"{k['cycles']}  unschedulable {k['unschedulable_cycles']}  preemptions {k['preemptions']}"
                   f"  bind conflicts {conflicts or 0}"),
    ]


ARCHITECTURE = Architecture(
    name="kubernetes",
    build=build,
    summary=k8s_section,
    table_rows=_rows,
    refused_means="binds the store refused: another scheduler took the node's room first",
    ship=lambda sc: list(user_plugins_of(sc.section).values()),
)
