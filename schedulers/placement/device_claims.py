"""Device placement on a scheduler's copy of a cell with device columns.

An architecture that places devices sees the cell as ``cluster.with_devices``
widens it: the declared resources, then one column per device slot (each
device's free fraction). A claim is then a row of that width: the task's
request with, in the columns of the devices it took, what it takes of each
(a share, or 1 for a whole device). A commit rule, a host's overcommit
check and the invariants' replay compare such rows column by column, so
they are device-exact without knowing what a device is; this module is
where the device columns get filled: a device policy
(``device_policies.POLICIES``) picks the machine and its devices.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.model.cluster import Cell
from schedlab.schedulers.model.devices import layout
from schedlab.schedulers.model.workload import JobClass, task_rate
from schedlab.schedulers.placement.device_policies import POLICIES
from schedlab.schedulers.placement.fragmentation import DeviceCell, Shape, Workload, feasible, typical, workload_of

# Device policies a scheduler can run on its copy: gpu_clustering is left
# out, as it reads each machine's running tasks by kind, which a copy of
# free amounts does not hold.
DEVICE_POLICIES = tuple(POLICIES)


@dataclass(frozen=True)
class DeviceView:
    """What a scheduler that places devices knows of its cell besides the
    free amounts: the device resource's column, where the device columns
    begin, each machine's capacity of the declared resources and device
    model (-1: none), the models' names, and the target workload FGD
    measures fragmentation against (the scenario's task shapes)."""

    column: int
    declared: int
    capacity: np.ndarray  # [M, declared]
    model: np.ndarray  # [M]
    models: tuple[str, ...]
    workload: Workload
    policy: str = "best_fit"

    def allowed(self, names: Sequence[str]) -> frozenset[int] | None:
        """The model indices of ``names`` (None: any model)."""
        return frozenset(self.models.index(n) for n in names if n in self.models) if names else None

    def asks(self, request: np.ndarray) -> bool:
        return bool(request[self.column] > 0)


def device_view(cell: Cell, classes: Sequence[JobClass], policy: str = "best_fit") -> DeviceView | None:
    """The view of a cell widened by ``with_devices`` (None: it has no device columns)."""
    if cell.device is None or not cell.device_slots:
        return None
    return _view(cell, classes, policy)


def _view(cell: Cell, classes: Sequence[JobClass], policy: str) -> DeviceView:
    assert cell.device is not None
    r = cell.declared
    return DeviceView(cell.device, r, cell.capacity[:, :r].copy(), cell.model.copy(), cell.models,
                      target_workload(classes, cell), policy)


def counted_view(cell: Cell, classes: Sequence[JobClass], policy: str) -> DeviceView | None:
    """The view of a cell whose device resource an architecture counts (not
    widened): it holds no device columns, so ``place_counted`` lays each
    machine's free whole devices out afresh (None: no device resource)."""
    return None if cell.device is None else _view(cell, classes, policy)  # unwidened: declared is its width


def place_counted(view: DeviceView, free: np.ndarray, request: np.ndarray, n_tasks: int,
                  rng: np.random.Generator) -> np.ndarray:
    """``place`` for an architecture that counts devices, whole ones only:
    a machine's free count of the device resource is that many free whole
    devices (which ones is immaterial when every ask is whole), so the
    device policy scores machines as it would with the devices in view.
    ``free`` [M, R] is changed as ``place`` changes its work (what the tasks
    take); returns each task's machine (-1: it fit nowhere)."""
    counts = np.floor(free[:, view.column] + 1e-9).astype(np.int64)
    work = np.hstack([free, layout(np.maximum(counts, 0).tolist())])
    padded = np.concatenate([np.asarray(request, dtype=np.float64), np.zeros(work.shape[1] - free.shape[1])])
    machines, _rows = place(view, work, padded, (), n_tasks, rng)
    free[:] = work[:, :free.shape[1]]
    return machines


def target_workload(classes: Sequence[JobClass], cell: Cell, cover: float = 0.95) -> list[tuple[Shape, float]]:
    """The scenario's task shapes with their expected shares of the tasks
    arriving (a class's rate times its mean tasks per job, its device ask's
    values by their weights; other resources at their means), cut to the
    most popular ``cover`` of them as the paper's target workload is."""
    models = cell.models
    requests: list[list[float]] = []
    allowed: list[frozenset[int] | None] = []
    weights: list[float] = []
    for jc in classes:
        if jc.trace and jc.trace[0].request is not None:
            # A replayed list: its jobs' own shapes, each at its share of the list's rate.
            span = max(jc.trace[-1].submit - jc.trace[0].submit, 1.0)
            for tj in jc.trace:
                requests.append([float(x) for x in (tj.request or ())])
                allowed.append(frozenset(models.index(m) for m in tj.models if m in models) if tj.models else None)
                weights.append(tj.tasks / span)
            continue
        rate = task_rate(jc)
        base = [float(d.expected()) for d in jc.request]
        dev = jc.request[cell.device] if cell.device is not None else None
        if dev is not None and dev.kind == "empirical":
            w = np.asarray(dev.weights or [1.0] * len(dev.values), dtype=np.float64)
            values = list(zip(dev.values, w / w.sum()))
        else:
            values = [(base[cell.device] if cell.device is not None else 0.0, 1.0)]
        for v, p in values:
            req = list(base)
            if cell.device is not None:
                req[cell.device] = float(v)
            requests.append(req)
            allowed.append(frozenset(models.index(m) for m in jc.models) if jc.models else None)
            weights.append(rate * float(p))
    return typical(workload_of(requests, allowed, weights), cover)


def fits(view: DeviceView, free: np.ndarray, request: np.ndarray, models: Sequence[str]) -> np.ndarray:
    """Mask over machines (rows of ``free`` [M, W]) that can hold one task
    asking ``request`` now, its devices included (a machine's sum of a
    device resource can hold a share no single device can)."""
    r = view.declared
    cell = DeviceCell(free[:, :r], view.capacity, free[:, r:], view.model, view.column)
    return feasible(cell, Shape(tuple(float(x) for x in request[:r]), view.allowed(models)))


def place(view: DeviceView, work: np.ndarray, request: np.ndarray, models: Sequence[str], n_tasks: int,
          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Place ``n_tasks`` tasks asking ``request`` (declared columns; its
    device columns 0) on ``work`` [M, W] (changed: what they take is
    subtracted) by the view's device policy. Returns each task's machine
    (-1: it fit nowhere, nor do the ones after it) and the claim rows of
    the placed ones [k, W]."""
    r = view.declared
    cell = DeviceCell(work[:, :r].copy(), view.capacity, work[:, r:].copy(), view.model, view.column)
    shape = Shape(tuple(float(x) for x in request[:r]), view.allowed(models))
    machines, taken = POLICIES[view.policy](cell, shape, n_tasks, rng, view.workload)
    ask = shape.ask(view.column)
    rows = np.tile(np.asarray(request, dtype=np.float64), (len(taken), 1))
    for i, devices in enumerate(taken):
        rows[i, r + devices] = ask.per_device
    work[:, :r], work[:, r:] = cell.free, cell.devices
    return machines, rows
