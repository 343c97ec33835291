"""Cell compaction (Borg paper, section 5.1): how small a cell can a
scoring policy pack a workload into?

Take a workload snapshot (every task that would be running at once), a cell,
and a random order in which to remove machines; find by bisection the
fewest machines on which the policy still places every task. Repeat over
seeds; a policy that needs fewer machines packs better. Pure: the placement
code is the Borgmaster's own (``schedulers.archs.borg.placement``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.archs.borg.placement import PlacementParams, place_job


@dataclass(frozen=True)
class SnapshotJob:
    request: np.ndarray  # [R]
    tasks: int
    priority: int


def fits(capacity: np.ndarray, jobs: list[SnapshotJob], params: PlacementParams, rng: np.random.Generator) -> bool:
    """Whether every task of every job gets a machine, highest priority first."""
    free = capacity.copy()
    for job in sorted(jobs, key=lambda j: -j.priority):
        if (place_job(free, capacity, job.request, job.tasks, params, rng) < 0).any():
            return False
    return True


def smallest_cell(capacity: np.ndarray, jobs: list[SnapshotJob], params: PlacementParams, seed: int) -> int:
    """Fewest machines (removed in a seeded random order) that still fit the
    workload; ``capacity.shape[0] + 1`` if even the whole cell does not."""
    rng = np.random.default_rng(seed)
    order = rng.permutation(capacity.shape[0])
    n = capacity.shape[0]

    def ok(m: int) -> bool:
        return fits(capacity[np.sort(order[:m])], jobs, params, np.random.default_rng(seed))

    if not ok(n):
        return n + 1
    lo, hi = 0, n  # ok(hi) holds; find the smallest m with ok(m)
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi
