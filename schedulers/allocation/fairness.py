"""Allocation math: how much of a shared pool each user (framework, role) gets.

Pure functions over numpy arrays (no Ray, no clock, no I/O, no randomness).
Shapes: ``R`` resources (the scenario's ``[cell] resources``, in order),
``U`` users.

Two families:

* **Task allocators** hand out *whole tasks* of a fixed per-user demand
  vector from a multi-resource capacity: :func:`drf` (Dominant Resource
  Fairness, Ghodsi et al., NSDI 2011) and :func:`strict_priority`. They return
  an ``int64`` array ``tasks[U]``; user ``u`` uses ``tasks[u] * demands[u]``.
* **Divisible shares** of one resource: :func:`weighted_fair_share`
  (weighted max-min by water-filling) and :func:`max_min_fair`. They return
  ``float64`` amounts.

Fit checks use the same float slack as placement (``resources.EPS``): a task
fits when ``remaining + EPS >= demand`` in every resource, where ``remaining``
is recomputed as ``capacity - tasks @ demands`` (no accumulated drift), so
usage never exceeds ``capacity + EPS`` in any resource.

There is deliberately no single policy registry here: DRF takes weights,
strict priority takes priorities, and the divisible shares take scalars;
forcing one signature would hide that. A caller (e.g. the Mesos allocator)
can wrap the one it needs.
"""
from __future__ import annotations

import numpy as np

from schedlab.schedulers.model.resources import EPS

__all__ = [
    "dominant_shares",
    "drf",
    "max_min_fair",
    "strict_priority",
    "task_dominant_shares",
    "weighted_fair_share",
]

# Two dominant shares closer than this are a tie (broken by lowest index).
# Float shares that are equal in exact arithmetic (12/18 vs 6/9) can differ
# in the last bits; without a tolerance the tie-break would depend on rounding.
SHARE_TIE_TOL = 1e-12


# --------------------------------------------------------------------- checks
def _as_capacity(capacity: np.ndarray) -> np.ndarray:
    cap = np.asarray(capacity, dtype=np.float64)
    if cap.ndim != 1:
        raise ValueError(f"capacity must be 1-D [R], got shape {cap.shape}")
    if np.any(~np.isfinite(cap)) or np.any(cap < 0):
        raise ValueError("capacity must be finite and >= 0")
    return cap


def _as_demands(demands: np.ndarray, n_res: int) -> np.ndarray:
    d = np.asarray(demands, dtype=np.float64)
    if d.ndim != 2 or d.shape[1] != n_res:
        raise ValueError(f"demands must be [U, {n_res}], got shape {d.shape}")
    if np.any(~np.isfinite(d)) or np.any(d < 0):
        raise ValueError("demands must be finite and >= 0")
    return d


def _as_max_tasks(max_tasks: np.ndarray | None, n_users: int) -> np.ndarray:
    """Per-user task cap as float64 (``inf`` = unlimited)."""
    if max_tasks is None:
        return np.full(n_users, np.inf)
    m = np.asarray(max_tasks, dtype=np.float64)
    if m.shape != (n_users,):
        raise ValueError(f"max_tasks must be [{n_users}], got shape {m.shape}")
    if np.any(np.isnan(m)) or np.any(m < 0):
        raise ValueError("max_tasks must be >= 0 (inf for unlimited)")
    return np.floor(m)


def _as_weights(weights: np.ndarray | None, n_users: int) -> np.ndarray:
    if weights is None:
        return np.ones(n_users)
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (n_users,):
        raise ValueError(f"weights must be [{n_users}], got shape {w.shape}")
    if np.any(~np.isfinite(w)) or np.any(w <= 0):
        raise ValueError("weights must be finite and > 0")
    return w


def _check_bounded(demands: np.ndarray, max_tasks: np.ndarray) -> None:
    zero = ~np.any(demands > 0, axis=1)
    unbounded = zero & np.isinf(max_tasks)
    if unbounded.any():
        raise ValueError(
            f"users {np.flatnonzero(unbounded).tolist()} demand nothing per task "
            "and have no max_tasks: their allocation would be unbounded"
        )


# ------------------------------------------------------------------- DRF
def task_dominant_shares(capacity: np.ndarray, demands: np.ndarray) -> np.ndarray:
    """Dominant share of *one* task of each user: ``max_r demands[u, r] / capacity[r]``.

    Resources with zero capacity are ignored when the user demands none of
    them; a positive demand on a zero-capacity resource gives ``inf`` (such a
    task never fits).
    """
    cap = _as_capacity(capacity)
    d = _as_demands(demands, cap.size)
    with np.errstate(divide="ignore", invalid="ignore"):
        frac = np.where(d > 0, d / np.where(cap > 0, cap, 1.0), 0.0)
    frac = np.where((d > 0) & (cap <= 0), np.inf, frac)
    return frac.max(axis=1, initial=0.0)


def dominant_shares(
    capacity: np.ndarray,
    demands: np.ndarray,
    tasks: np.ndarray,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Weighted dominant share of each user holding ``tasks[u]`` tasks.

    ``max_r tasks[u] * demands[u, r] / capacity[r]``, divided by ``weights[u]``
    (default 1). A user with zero tasks has share 0. Shape ``[U]``, float64.
    """
    t = np.asarray(tasks, dtype=np.float64)
    per_task = task_dominant_shares(capacity, demands)
    w = _as_weights(weights, per_task.size)
    if t.shape != per_task.shape:
        raise ValueError(f"tasks must be [{per_task.size}], got shape {t.shape}")
    with np.errstate(invalid="ignore"):
        shares = np.where(t > 0, t * per_task, 0.0)
    return shares / w


def drf(
    capacity: np.ndarray,
    demands: np.ndarray,
    max_tasks: np.ndarray | None = None,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Dominant Resource Fairness by progressive filling in whole tasks.

    As in Ghodsi et al. (NSDI 2011), Algorithm 1, with weights: repeatedly
    pick the user with the lowest weighted dominant share
    (:func:`dominant_shares`) among users whose next task still fits in the
    remaining capacity and who are below ``max_tasks``; give it one task.
    Stop when no such user is left.

    Contract:

    * ``capacity`` [R] >= 0; ``demands`` [U, R] >= 0 (one task of user u);
      ``max_tasks`` [U] (``None`` or ``inf`` = unlimited); ``weights`` [U] > 0
      (default all 1). A user demanding nothing per task must have a finite
      ``max_tasks`` (else ``ValueError``); it simply receives ``max_tasks``.
    * Ties (shares within ``SHARE_TIE_TOL``) go to the lowest user index, so
      the result is deterministic.
    * Returns ``tasks`` [U] int64 with ``tasks <= max_tasks`` and
      ``tasks @ demands <= capacity + EPS``.
    * Pareto-efficient in whole tasks: at return, every user either reached
      its ``max_tasks`` or its next task does not fit in what is left.

    Unlike the paper's pseudocode, which stops at the first lowest-share user
    whose task does not fit, a blocked user is skipped and the others keep
    filling (the paper's text and its Mesos allocator behave this way).
    Remaining capacity only shrinks, so a blocked user stays blocked.
    """
    cap = _as_capacity(capacity)
    d = _as_demands(demands, cap.size)
    n_users = d.shape[0]
    cap_tasks = _as_max_tasks(max_tasks, n_users)
    w = _as_weights(weights, n_users)
    _check_bounded(d, cap_tasks)

    tasks = np.zeros(n_users, dtype=np.int64)
    per_task = task_dominant_shares(cap, d) / w  # weighted share of one task
    # Zero-demand users take nothing from anyone: give them their cap up front.
    zero = ~np.any(d > 0, axis=1)
    tasks[zero] = cap_tasks[zero].astype(np.int64)
    active = ~zero & (cap_tasks > 0)
    used = np.zeros_like(cap)

    while active.any():
        idx = np.flatnonzero(active)
        shares = tasks[idx] * per_task[idx]
        best = shares.min()
        # Lowest index among (near-)minimal shares.
        u = int(idx[np.flatnonzero(shares <= best + SHARE_TIE_TOL)[0]])
        remaining = cap - used
        if np.all(remaining + EPS >= d[u]):
            tasks[u] += 1
            used = tasks.astype(np.float64) @ d  # recompute: no drift
            if tasks[u] >= cap_tasks[u]:
                active[u] = False
        else:
            active[u] = False
    return tasks


# ------------------------------------------------------------ strict priority
def strict_priority(
    capacity: np.ndarray,
    demands: np.ndarray,
    priority: np.ndarray,
    max_tasks: np.ndarray | None = None,
) -> np.ndarray:
    """Whole tasks by strict priority: higher ``priority`` users go first.

    Users are served in order of decreasing ``priority`` (equal priorities:
    lowest user index first). Each takes as many whole tasks as fit in what
    is left, up to its ``max_tasks`` (``None``/``inf`` = unlimited), before
    the next user gets anything. A lower-priority user may still receive
    tasks when a higher one is blocked (its task no longer fits) — small
    tasks back-fill around big ones.

    Returns ``tasks`` [U] int64 with ``tasks @ demands <= capacity + EPS``.
    A user demanding nothing per task must have a finite ``max_tasks``.
    """
    cap = _as_capacity(capacity)
    d = _as_demands(demands, cap.size)
    n_users = d.shape[0]
    prio = np.asarray(priority, dtype=np.float64)
    if prio.shape != (n_users,) or np.any(np.isnan(prio)):
        raise ValueError(f"priority must be [{n_users}] without NaN, got shape {prio.shape}")
    cap_tasks = _as_max_tasks(max_tasks, n_users)
    _check_bounded(d, cap_tasks)

    tasks = np.zeros(n_users, dtype=np.int64)
    used = np.zeros_like(cap)
    for u in np.argsort(-prio, kind="stable"):
        need = d[u] > 0
        if need.any():
            remaining = cap - used
            fit = np.floor((remaining[need] + EPS) / d[u, need]).min()
            k = min(max(fit, 0.0), cap_tasks[u])
        else:
            k = cap_tasks[u]
        tasks[u] = int(k)
        used = tasks.astype(np.float64) @ d
    return tasks


# ----------------------------------------------------- divisible, one resource
def weighted_fair_share(
    capacity: float,
    demands: np.ndarray,
    weights: np.ndarray,
) -> np.ndarray:
    """Weighted max-min fair split of one divisible resource (water-filling).

    Finds the level ``lam`` with ``alloc[u] = min(demands[u], weights[u] * lam)``
    and ``sum(alloc) = capacity``; if total demand fits, everyone gets its
    demand.

    Contract: ``capacity >= 0``, ``demands`` [U] >= 0 (``inf`` allowed:
    unlimited), ``weights`` [U] > 0. Returns float64 [U] with
    ``alloc <= demands``, ``sum(alloc) <= capacity`` (up to rounding),
    work conservation (if some user gets less than its demand, the whole
    capacity is handed out) and, among users below their demand, allocations
    proportional to their weights.
    """
    cap = float(capacity)
    if not np.isfinite(cap) or cap < 0:
        raise ValueError("capacity must be finite and >= 0")
    dem = np.asarray(demands, dtype=np.float64)
    if dem.ndim != 1 or np.any(np.isnan(dem)) or np.any(dem < 0):
        raise ValueError("demands must be 1-D, >= 0 (inf allowed)")
    w = _as_weights(weights, dem.size)

    alloc = np.zeros_like(dem)
    if np.isfinite(dem).all() and dem.sum() <= cap:
        alloc[:] = dem
        return alloc
    remaining = cap
    weight_left = w.sum()
    order = np.argsort(dem / w, kind="stable")
    for pos, u in enumerate(order):
        fair = remaining * w[u] / weight_left
        if dem[u] <= fair:
            alloc[u] = dem[u]
            remaining -= dem[u]
            weight_left -= w[u]
            continue
        # Everyone from here on is capped by the water level, not by demand.
        rest = order[pos:]
        alloc[rest] = remaining * w[rest] / w[rest].sum()
        break
    return alloc


def max_min_fair(capacity: float, demands: np.ndarray) -> np.ndarray:
    """Max-min fair split of one divisible resource: :func:`weighted_fair_share`
    with equal weights."""
    dem = np.asarray(demands, dtype=np.float64)
    return weighted_fair_share(capacity, dem, np.ones(dem.shape[-1] if dem.ndim else 0))
