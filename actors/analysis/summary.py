"""Turn a run's events into summary.json: pure, so any saved run can be
re-summarised and tests can recompute every number from events.jsonl."""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np

from schedlab.actors.analysis.invariants import invariants
from schedlab.actors.arch import of_summary
from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.analysis.stats import by_event, percentiles
from schedlab.schedulers.events.shared import (
    CELL_SAMPLE, COORD_ACK, FAILOVER, FAULT, JOBS_FINAL, JOB_ABANDONED, JOB_ATTEMPT, JOB_PENDING, JOB_REJECTED,
    JOB_SCHEDULED, JOB_SUBMITTED, RAFT_ROLE, TASKS_COMPLETED, TASKS_LAUNCHED, TXN,
)
from schedlab.schedulers.model.cluster import Cell
from schedlab.schedulers.faults.plan import member_index
from schedlab.actors.analysis.devices import device_series, device_summary
from schedlab.actors.analysis.gangs import gang_summary
from schedlab.actors.analysis.inflation import inflation_summary
from schedlab.actors.analysis.trace_reference import trace_summary
from schedlab.schedulers.model.resources import EPS, declared, sample_shares

SUMMARY_KEYS = (
    "scenario", "architecture", "engine", "seed", "time_scale", "emulated_seconds", "wall_seconds",
    "cell", "jobs", "wait_time_s", "schedulers", "utilization", "substrate",
    "failovers", "faults", "invariants",
)


def failovers(ev: dict[str, list[dict]], scale: float) -> list[dict]:
    """One record per leader kill: when it died, when a new leader was
    elected, and when a client's write next succeeded (the blackout users
    feel). The election time is the winner's own role change (``raft_role``,
    a newer term than the victim's) where replicas log one, else when the
    driver's watcher saw it: the watcher polls, and on a loaded machine it
    can see the new leader after a client's first commit to it. Any
    acknowledged write counts (hosts write every batch interval, so the
    blackout is not stretched by a scheduler that had nothing to commit); ``first_txn_at_s`` is the first cell-state commit after it and
    ``first_placement_at_s`` the first decision that placed a task (any
    scheduler: a replica's own scheduling writes are not client acks)."""
    # (t, the replica that answered / the actor that placed). ray.kill is
    # asynchronous: the killed leader may still answer for a few wall ms
    # after the fault is logged, and that answer ends no blackout.
    commits = sorted((e["t"], e.get("replica")) for e in ev.get(COORD_ACK, []))
    placements = sorted((e["t"], e["actor"]) for e in ev.get(TXN, []) if e["committed"] > 0)
    txns = sorted((e["t"], e.get("replica")) for e in ev.get(COORD_ACK, []) if e["kind"] == "commit")
    elected = sorted(ev.get(FAILOVER, []), key=lambda e: e["t"])
    won = sorted((e["t"], e["replica"], e["term"]) for e in ev.get(RAFT_ROLE, []) if e["role"] == "leader")
    out = []
    for f in sorted(ev.get(FAULT, []), key=lambda e: e["t"]):
        if not f.get("was_leader") or f.get("role", "coordinator") != "coordinator":
            continue
        killed, victim = f["t"], f["target"]
        index = member_index(victim)
        new = next((e for e in elected if e["t"] >= killed and e["old_leader"] == victim), None)
        term = f.get("term")
        winner = next(((t, r) for t, r, tm in won if t > killed and r != index and (term is None or tm > term)), None)
        elected_at = winner[0] if winner else (new["t"] if new else None)
        new_leader = new["new_leader"] if new else (f"coordinator-{winner[1]}" if winner else None)
        first = next((t for t, r in commits if t > killed and r != index), None)
        first_txn = next((t for t, r in txns if t > killed and r != index), None)
        placed = next((t for t, a in placements if t > killed and a != victim), None)
        rec = {
            "role": "coordinator", "target": f["target"], "killed_at_s": round(killed, 3),
            "recovery": "first write",
            "elected_at_s": round(elected_at, 3) if elected_at is not None else None,
            "new_leader": new_leader,
            "first_commit_at_s": round(first, 3) if first is not None else None,
            "first_txn_at_s": round(first_txn, 3) if first_txn is not None else None,
            "first_placement_at_s": round(placed, 3) if placed is not None else None,
            "downtime_emulated_s": round(first - killed, 3) if first is not None else None,
            "downtime_wall_s": round((first - killed) / scale, 4) if first is not None else None,
            "election_wall_s": round((elected_at - killed) / scale, 4) if elected_at is not None else None,
        }
        out.append(rec)
    return out


_FAULT_DETAIL = ("role", "source", "duration_s", "delay_s", "peer", "restart_after_s", "was_leader", "node", "took", "skipped")


def fault_record(f: dict) -> dict:
    """One summary ``faults`` entry: when, what, whom, and the details that apply."""
    out = {"at_s": round(f["t"], 3), "kind": f["kind"], "target": f.get("target")}
    out.update((k, f[k]) for k in _FAULT_DETAIL if f.get(k) is not None)
    return out


def first_attempts(ev: dict[str, list[dict]]) -> dict[int, float]:
    """job -> when it was first tried. The earliest: a new scheduling leader
    re-announces a job whose first attempt died with its predecessor."""
    first: dict[int, float] = {}
    for e in ev.get(JOB_ATTEMPT, []):
        if e.get("first"):
            first[e["job_id"]] = min(e["t"], first.get(e["job_id"], e["t"]))
    return first


@dataclass(frozen=True)
class JobFates:
    """What became of each submitted job, as the summary counts it (the
    per-job table, ``actors.analysis.tables``, reads the same)."""
    submitted: dict[int, dict]  # job -> its job_submitted event
    scheduled: dict[int, dict]  # job -> the job_scheduled event that counts (it has the time)
    final_placed: set[int]  # placed per the last leader's jobs_final record (maybe no event, no time)
    abandoned: set[int]
    pending: set[int]  # still waiting at the end (not scheduled nor abandoned)
    rejected: set[int]  # refused at admission (e.g. over quota); any job id reported
    completed: dict[int, float]  # batch job -> when its last task finished (every task done)


def job_fates(ev: dict[str, list[dict]]) -> JobFates:
    submitted = {e["job_id"]: e for e in ev.get(JOB_SUBMITTED, [])}
    # A job is scheduled when first fully placed: tasks lost with a machine
    # and placed again schedule it again, and a restarted scheduler re-reports
    # jobs it found already placed; the earliest original event wins.
    scheduled = {e["job_id"]: e for e in sorted(ev.get(JOB_SCHEDULED, []), key=lambda e: (not e.get("recovered", False), -e["t"]))
                 if e["job_id"] in submitted}
    # A replicated control plane's final record (jobs_final, logged by the
    # last leader) covers jobs whose job_scheduled event died with a killed
    # leader (no time: not in wait times).
    final_placed = {j for e in ev.get(JOBS_FINAL, []) for j in e["scheduled"] if j in submitted}
    # A job's fate is its first full placement: one that failed after it
    # (an application whose AM failed for good once every task had started,
    # reported by a control plane that restarted since) was scheduled.
    abandoned = {e["job_id"] for e in ev.get(JOB_ABANDONED, []) if e["job_id"] in submitted} - set(scheduled) - final_placed
    # Only jobs of this run's workload: a standing (prefill) task preempted and
    # not yet confirmed killed at the end is reported pending under its
    # negative job id, and would count a job twice.
    pending = {e["job_id"] for e in ev.get(JOB_PENDING, []) if e["job_id"] in submitted} - set(scheduled) - final_placed - abandoned
    rejected = {e["job_id"] for e in ev.get(JOB_REJECTED, [])}

    done_tasks: collections.Counter[int] = collections.Counter()
    last_end: dict[int, float] = {}
    for e in ev.get(TASKS_COMPLETED, []):
        for task in e["tasks"]:
            j = int(task[0])
            done_tasks[j] += 1
            last_end[j] = max(float(task[3]), last_end.get(j, float(task[3])))
    completed = {j: last_end[j] for j, e in submitted.items() if e["kind"] == "batch" and done_tasks[j] >= e["tasks"]}
    return JobFates(submitted, scheduled, final_placed, abandoned, pending, rejected, completed)


def utilization(samples: list[dict], resources: tuple[str, ...]) -> dict[str, Any]:
    """Mean shares in use over the samples: cpu and mem as headline keys,
    every resource of the cell by name in ``by_resource``."""
    shares = np.array([sample_shares(s, len(resources)) for s in samples]).reshape(len(samples), len(resources))
    means = [round(float(x), 6) for x in shares.mean(axis=0)] if samples else [None] * len(resources)
    by = dict(zip(resources, means))
    return {"cpu_mean": by["cpu"], "mem_mean": by["mem"], "by_resource": by, "samples": len(samples)}


def summarize(events: Iterable[dict], info: RunInfo, cell: Cell, applied: dict[int, list] | None = None) -> dict[str, Any]:
    """``info`` carries what events do not (``RunInfo``). ``events`` may be a
    stream (``event_files.iter_events``): it is read once, into the events
    grouped by type, and never held as a second list."""
    ev = by_event(events)
    n_events = sum(len(v) for v in ev.values())
    duration = float(info.emulated_seconds)
    fates = job_fates(ev)
    submitted, scheduled, final_placed = fates.submitted, fates.scheduled, fates.final_placed
    abandoned, pending, rejected = fates.abandoned, fates.pending, fates.rejected
    completed = len(fates.completed)

    first = first_attempts(ev)
    wait_first = [first[j] - submitted[j]["t"] for j in submitted if j in first]
    wait_full = [e["t"] - submitted[j]["t"] for j, e in scheduled.items()]
    by_class: dict[str, dict] = {}
    for cls in sorted({e["job_class"] for e in submitted.values()}):
        ids = [j for j, e in submitted.items() if e["job_class"] == cls]
        by_class[cls] = {
            "first_attempt": percentiles(first[j] - submitted[j]["t"] for j in ids if j in first),
            "fully_scheduled": percentiles(scheduled[j]["t"] - submitted[j]["t"] for j in ids if j in scheduled),
        }

    # Every architecture's decisions are TXN events; ``conflicted`` and
    # ``rtt_ms`` are a shared state's words (an optimistic commit's refusals
    # and round trip): a decider that owns its state writes neither, and
    # their absence reads as the declaration says (0).
    txns: dict[str, list[dict]] = collections.defaultdict(list)
    for e in ev.get(TXN, []):
        txns[e["scheduler"]].append(e)
    schedulers = []
    for name in (info.scheduler_names if info.scheduler_names is not None else sorted(txns)):
        ts = txns.get(name, [])
        ok = sum(1 for t in ts if t["committed"] > 0)
        bad = sum(1 for t in ts if t.get("conflicted", 0) > 0)
        schedulers.append({
            "name": name,
            "busyness": round(sum(t["think"] for t in ts) / duration, 6),
            # Busyness counts think time only (as the papers define it);
            # occupancy adds the sync and commit round trips the substrate costs.
            "occupancy": round(sum(t.get("span", t["think"]) for t in ts) / duration, 6),
            # Conflicts per successful transaction: undefined (None) when
            # every transaction conflicted, not 0.
            "conflict_fraction": round(bad / ok, 6) if ok else (None if bad else 0.0),
            "transactions": {"committed": ok, "conflicted": bad},
            "claims": {"committed": sum(t["committed"] for t in ts), "conflicted": sum(t.get("conflicted", 0) for t in ts)},
            "attempts": len(ts),
            "commit_rtt_wall_ms_p50": percentiles(t.get("rtt_ms", 0.0) for t in ts if t["claims"])["p50"],
        })

    samples = [e for e in ev.get(CELL_SAMPLE, []) if 0 <= e["t"] <= duration + EPS]
    checks = invariants(ev, cell, int(info.machines_per_actor), applied)
    coord_failovers = failovers(ev, float(info.time_scale))
    prefill_tasks = sum(len(e["tasks"]) for e in ev.get(TASKS_LAUNCHED, []) if e.get("prefill"))

    out = {
        "scenario": info.scenario,
        "architecture": info.architecture,
        # The sim engine's wall_seconds are its virtual clock's: what the run
        # would have taken live (so the file is the same on every machine).
        "engine": info.engine,
        "seed": info.seed,
        "time_scale": info.time_scale,
        "emulated_seconds": duration,
        "wall_seconds": round(float(info.wall_seconds), 3),
        "cell": {"machines": cell.size, "machines_per_actor": info.machines_per_actor, "host_actors": info.host_actors,
                 "resources": list(declared(cell.resources))},
        "jobs": {
            "submitted": len(submitted),
            "scheduled": len(set(scheduled) | final_placed),
            "completed": completed,
            "abandoned": len(abandoned),
            "pending": len(pending),
            "rejected": len(rejected),
            "failed": 0,
            "prefill_tasks": prefill_tasks,
        },
        "wait_time_s": {"first_attempt": percentiles(wait_first), "fully_scheduled": percentiles(wait_full), "by_class": by_class},
        "schedulers": schedulers,
        "utilization": utilization(samples, declared(cell.resources)),
        "devices": device_summary(device_series(ev, cell, duration)),
        "gangs": gang_summary(ev, fates),
        "inflation": inflation_summary(ev, cell, info.inflation),
        "trace": trace_summary(ev, submitted, scheduled, info.trace),
        "substrate": info.substrate,
        "failovers": coord_failovers,
        "faults": [fault_record(f) for f in sorted(ev.get(FAULT, []), key=lambda e: e["t"])],
        "invariants": checks,
        "coordinator": {
            "replicas": info.replicas,
            "acknowledged_writes": len(ev.get(COORD_ACK, [])),
            "leader_terms": len({e["term"] for e in ev.get(RAFT_ROLE, []) if e["role"] == "leader"}),
        },
        # Multi-node clusters: which node each machine host ran on.
        "placement": info.placement,
        "warnings": list(info.warnings),
        "events": n_events,
    }
    # The architecture's own failover records and section (its name as the key).
    arch = of_summary(out)
    if arch is not None and arch.failovers is not None:
        out["failovers"] = coord_failovers + arch.failovers(ev, info)
    if arch is not None and arch.summary is not None:
        out[arch.name] = arch.summary(ev, info, out)
    return out


def violations(summary: dict) -> dict[str, int]:
    return {k: v for k, v in summary["invariants"].items() if v}

