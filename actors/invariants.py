"""The invariants a run must keep, computed from its events (and, with a
replicated coordinator, the replicas' applied logs): pure, so they are
checked at the end of every run and again on any saved run
(``schedlab check OUT``).

* overcommit: a launch took a machine over capacity (replayed, and as seen live by hosts);
* double_placement: a task running on two machines at once;
* lost_jobs: a submitted job neither scheduled, abandoned, pending nor rejected;
* split_brain: two leaders in one term;
* lost_commits: committed placements never launched nor re-queued, plus
  acknowledged coordinator writes missing from a surviving replica;
* applied_twice: a client request applied at two log indices.
"""
from __future__ import annotations

import collections

import numpy as np

from schedulers.cluster import Cell
from schedulers.resources import NDIM


def check_machines(ev: dict[str, list[dict]], cell: Cell, machines_per_actor: int = 1) -> tuple[int, int]:
    """Replay launches and completions per machine in event-time order.
    Returns (over-commit violations, tasks placed twice). A machine host
    killed by a fault takes its tasks with it at that moment."""
    timeline: list[tuple[float, int, list]] = []
    for e in ev.get("tasks_launched", []):
        timeline.extend((e["t"], 1, task) for task in e["tasks"])
    for e in ev.get("tasks_completed", []) + ev.get("tasks_killed", []):
        timeline.extend((e["t"], 0, task) for task in e["tasks"])
    for f in ev.get("fault", []):
        if f.get("role") == "machine" and str(f.get("target", "")).startswith("machine-host-"):
            h = int(f["target"].rsplit("-", 1)[1])
            # A death noticed by the driver may be noticed earlier by the
            # scheduler (Borg marks a silent host down and reschedules): the
            # host's tasks ended no later than that.
            last_own = max((e["t"] for kind in ("tasks_launched", "tasks_completed", "tasks_killed")
                            for e in ev.get(kind, []) if e.get("actor") == f["target"]), default=0.0)
            marked = [e["t"] for e in ev.get("machines_down", []) if h in e["hosts"] and last_own <= e["t"] <= f["t"]]
            died = min([f["t"], *marked])
            timeline.extend((died, 0, [j, t, m]) for j, t, m in _running_on(ev, died, h, machines_per_actor))
    # Completions first at equal times: a slot freed and reused in one flush is fine.
    timeline.sort(key=lambda x: (x[0], x[1]))
    used = np.zeros_like(cell.capacity)
    running: dict[tuple[int, int], tuple[int, np.ndarray]] = {}
    over = double = 0
    for _t, is_launch, task in timeline:
        key = (int(task[0]), int(task[1]))
        if is_launch:
            machine = int(task[2])
            req = np.asarray(task[3 : 3 + NDIM], dtype=np.float64)
            if key in running:
                double += 1
                continue
            running[key] = (machine, req)
            used[machine] += req
            if np.any(used[machine] > cell.capacity[machine] + 1e-6):
                over += 1
        elif key in running:
            machine, req = running.pop(key)
            used[machine] -= req
    over += len(ev.get("overcommit", []))
    double += len(ev.get("double_launch", []))
    return over, double


def _running_on(ev: dict[str, list[dict]], at: float, host: int, k: int) -> list[tuple[int, int, int]]:
    """Tasks running on a host's machines at time ``at`` (from its own events)."""
    name = f"machine-host-{host}"
    running: dict[tuple[int, int], int] = {}
    for e in sorted((e for kind in ("tasks_launched", "tasks_completed", "tasks_killed") for e in ev.get(kind, [])
                     if e.get("actor") == name and e["t"] <= at), key=lambda e: e["t"]):
        for task in e["tasks"]:
            key = (int(task[0]), int(task[1]))
            if e["event"] == "tasks_launched":
                running[key] = int(task[2])
            else:
                running.pop(key, None)
    return [(j, t, m) for (j, t), m in running.items()]


def check_coordinator(ev: dict[str, list[dict]], applied: dict[int, list] | None) -> dict[str, int]:
    """Every write a client saw acknowledged must be in the applied log of
    every surviving replica, once; at most one leader per term."""
    leaders: dict[int, set[int]] = collections.defaultdict(set)
    for e in ev.get("raft_role", []):
        if e["role"] == "leader":
            leaders[e["term"]].add(e["replica"])
    split = sum(1 for s in leaders.values() if len(s) > 1)
    if not applied:
        return {"split_brain": split, "lost_acked": 0, "applied_twice": 0}
    acked = {(e["client"], e["request_id"]) for e in ev.get("coord_ack", [])}
    lost: set[tuple[str, int]] = set()
    twice = 0
    index_of: dict[tuple[str, int], int] = {}  # where any replica applied a request
    per_replica = []
    for records in applied.values():
        at: dict[tuple[str, int], set[int]] = collections.defaultdict(set)
        snap = 0
        for index, _term, client, rid, flag in records:
            if flag == "snapshot":
                snap = max(snap, index)
            elif client is not None and not flag:
                at[(client, rid)].add(index)
                index_of.setdefault((client, rid), index)
        twice += sum(1 for v in at.values() if len(v) > 1)
        per_replica.append((at, snap))
    for at, snap in per_replica:
        # A request this replica never applied itself is still held if a
        # snapshot it took or installed covers the index it was applied at.
        missing = {k for k in acked - set(at) if not (k in index_of and index_of[k] <= snap)}
        lost |= missing
    return {"split_brain": split, "lost_acked": len(lost), "applied_twice": twice}


def invariants(ev: dict[str, list[dict]], cell: Cell, machines_per_actor: int, applied: dict[int, list] | None) -> dict[str, int]:
    submitted = {e["job_id"] for e in ev.get("job_submitted", [])}
    accounted = ({e["job_id"] for e in ev.get("job_scheduled", [])} | {e["job_id"] for e in ev.get("job_abandoned", [])}
                 | {e["job_id"] for e in ev.get("job_pending", [])} | {e["job_id"] for e in ev.get("job_rejected", [])}
                 | {j for e in ev.get("borg_jobs_final", []) for j in e["scheduled"]})
    overcommit, double = check_machines(ev, cell, machines_per_actor)
    coord = check_coordinator(ev, applied)
    committed = sum(e["committed"] for e in ev.get("txn", []))
    launched = sum(len(e["tasks"]) for e in ev.get("tasks_launched", []) if not e.get("prefill"))
    # Launches reported lost and re-queued (a Mesos master failover or
    # revocation, a Borg machine failure or preemption before launch) were
    # not silently dropped.
    requeued = sum(len(e["tasks"]) for e in ev.get("tasks_lost", []))
    # Borg: a launch a dead host made but could not log is known only from
    # the machine-down record.
    for down in ev.get("machines_down", []):
        hosts = {f"machine-host-{h}" for h in down["hosts"]}
        logged = {(int(t[0]), int(t[1])) for e in ev.get("tasks_launched", [])
                  if e.get("actor") in hosts and e["t"] <= down["t"] for t in e["tasks"]}
        requeued += sum(1 for j, t in down.get("lost", []) if j >= 0 and (j, t) not in logged)
    return {
        "overcommit": overcommit,
        "double_placement": double,
        "lost_jobs": len(submitted - accounted),
        "split_brain": coord["split_brain"],
        "lost_commits": max(0, committed - launched - requeued) + coord["lost_acked"],
        "applied_twice": coord["applied_twice"],
    }
