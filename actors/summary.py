"""Turn a run's events into summary.json: pure, so any saved run can be
re-summarised and tests can recompute every number from events.jsonl."""
from __future__ import annotations

import collections
from typing import Any

import numpy as np

from actors.stats import by_event, percentiles
from actors.summary_borg import borg_section
from actors.summary_mesos import master_failovers, mesos_section
from schedulers.cluster import Cell
from schedulers.resources import EPS, NDIM

SUMMARY_KEYS = (
    "scenario", "architecture", "seed", "time_scale", "emulated_seconds", "wall_seconds",
    "cell", "jobs", "wait_time_s", "schedulers", "utilization", "substrate",
    "failovers", "faults", "invariants",
)


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
            timeline.extend((f["t"], 0, [j, t, m]) for j, t, m in _running_on(ev, f["t"], h, machines_per_actor))
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


def failovers(ev: dict[str, list[dict]], scale: float) -> list[dict]:
    """One record per leader kill: when it died, when the driver saw a new
    leader, and when a client's write next succeeded (the blackout users
    feel). Any acknowledged write counts (hosts write every batch interval,
    so the blackout is not stretched by a scheduler that had nothing to
    commit); ``first_txn_at_s`` is the first Omega transaction after it."""
    commits = sorted(e["t"] for e in ev.get("coord_ack", []))
    txns = sorted(e["t"] for e in ev.get("coord_ack", []) if e["kind"] == "commit")
    elected = sorted(ev.get("failover", []), key=lambda e: e["t"])
    out = []
    for f in sorted(ev.get("fault", []), key=lambda e: e["t"]):
        if not f.get("was_leader") or f.get("role") == "master":
            continue
        killed = f["t"]
        new = next((e for e in elected if e["t"] >= killed and e["old_leader"] == f["target"]), None)
        first = next((t for t in commits if t > killed), None)
        first_txn = next((t for t in txns if t > killed), None)
        rec = {
            "role": "coordinator", "target": f["target"], "killed_at_s": round(killed, 3),
            "elected_at_s": round(new["t"], 3) if new else None,
            "new_leader": new["new_leader"] if new else None,
            "first_commit_at_s": round(first, 3) if first is not None else None,
            "first_txn_at_s": round(first_txn, 3) if first_txn is not None else None,
            "downtime_emulated_s": round(first - killed, 3) if first is not None else None,
            "downtime_wall_s": round((first - killed) / scale, 4) if first is not None else None,
            "election_wall_s": round((new["t"] - killed) / scale, 4) if new else None,
        }
        out.append(rec)
    return out


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


def summarize(events: list[dict], info: dict[str, Any], cell: Cell, applied: dict[int, list] | None = None) -> dict[str, Any]:
    """``info`` carries what events do not: scenario name, architecture, seed,
    time_scale, emulated_seconds, wall_seconds, machines_per_actor, substrate,
    warnings, scheduler names, think-time floor."""
    ev = by_event(events)
    duration = float(info["emulated_seconds"])
    submitted = {e["job_id"]: e for e in ev.get("job_submitted", [])}
    scheduled = {e["job_id"]: e for e in ev.get("job_scheduled", []) if e["job_id"] in submitted}
    abandoned = {e["job_id"] for e in ev.get("job_abandoned", []) if e["job_id"] in submitted}
    pending = {e["job_id"] for e in ev.get("job_pending", [])} - set(scheduled) - abandoned
    rejected = {e["job_id"] for e in ev.get("job_rejected", [])}  # Borg: over quota at admission
    lost_jobs = len(set(submitted) - set(scheduled) - abandoned - pending - rejected)

    done_tasks: collections.Counter[int] = collections.Counter()
    for e in ev.get("tasks_completed", []):
        for task in e["tasks"]:
            done_tasks[int(task[0])] += 1
    completed = sum(1 for j, e in submitted.items() if e["kind"] == "batch" and done_tasks[j] >= e["tasks"])

    first = {e["job_id"]: e["t"] for e in ev.get("job_attempt", []) if e["first"]}
    wait_first = [first[j] - submitted[j]["t"] for j in submitted if j in first]
    wait_full = [e["t"] - submitted[j]["t"] for j, e in scheduled.items()]
    by_class: dict[str, dict] = {}
    for cls in sorted({e["job_class"] for e in submitted.values()}):
        ids = [j for j, e in submitted.items() if e["job_class"] == cls]
        by_class[cls] = {
            "first_attempt": percentiles(first[j] - submitted[j]["t"] for j in ids if j in first),
            "fully_scheduled": percentiles(scheduled[j]["t"] - submitted[j]["t"] for j in ids if j in scheduled),
        }

    txns: dict[str, list[dict]] = collections.defaultdict(list)
    for e in ev.get("txn", []):
        txns[e["scheduler"]].append(e)
    schedulers = []
    committed_claims = 0
    for name in info.get("scheduler_names", sorted(txns)):
        ts = txns.get(name, [])
        ok = sum(1 for t in ts if t["committed"] > 0)
        bad = sum(1 for t in ts if t["conflicted"] > 0)
        committed_claims += sum(t["committed"] for t in ts)
        schedulers.append({
            "name": name,
            "busyness": round(sum(t["think"] for t in ts) / duration, 6),
            # Busyness counts think time only (the Omega paper's definition);
            # occupancy adds the sync and commit round trips the substrate costs.
            "occupancy": round(sum(t.get("span", t["think"]) for t in ts) / duration, 6),
            "conflict_fraction": round(bad / ok, 6) if ok else 0.0,
            "transactions": {"committed": ok, "conflicted": bad},
            "claims": {"committed": sum(t["committed"] for t in ts), "conflicted": sum(t["conflicted"] for t in ts)},
            "attempts": len(ts),
            "commit_rtt_wall_ms_p50": percentiles(t["rtt_ms"] for t in ts if t["claims"])["p50"],
        })

    samples = [e for e in ev.get("cell_sample", []) if 0 <= e["t"] <= duration + EPS]
    launched_tasks = sum(len(e["tasks"]) for e in ev.get("tasks_launched", []) if not e.get("prefill"))
    overcommit, double = check_machines(ev, cell, int(info.get("machines_per_actor") or 1))
    coord = check_coordinator(ev, applied)
    # Launches a Mesos framework was told were lost (after a master failover,
    # or revoked before they ran) were re-queued, not silently dropped.
    requeued = sum(len(e["tasks"]) for e in ev.get("tasks_lost", []))
    # Borg: tasks on a machine that failed were re-queued; a launch the dead
    # host made but could not log any more is known only from that record.
    logged = {(int(t[0]), int(t[1])) for e in ev.get("tasks_launched", []) for t in e["tasks"]}
    requeued += sum(1 for e in ev.get("machines_down", []) for j, t in e.get("lost", []) if j >= 0 and (j, t) not in logged)
    prefill_tasks = sum(len(e["tasks"]) for e in ev.get("tasks_launched", []) if e.get("prefill"))

    return {
        "scenario": info["scenario"],
        "architecture": info["architecture"],
        "seed": info["seed"],
        "time_scale": info["time_scale"],
        "emulated_seconds": duration,
        "wall_seconds": round(float(info["wall_seconds"]), 3),
        "cell": {"machines": cell.size, "machines_per_actor": info["machines_per_actor"], "host_actors": info.get("host_actors")},
        "jobs": {
            "submitted": len(submitted),
            "scheduled": len(scheduled),
            "completed": completed,
            "abandoned": len(abandoned),
            "pending": len(pending),
            "rejected": len(rejected),
            "failed": 0,
            "prefill_tasks": prefill_tasks,
        },
        "wait_time_s": {"first_attempt": percentiles(wait_first), "fully_scheduled": percentiles(wait_full), "by_class": by_class},
        "schedulers": schedulers,
        "utilization": {
            "cpu_mean": round(float(np.mean([s["cpu"] for s in samples])), 6) if samples else None,
            "mem_mean": round(float(np.mean([s["mem"] for s in samples])), 6) if samples else None,
            "samples": len(samples),
        },
        "substrate": info["substrate"],
        "failovers": failovers(ev, float(info["time_scale"])) + master_failovers(
            ev, int(info.get("host_actors") or 0), info.get("frameworks", []), float(info["time_scale"])),
        "faults": [{"at_s": round(f["t"], 3), "kind": f["kind"], "target": f["target"]} for f in ev.get("fault", [])],
        "invariants": {
            "overcommit": overcommit,
            "double_placement": double,
            "lost_jobs": lost_jobs,
            "split_brain": coord["split_brain"],
            # committed claims never launched + acknowledged coordinator writes missing from a survivor
            "lost_commits": max(0, committed_claims - launched_tasks - requeued) + coord["lost_acked"],
            "applied_twice": coord["applied_twice"],
        },
        "coordinator": {
            "replicas": info.get("replicas", 1),
            "acknowledged_writes": len(ev.get("coord_ack", [])),
            "leader_terms": len({e["term"] for e in ev.get("raft_role", []) if e["role"] == "leader"}),
        },
        **({"mesos": mesos_section(ev, info.get("frameworks", []), duration)} if info["architecture"] == "mesos" else {}),
        **({"borg": borg_section(ev, float(info["time_scale"]))} if info["architecture"] == "borg" else {}),
        "warnings": info.get("warnings", []),
        "events": len(events),
    }


def violations(summary: dict) -> dict[str, int]:
    return {k: v for k, v in summary["invariants"].items() if v}

