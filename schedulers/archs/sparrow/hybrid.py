"""Hawk (Delgado et al., USENIX ATC 2015), pure: a hybrid of a centralized
scheduler for the few long jobs and Sparrow-style distributed late binding
for the many short ones.

* **Classification.** A job is long when its estimated task duration (the
  job's estimate if given, else the mean of its tasks' durations: Hawk
  assumes estimates from earlier runs) is above ``cutoff``; ties are short.
* **Long jobs** go to a centralized scheduler with full knowledge of the
  long work it placed: each task to the general worker with the least
  estimated waiting time (whose long queue finishes earliest), never to the
  short-only partition. It does not see short tasks, as in Hawk.
* **Short jobs** are late-bound (``placement.LateBinding``) over *all*
  workers, the short-only partition included: a small slice of the cell
  where short tasks never wait behind a long one.
* **Randomized work stealing.** A worker that goes idle contacts ``k``
  random workers of the *general* partition and steals, from the first
  that has any, the first group of short entries queued behind a long task
  there: head-of-line blocking is what hurts short jobs, and a long task
  ahead of them is its signature. A short-only worker never holds a long
  task, so asking one would be a wasted message (Hawk's simulator draws
  its victims from the general partition only).

Decisions are given views (``worker.QueueView``); the shell moves entries
(``Worker.remove`` then ``Worker.enqueue``).
"""
from __future__ import annotations

import bisect

from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np

from schedlab.schedulers.archs.sparrow.placement import LateBinding
from schedlab.schedulers.archs.sparrow.worker import Entry, QueueView, Task


@dataclass(frozen=True)
class HawkConfig:
    cutoff: float  # estimated task duration (s) above which a job is long
    short_fraction: float = 0.1  # of workers reserved for short tasks
    d: int = 2  # late-binding probe ratio for short jobs
    steal_attempts: int = 10  # workers an idle worker contacts

    def __post_init__(self) -> None:
        if not self.cutoff > 0:
            raise ValueError(f"cutoff must be > 0, got {self.cutoff}")
        if not 0.0 <= self.short_fraction < 1.0:
            raise ValueError(f"short_fraction must be in [0, 1), got {self.short_fraction}")
        if self.steal_attempts < 0:
            raise ValueError(f"steal_attempts must be >= 0, got {self.steal_attempts}")


def partition(n_workers: int, short_fraction: float) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(general, short_only): the last round(fraction * n) workers are short
    only. At least one general worker must remain, or long jobs could run
    nowhere (ValueError)."""
    short = round(short_fraction * n_workers)
    if n_workers - short < 1:
        raise ValueError(f"short_fraction {short_fraction} leaves no general worker out of {n_workers}")
    return tuple(range(n_workers - short)), tuple(range(n_workers - short, n_workers))


def task_estimate(durations: Sequence[float], estimate: float | None = None) -> float:
    if estimate is not None:
        return float(estimate)
    if not durations:
        raise ValueError("a job needs at least one task")
    return float(np.mean(durations))


def is_long(estimate: float, cutoff: float) -> bool:
    return estimate > cutoff


class LongScheduler:
    """Hawk's centralized scheduler: an estimated waiting time per general
    worker (the long work it placed there, not reported finished)."""

    def __init__(self, general: Sequence[int]) -> None:
        if not general:
            raise ValueError("the centralized scheduler needs at least one general worker")
        self.general = tuple(general)
        self.waiting = np.zeros(len(self.general), dtype=np.float64)
        self._index = {w: i for i, w in enumerate(self.general)}

    def place(self, tasks: Sequence[Task], estimate: float) -> list[tuple[int, Task]]:
        """Each task, in order, to the general worker with the least waiting
        time (ties: lowest id), which then waits ``estimate`` longer."""
        out = []
        for t in tasks:
            i = int(np.argmin(self.waiting))
            self.waiting[i] += estimate
            out.append((self.general[i], t))
        return out

    def finished(self, worker: int, estimate: float) -> None:
        """A long task placed with ``estimate`` ended on ``worker``."""
        i = self._index[worker]
        self.waiting[i] = max(0.0, self.waiting[i] - estimate)


@dataclass(frozen=True)
class Routed:
    """One job's routing: ``long`` ones are eager tasks, short ones
    reservations, each as (worker, entry)."""

    long: bool
    estimate: float
    placements: list[tuple[int, Entry]]


class Hawk:
    def __init__(self, config: HawkConfig, n_workers: int, scheduler: int = 0) -> None:
        self.config = config
        self.n_workers = n_workers
        self.general, self.short_only = partition(n_workers, config.short_fraction)
        self.central = LongScheduler(self.general)
        self.short = LateBinding(config.d, n_workers, scheduler)

    def submit(self, job_id: int, durations: Sequence[float], rng: np.random.Generator,
               estimate: float | None = None) -> Routed:
        est = task_estimate(durations, estimate)
        long = is_long(est, self.config.cutoff)
        tasks = [Task(job_id, i, float(x), long) for i, x in enumerate(durations)]
        if long:
            return Routed(True, est, list(self.central.place(tasks, est)))
        return Routed(False, est, list(self.short.submit(job_id, tasks, rng)))

    def get_task(self, job_id: int) -> Task | None:
        return self.short.get_task(job_id)

    def steal(self, thief: QueueView, views: Sequence[QueueView], rng: np.random.Generator) -> Steal | None:
        """``choose_steal`` as Hawk does it: ``steal_attempts`` victims from
        the general partition (where long tasks, hence blocked short
        entries, can be)."""
        return choose_steal(thief, views, self.config.steal_attempts, rng, victims=self.general)


def stealable(view: QueueView) -> tuple[Entry, ...]:
    """The first group of short entries queued behind a long task: after
    the first waiting long entry, or from the head when every slot runs a
    long task (with one slot: a long task running). Stops at the next long
    entry, which blocks what follows it anyway."""
    behind = view.running_long >= view.slots
    group: list[Entry] = []
    for e in view.entries:
        if e.long:
            if group:
                break
            behind = True
        elif behind:
            group.append(e)
    return tuple(group)


@dataclass(frozen=True)
class Steal:
    thief: int
    victim: int
    entries: tuple[Entry, ...]


def steal_targets(thief: int, candidates: Sequence[int], k: int, rng: np.random.Generator,
                  ascending: bool = False) -> list[int]:
    """The workers an idle ``thief`` contacts, in order: ``k`` distinct
    random ``candidates`` other than itself (all of them if fewer).
    ``ascending`` (the caller knows ``candidates`` strictly increase, as a
    partition's workers do): not copied, the draw maps past the thief's
    place, the same workers from the same random stream as a copy without
    it (an idle 10,000-worker cell's tries copied 10,000 candidates each)."""
    n = len(candidates)
    if ascending:
        at = bisect.bisect_left(candidates, thief)
        here = at < n and candidates[at] == thief
        size = n - here
        if not size or k <= 0:
            return []
        picks = rng.choice(size, size=min(k, size), replace=False)
        return [candidates[int(i) + (here and int(i) >= at)] for i in picks]
    others = [w for w in candidates if w != thief]
    if not others or k <= 0:
        return []
    return [others[int(i)] for i in rng.choice(len(others), size=min(k, len(others)), replace=False)]


def choose_steal(thief: QueueView, views: Sequence[QueueView], k: int, rng: np.random.Generator,
                 victims: Sequence[int] | None = None) -> Steal | None:
    """An idle ``thief`` contacts ``k`` distinct random other workers among
    ``victims`` (Hawk: the general partition; None: every worker in
    ``views``), in random order, and steals the stealable group of the first
    one that has any. None if the thief is not idle or nobody asked has
    short work blocked."""
    if not thief.idle:
        return None
    by_worker = {v.worker: v for v in views}
    pool = [v.worker for v in views] if victims is None else [w for w in victims if w in by_worker]
    for w in steal_targets(thief.worker, pool, k, rng):
        group = stealable(by_worker[w])
        if group:
            return Steal(thief.worker, w, group)
    return None
