"""Placement policies that keep a cursor between calls: next fit, next-k fit,
round robin.

Same contract as every policy in ``schedlab.schedulers.placement.policies``
(``policy(free, request, n_tasks, rng) -> machines``; decrement the caller's
``free``, -1 where nothing fits, never over-fill), but these remember where
they placed last, across tasks and across jobs. That memory is why they are
instances of a small class rather than functions, with the state in plain
attributes so the object pickles.

Whose cursor is it? ``run_scenario`` hands each scheduler actor the policy
object and Ray pickles it into the actor, so every scheduler unpickles its own
copy and moves its own cursor. A scheduler restarted by chaos is spawned again
from the driver's copy, which never placed anything, so it comes back with a
fresh cursor (on machine 0), as a real restarted scheduler that kept its
cursor in memory would. Within one process, two callers of the same instance
share one cursor: build a ``NextFit(k)`` per scheduler there.

Row indices, not machine ids: a policy sees only the rows of ``free``. An
Omega scheduler passes the whole cell, so the cursor is a machine. A Mesos
framework passes the rows of its current offers, which change between calls,
so there the cursor is only a position in whatever is offered. And the
cursor moves when a scheduler plans: an Omega claim rejected at commit still
leaves it past the machines it tried.

Depends on ``model.resources`` alone (not on ``policies``, which imports this
module to register the instances), so the import graph stays acyclic.
"""
from __future__ import annotations

import numpy as np

from schedlab.schedulers.model.resources import fits


class NextFit:
    """Next-k fit over the machines of a cell; ``NextFit(1)`` is next fit.

    The ``k`` machines opened most recently stay open, in the order they were
    opened. A task goes to the first open machine it fits on; if none, the
    cursor (the machine opened last) moves forward to the next machine the
    task fits on, wrapping from the last machine to the first because a
    cell's machines are fixed, and that machine is opened; when more than
    ``k`` are open the oldest is closed. A task misses (-1) only when it fits
    nowhere, so the contract's "-1 only when nothing fits" holds.

    Unlike textbook bin packing a closed machine is not gone for good: the
    cursor comes back to it after a full lap. Tasks of one call are identical,
    so within one job next-k fit acts like next fit; the open machines matter
    across jobs, when a smaller request still fits a machine a bigger one
    left behind.
    """

    def __init__(self, k: int = 1) -> None:
        if k < 1:
            raise ValueError(f"NextFit needs k >= 1 open machines, got {k}")
        self.k = k
        self.open: list[int] = []  # machine rows, oldest first; open[-1] is the cursor

    def __repr__(self) -> str:
        return f"NextFit(k={self.k}, open={self.open})"

    @property
    def cursor(self) -> int | None:
        """The machine placed on by the last opening (None before any)."""
        return self.open[-1] if self.open else None

    def __call__(self, free: np.ndarray, request: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
        # Rows past the end mean a smaller free than last time (a Mesos offer,
        # a test): forget them rather than index out of range.
        self.open = [m for m in self.open if m < free.shape[0]]
        out = np.full(n_tasks, -1, dtype=np.int64)
        for t in range(n_tasks):
            m = self._choose(free, request)
            if m < 0:
                break  # fits nowhere, and later tasks are identical
            free[m] -= request
            out[t] = m
        return out

    def _choose(self, free: np.ndarray, request: np.ndarray) -> int:
        if self.open:
            ok = fits(free[self.open], request)
            if ok.any():
                return self.open[int(np.argmax(ok))]
        m = self._advance(free, request)
        if m >= 0:
            self.open.append(m)
            del self.open[: -self.k]
        return m

    def _advance(self, free: np.ndarray, request: np.ndarray) -> int:
        """The first machine after the cursor, cyclically, that ``request``
        fits on; -1 if none. Open machines were just checked, so none of
        them comes back from here."""
        n = free.shape[0]
        start = self.open[-1] + 1 if self.open else 0
        order = (start + np.arange(n)) % n
        ok = np.flatnonzero(fits(free[order], request))
        return int(order[ok[0]]) if ok.size else -1


class RoundRobin:
    """Round-robin filling: each task goes to the next machine in turn
    (cyclically, from where the last task went) that it fits on, so a job's
    tasks spread one per machine per lap; the cursor persists across jobs.
    A head-node dispatcher's "round-robin" option (as in the Octopus
    scheduler): it evens load where first fit piles it on the first machines.
    Same contract, state and per-scheduler copies as ``NextFit``."""

    def __init__(self) -> None:
        self.cursor = 0  # the machine the next task is tried on first

    def __repr__(self) -> str:
        return f"RoundRobin(cursor={self.cursor})"

    def __call__(self, free: np.ndarray, request: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
        n = free.shape[0]
        out = np.full(n_tasks, -1, dtype=np.int64)
        if n == 0:
            return out
        self.cursor %= n
        # The machines it fits on, found once (O(M)); per task the first of
        # them at or after the cursor, cyclically, and only the machine just
        # used is checked again (free changes nowhere else): same choices as
        # testing all M machines in rotation per task.
        candidates = np.flatnonzero(fits(free, request))
        for t in range(n_tasks):
            if candidates.size == 0:
                break  # fits nowhere, and later tasks are identical
            i = int(np.searchsorted(candidates, self.cursor))
            if i == candidates.size:
                i = 0
            m = int(candidates[i])
            free[m] -= request
            out[t] = m
            self.cursor = (m + 1) % n
            if not fits(free[m], request):
                candidates = np.delete(candidates, i)
        return out

