"""A distributed Sparrow scheduler's decisions, pure: each takes a numpy
Generator and never looks at more than it probed.

* :func:`random_placement`: every task to a uniformly random worker (no
  probe; the baseline, M/M/1 per worker under Poisson load).
* :func:`per_task_sampling` (power of d choices): per task, probe d distinct
  random workers, place on the one with the shortest queue.
* :func:`batch_sampling` (Sparrow, SOSP 2013): a job of m tasks probes d*m
  distinct workers and places its m tasks on the m least loaded of them;
  sharing the probes across the job avoids per-task sampling's bad luck
  where one task's two probes both hit long queues.
* :func:`late_binding` (Sparrow): a job of m tasks places d*m
  reservations; a task is bound to a worker only when a reservation reaches
  the head of that worker's queue and the worker asks, so queue lengths
  (a poor predictor of wait) stop mattering.

The sampling policies split into ``targets`` (which workers to probe: sent
by the shell) and ``choose`` (given the probes' answers), so a live shell
can probe concurrently; ``place`` does both against a load view (the sim,
the tests). Probes of one job go out together, so a job's tasks all see
the loads from before the job: two tasks that probed the same worker may
both land on it, as in the paper.

Costs per job: a probe is a round trip (2 messages) and a launch 1; a late
binding reservation is 1 message and its GetTask round trip 2 more.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field
from collections.abc import Sequence

import numpy as np

from schedlab.schedulers.archs.sparrow.worker import Reservation, Task


def check_d(d: int, n_workers: int) -> None:
    """d probes per task need d distinct workers."""
    if n_workers < 1:
        raise ValueError(f"need at least one worker, got {n_workers}")
    if not 1 <= d <= n_workers:
        raise ValueError(f"probe ratio d={d} must be between 1 and the number of workers ({n_workers})")


@dataclass(frozen=True)
class Placement:
    """Where each task of one job goes (task order), and what it cost."""

    workers: np.ndarray
    probes: int
    messages: int


@dataclass
class Counters:
    """Running totals for metrics: probes and messages per task."""

    tasks: int = 0
    probes: int = 0
    messages: int = 0

    def add(self, tasks: int, probes: int, messages: int) -> None:
        self.tasks += tasks
        self.probes += probes
        self.messages += messages

    def per_task(self) -> tuple[float, float]:
        """(probes, messages) per task; (0, 0) before any task."""
        return (self.probes / self.tasks, self.messages / self.tasks) if self.tasks else (0.0, 0.0)


def _least_loaded(loads: np.ndarray, rng: np.random.Generator) -> int:
    """Index of a minimum of ``loads``, ties broken uniformly at random."""
    best = np.flatnonzero(loads == loads.min())
    return int(best[0]) if best.size == 1 else int(rng.choice(best))


def random_placement(tasks: int, n_workers: int, rng: np.random.Generator) -> Placement:
    check_d(1, n_workers)
    return Placement(rng.integers(0, n_workers, size=tasks), 0, tasks)


@dataclass(frozen=True)
class PerTaskSampling:
    d: int
    n_workers: int

    def targets(self, tasks: int, rng: np.random.Generator) -> np.ndarray:
        """(tasks, d): each row d distinct workers, uniformly at random."""
        return np.array([rng.choice(self.n_workers, size=self.d, replace=False) for _ in range(tasks)],
                        dtype=np.int64).reshape(tasks, self.d)

    def choose(self, targets: np.ndarray, loads: np.ndarray, rng: np.random.Generator) -> Placement:
        """``loads[t, i]``: the queue length ``targets[t, i]`` answered."""
        loads = np.asarray(loads)
        picks = [int(targets[t, _least_loaded(loads[t], rng)]) for t in range(targets.shape[0])]
        m = targets.shape[0]
        return Placement(np.array(picks, dtype=np.int64), m * self.d, 2 * m * self.d + m)

    def place(self, tasks: int, view: Sequence[int] | np.ndarray, rng: np.random.Generator) -> Placement:
        """Probe and choose against ``view`` (queue length per worker)."""
        t = self.targets(tasks, rng)
        return self.choose(t, np.asarray(view)[t], rng)


def per_task_sampling(d: int, n_workers: int) -> PerTaskSampling:
    check_d(d, n_workers)
    return PerTaskSampling(d, n_workers)


@dataclass(frozen=True)
class BatchSampling:
    d: int
    n_workers: int

    def targets(self, tasks: int, rng: np.random.Generator) -> np.ndarray:
        """min(d*m, n) distinct workers (a job larger than the cell over n/d
        tasks probes every worker)."""
        return rng.choice(self.n_workers, size=min(self.d * tasks, self.n_workers), replace=False).astype(np.int64)

    def choose(self, targets: np.ndarray, loads: np.ndarray, tasks: int, rng: np.random.Generator) -> Placement:
        """The m least loaded of the probed, one task each, ties at random.
        With more tasks than probed workers (m > n) each task goes to the
        currently least loaded, counting the job's own tasks (water-filling)."""
        loads = np.asarray(loads, dtype=np.float64)
        order = np.lexsort((rng.random(len(targets)), loads))  # by load, random among equals
        if tasks <= len(targets):
            picks = targets[order[:tasks]]
        else:
            cur = loads.copy()
            picks = np.empty(tasks, dtype=np.int64)
            for i in range(tasks):
                j = _least_loaded(cur, rng)
                picks[i] = targets[j]
                cur[j] += 1
        return Placement(np.asarray(picks, dtype=np.int64), len(targets), 2 * len(targets) + tasks)

    def place(self, tasks: int, view: Sequence[int] | np.ndarray, rng: np.random.Generator) -> Placement:
        t = self.targets(tasks, rng)
        return self.choose(t, np.asarray(view)[t], tasks, rng)


def batch_sampling(d: int, n_workers: int) -> BatchSampling:
    check_d(d, n_workers)
    return BatchSampling(d, n_workers)


@dataclass
class JobBook:
    """A late-bound job: tasks not handed out (in order) and reservations
    still out (placed, not yet asked about)."""

    left: collections.deque[Task]
    outstanding: int
    handed: set[int] = field(default_factory=set)


class LateBinding:
    """One distributed scheduler's late-binding books.

    Contract: every task is handed out exactly once (to the first
    reservation that asks after it is next in line); once a job's tasks are
    all out, every later ask is answered with a cancel (``None``); the book
    is dropped when the last reservation has been answered, so there are
    always at least as many reservations as tasks (d >= 1) and none is left
    waiting for an answer. An ask for a job with no reservation outstanding
    is a protocol error (ValueError): a reservation answered twice.
    Which worker asks does not matter (a stolen reservation asks from its
    new worker)."""

    def __init__(self, d: int, n_workers: int, scheduler: int = 0) -> None:
        check_d(d, n_workers)
        self.d = d
        self.n_workers = n_workers
        self.scheduler = scheduler
        self.jobs: dict[int, JobBook] = {}
        self.counters = Counters()
        self.cancels = 0

    def targets(self, reservations: int, rng: np.random.Generator) -> np.ndarray:
        """Workers for ``reservations`` reservations, spread as evenly as
        possible (distinct workers while they last), uniformly at random."""
        rounds, rest = divmod(reservations, self.n_workers)
        extra = rng.choice(self.n_workers, size=rest, replace=False)
        return np.concatenate([np.tile(np.arange(self.n_workers), rounds), extra]).astype(np.int64)

    def submit(self, job_id: int, tasks: Sequence[Task], rng: np.random.Generator,
               long: bool = False) -> list[tuple[int, Reservation]]:
        """Place d*m reservations for job ``job_id``: (worker, reservation)."""
        if job_id in self.jobs:
            raise ValueError(f"job {job_id} already submitted to scheduler {self.scheduler}")
        if any(t.job_id != job_id for t in tasks):
            raise ValueError(f"job {job_id}: every task must belong to it")
        if not tasks:
            return []
        r = self.d * len(tasks)
        self.jobs[job_id] = JobBook(collections.deque(tasks), r)
        self.counters.add(len(tasks), r, r)
        res = Reservation(job_id, self.scheduler, long)
        return [(int(w), res) for w in self.targets(r, rng)]

    def get_task(self, job_id: int) -> Task | None:
        """A worker's GetTask for ``job_id``: the job's next task, or None
        (cancel) when all are out."""
        book = self.jobs.get(job_id)
        if book is None or book.outstanding <= 0:
            raise ValueError(f"scheduler {self.scheduler}: no reservation of job {job_id} outstanding")
        book.outstanding -= 1
        self.counters.messages += 2  # the ask and its answer
        task = book.left.popleft() if book.left else None
        if task is None:
            self.cancels += 1
        else:
            assert task.index not in book.handed
            book.handed.add(task.index)
        if book.outstanding == 0:
            assert not book.left, "more tasks than reservations"
            del self.jobs[job_id]
        return task

    def outstanding(self, job_id: int) -> int:
        book = self.jobs.get(job_id)
        return book.outstanding if book else 0

    def left(self, job_id: int) -> int:
        book = self.jobs.get(job_id)
        return len(book.left) if book else 0


def late_binding(d: int, n_workers: int, scheduler: int = 0) -> LateBinding:
    return LateBinding(d, n_workers, scheduler)
