"""What a workload-inflation run ([workload.inflate]) measured: how much of
the counted resource was allocated as the arrived demand grew, from the
run's events, whatever the architecture. Arrivals never leave on their
own: the allocated amount at an instant is what their launches so far
took, less what was killed since (a preemption, a machine lost) until it
is launched again; a standing prefill's is left out (it was there before
the first arrival)."""
from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.schedulers.events.shared import JOB_SUBMITTED, MACHINES_DOWN, TASKS_KILLED, TASKS_LAUNCHED
from schedlab.schedulers.model.cluster import Cell


def inflation_curve(ev: dict[str, list[dict]], cell: Cell, resource: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times, arrived, allocated): at each arrival, the demand arrived
    so far and the amount allocated by then, as shares of the cell's total
    of ``resource``; a last point at the end of the events for what was
    allocated after the last arrival."""
    total = float(cell.capacity[:, resource].sum()) or 1.0
    subs = sorted(ev.get(JOB_SUBMITTED, []), key=lambda e: e["t"])
    changes: list[tuple[float, int, tuple[int, int], float]] = []  # (when, 0 end / 1 launch, task, amount)
    for e in ev.get(TASKS_LAUNCHED, []):
        changes.extend((float(t[-1]), 1, (int(t[0]), int(t[1])), float(t[3 + resource])) for t in e["tasks"] if int(t[0]) >= 0)
    for e in ev.get(TASKS_KILLED, []):
        changes.extend((float(e["t"]), 0, (int(t[0]), int(t[1])), 0.0) for t in e["tasks"])
    for e in ev.get(MACHINES_DOWN, []):
        changes.extend((float(e["t"]), 0, (int(j), int(t)), 0.0) for j, t in e["lost"])
    changes.sort(key=lambda c: (c[0], c[1]))
    held: dict[tuple[int, int], float] = {}
    at_list: list[float] = []
    level: list[float] = []
    now = 0.0
    for when, launch, key, amount in changes:
        if launch:
            now += amount - held.get(key, 0.0)  # a relaunch of a task still held counts once
            held[key] = amount
        else:
            now -= held.pop(key, 0.0)
        at_list.append(when)
        level.append(now)
    at = np.array(at_list)
    cum = np.array(level)
    end = max([float(e["t"]) for e in subs] + at_list + [0.0])
    times = np.array([float(e["t"]) for e in subs] + [end])
    arrived = np.cumsum([float(e["request"][resource]) for e in subs] + [0.0]) / total
    idx = np.searchsorted(at, times, side="right")
    allocated = np.where(idx > 0, cum[np.maximum(idx - 1, 0)] if cum.size else 0.0, 0.0) / total
    return times, arrived, allocated


def inflation_summary(ev: dict[str, list[dict]], cell: Cell, spec: dict[str, Any] | None) -> dict[str, Any] | None:
    """summary.json's ``inflation`` (None: not an inflation run). At 100%:
    the allocated share when the next arrival came after the arrived demand
    first reached the cell's total (the time the architecture had to place
    the task that crossed it)."""
    if spec is None:
        return None
    r = int(spec["resource"])
    times, arrived, allocated = inflation_curve(ev, cell, r)
    full = np.flatnonzero(arrived[:-1] >= 1.0 - 1e-12)
    at_full = float(allocated[min(int(full[0]) + 1, allocated.size - 1)]) if full.size else None
    return {
        "resource": cell.resources[r],
        "until": float(spec["until"]),
        "arrived": round(float(arrived[-1]), 6),
        "unallocated_at_full": None if at_full is None else round(1.0 - at_full, 6),
        "unallocated_at_end": round(1.0 - float(allocated[-1]), 6),
    }
