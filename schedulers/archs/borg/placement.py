"""Borg's placement: feasibility, then scoring, made fast.

* Feasibility: a machine is feasible when the task fits its free resources
  and it is ``eligible`` (machine attributes / label constraints, machine up).
* Scoring (higher is better), on each candidate's normalised leftover
  ``L = (free - request) / capacity`` after placing one task:
  ``best_fit`` packs (-mean L), ``worst_fit`` spreads like E-PVM (+mean L),
  ``hybrid`` keeps leftovers balanced across resources so less of one is
  stranded behind another that ran out (-(max L - min L) - mean L / 4).
* Relaxed randomization: only ``sample`` feasible machines, drawn at random,
  are scored (Borg examines machines in random order until it has enough
  feasible ones).
* Equivalence classes: a job's tasks share one request and one set of
  constraints, so feasibility and scoring are computed once per job and only
  the chosen machine is re-scored after each task.
* Rack spreading (``spread``): at most ceil(tasks / racks) of a job's tasks
  per rack, Borg's anti-affinity for service jobs.

``place_job_naive`` is the textbook loop (every task scores every machine),
kept as the baseline the speed-up is measured against (scripts/bench_borg.py).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.model.resources import EPS

SCORING = ("best_fit", "worst_fit", "hybrid")


def score(leftover: np.ndarray, capacity: np.ndarray, policy: str) -> np.ndarray:
    left = leftover / np.where(capacity > 0, capacity, 1.0)
    if policy == "best_fit":
        return -left.mean(axis=1)
    if policy == "worst_fit":
        return left.mean(axis=1)
    if policy == "hybrid":
        return -(left.max(axis=1) - left.min(axis=1)) - left.mean(axis=1) / 4
    raise ValueError(f"unknown scoring policy {policy!r}; known: {', '.join(SCORING)}")


@dataclass(frozen=True)
class PlacementParams:
    policy: str = "best_fit"
    sample: int | None = None  # relaxed randomization: score at most this many feasible machines
    spread: bool = False  # rack anti-affinity


def feasible(free: np.ndarray, request: np.ndarray, eligible: np.ndarray | None = None) -> np.ndarray:
    ok = np.all(free + EPS >= request, axis=1)
    return ok if eligible is None else ok & eligible


def place_job(free: np.ndarray, capacity: np.ndarray, request: np.ndarray, n_tasks: int, params: PlacementParams,
              rng: np.random.Generator, eligible: np.ndarray | None = None, racks: np.ndarray | None = None) -> np.ndarray:
    """A machine per task (-1 where none is feasible); ``free`` is updated."""
    out = np.full(n_tasks, -1, dtype=np.int64)
    cand = np.flatnonzero(feasible(free, request, eligible))
    if cand.size == 0 or n_tasks == 0:
        return out
    if params.sample and cand.size > params.sample:  # None or 0: score every feasible machine
        cand = rng.choice(cand, size=params.sample, replace=False)
    scores = score(free[cand] - request, capacity[cand], params.policy)
    cap_per_rack = None
    if params.spread and racks is not None:
        cap_per_rack = math.ceil(n_tasks / max(1, len(np.unique(racks))))
        per_rack: dict[int, int] = {}
    for t in range(n_tasks):
        best = int(np.argmax(scores))
        if not np.isfinite(scores[best]):
            break
        m = int(cand[best])
        free[m] -= request
        out[t] = m
        if free[m].min() + EPS >= 0 and np.all(free[m] + EPS >= request):
            scores[best] = score((free[m] - request)[None, :], capacity[m][None, :], params.policy)[0]
        else:
            scores[best] = -np.inf
        if cap_per_rack is not None:
            r = int(racks[m])  # type: ignore[index]
            per_rack[r] = per_rack.get(r, 0) + 1
            if per_rack[r] >= cap_per_rack:
                scores[racks[cand] == r] = -np.inf  # type: ignore[index]
    return out


def place_job_naive(free: np.ndarray, capacity: np.ndarray, request: np.ndarray, n_tasks: int, policy: str,
                    eligible: np.ndarray | None = None) -> np.ndarray:
    """Every task: feasibility and scoring over the whole cell."""
    out = np.full(n_tasks, -1, dtype=np.int64)
    for t in range(n_tasks):
        cand = np.flatnonzero(feasible(free, request, eligible))
        if cand.size == 0:
            break
        m = int(cand[np.argmax(score(free[cand] - request, capacity[cand], policy))])
        free[m] -= request
        out[t] = m
    return out
