"""Hawk's work stealing as a node monitor runs it, pure: when each of its
workers tries, whom it contacts and what it takes. The node monitor shell
only moves views and entries between actors (``NodeMonitor._steal_for``).

A worker tries the moment it goes idle (its task ended or its GetTask was
cancelled, its queue empty) and again every ``interval`` while it stays
idle. A try contacts ``attempts`` random workers of the general partition
in turn (``hybrid.steal_targets``) and takes, from the first that has any,
the short entries queued behind a long task there (``hybrid.stealable``).
Views of the targets on one other host are fetched in one call (a
transport saving: the order and the choice are the same).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from schedlab.schedulers.archs.sparrow.hybrid import stealable, steal_targets
from schedlab.schedulers.archs.sparrow.worker import Entry, QueueView, Worker


@dataclass
class Stealing:
    """One node monitor's stealing state: ``victims`` (the general
    partition; empty when stealing is off), when each worker last tried."""

    enabled: bool
    victims: Sequence[int]
    attempts: int
    interval: float  # emulated seconds between tries of a worker that stays idle
    machines_per_host: int
    last: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ascending = all(a < b for a, b in zip(self.victims, self.victims[1:]))  # checked once: tries skip the copy

    @staticmethod
    def idle(worker: Worker) -> bool:
        """Nothing queued and a slot free: a worker that could run stolen work."""
        return not worker.queue and worker.free_slots() > 0

    def went_idle(self, m: int, worker: Worker) -> bool:
        """Worker ``m`` may have just gone idle: True when it should try at
        once (its next periodic try is forgotten), so the shell wakes its clock."""
        if self.enabled and self.idle(worker):
            self.last.pop(m, None)
            return True
        return False

    def due(self, m: int, worker: Worker, now: float) -> bool:
        """Whether worker ``m`` tries now (an idle worker with slots whose
        last try is ``interval`` old or more); a try is recorded at once."""
        if worker.slots > 0 and self.idle(worker) and now - self.last.get(m, -math.inf) >= self.interval:
            self.last[m] = now
            return True
        return False

    def targets(self, thief: int, rng: np.random.Generator) -> list[int]:
        """The workers ``thief`` contacts, in order."""
        return steal_targets(thief, self.victims, self.attempts, rng, ascending=self.ascending)

    def host_of(self, worker: int) -> int:
        return worker // self.machines_per_host

    def on_host(self, targets: Sequence[int], host: int) -> list[int]:
        """The targets on ``host``, in contact order: fetched in one call."""
        return [t for t in targets if self.host_of(t) == host]

    @staticmethod
    def take(view: QueueView | None) -> tuple[Entry, ...]:
        """What to steal from a target seen as ``view`` (None: unreachable):
        its first group of short entries blocked behind a long task."""
        return stealable(view) if view is not None else ()
