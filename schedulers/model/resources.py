"""Resource vectors.

A resource vector is a float64 numpy array indexed by ``RESOURCES``. Adding a
dimension (say ``"disk"``) means appending its name here: scenario keys,
placement, commit and metrics all iterate over this tuple.
"""
from __future__ import annotations

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
