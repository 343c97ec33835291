"""Device-aware placement: which machine, and which of its devices, for a
task that asks for devices (GPUs) whole or as a share of one.

``policy(cell, shape, n_tasks, rng, workload) -> (machines, devices)``:
``cell`` is the scheduler's local ``DeviceCell``, changed as tasks are
placed (resources and devices taken); ``machines`` [n] (-1: nothing fits
that task, and the ones after it are not tried either); ``devices`` the
device indices each placed task took. Randomness only from ``rng``
(ties between equally good machines are drawn, so schedulers with the
same view rarely pick the same machine). ``workload`` (the target
workload's shapes and shares) is read by the policies that need it.

The policies are the baselines and the proposal of Weng et al., ATC 2023,
as their simulator scores nodes (memory ignored there is checked here, as
every resource is, for feasibility):

- ``random_fit``: a feasible machine drawn uniformly; a share on a random
  device that has it.
- ``best_fit``: the machine left fullest: least normalised cpu and device
  capacity left after the task (each over the cell's largest machine).
- ``dot_product``: Tetris's alignment (Grandl et al., SIGCOMM 2014): the
  machine whose free resources, normalised, have the largest dot product
  with the task's demand. (The FGD simulator's DotProd keeps the smallest;
  the two are opposite heuristics: say which you compare.)
- ``gpu_packing``: share an already used device first (the tightest one),
  then free devices on a partly used machine (fewer is better), then a
  machine all of whose devices are free (fewer devices is better).
- ``gpu_clustering``: machines already running tasks of the same kind (a
  share, or k whole devices) first, then empty ones, then those with other
  kinds; fuller first within a class.
- ``fgd``: Fragmentation Gradient Descent: the machine and devices whose
  fragmentation (``fragmentation.machine_fragmentation``) grows least.

Except ``random_fit`` and ``fgd``, a share goes on the fitting device with
the least free (best fit), as the simulator's default device picker does;
whole devices are the lowest-numbered free ones everywhere.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from schedlab.schedulers.model.devices import EPS, DeviceAsk, choices, take
from schedlab.schedulers.placement.fragmentation import DeviceCell, Shape, Workload, feasible, machine_fragmentation

DevicePolicy = Callable[[DeviceCell, Shape, int, np.random.Generator, Workload], tuple[np.ndarray, list[np.ndarray]]]

# gpu_clustering's task kinds: 0 a share, k >= 1 k whole devices; kinds[m, kind] counts a machine's tasks.
KINDS = 9


def kind_of(ask: DeviceAsk) -> int:
    return 0 if ask.share else min(ask.whole, KINDS - 1)


def _best_device(row: np.ndarray, ask: DeviceAsk) -> np.ndarray:
    ways = choices(row, ask)
    if not ask.share:
        return ways[0]
    return min(ways, key=lambda d: (row[d[0]], int(d[0])))


def _pick(scores: np.ndarray, ok: np.ndarray, rng: np.random.Generator) -> int:
    """The best-scoring (highest) feasible machine, ties drawn; -1 when none is feasible."""
    if not ok.any():
        return -1
    s = np.where(ok, scores, -np.inf)
    top = np.flatnonzero(s >= s.max() - EPS)
    return int(top[0]) if top.size == 1 else int(rng.choice(top))


def _place(cell: DeviceCell, shape: Shape, m: int, devices: np.ndarray, kinds: np.ndarray | None = None) -> None:
    ask = shape.ask(cell.column)
    cell.devices[m] = take(cell.devices[m], devices, ask)
    cell.free[m] -= np.asarray(shape.request, dtype=np.float64)
    cell.free[m, cell.column] = cell.devices[m].sum()
    if kinds is not None and ask.amount > 0:
        kinds[m, kind_of(ask)] += 1


def _scored(score: Callable[[DeviceCell, Shape, np.ndarray], np.ndarray], kinds: np.ndarray | None = None) -> DevicePolicy:
    """A policy that scores every feasible machine (higher better) and puts
    the task there, a share on its best-fitting device (counting it in
    ``kinds`` when given)."""
    def policy(cell: DeviceCell, shape: Shape, n_tasks: int, rng: np.random.Generator,
               workload: Workload = ()) -> tuple[np.ndarray, list[np.ndarray]]:
        out = np.full(n_tasks, -1, dtype=np.int64)
        taken: list[np.ndarray] = []
        ask = shape.ask(cell.column)
        for i in range(n_tasks):
            ok = feasible(cell, shape)
            m = _pick(score(cell, shape, ok), ok, rng)
            if m < 0:
                break
            d = _best_device(cell.devices[m], ask)
            _place(cell, shape, m, d, kinds)
            out[i] = m
            taken.append(d)
        return out, taken
    return policy


def _random(cell: DeviceCell, shape: Shape, n_tasks: int, rng: np.random.Generator,
            workload: Workload = ()) -> tuple[np.ndarray, list[np.ndarray]]:
    out = np.full(n_tasks, -1, dtype=np.int64)
    taken: list[np.ndarray] = []
    for i in range(n_tasks):
        ok = np.flatnonzero(feasible(cell, shape))
        if ok.size == 0:
            break
        m = int(rng.choice(ok))
        ways = choices(cell.devices[m], shape.ask(cell.column))
        d = ways[int(rng.integers(len(ways)))]
        _place(cell, shape, m, d)
        out[i] = m
        taken.append(d)
    return out, taken


def _scale(cell: DeviceCell) -> np.ndarray:
    """Each resource's largest machine capacity (1 where none has any): the normaliser."""
    top = cell.capacity.max(axis=0) if cell.capacity.size else np.ones(cell.free.shape[1])
    return np.where(top > 0, top, 1.0)


def _best_fit_score(cell: DeviceCell, shape: Shape, ok: np.ndarray) -> np.ndarray:
    top = _scale(cell)
    req = np.asarray(shape.request, dtype=np.float64)
    cpu_left = (cell.free[:, 0] - req[0]) / top[0]
    dev_left = (cell.free[:, cell.column] - req[cell.column]) / top[cell.column]
    return -(0.5 * cpu_left + 0.5 * dev_left)


def _dot_product_score(cell: DeviceCell, shape: Shape, ok: np.ndarray) -> np.ndarray:
    top = _scale(cell)
    return (cell.free / top) @ (np.asarray(shape.request, dtype=np.float64) / top)


def _packing_score(cell: DeviceCell, shape: Shape, ok: np.ndarray) -> np.ndarray:
    """Three classes, best first: on used devices only (the tightest: least
    left on them), free devices of a partly used machine (fewer first), a
    machine all of whose devices are free (fewer devices first)."""
    ask = shape.ask(cell.column)
    out = np.zeros(cell.devices.shape[0])
    if ask.amount <= 0:
        return out
    counts = np.rint(cell.capacity[:, cell.column]).astype(np.int64)
    for m in np.flatnonzero(ok):
        row = cell.devices[m]
        if np.all(row[:counts[m]] >= 1 - EPS):
            out[m] = 1.0 - counts[m] / 1000.0
            continue
        d = _best_device(row, ask)
        fresh = int((row[d] >= 1 - EPS).sum())
        # Class 3 lies in (2, 3]: what the used devices have left is below 1.
        out[m] = 2.0 - fresh / 1000.0 if fresh else 3.0 - float(row[d].sum() - ask.per_device * len(d))
    return out


def clustering(kinds: np.ndarray) -> DevicePolicy:
    """``gpu_clustering`` over ``kinds`` [M, KINDS] (the machines' running
    tasks by kind, kept up to date by the policy as it places and by the
    caller as tasks end)."""
    def score(cell: DeviceCell, shape: Shape, ok: np.ndarray) -> np.ndarray:
        ask = shape.ask(cell.column)
        if ask.amount <= 0:
            return np.zeros(cell.devices.shape[0])
        k = kind_of(ask)
        mine, total = kinds[:, k], kinds.sum(axis=1)
        cls = np.where(total == 0, 1.0, np.where(mine == total, 3.0, np.where(mine > 0, 2.0, 0.0)))
        top = _scale(cell)[cell.column]
        return cls + 0.25 * (1.0 - cell.free[:, cell.column] / top)

    return _scored(score, kinds)


def fgd_choice(cell: DeviceCell, shape: Shape, workload: Workload, rng: np.random.Generator) -> tuple[int, np.ndarray, float]:
    """FGD's choice for one task: (machine, devices, fragmentation growth);
    machine -1 when nothing fits. Every feasible machine and every distinct
    way its devices can hold the task is tried; the least growth wins, ties
    drawn."""
    ok = np.flatnonzero(feasible(cell, shape))
    if ok.size == 0:
        return -1, np.zeros(0, dtype=np.int64), 0.0
    ask = shape.ask(cell.column)
    req = np.asarray(shape.request, dtype=np.float64)
    idx, after_dev, ways = _candidates(cell.devices, ok, ask)
    after_free = cell.free[idx] - req
    after_free[:, cell.column] = after_dev.sum(axis=1)
    before = machine_fragmentation(cell.free[ok], cell.devices[ok], cell.model[ok], cell.column, workload)
    after = machine_fragmentation(after_free, after_dev, cell.model[idx], cell.column, workload)
    growth = after - before[np.searchsorted(ok, idx)]
    best = np.flatnonzero(growth <= growth.min() + EPS)
    j = int(best[0]) if best.size == 1 else int(rng.choice(best))
    return int(idx[j]), ways[j], float(growth[j])


def _candidates(devices: np.ndarray, ok: np.ndarray, ask: DeviceAsk) -> tuple[np.ndarray, np.ndarray, list[np.ndarray]]:
    """Every (machine, device choice) of ``choices`` over the machines
    ``ok`` at once: the machines, their devices after the task, the device
    indices each takes."""
    rows = devices[ok]
    if ask.amount <= 0:
        return ok, rows.copy(), [np.zeros(0, dtype=np.int64)] * ok.size
    fits = rows + EPS >= ask.per_device
    if ask.share:
        # Devices with the same free amount are the same choice: one candidate each, so a machine's
        # chance in a tie does not grow with its number of alike devices.
        for g in range(1, rows.shape[1]):
            fits[:, g] &= ~np.any(fits[:, :g] & (rows[:, :g] == rows[:, g:g + 1]), axis=1)
        which, dev = np.nonzero(fits)
        after = rows[which].copy()
        after[np.arange(which.size), dev] = np.maximum(after[np.arange(which.size), dev] - ask.amount, 0.0)
        return ok[which], after, [dev[i:i + 1] for i in range(dev.size)]
    taken = fits & (np.cumsum(fits, axis=1) <= ask.whole)
    return ok, np.maximum(rows - taken, 0.0), [np.flatnonzero(t) for t in taken]


def fgd(cell: DeviceCell, shape: Shape, n_tasks: int, rng: np.random.Generator,
        workload: Workload = ()) -> tuple[np.ndarray, list[np.ndarray]]:
    out = np.full(n_tasks, -1, dtype=np.int64)
    taken: list[np.ndarray] = []
    for i in range(n_tasks):
        m, d, _ = fgd_choice(cell, shape, workload, rng)
        if m < 0:
            break
        _place(cell, shape, m, d)
        out[i] = m
        taken.append(d)
    return out, taken


SCORES: dict[str, Callable[[DeviceCell, Shape, np.ndarray], np.ndarray]] = {
    "best_fit": _best_fit_score,
    "dot_product": _dot_product_score,
    "gpu_packing": _packing_score,
}


def node_choices(policy: str, cell: DeviceCell, shape: Shape, ok: np.ndarray, rng: np.random.Generator,
                 workload: Workload = ()) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each machine of ``ok`` (indices, all feasible) scored by ``policy``
    (higher better) with the devices it would take there: for a scheduler
    that scores nodes itself and picks the best (a Kubernetes score
    plugin). FGD's score is minus the least fragmentation growth over the
    machine's device choices; random fit's a uniform draw."""
    ask = shape.ask(cell.column)
    if policy == "fgd":
        idx, after_dev, ways = _candidates(cell.devices, ok, ask)
        req = np.asarray(shape.request, dtype=np.float64)
        after_free = cell.free[idx] - req
        after_free[:, cell.column] = after_dev.sum(axis=1)
        before = machine_fragmentation(cell.free[ok], cell.devices[ok], cell.model[ok], cell.column, workload)
        growth = machine_fragmentation(after_free, after_dev, cell.model[idx], cell.column, workload) - before[np.searchsorted(ok, idx)]
        best = np.full(ok.size, np.inf)
        took: list[np.ndarray] = [np.zeros(0, dtype=np.int64)] * ok.size
        for j, m in enumerate(np.searchsorted(ok, idx).tolist()):
            if growth[j] < best[m] - EPS:
                best[m], took[m] = growth[j], ways[j]
        return -best, took
    if policy == "random_fit":
        took = []
        for m in ok.tolist():
            ways = choices(cell.devices[m], ask)
            took.append(ways[int(rng.integers(len(ways)))])
        return rng.random(ok.size), took
    mask = np.zeros(cell.devices.shape[0], dtype=bool)
    mask[ok] = True
    return SCORES[policy](cell, shape, mask)[ok], [_best_device(cell.devices[m], ask) for m in ok.tolist()]


POLICIES: dict[str, DevicePolicy] = {
    "random_fit": _random,
    "best_fit": _scored(_best_fit_score),
    "dot_product": _scored(_dot_product_score),
    "gpu_packing": _scored(_packing_score),
    "fgd": fgd,
}
