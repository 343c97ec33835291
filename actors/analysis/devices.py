"""Device metrics of a run, replayed from its events: how much of a cell's
devices (GPUs) were allocated, how many stood unallocated, and how many of
those were fragmented (Weng et al., ATC 2023: free device capacity on
machines that cannot serve a typical task), over the run and per model.

Generic: the device resource is the cell's (``Cell.device``), whatever it
is called. The replay reads what every architecture's hosts emit (tasks
launched, completed, killed, and tasks lost with a machine), so it measures
every architecture alike. A launch from an architecture that places devices
names the devices it took (its device columns); one from an architecture
that counts them holds whole devices only, and the replay gives it the
lowest-numbered free ones: for whole devices which ones is immaterial to
every measure here. The target workload is the run's own: the shapes of
the tasks submitted that ask for devices, by count (the paper's target
workload is the trace's). Tasks asking for none are left out of it: to
one of them every free device counts as fragmented (the measure FGD
places by), which on a cell mostly running such tasks would call an
idle cell fragmented and say nothing about how devices were packed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.schedulers.events.shared import JOB_SUBMITTED, MACHINES_DOWN, TASKS_COMPLETED, TASKS_KILLED, TASKS_LAUNCHED
from schedlab.schedulers.model.cluster import Cell
from schedlab.schedulers.model.devices import EPS, layout
from schedlab.schedulers.placement.fragmentation import machine_fragmentation, typical, workload_of

POINTS = 240  # at most this many instants measured: the cost stays one of a few hundred cell measures


@dataclass(frozen=True)
class DeviceSeries:
    """The measures at ``t`` [T], per model ([T, K], ``models`` [K]; a
    machine whose class names none is model "-")."""

    resource: str
    t: np.ndarray
    models: tuple[str, ...]
    devices: np.ndarray  # [K] devices of each model
    allocated: np.ndarray  # [T, K] devices' worth allocated
    fragmented: np.ndarray  # [T, K] devices' worth fragmented (of the unallocated)


def _workload(ev: dict[str, list[dict]], cell: Cell) -> list:
    names = cell.models
    reqs, allowed, weights = [], [], []
    for e in ev.get(JOB_SUBMITTED, []):
        if float(e["request"][cell.device]) <= 0:
            continue
        reqs.append([float(x) for x in e["request"][:cell.declared]])
        models = e.get("models") or ()
        allowed.append(frozenset(names.index(m) for m in models if m in names) if models else None)
        weights.append(float(e["tasks"]))
    return typical(workload_of(reqs, allowed, weights))


def device_series(ev: dict[str, list[dict]], cell: Cell, until: float, points: int = POINTS) -> DeviceSeries | None:
    """The device measures at ``points`` instants evenly over [0, ``until``]
    (None: the cell has no device resource)."""
    if cell.device is None:
        return None
    r, c = cell.declared, cell.device
    counts = np.rint(cell.capacity[:, c]).astype(np.int64)
    slots = layout(counts.tolist())
    g = slots.shape[1]
    capacity = cell.capacity[:, :r]
    used = np.zeros_like(capacity)
    held = np.zeros_like(slots)
    tasks: dict[tuple[int, int], tuple[int, np.ndarray, np.ndarray]] = {}
    timeline: list[tuple[float, int, Any]] = []
    for e in ev.get(TASKS_LAUNCHED, []):
        timeline.extend((float(e["t"]), 1, row) for row in e["tasks"])
    for e in ev.get(TASKS_COMPLETED, []):
        timeline.extend((float(e["t"]), 0, row) for row in e["tasks"])
    for e in ev.get(TASKS_KILLED, []):
        timeline.extend((float(e["t"]), 0, row) for row in e["tasks"])
    for e in ev.get(MACHINES_DOWN, []):
        timeline.extend((float(e["t"]), 0, row) for row in e["lost"])
    timeline.sort(key=lambda x: (x[0], x[1]))
    labels = [cell.models[i] if i >= 0 else "-" for i in cell.model]
    models = tuple(sorted({lab for lab, n in zip(labels, counts) if n > 0}))
    which = np.array([models.index(lab) if lab in models else -1 for lab in labels], dtype=np.int64)
    per_model = np.zeros((cell.size, len(models)))
    on = which >= 0
    per_model[np.flatnonzero(on), which[on]] = 1.0
    workload = _workload(ev, cell)
    t = np.linspace(0.0, until, max(2, points))
    allocated = np.zeros((t.size, len(models)))
    fragmented = np.zeros((t.size, len(models)))
    i = 0
    for k, at in enumerate(t):
        while i < len(timeline) and timeline[i][0] <= at:
            _, launch, row = timeline[i]
            i += 1
            key = (int(row[0]), int(row[1]))
            if launch:
                m = int(row[2])
                req = np.asarray(row[3:3 + r], dtype=np.float64)
                dev = _devices(np.asarray(row[3 + r:-1], dtype=np.float64), slots[m] - held[m], float(req[c]), g)
                tasks[key] = (m, req, dev)
                used[m] += req
                held[m] += dev
            elif key in tasks:
                m, req, dev = tasks.pop(key)
                used[m] -= req
                held[m] -= dev
        free_dev = np.clip(slots - held, 0.0, 1.0)
        allocated[k] = np.clip(held, 0.0, 1.0).sum(axis=1) @ per_model
        if workload:
            free = capacity - used
            free[:, c] = free_dev.sum(axis=1)
            fragmented[k] = machine_fragmentation(free, free_dev, cell.model, c, workload) @ per_model
    return DeviceSeries(cell.resources[c], t, models, counts @ per_model, allocated, fragmented)


def _devices(named: np.ndarray, free: np.ndarray, amount: float, g: int) -> np.ndarray:
    """What a launch holds of each device: what it names (an architecture
    that places devices), else whole devices, the lowest-numbered free."""
    if named.size == g and named.any():
        return named
    out = np.zeros(g)
    if amount >= 1:
        out[np.flatnonzero(free >= 1 - EPS)[:int(round(amount))]] = 1.0
    elif amount > 0:
        fits = np.flatnonzero(free + EPS >= amount)
        if fits.size:
            out[fits[np.argmin(free[fits])]] = amount
    return out


def device_summary(series: DeviceSeries | None) -> dict[str, Any] | None:
    """summary.json's ``devices``: the run's means, cell-wide and per model."""
    if series is None:
        return None
    total = float(series.devices.sum())

    def block(devices: float, allocated: np.ndarray, fragmented: np.ndarray) -> dict[str, Any]:
        return {"devices": int(round(devices)),
                "allocated_mean": round(float(allocated.mean() / devices), 6) if devices else None,
                "unallocated_mean": round(float(devices - allocated.mean()), 4),
                "fragmented_mean": round(float(fragmented.mean()), 4),
                "fragmented_share_mean": round(float(fragmented.mean() / devices), 6) if devices else None}

    out = {"resource": series.resource, **block(total, series.allocated.sum(axis=1), series.fragmented.sum(axis=1))}
    out["by_model"] = {m: block(float(series.devices[i]), series.allocated[:, i], series.fragmented[:, i])
                       for i, m in enumerate(series.models)}
    return out
