"""Collateral damage: tasks written off on machines that no fault touched.

A watcher (whatever keeps the cell's state: an architecture's cell state,
master or replicated leader) that writes off a host kills
everything that host runs: right when the host really died, collateral when
it was healthy and the trouble was the control plane's own (a paused or
partitioned leader, a new leader that judged too early). Policy evictions
(preemption, revocation) are decisions, not write-offs, and never count.

The count is the distinct (job, task, machine) written off, from the
watchers' ``machines_down`` records and the hosts' own kills when they learn
of it (``tasks_killed`` with reason ``written_off``; a leader that died
before shipping its ``machines_down`` leaves only these). A write-off is
excused when a fault touched its host (a kill, pause, slow or partition
aimed at it, or its node's death) while its silence could have been
building: within twice the watcher's timeout (``timeout_s`` on the record,
which includes a new leader's give-up grace) before the write-off, or at any
time after the fault began until it ended (a killed host: until it was
restarted). A node kill names the hosts it took (``took``: those placed on
the node and running when it was carried out), and each is killed from
that moment: the watcher may write one off before the driver logs its death
(``node_down``, once Ray declares the node dead, seconds later) or the run
may end before the driver ever does. A host that writes itself off (a restarted host's first word)
is always a fault's doing: only the driver restarts hosts.

Pure: events in, a number out; run at the end of every run and by
``schedlab check`` on saved runs.
"""
from __future__ import annotations

import bisect
import collections
import math
from typing import Any

from schedlab.schedulers.events.shared import FAULT, MACHINES_DOWN, TASKS_KILLED, TASKS_LAUNCHED
from schedlab.schedulers.faults.plan import member_index

_HOST = "machine-host-"


def hosts_named(value: Any) -> list[int]:
    """The machine hosts among a fault's actor names (one name or a list)."""
    names = value if isinstance(value, list) else [value]
    return [member_index(n) for n in names if isinstance(n, str) and n.startswith(_HOST)]


def fault_windows(ev: dict[str, list[dict]]) -> dict[int, list[tuple[float, float]]]:
    """host -> [(from, to)] emulated intervals in which a fault touched it."""
    windows: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
    killed: dict[int, float] = {}
    node_killed: dict[str, float] = {}
    for f in sorted((f for f in ev.get(FAULT, []) if not f.get("skipped")), key=lambda f: f["t"]):
        t, kind = float(f["t"]), f.get("kind")
        if kind == "kill_node":
            node_killed[str(f.get("target"))] = t
            for h in hosts_named(f.get("took", [])):
                killed.setdefault(h, t)
        hosts = hosts_named(f.get("target")) + hosts_named(f.get("peer"))
        for h in hosts:
            if kind in ("pause", "slow", "partition"):
                windows[h].append((t, t + float(f.get("duration_s") or 0.0)))
            elif kind == "kill":
                killed.setdefault(h, t)
            elif kind in ("node_down", "host_lost"):
                # The driver noticing a death after the fact: it began when
                # the node was killed or, for a host that died on its own,
                # at a time nobody knows.
                killed.setdefault(h, node_killed.get(str(f.get("node")), -math.inf))
            elif kind == "restart":
                windows[h].append((killed.pop(h, t), t))
    for h, t in killed.items():  # never restarted
        windows[h].append((t, math.inf))
    return windows


def _excused(windows: list[tuple[float, float]], t: float, lookback: float) -> bool:
    return any(a <= t and b >= t - lookback for a, b in windows)


def collateral(ev: dict[str, list[dict]], machines_per_actor: int) -> int:
    """Tasks written off on hosts no fault touched (see the module doc)."""
    k = machines_per_actor
    windows = fault_windows(ev)
    launched: dict[tuple[int, int], list[tuple[float, int]]] = collections.defaultdict(list)
    for e in ev.get(TASKS_LAUNCHED, []):
        for task in e["tasks"]:
            launched[(int(task[0]), int(task[1]))].append((float(e["t"]), int(task[2])))
    for times in launched.values():
        times.sort()
    downs: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)  # host -> [(t, lookback)]
    hit: set[tuple[int, int, int]] = set()
    for e in sorted(ev.get(MACHINES_DOWN, []), key=lambda e: e["t"]):
        if str(e.get("actor", "")).startswith(_HOST):
            continue  # a restarted host's rejoin
        t = float(e["t"])
        # Old saved runs carry no timeout: any earlier fault on the host excuses.
        lookback = 2 * float(e["timeout_s"]) if "timeout_s" in e else math.inf
        hosts = [int(h) for h in e["hosts"]]
        for h in hosts:
            downs[h].append((t, lookback))
        blamed = {h for h in hosts if not _excused(windows.get(h, []), t, lookback)}
        if not blamed:
            continue
        for job, task, *_ in e.get("lost", []):
            # The record names the task, not its machine: where it last launched.
            times = launched.get((int(job), int(task)), [])
            i = bisect.bisect_right(times, (t, math.inf))
            machine = times[i - 1][1] if i else -1
            if machine < 0 or machine // k in blamed:
                hit.add((int(job), int(task), machine))
    for e in ev.get(TASKS_KILLED, []):
        if e.get("reason") != "written_off":
            continue
        host, t = int(e["host"]), float(e["t"])
        # Judged when it was written off: the latest write-off of the host before.
        earlier = [d for d in downs.get(host, []) if d[0] <= t]
        when, lookback = earlier[-1] if earlier else (t, math.inf)
        if not _excused(windows.get(host, []), when, lookback):
            hit.update((int(j), int(tk), int(m)) for j, tk, m, *_ in e["tasks"])
    return len(hit)
