"""Device fragmentation as Weng et al. measure it ("Beware of Fragmentation:
Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent",
USENIX ATC 2023), and the cell view the device-aware policies read.

Fragmentation is relative to a *workload*: the shapes of tasks the cell
serves, each with its share of them (the paper's "target workload", its
popular task shapes). For one machine and one shape, the machine's free
device capacity that the shape cannot use is fragmented:

- all of it, when the shape cannot run there at all (another resource is
  short, its devices cannot hold the ask, the model is not one it allows)
  or asks for no device (a task without devices uses none of them);
- otherwise the free capacity of the devices that each have less free
  than the shape needs on one device (less than its share, or less than a
  whole device for a whole-device shape).

The machine's fragmentation is the expectation over the workload's shapes,
and the cell's the sum over machines. Fragmentation Gradient Descent
places each task where, with the devices it takes, fragmentation grows
least (``device_policies.fgd``).

Unlike the paper's simulator, every resource other than the devices is
checked for "can run" (cpu and memory and any other), not cpu alone: a
task short of memory cannot use a machine's GPUs either.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.model.devices import EPS, DeviceAsk, device_fits, model_ok


@dataclass(frozen=True)
class Shape:
    """A task shape: its request over every resource (the device column
    holds its device amount) and the device models it allows (None: any)."""

    request: tuple[float, ...]
    models: frozenset[int] | None = None

    def ask(self, column: int) -> DeviceAsk:
        return DeviceAsk(float(self.request[column]), self.models)


Workload = Sequence[tuple[Shape, float]]  # shapes and their shares (summing to 1)


@dataclass
class DeviceCell:
    """What a device-aware policy sees: every machine's free amount of each
    resource (``free`` [M, R], the device resource's column its devices'
    sum), its capacity, its devices' free fractions (``devices`` [M, G])
    and its device model (``model`` [M], an index). Policies change the
    view they are given as they place (a scheduler's local copy)."""

    free: np.ndarray
    capacity: np.ndarray
    devices: np.ndarray
    model: np.ndarray
    column: int  # the device resource's column in free

    def copy(self) -> DeviceCell:
        return DeviceCell(self.free.copy(), self.capacity, self.devices.copy(), self.model, self.column)


def others_fit(free: np.ndarray, request: np.ndarray, column: int) -> np.ndarray:
    """Mask over rows of ``free`` holding ``request`` in every resource but the devices'."""
    ok = free + EPS >= request
    ok[..., column] = True
    return np.asarray(ok.all(axis=-1))


def feasible(cell: DeviceCell, shape: Shape) -> np.ndarray:
    """Mask over machines that can run a task of ``shape`` now."""
    req = np.asarray(shape.request, dtype=np.float64)
    ask = shape.ask(cell.column)
    return others_fit(cell.free, req, cell.column) & device_fits(cell.devices, ask) & model_ok(cell.model, ask)


def machine_fragmentation(free: np.ndarray, devices: np.ndarray, model: np.ndarray, column: int,
                          workload: Workload) -> np.ndarray:
    """Each row's expected fragmented device capacity under ``workload``
    (rows: machines, or candidate states of machines); >= 0 and at most
    the row's free device capacity. Rows alike (a cell's idle machines of
    one kind) are measured once."""
    if free.shape[0] > 32:
        rows = np.ascontiguousarray(np.concatenate([free, devices, np.asarray(model, dtype=np.float64)[:, None]], axis=1))
        # One opaque value per row: sorting those is several times cheaper than np.unique(axis=0).
        keys = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
        _, first, index = np.unique(keys, return_index=True, return_inverse=True)
        distinct = rows[first]
        if distinct.shape[0] < free.shape[0]:
            r, g = free.shape[1], devices.shape[1]
            once = _by_shapes(distinct[:, :r], distinct[:, r:r + g], distinct[:, -1].astype(np.int64), column, workload)
            return once[index.reshape(-1)]
    return _by_shapes(free, devices, model, column, workload)


CHUNK = 2048  # rows measured together: [rows, shapes, devices] booleans stay a few tens of MB


def _by_shapes(free: np.ndarray, devices: np.ndarray, model: np.ndarray, column: int, workload: Workload) -> np.ndarray:
    """``_fragmentation`` with every shape at once ([rows, shapes] arrays,
    rows in chunks): the same numbers, without a Python loop over the
    workload's shapes (a trace's target workload has a hundred and more)."""
    if not workload:
        return np.zeros(free.shape[0])
    req = np.array([s.request for s, _ in workload], dtype=np.float64)
    p = np.array([w for _, w in workload], dtype=np.float64)
    amount = req[:, column]
    none = amount <= 0
    per = np.where(amount < 1, amount, 1.0)
    need = np.where(amount < 1, 1.0, np.rint(amount))
    others = [i for i in range(req.shape[1]) if i != column]
    models = sorted({int(m) for m in np.unique(model)})
    allowed = np.array([[s.models is None or m in s.models for m in models] for s, _ in workload], dtype=bool)
    where = np.searchsorted(models, model)
    out = np.empty(free.shape[0])
    for lo in range(0, free.shape[0], CHUNK):
        f, d = free[lo:lo + CHUNK], devices[lo:lo + CHUNK]
        total = d.sum(axis=1)
        fit = np.all(f[:, None, others] + EPS >= req[None, :, others], axis=2)
        ge = d[:, None, :] + EPS >= per[None, :, None]
        usable = np.einsum("csg,cg->cs", ge, d)
        runs = fit & (ge.sum(axis=2) >= need[None, :]) & allowed[:, where[lo:lo + CHUNK]].T
        frag = np.where(runs & ~none[None, :], total[:, None] - usable, total[:, None])
        out[lo:lo + CHUNK] = frag @ p
    return out


def _fragmentation(free: np.ndarray, devices: np.ndarray, model: np.ndarray, column: int, workload: Workload) -> np.ndarray:
    """The definition, shape by shape: the reference ``_by_shapes`` is tested against."""
    total = devices.sum(axis=-1)
    out = np.zeros(total.shape)
    for shape, p in workload:
        ask = shape.ask(column)
        if ask.amount <= 0:
            out += p * total
            continue
        runs = (others_fit(free, np.asarray(shape.request, dtype=np.float64), column) & device_fits(devices, ask)
                & model_ok(model, ask))
        unusable = np.where(devices + EPS < ask.per_device, devices, 0.0).sum(axis=-1)
        out += p * np.where(runs, unusable, total)
    return out


def cell_fragmentation(cell: DeviceCell, workload: Workload) -> float:
    """The cell's fragmented device capacity (in devices)."""
    return float(machine_fragmentation(cell.free, cell.devices, cell.model, cell.column, workload).sum())


def workload_of(requests: Sequence[Sequence[float]], models: Sequence[frozenset[int] | None] | None = None,
                weights: Sequence[float] | None = None) -> list[tuple[Shape, float]]:
    """The workload (shapes and shares) of a list of task requests: each
    distinct shape with its share of the (weighted) count."""
    counts: dict[Shape, float] = {}
    for i, r in enumerate(requests):
        s = Shape(tuple(float(x) for x in r), None if models is None else models[i])
        counts[s] = counts.get(s, 0.0) + (1.0 if weights is None else float(weights[i]))
    total = sum(counts.values())
    return [(s, c / total) for s, c in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].request))] if total else []


def typical(workload: Workload, cover: float = 0.95) -> list[tuple[Shape, float]]:
    """The workload's most popular shapes, most popular first, until they
    cover ``cover`` of it, their shares scaled to sum to 1: the paper's
    target workload (its simulator keeps the shapes covering 95% of pods)."""
    ordered = sorted(workload, key=lambda sp: -sp[1])
    kept, total = [], 0.0
    for s, p in ordered:
        if total >= cover - 1e-12:
            break
        kept.append((s, p))
        total += p
    return [(s, p / total) for s, p in kept] if total else []
