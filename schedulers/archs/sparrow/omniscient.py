"""The omniscient reference, pure: a centralized scheduler that knows every
worker's queue and the exact remaining work of everything in it, and puts
each task (as it arrives) on the worker where it starts earliest.

Sparrow (SOSP 2013) compares batch sampling with late binding against
such an ideal scheduler (its abstract: within 12%); this is what a run
compares against. It is greedy per task (each task the earliest start
given the ones before it), not an optimal schedule of the whole workload.

Its books are exact for FIFO workers fed only by eager placement: a
worker's next entry takes the earliest free slot, so a worker is a heap of
the times its slots come free; appending a task of duration x pops the
earliest time f and pushes max(f, now) + x. :class:`EarliestStart` keeps
those heaps.
"""
from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

import numpy as np

from schedlab.schedulers.archs.sparrow.worker import Task, Worker


class EarliestStart:
    """Per worker, the times its slots come free, given every task placed."""

    def __init__(self, slots: Sequence[int], now: float = 0.0) -> None:
        if not slots or min(slots) < 1:
            raise ValueError("need at least one worker, each with at least one slot")
        self.free: list[list[float]] = [[now] * s for s in slots]

    @classmethod
    def from_workers(cls, workers: Sequence[Worker], now: float) -> EarliestStart:
        """Exact books from the workers themselves: running tasks' ends,
        then the waiting tasks replayed in FIFO order. A waiting reservation
        has no known work: an omniscient view needs eager tasks (ValueError)."""
        book = cls([w.slots for w in workers], now)
        for i, w in enumerate(workers):
            ends = sorted(s.end for s in w.running.values())
            if w.asking:
                raise ValueError(f"worker {w.id} waits for a GetTask answer: its work is unknown")
            book.free[i] = ends + [now] * (w.slots - len(ends))
            heapq.heapify(book.free[i])
            for e in w.queue:
                if not isinstance(e, Task):
                    raise ValueError(f"worker {w.id} holds a reservation: its work is unknown")
                book._append(i, e.duration, now)
        return book

    def start(self, worker: int, now: float) -> float:
        """When a task appended to ``worker``'s queue now would start."""
        return max(now, self.free[worker][0])

    def starts(self, now: float, candidates: Sequence[int] | None = None) -> np.ndarray:
        cands = range(len(self.free)) if candidates is None else candidates
        return np.array([self.start(w, now) for w in cands], dtype=np.float64)

    def place(self, duration: float, now: float, candidates: Sequence[int] | None = None,
              rng: np.random.Generator | None = None) -> tuple[int, float]:
        """Choose the candidate where a task of ``duration`` starts earliest
        (ties: lowest id, or at random with ``rng``), book it there and
        return (worker, start)."""
        cands = list(range(len(self.free))) if candidates is None else list(candidates)
        if not cands:
            raise ValueError("no candidate worker")
        s = self.starts(now, cands)
        best = np.flatnonzero(s == s.min())
        pick = cands[int(best[0] if rng is None or best.size == 1 else rng.choice(best))]
        return pick, self._append(pick, duration, now)

    def _append(self, worker: int, duration: float, now: float) -> float:
        start = max(now, heapq.heappop(self.free[worker]))
        heapq.heappush(self.free[worker], start + duration if math.isfinite(duration) else math.inf)
        return start


class Omniscient:
    """The reference scheduler over ``slots`` per worker: exact durations."""

    def __init__(self, slots: Sequence[int], now: float = 0.0) -> None:
        self.book = EarliestStart(slots, now)

    def place(self, tasks: Sequence[Task], now: float) -> list[tuple[int, float]]:
        """(worker, predicted start) for each task in order, each placed
        where it starts earliest given the ones before it."""
        return [self.book.place(t.duration, now) for t in tasks]
