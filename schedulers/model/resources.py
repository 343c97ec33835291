"""Resource vectors.

A resource vector is a float64 numpy array indexed by ``RESOURCES``. Adding a
dimension (say ``"disk"``) means appending its name here: scenario keys,
placement, commit and metrics all iterate over this tuple.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

RESOURCES: tuple[str, ...] = ("cpu", "mem")
NDIM = len(RESOURCES)

# Float slack for fit checks: requests are summed and subtracted repeatedly.
EPS = 1e-9


def vector(**amounts: float) -> np.ndarray:
    """Build a resource vector from keyword amounts; missing dimensions are 0."""
    unknown = set(amounts) - set(RESOURCES)
    if unknown:
        raise KeyError(f"unknown resource(s): {sorted(unknown)}")
    return np.array([float(amounts.get(r, 0.0)) for r in RESOURCES], dtype=np.float64)


def fits(free: np.ndarray, request: np.ndarray) -> np.ndarray:
    """Boolean mask over rows of ``free`` (shape [M, R]) that can hold ``request``."""
    return np.all(free + EPS >= request, axis=-1)


def slots_for(capacity: Sequence[float] | np.ndarray, used: Sequence[float] | np.ndarray, largest: Sequence[float] | np.ndarray,
              configured: int = 0) -> int:
    """Slots of a machine: how many tasks of the workload's largest request
    (per resource) fit in what ``used`` (standing tasks) leaves of
    ``capacity``; ``configured`` > 0 caps it (never more than fit: a slot
    must be able to run any task without overcommitting the machine)."""
    cap = np.asarray(capacity, dtype=np.float64) - np.asarray(used, dtype=np.float64)
    req = np.asarray(largest, dtype=np.float64)
    fit = int(min((math.floor(c / r + 1e-9) for c, r in zip(cap, req) if r > 0), default=0))
    fit = max(0, fit)
    return min(fit, configured) if configured > 0 else fit


def largest_request(requests: Sequence[Sequence[float]]) -> tuple[float, ...]:
    """The largest of these requests per resource (1 of each when there are
    none): a slot sized for it runs any of them."""
    if not len(requests):
        return tuple(1.0 for _ in RESOURCES)
    return tuple(float(x) for x in np.max(np.asarray(requests, dtype=np.float64), axis=0))
