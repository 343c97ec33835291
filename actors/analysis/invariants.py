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
* applied_twice: a client request applied at two log indices;
* collateral: tasks written off on machines no fault touched (actors.analysis.collateral);
* crashed_loops: an actor's background loop that died of an error (a bug:
  the actor goes on half alive).
"""
from __future__ import annotations

import bisect
import collections
from typing import Any

import numpy as np

from schedlab.actors.analysis.collateral import collateral, hosts_named
from schedlab.schedulers.events.shared import (
    ACTOR_STARTED, COMMITS_DROPPED, COORD_ACK, DOUBLE_LAUNCH, FAULT, HOST_RESET, JOBS_FINAL, JOB_ABANDONED,
    JOB_PENDING, JOB_REJECTED, JOB_SCHEDULED, JOB_SUBMITTED, LOOP_CRASHED, MACHINES_DOWN, OVERCOMMIT, RAFT_ROLE,
    TASKS_COMPLETED, TASKS_KILLED, TASKS_LAUNCHED, TASKS_LOST, TXN, WRITTEN_OFF_FINAL,
)
from schedlab.schedulers.model.cluster import Cell
from schedlab.schedulers.faults.plan import member_index


def machine_faults(ev: dict[str, list[dict]]) -> list[tuple[float, int, bool]]:
    """(time, host, killed) for every fault that killed a machine host
    (killed True) or restarted it as a new incarnation (False). A node kill
    kills the hosts it took (``took``) when it was carried out; the driver's
    later ``node_down`` for one of them, if the run lasted long enough, is
    the same death noticed."""
    out: list[tuple[float, int, bool]] = []
    for f in ev.get(FAULT, []):
        if f.get("kind") == "kill_node" and not f.get("skipped"):
            out.extend((f["t"], h, True) for h in hosts_named(f.get("took", [])))
        elif f.get("role") == "machine" and str(f.get("target", "")).startswith("machine-host-") and not f.get("skipped"):
            host = member_index(f["target"])
            if f.get("kind") in ("kill", "host_lost", "node_down"):
                out.append((f["t"], host, True))
            elif f.get("kind") == "restart":
                out.append((f["t"], host, False))
    return out


def check_machines(ev: dict[str, list[dict]], cell: Cell, machines_per_actor: int = 1) -> tuple[int, int]:
    """Replay launches and completions per machine in event-time order.
    Returns (over-commit violations, tasks placed twice). A machine host
    killed by a fault takes its tasks with it at that moment; a host marked
    down by its scheduler (or cell state, or master) has its tasks written
    off then, even if it was only slow and ran them a little longer, and
    whatever it starts before it resets is a zombie's, not a placement.
    A killed host's unshipped events die with it, but a host ships its
    ``tasks_killed`` before it confirms those kills (``MachineHost.flush``):
    a task its scheduler placed again on hearing of the kill shows the kill
    first, so a launch of a task still running here is a double placement.
    (A task that ended is never placed again, so its completion need not go
    first.)

    At equal times, a task's completion stamped at the instant of its own
    launch on that machine goes after that launch: a task ends after it
    starts. A host whose exchange came back late may take a task whose end
    has already passed, and end it at its next exchange, which may begin at
    that same instant. Kills keep their place: a kill and a relaunch of the
    same task come in one reply, the kill first."""
    k = machines_per_actor
    timeline: list[tuple[float, int, Any]] = []
    launched_at: set[tuple[float, int, int, int]] = set()
    for e in ev.get(TASKS_LAUNCHED, []):
        timeline.extend((e["t"], 3, task) for task in e["tasks"])
        launched_at.update((e["t"], int(task[0]), int(task[1]), int(task[2])) for task in e["tasks"])
    for e in ev.get(TASKS_COMPLETED, []):
        timeline.extend((e["t"], 4 if (e["t"], int(task[0]), int(task[1]), int(task[2])) in launched_at else 2, task)
                        for task in e["tasks"])
    for e in ev.get(TASKS_KILLED, []):
        timeline.extend((e["t"], 2, task) for task in e["tasks"])
    for e in ev.get(WRITTEN_OFF_FINAL, []):
        # A replicated control plane's record of placements it took back,
        # with when: it outlives a leader killed before it shipped its
        # machines_down, and the copy left running is a zombie's.
        timeline.extend((float(at), 2, [j, t, m]) for j, t, m, at in e["tasks"])
    for e in ev.get(MACHINES_DOWN, []):
        # Written off by its watcher (not a restarted host's own rejoin): the
        # host is a zombie until it hears so and resets.
        own = [h for h in e["hosts"] if e.get("actor") == f"machine-host-{h}"]
        timeline.append((e["t"], 0, (list(e["hosts"]), [h for h in e["hosts"] if h not in own])))
    for e in ev.get(HOST_RESET, []):
        timeline.append((e["t"], 1, int(e["host"])))
    for t, host, killed in machine_faults(ev):
        # A host killed at t emitted its events stamped t before it died (a
        # dead host emits nothing): its kill goes after its own launches and
        # completions of that instant. Restarted: a new incarnation.
        timeline.append((t, 5, ([host], [])) if killed else (t, 1, host))
    # Write-offs, then resets, then ends, then launches, then the ends of
    # those launches, then host kills at equal times: a slot freed and
    # reused in one flush is fine.
    timeline.sort(key=lambda x: (x[0], x[1]))
    used = np.zeros_like(cell.capacity)
    running: dict[tuple[int, int], tuple[int, np.ndarray]] = {}
    zombie: set[int] = set()
    over = double = 0
    for _t, kind, item in timeline:
        if kind in (0, 5):  # hosts gone: everything on their machines ends
            hosts, written_off = set(item[0]), item[1]
            zombie.update(written_off)
            for key in [key for key, (m, _) in running.items() if m // k in hosts]:
                m, req = running.pop(key)
                used[m] -= req
            continue
        if kind == 1:
            zombie.discard(item)
            continue
        key = (int(item[0]), int(item[1]))
        machine = int(item[2])
        if machine // k in zombie:
            # A host written off while stalled (paused, cut off) can still act
            # on a reply it received before: what it starts then is killed when
            # it learns it was written off (every host does the same). Its
            # resources were already given back, so it is not a placement.
            continue
        if kind == 3:
            req = np.asarray(item[3 : 3 + cell.width], dtype=np.float64)
            if key in running:
                double += 1
                continue
            running[key] = (machine, req)
            used[machine] += req
            if np.any(used[machine] > cell.capacity[machine] + 1e-6):
                over += 1
        elif key in running and running[key][0] == machine:  # not a written-off copy ending late
            _, req = running.pop(key)
            used[machine] -= req
    over += len(ev.get(OVERCOMMIT, []))
    double += len(ev.get(DOUBLE_LAUNCH, []))
    return over, double


def check_coordinator(ev: dict[str, list[dict]], applied: dict[int, list] | None) -> dict[str, int]:
    """Every write a client saw acknowledged must be in the applied log of
    every surviving replica that applied that far, once; at most one leader
    per term.

    An acknowledged write is committed on a majority, so it is lost when no
    surviving replica applied it, or when a replica applied past its index
    without it (its log holds something else there). A replica that is
    merely behind (restarted late, still catching up when the run ended:
    seconds of wall time on a loaded machine) holds a prefix of the log and
    loses nothing."""
    leaders: dict[int, set[int]] = collections.defaultdict(set)
    for e in ev.get(RAFT_ROLE, []):
        if e["role"] == "leader":
            leaders[e["term"]].add(e["replica"])
    split = sum(1 for s in leaders.values() if len(s) > 1)
    if not applied:
        return {"split_brain": split, "lost_acked": 0, "applied_twice": 0}
    acked = {(e["client"], e["request_id"]) for e in ev.get(COORD_ACK, [])}
    lost: set[tuple[str, int]] = set()
    twice = 0
    index_of: dict[tuple[str, int], int] = {}  # where any replica applied a request
    per_replica = []
    for records in applied.values():
        at: dict[tuple[str, int], set[int]] = collections.defaultdict(set)
        snap = last = 0
        for index, _term, client, rid, flag in records:
            last = max(last, index)
            if flag == "snapshot":
                snap = max(snap, index)
            elif client is not None and not flag:
                at[(client, rid)].add(index)
                index_of.setdefault((client, rid), index)
        twice += sum(1 for v in at.values() if len(v) > 1)
        per_replica.append((at, snap, last))
    lost |= acked - set(index_of)  # in no surviving replica's log at all
    for at, snap, last in per_replica:
        # A request this replica never applied itself is still held if a
        # snapshot it took or installed covers the index it was applied at,
        # and not yet due if the replica has not applied that far.
        lost |= {k for k in acked - set(at) if k in index_of and snap < index_of[k] <= last}
    return {"split_brain": split, "lost_acked": len(lost), "applied_twice": twice}


def untraced_commits(ev: dict[str, list[dict]], k: int) -> int:
    """Committed claims that reached no machine: each (job, task, machine)
    commit must be followed by its launch there, by its loss (re-queued with
    a failed machine, in a replicated write-off record, or dropped unpulled
    by a control plane that stopped leading: ``commits_dropped``), or by the
    death of the host it was meant for (whose last events may have died with
    it), or of the actor that held it unpulled (its ``outbox``);
    or the host was already dead when it committed (nobody knew yet).
    A txn's attempt began at ``t - span``: its ``t`` is the instant the span
    ended (actors.common.events.span_stamp), not when the line was stamped."""
    launched: dict[tuple[int, int, int], list[float]] = collections.defaultdict(list)
    for e in ev.get(TASKS_LAUNCHED, []):
        for task in e["tasks"]:
            launched[(int(task[0]), int(task[1]), int(task[2]))].append(e["t"])
    lost: dict[tuple[int, int], list[float]] = collections.defaultdict(list)
    for e in ev.get(TASKS_LOST, []):
        for j, t in e["tasks"]:
            lost[(int(j), int(t))].append(e["t"])
    # A replicated control plane's record of placements taken back (a machine written
    # off, a preemption before launch): it survives the leader that wrote
    # them off dying before its events were shipped.
    for e in ev.get(WRITTEN_OFF_FINAL, []):
        for j, t, _m, at in e["tasks"]:
            lost[(int(j), int(t))].append(float(at))
    # A control plane that stopped leading dropped launches no host had
    # pulled (soft state): their frameworks learn it from the next leader.
    for e in ev.get(COMMITS_DROPPED, []):
        for j, t, _m in e["tasks"]:
            lost[(int(j), int(t))].append(e["t"])
    host_gone: dict[int, list[float]] = collections.defaultdict(list)
    for e in ev.get(MACHINES_DOWN, []):
        for h in e["hosts"]:
            host_gone[int(h)].append(e["t"])
    history: dict[int, list[tuple[float, bool]]] = collections.defaultdict(list)  # host -> [(t, killed)]
    started: dict[int, list[float]] = collections.defaultdict(list)  # host -> its incarnations' starts
    for e in ev.get(ACTOR_STARTED, []):
        if str(e.get("actor", "")).startswith("machine-host-"):
            started[member_index(e["actor"])].append(e["t"])
    for t, host, killed in sorted(machine_faults(ev)):
        if killed:
            history[host].append((t, True))
            host_gone[host].append(t)
            continue
        # A restarted host is back when its new incarnation starts, not when
        # the driver asked for it: a loaded machine can take seconds to bring
        # up a process, and a run that ends first leaves commits queued for a
        # host that never came up (nobody to pull them).
        last_kill = max((x for x, k in history[host] if k), default=float("-inf"))
        up = min((x for x in started.get(host, ()) if x > last_kill), default=None)
        if up is not None:
            history[host].append((max(t, up), False))
    for past in history.values():
        past.sort()

    def dead_at(host: int, t: float) -> bool:
        """Killed before ``t`` and not restarted since: a commit to it then
        cannot launch, and stays queued for it until its watcher writes it
        off (which a run may end before). Only a kill counts: a host merely
        written off (paused, cut off) may still be alive and pull it."""
        past = history.get(host, [])
        i = bisect.bisect_right(past, (t, True))
        return i > 0 and past[i - 1][1]

    killed_at: dict[str, list[float]] = collections.defaultdict(list)  # actor -> kill times
    for f in ev.get(FAULT, []):
        if str(f.get("kind", "")).startswith("kill") and f.get("target") and not f.get("skipped"):
            killed_at[str(f["target"])].append(f["t"])
    # host -> (when it logged a batch of launches, the latest placement time
    # among them): a batch carrying a launch placed at or after some time
    # proves the host's pull was answered after it. When the batch was
    # logged proves nothing: a loaded machine can take seconds between the
    # holder's answer and the host's log line.
    pulls_by_host: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
    for e in ev.get(TASKS_LAUNCHED, []):
        if e.get("host") is not None and not e.get("prefill") and e["tasks"]:
            pulls_by_host[int(e["host"])].append((e["t"], max(float(task[-1]) for task in e["tasks"])))

    def died_in_outbox(e: dict, host: int, since: float) -> bool:
        """A commit that waits in an actor's memory until its host pulls it
        (``outbox``: a head node's or a master's launches, not a
        replicated store): that actor killed after the attempt began, with no
        launch by that host in between (so the host had not pulled since),
        takes the commit with it; whoever recovers requeues the task
        (lost_jobs checks that the job is not lost). The host pulled since
        the commit if it launched, before the kill, something placed at or
        after the attempt's reply (its launch rows' last field, the
        placement time): the commit applied somewhere in the attempt, so a
        launch placed while it was under way may have been pulled first."""
        holder = e.get("outbox")
        if not holder:
            return False
        kill = next((x for x in sorted(killed_at.get(str(holder), ())) if x >= since), None)
        return kill is not None and not any(logged <= kill and placed >= e["t"]
                                            for logged, placed in pulls_by_host.get(host, ()))

    missing = 0
    for e in ev.get(TXN, []):
        for task, machine in e["placed"]:
            key = (int(e["job_id"]), int(task))
            # The commit applied somewhere in the attempt, before its reply was
            # logged: a launch, loss or host failure since the attempt began counts.
            since = e["t"] - e.get("span", 0.0)
            if any(x >= since for x in launched.get((*key, int(machine)), ())) or any(x >= since for x in lost.get(key, ())) \
                    or any(x >= since for x in host_gone.get(int(machine) // k, ())) or dead_at(int(machine) // k, e["t"]) \
                    or died_in_outbox(e, int(machine) // k, since):
                continue
            missing += 1
    return missing


def invariants(ev: dict[str, list[dict]], cell: Cell, machines_per_actor: int, applied: dict[int, list] | None) -> dict[str, int]:
    submitted = {e["job_id"] for e in ev.get(JOB_SUBMITTED, [])}
    accounted = ({e["job_id"] for e in ev.get(JOB_SCHEDULED, [])} | {e["job_id"] for e in ev.get(JOB_ABANDONED, [])}
                 | {e["job_id"] for e in ev.get(JOB_PENDING, [])} | {e["job_id"] for e in ev.get(JOB_REJECTED, [])}
                 | {j for e in ev.get(JOBS_FINAL, []) for j in e["scheduled"]})
    overcommit, double = check_machines(ev, cell, machines_per_actor)
    coord = check_coordinator(ev, applied)
    txns = ev.get(TXN, [])
    if txns and all("placed" in e for e in txns):  # every commit followed to its end (runs saved before txns said where: the count below)
        unlaunched = untraced_commits(ev, machines_per_actor)
    else:
        unlaunched = None
    committed = sum(e["committed"] for e in txns)
    launched = sum(len(e["tasks"]) for e in ev.get(TASKS_LAUNCHED, []) if not e.get("prefill"))
    # Launches reported lost and re-queued (a master failover or a
    # revocation, a machine failure or a preemption before launch) were
    # not silently dropped.
    requeued = sum(len(e["tasks"]) for e in ev.get(TASKS_LOST, []))
    # A launch a dead host made but could not log is known only from
    # the machine-down record.
    for down in ev.get(MACHINES_DOWN, []):
        hosts = {f"machine-host-{h}" for h in down["hosts"]}
        logged = {(int(t[0]), int(t[1])) for e in ev.get(TASKS_LAUNCHED, [])
                  if e.get("actor") in hosts and e["t"] <= down["t"] for t in e["tasks"]}
        requeued += sum(1 for j, t in down.get("lost", []) if j >= 0 and (j, t) not in logged)
    return {
        "overcommit": overcommit,
        "double_placement": double,
        "lost_jobs": len(submitted - accounted),
        "split_brain": coord["split_brain"],
        "lost_commits": (max(0, committed - launched - requeued) if unlaunched is None else unlaunched) + coord["lost_acked"],
        "applied_twice": coord["applied_twice"],
        "collateral": collateral(ev, machines_per_actor),
        "crashed_loops": len(ev.get(LOOP_CRASHED, [])),
    }
