"""YARN's FifoScheduler: one queue, applications strictly in submission
order.

On a heartbeat the node is offered to each application in turn, oldest
first, and every application takes all it can before the next one is asked;
a later application gets what an earlier one cannot use (its tasks do not
fit, or it is waiting for locality), as in Hadoop's FifoScheduler. No queue
limits, no user limits, no preemption.

Hadoop's FifoScheduler places node-local, then rack-local, then off-switch
without waiting; the default delay here is accordingly zero, but a delay
may be configured.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from schedlab.schedulers.archs.yarn.locality import LocalityCounters, LocalityDelay
from schedlab.schedulers.archs.yarn.scheduler import (
    App,
    ClusterState,
    Container,
    allocate_globally,
    offer_node,
)


@dataclass(frozen=True)
class FifoConfig:
    locality: LocalityDelay = field(default_factory=LocalityDelay)
    max_assign: int = 0  # containers per heartbeat; 0 = as many as fit


class FifoScheduler:
    """The FIFO core over a :class:`ClusterState` (any queue tree: all
    leaves are treated as one queue, in submission order)."""

    def __init__(self, state: ClusterState, config: FifoConfig | None = None) -> None:
        self.state = state
        self.config = config or FifoConfig()
        if self.config.max_assign < 0:
            raise ValueError(f"max_assign must be >= 0, got {self.config.max_assign}")
        self.counters = LocalityCounters(reset_on_off_switch=True)

    @staticmethod
    def _always(app: App, cap: np.ndarray) -> bool:
        return True

    def allocate_on_node(self, node: int, now: float) -> list[Container]:
        out: list[Container] = []
        counted: set[tuple[int, int]] = set()
        limit = self.config.max_assign
        for app in list(self.state.apps.values()):
            while len(app.asks) and not (limit and len(out) >= limit):
                c = offer_node(self.state, app, node, now, self.config.locality, self.counters, self._always, counted)
                if c is None:
                    break
                out.append(c)
        return out

    def allocate_global(self, now: float) -> list[Container]:
        return allocate_globally(self.state, lambda: list(self.state.apps.values()), self._always, now)

    def preemption(self, now: float) -> list[int]:
        return []
