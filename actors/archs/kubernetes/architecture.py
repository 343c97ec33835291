"""Kubernetes' live registration: its build and its summary section
(pods/s, queue-to-bind latency, cycles, filtered-out nodes per plugin,
preemptions and victims per priority, bind conflicts between profiles, pod
startup latency)."""
from __future__ import annotations

import bisect
import collections
import itertools
from typing import Any

import numpy as np

from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.arch import Architecture
from schedlab.actors.archs.kubernetes.build import build, user_plugins_of
from schedlab.schedulers.archs.kubernetes.events import K8S_CYCLE, K8S_RELIST, PODS_RECREATED
from schedlab.schedulers.events.shared import JOB_SUBMITTED, PREEMPTED, TASKS_LAUNCHED, TXN

Events = dict[str, list[dict]]


def _pct(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"p50": None, "p99": None}
    a = np.asarray(xs, dtype=float)
    return {"p50": round(float(np.percentile(a, 50)), 4), "p99": round(float(np.percentile(a, 99)), 4)}


Key = tuple[int, int]


def _first_after(created: dict[Key, list[float]], times: dict[Key, list[float]]) -> list[float]:
    """Per pod (each creation of a task's pod: its job's submission, then
    each time its controller made it again), the time from its creation to
    the first of ``times`` before the next creation: one latency per pod
    that got there."""
    out = []
    for key, cs in created.items():
        ts = sorted(times.get(key, ()))
        bounds = sorted(cs) + [float("inf")]
        i = 0
        for c, nxt in itertools.pairwise(bounds):
            i = bisect.bisect_left(ts, c, lo=i)
            if i < len(ts) and ts[i] < nxt:
                out.append(ts[i] - c)
    return out


def _preemptions(ev: Events) -> dict[str, Any]:
    """A preemption is one scheduling cycle's evictions (its ``preempted``
    events share scheduler, preemptor and time); its victims are counted
    apart, by their own priority."""
    victims: collections.Counter[int] = collections.Counter()
    events: dict[tuple, int] = {}
    for e in ev.get(PREEMPTED, []):
        victims[int(e["priority"])] += 1
        events[(e["scheduler"], e["by_job"], e.get("by_task"), e["t"])] = int(e["by_priority"])
    by_preemptor = collections.Counter(events.values())
    return {
        "preemptions": len(events),
        "preemption_victims": sum(victims.values()),
        "preemptions_by_priority": {str(k): v for k, v in sorted(by_preemptor.items())},
        "victims_by_priority": {str(k): v for k, v in sorted(victims.items())},
    }


def k8s_section(ev: Events, info: RunInfo, out: dict[str, Any]) -> dict[str, Any]:
    """From the schedulers' events: a job's pods are created when it is
    submitted (the controller creates them then) and again when the
    controller makes one again (``pods_recreated``); each pod is bound at
    its scheduler's first accepted bind after its creation, running at its
    kubelet's first launch after it (a Deployment's restarts in place are
    neither)."""
    end = float(out["emulated_seconds"])
    submitted = {e["job_id"]: e["t"] for e in ev.get(JOB_SUBMITTED, [])}
    created: dict[Key, list[float]] = collections.defaultdict(list)
    binds: dict[Key, list[float]] = collections.defaultdict(list)
    where: dict[Key, int] = {}
    conflicts: collections.Counter[str] = collections.Counter()
    for e in sorted(ev.get(TXN, []), key=lambda e: e["t"]):
        conflicts[e["scheduler"]] += int(e.get("conflicted", 0))
        for task, node in e.get("placed", []):
            key = (int(e["job_id"]), int(task))
            binds[key].append(e["t"])
            where.setdefault(key, int(node))
    for key in binds:
        if key[0] in submitted:
            created[key].append(submitted[key[0]])
    for e in ev.get(PODS_RECREATED, []):
        for j, t, _why in e["tasks"]:
            if int(j) in submitted:
                created[(int(j), int(t))].append(e["t"])
    running: dict[Key, list[float]] = collections.defaultdict(list)
    for e in ev.get(TASKS_LAUNCHED, []):
        if e.get("prefill"):
            continue
        for t in e["tasks"]:
            running[(int(t[0]), int(t[1]))].append(e["t"])
    latency = _first_after(created, binds)
    startup = _first_after(created, running)
    # A Deployment's pod run again in place by its kubelet: a launch that is
    # not its pod's first (restartPolicy Always).
    restarts = sum(len(ts) for ts in running.values()) - len(startup)
    n_bound = sum(len(ts) for ts in binds.values())
    filtered: collections.Counter[str] = collections.Counter()
    cycles = unschedulable = 0
    permit: collections.Counter[str] = collections.Counter()
    for e in ev.get(K8S_CYCLE, []):
        cycles += int(e["cycles"])
        unschedulable += int(e["unschedulable"])
        permit.update({k: int(e.get(k, 0)) for k in ("waiting", "released", "permit_rejected", "bind_failed")})
        filtered.update({k: int(v) for k, v in e["filtered"].items()})
    return {
        "pods_bound": n_bound,
        "pods_recreated": sum(len(e["tasks"]) for e in ev.get(PODS_RECREATED, [])),
        "pod_restarts": restarts,
        "pods_per_second": round(n_bound / end, 4) if end else None,
        "scheduling_latency_s": _pct(latency),
        "pod_startup_latency_s": _pct(startup),
        "cycles": cycles,
        "unschedulable_cycles": unschedulable,
        "filtered_out_by_plugin": dict(sorted(filtered.items())),
        # The binding cycle: pods held at Permit, allowed, rejected or timed
        # out there, and failed by a Bind plugin.
        "permit": {"waited": permit["waiting"], "allowed": permit["released"],
                   "rejected": permit["permit_rejected"], "bind_failed": permit["bind_failed"]},
        **_preemptions(ev),
        "bind_conflicts": dict(sorted(conflicts.items())),
        "relists": len(ev.get(K8S_RELIST, [])),
        "pods_per_rack": _per_rack(ev, where, info.extra.get("racks")),
        "nodes_used": _nodes_used(ev, where),
    }


def _nodes_used(ev: Events, where: dict[tuple[int, int], int]) -> dict[str, int]:
    """Per job class, how many nodes its pods were first bound to (packing
    uses few, anti-affinity one per pod)."""
    cls = {e["job_id"]: e["job_class"] for e in ev.get(JOB_SUBMITTED, [])}
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
    cls = {e["job_id"]: e["job_class"] for e in ev.get(JOB_SUBMITTED, [])}
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
                   f" ({k['preemption_victims']} victims)  bind conflicts {conflicts or 0}"),
    ]


ARCHITECTURE = Architecture(
    name="kubernetes",
    build=build,
    summary=k8s_section,
    table_rows=_rows,
    refused_means="binds the store refused: another scheduler took the node's room first",
    ship=lambda sc: list(user_plugins_of(sc.section).values()),
)
