"""Placement policies: choose a machine for each task of a job.

Contract shared by every policy (and by user policies registered here)::

    policy(free, request, n_tasks, rng) -> machines

``free`` is the caller's *local copy* of free resources, shape [M, R]; the
policy subtracts what it places from it, so consecutive calls see their own
earlier choices. ``machines`` has length ``n_tasks``: a machine index per task,
or -1 where nothing fits. Policies never over-fill a row of ``free``.
Randomness only through ``rng``.

Most policies are plain functions. ``next_fit`` and ``next_k_fit`` remember
where they placed last (see ``schedlab.schedulers.placement.cursor``): they
are instances of a small picklable class, so every scheduler actor unpickles
its own copy and keeps its own cursor.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from schedlab.schedulers.model.resources import EPS
from schedlab.schedulers.placement.cursor import NextFit, RoundRobin

PlacementPolicy = Callable[[np.ndarray, np.ndarray, int, np.random.Generator], np.ndarray]


def slots(free: np.ndarray, request: np.ndarray) -> np.ndarray:
    """How many copies of ``request`` each machine can still hold."""
    need = request > 0
    if not need.any():
        # A zero request fits anywhere; cap so arithmetic stays finite.
        return np.full(free.shape[0], 1 << 30, dtype=np.int64)
    per_dim = np.floor((free[:, need] + EPS) / request[need])
    return np.maximum(per_dim.min(axis=1), 0).astype(np.int64)


def _commit_counts(free: np.ndarray, request: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Subtract ``counts[m]`` copies of request from free, return the per-task list."""
    free -= counts[:, None] * request[None, :]
    return np.repeat(np.arange(free.shape[0]), counts)


def _pad(placed: np.ndarray, n_tasks: int) -> np.ndarray:
    out = np.full(n_tasks, -1, dtype=np.int64)
    out[: placed.size] = placed
    return out


def first_fit(free: np.ndarray, request: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """Each task on the lowest-numbered machine it fits on (packs the front)."""
    s = slots(free, request)
    before = np.cumsum(s) - s
    counts = np.clip(n_tasks - before, 0, s)
    return _pad(_commit_counts(free, request, counts), n_tasks)


def random_first_fit(free: np.ndarray, request: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """Each task on a machine drawn uniformly from those it fits on.

    This is the Omega simulator's default: independent random choices spread a
    job's tasks, so concurrent schedulers collide only by chance.

    Each task draws an index into the machines it still fits on, in machine
    order (one ``rng.integers(len)`` per task). The candidates are found
    once and a machine dropped from them when full, instead of searching all
    M machines per task: same draws, same result."""
    s = slots(free, request)
    candidates = np.flatnonzero(s)
    chosen: list[int] = []
    for _ in range(n_tasks):
        if candidates.size == 0:
            break
        i = int(rng.integers(candidates.size))
        m = int(candidates[i])
        chosen.append(m)
        s[m] -= 1
        if s[m] == 0:
            candidates = np.delete(candidates, i)
    out = np.full(n_tasks, -1, dtype=np.int64)
    if chosen:
        out[: len(chosen)] = chosen
        # One subtraction per task, in task order, as placing them one by one does.
        np.subtract.at(free, out[: len(chosen)], request)
    return out


def _leftover(free: np.ndarray, request: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """Room each machine would have left after one more ``request``,
    normalised per dimension (by ``scale``) so cpu and memory weigh alike."""
    return ((free - request) / scale).sum(axis=1)


def _scale(free: np.ndarray) -> np.ndarray:
    return np.maximum(free.max(axis=0), EPS)


def _scored(free: np.ndarray, request: np.ndarray, n_tasks: int, sign: float) -> np.ndarray:
    scale = _scale(free)
    out = np.full(n_tasks, -1, dtype=np.int64)
    s = slots(free, request)
    for t in range(n_tasks):
        ok = s > 0
        if not ok.any():
            break
        score = np.where(ok, sign * _leftover(free, request, scale), np.inf)
        m = int(np.argmin(score))
        s[m] -= 1
        free[m] -= request
        out[t] = m
    return out


def best_fit(free: np.ndarray, request: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """Each task where it leaves the least free (packs tightly)."""
    return _scored(free, request, n_tasks, 1.0)


def worst_fit(free: np.ndarray, request: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """Each task where it leaves the most free (spreads load)."""
    return _scored(free, request, n_tasks, -1.0)


def almost_worst_fit(free: np.ndarray, request: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """Each task where it leaves the second most free; on the emptiest
    machine only when that is the only one it fits on.

    The classic "almost worst fit" (Johnson 1974): it spreads load nearly as
    worst_fit does, yet keeps the emptiest machine free for a big task, which
    in one dimension lifts its worst case from worst fit's 2 to first fit's
    1.7 times optimal. Same leftover measure as best_fit and worst_fit; ties
    go to the lowest index."""
    scale = _scale(free)
    out = np.full(n_tasks, -1, dtype=np.int64)
    s = slots(free, request)
    for t in range(n_tasks):
        ok = s > 0
        if not ok.any():
            break
        score = np.where(ok, _leftover(free, request, scale), -np.inf)
        emptiest = int(np.argmax(score))
        score[emptiest] = -np.inf
        m = int(np.argmax(score)) if np.count_nonzero(ok) > 1 else emptiest
        s[m] -= 1
        free[m] -= request
        out[t] = m
    return out


# next_fit and next_k_fit carry a cursor. These registered instances are the
# templates run_scenario ships: each scheduler actor unpickles its own copy.
# Two schedulers in ONE process that look the same name up would share one
# cursor, so in-process code wanting independent cursors builds its own
# NextFit(k) per scheduler.
next_fit = NextFit(1)
next_k_fit = NextFit(3)
round_robin = RoundRobin()

PLACEMENT_POLICIES: dict[str, PlacementPolicy] = {
    "random_first_fit": random_first_fit,
    "first_fit": first_fit,
    "best_fit": best_fit,
    "worst_fit": worst_fit,
    "almost_worst_fit": almost_worst_fit,
    "next_fit": next_fit,
    "next_k_fit": next_k_fit,
    "round_robin": round_robin,
}


def register_policy(name: str, policy: PlacementPolicy) -> None:
    """Make a user policy selectable by name from a scenario.

    Register before the run starts. The driver resolves names to functions and
    hands the function itself to each scheduler actor (Ray pickles it by
    value), so a policy defined in a scenario script works on every node."""
    PLACEMENT_POLICIES[name] = policy


def get_policy(name: str) -> PlacementPolicy:
    try:
        return PLACEMENT_POLICIES[name]
    except KeyError:
        raise KeyError(f"unknown placement policy {name!r}; known: {sorted(PLACEMENT_POLICIES)}") from None
