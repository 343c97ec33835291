"""Which session each request belongs to, pure and drawn up front.

The run's workload is a stream of requests (one job each, a page: its
tasks are the page's requests on one keep-alive connection). Sessions are
laid over that stream: ``concurrent`` sessions are open at any time; each
request joins one of them uniformly at random; a session that has sent its
drawn length of requests closes and a new one opens in its place. So a
session's requests are spread over ``length * concurrent / rate`` seconds
on average, and a skewed length distribution gives a few long sessions
that, under stickiness, pin their load to the server they started on.

Drawn from the run's seed before anything starts, so every balancer
incarnation (a restart, a standby taking over) sees the same sessions.
"""
from __future__ import annotations

import math

import numpy as np

from schedlab.schedulers.model.workload import Dist


def assign_sessions(n: int, length: Dist, concurrent: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(session id per request, True where it is its session's last
    request). Session ids count up from 0 in the order sessions open; a
    drawn length is rounded up (at least 1)."""
    if concurrent < 1:
        raise ValueError(f"concurrent sessions must be >= 1, got {concurrent}")
    session = np.empty(n, dtype=np.int64)
    last = np.zeros(n, dtype=bool)
    slots = list(range(concurrent))  # slot -> its open session
    left = [_length(length, rng) for _ in range(concurrent)]
    opened = concurrent
    picks = rng.integers(0, concurrent, size=n)
    for i in range(n):
        k = int(picks[i])
        session[i] = slots[k]
        left[k] -= 1
        if left[k] == 0:
            last[i] = True
            slots[k], left[k] = opened, _length(length, rng)
            opened += 1
    return session, last


def _length(dist: Dist, rng: np.random.Generator) -> int:
    return max(1, math.ceil(float(dist.sample(rng, 1)[0])))
