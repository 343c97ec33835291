"""The orders a Mesos allocator offers in: who gets the next offer.

Small functions ``order(allocated[U,R], total[R], weights[U], priorities[U])
-> indices`` over the frameworks' allocations (``ALLOCATION_POLICIES``,
extensible with ``register_allocation_policy``: a user's own order runs
inside the master). Offering to the lowest dominant share first, one offer
at a time, is DRF's progressive filling done online
(``schedulers.allocation.fairness`` holds the static form).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from schedlab.schedulers.allocation.fairness import dominant_shares

OrderPolicy = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def shares(allocated: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Each framework's dominant share of ``total`` (unweighted)."""
    return dominant_shares(total, allocated, np.ones(allocated.shape[0]))


def drf_order(allocated: np.ndarray, total: np.ndarray, weights: np.ndarray, priorities: np.ndarray) -> np.ndarray:
    """Lowest dominant share first; ties by registration order."""
    return np.lexsort((np.arange(len(weights)), shares(allocated, total)))


def weighted_order(allocated: np.ndarray, total: np.ndarray, weights: np.ndarray, priorities: np.ndarray) -> np.ndarray:
    """Weighted DRF: lowest dominant share per unit of weight first."""
    return np.lexsort((np.arange(len(weights)), shares(allocated, total) / weights))


def priority_order(allocated: np.ndarray, total: np.ndarray, weights: np.ndarray, priorities: np.ndarray) -> np.ndarray:
    """Strict priority (highest first); DRF among equal priorities."""
    return np.lexsort((np.arange(len(weights)), shares(allocated, total), -priorities))


ALLOCATION_POLICIES: dict[str, OrderPolicy] = {
    "drf": drf_order,
    "weighted": weighted_order,
    "priority": priority_order,
}


def register_allocation_policy(name: str, policy: OrderPolicy) -> None:
    if not callable(policy):
        raise TypeError(f"allocation policy {name!r} must be callable")
    ALLOCATION_POLICIES[name] = policy


def get_allocation_policy(name: str) -> OrderPolicy:
    try:
        return ALLOCATION_POLICIES[name]
    except KeyError:
        raise KeyError(f"unknown allocation policy {name!r}; known: {', '.join(sorted(ALLOCATION_POLICIES))}") from None
