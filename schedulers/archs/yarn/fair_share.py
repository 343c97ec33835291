"""The Fair scheduler's fair shares: water-filling on the queue tree.

Hadoop's ComputeFairShares looks for a weight-to-resource ratio ``R`` with
``share_i = clamp(weight_i * R, min_share_i, max_share_i)`` summing to what
the parent has: min shares are met first, max shares never exceeded, and
the rest is split in proportion to weights. This module finds the same
allocation exactly (no binary search) by reusing the allocation package's
``weighted_fair_share`` for the capped part, fixing at their floor the pools
whose min share binds.

Two flavours, per resource and at every level of the tree:

* **steady**: among all queues, capped by max share (what a queue is
  entitled to when everybody is busy; shown to users);
* **instantaneous**: among *active* queues (with demand), each capped by
  its demand as well as its max share, so what one queue cannot use goes
  to the others (the scheduler's and the preemption policy's target).
  Hadoop does not cap by demand here; see NOTES.md.
"""
from __future__ import annotations

import numpy as np
from schedlab.schedulers.allocation.fairness import weighted_fair_share
from schedlab.schedulers.archs.yarn.queues import ROOT, QueueTree
from schedlab.schedulers.model.resources import EPS


def water_fill(capacity: float, caps: np.ndarray, floors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Split ``capacity`` as ``clamp(weights * R, floors, caps)`` summing to
    ``min(capacity, caps.sum())``.

    Contract: ``caps`` >= ``floors`` >= 0 (``caps`` may be ``inf``),
    ``weights`` > 0. When the floors alone exceed ``capacity`` they are
    scaled down in proportion (Hadoop would hand out more than there is).
    Returns float64 [n]: ``floors <= alloc <= caps`` (up to that scaling),
    and among pools strictly between floor and cap, ``alloc / weight`` is
    equal and no smaller than that of any pool held at its floor."""
    caps = np.asarray(caps, dtype=np.float64)
    floors = np.asarray(floors, dtype=np.float64)
    w = np.asarray(weights, dtype=np.float64)
    n = caps.size
    if n == 0:
        return np.zeros(0)
    if np.any(floors > caps + EPS) or np.any(floors < 0):
        raise ValueError("need caps >= floors >= 0")
    cap = float(capacity)
    floor_sum = float(floors.sum())
    if floor_sum >= cap:
        return floors * (cap / floor_sum) if floor_sum > 0 else np.zeros(n)
    fixed = np.zeros(n, dtype=bool)
    while True:
        free = ~fixed
        alloc = floors.copy()
        alloc[free] = weighted_fair_share(max(cap - floors[fixed].sum(), 0.0), caps[free], w[free])
        binding = free & (floors > alloc + EPS)
        if not binding.any():
            return alloc
        fixed |= binding  # their floor exceeds the water level, which only falls from here


def fair_shares(tree: QueueTree, total: np.ndarray, demand: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Fair share [R] of every queue, top-down from ``root`` = ``total``.

    ``demand``: per queue (usage + outstanding asks) for instantaneous
    shares; ``None`` for steady shares. A queue without demand gets 0
    (instantaneous). A queue's share is split among its children by
    :func:`water_fill` with caps ``min(max_share, demand)`` (or
    ``max_share``), floors ``min(min_share, cap)`` and the queue weights."""
    out = {ROOT: np.asarray(total, dtype=np.float64).copy()}
    for parent in tree:  # tree order: a parent before its children
        kids = tree[parent].children
        if not kids:
            continue
        qs = [tree[k] for k in kids]
        caps = np.array([q.max_share for q in qs])
        if demand is not None:
            caps = np.minimum(caps, np.array([demand[k] for k in kids]))
        floors = np.minimum(np.array([q.min_share for q in qs]), caps)
        w = np.array([q.weight for q in qs])
        width = caps.shape[1]
        alloc = np.zeros((len(kids), width))
        for r in range(width):
            alloc[:, r] = water_fill(out[parent][r], caps[:, r], floors[:, r], w)
        for i, k in enumerate(kids):
            out[k] = alloc[i]
    return out
