"""Delay scheduling: how long a task waits for a node holding its data.

YARN counts *scheduling opportunities*: each time a node's heartbeat is
offered to an application at some priority and the application declines it
because the only tasks that would fit there are not local enough. After
``node`` missed opportunities it accepts rack-local placements, after
``node + rack`` more off-switch ones (CapacityScheduler's
``node-locality-delay`` and ``rack-locality-additional-delay``; the Fair
scheduler's ``locality.threshold.node/rack`` are fractions of the cluster
size, see :meth:`LocalityDelay.from_fractions`). The counter is kept per
(application, priority) and reset when the application is allocated a
container at that priority.

Counting opportunities instead of waiting a time (Zaharia et al.'s delay
scheduling, and YARN's own continuous-scheduling mode, wait in ms) makes
the delay scale with the heartbeat rate; YARN made the same choice.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np


class Level(IntEnum):
    """How local a placement is; a larger level is less local."""

    NODE_LOCAL = 0
    RACK_LOCAL = 1
    OFF_SWITCH = 2


NODE_LOCAL, RACK_LOCAL, OFF_SWITCH = Level.NODE_LOCAL, Level.RACK_LOCAL, Level.OFF_SWITCH


@dataclass(frozen=True)
class LocalityDelay:
    """Missed opportunities before relaxing: rack-local once ``node`` were
    missed, off-switch once ``node + rack`` were (``rack`` counts after
    ``node``, as CapacityScheduler's additional delay does)."""

    node: int = 0
    rack: int = 0

    def __post_init__(self) -> None:
        for name in ("node", "rack"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"locality delay {name} must be an integer >= 0, got {v!r}")

    @classmethod
    def from_fractions(cls, node_frac: float, rack_frac: float, n_nodes: int) -> LocalityDelay:
        """The Fair scheduler's thresholds: fractions of the cluster size.

        Hadoop relaxes when the opportunity count, including the offer being
        decided, exceeds ``frac * n_nodes``; counting only the declined
        offers before it, that is ``floor(frac * n_nodes)`` of them. A
        negative fraction (Hadoop's default ``-1``) means no delay."""
        if n_nodes < 0:
            raise ValueError(f"n_nodes must be >= 0, got {n_nodes}")

        def count(frac: float) -> int:
            if not math.isfinite(frac):
                raise ValueError(f"locality threshold must be finite, got {frac!r}")
            if frac > 1.0:
                raise ValueError(f"locality threshold is a fraction of the cluster (<= 1), got {frac!r}")
            return 0 if frac < 0 else math.floor(frac * n_nodes + 1e-9)

        return cls(count(node_frac), count(rack_frac))

    def capped(self, n_nodes: int) -> LocalityDelay:
        """CapacityScheduler caps both delays at the number of nodes: after
        a whole round of heartbeats the node is not coming."""
        node = min(self.node, n_nodes)
        return LocalityDelay(node, max(min(self.node + self.rack, n_nodes) - node, 0))

    def allowed_level(self, missed: int) -> Level:
        """The least local placement allowed after ``missed`` opportunities."""
        if missed >= self.node + self.rack:
            return OFF_SWITCH
        if missed >= self.node:
            return RACK_LOCAL
        return NODE_LOCAL


def placement_level(preferred: tuple[int, ...], node: int, rack_of: np.ndarray) -> Level:
    """How local placing a task preferring ``preferred`` nodes on ``node``
    is. A task with no preference is off-switch everywhere (YARN: an ask at
    ``*`` only); :func:`may_place` lets it go anywhere at once."""
    if node in preferred:
        return NODE_LOCAL
    rack = rack_of[node]
    if any(rack_of[p] == rack for p in preferred):
        return RACK_LOCAL
    return OFF_SWITCH


def may_place(preferred: tuple[int, ...], relax_locality: bool, node: int, rack_of: np.ndarray,
              allowed: Level) -> bool:
    """May the task go on ``node`` when ``allowed`` is the least local level
    its application may accept now. No preference: anywhere, no delay.
    ``relax_locality=False``: only on a preferred node, ever."""
    if not preferred:
        return True
    level = placement_level(preferred, node, rack_of)
    if level == NODE_LOCAL:
        return True
    return relax_locality and level <= allowed


@dataclass
class LocalityCounters:
    """Missed scheduling opportunities per (application, priority).

    ``reset_on_off_switch``: whether an off-switch allocation resets the
    counter too. CapacityScheduler does not ("otherwise the app will be
    delayed for each non-local assignment"): once an application has waited
    its way to off-switch it stays there until a local allocation happens.
    """

    reset_on_off_switch: bool = True
    _missed: dict[tuple[int, int], int] = field(default_factory=dict)

    def missed(self, app: int, priority: int) -> int:
        return self._missed.get((app, priority), 0)

    def miss(self, app: int, priority: int) -> int:
        """Count one declined opportunity; returns the new count."""
        n = self._missed.get((app, priority), 0) + 1
        self._missed[(app, priority)] = n
        return n

    def allocated(self, app: int, priority: int, level: Level) -> None:
        """The application got a container at ``priority``, at ``level``."""
        if level != OFF_SWITCH or self.reset_on_off_switch:
            self._missed.pop((app, priority), None)

    def forget(self, app: int) -> None:
        """The application is gone."""
        for key in [k for k in self._missed if k[0] == app]:
            del self._missed[key]
