"""Small pure helpers the live Sparrow shells need besides the cores
(``worker``, ``placement``, ``hybrid``): how many slots a machine has, a
host lost under a node monitor, a restarted scheduler's late-binding
books, and the long/short cut. No Ray, no clock."""
from __future__ import annotations

import collections
from collections.abc import Sequence

import numpy as np

from schedlab.schedulers.archs.sparrow.placement import JobBook, LateBinding
from schedlab.schedulers.archs.sparrow.worker import Outputs, Task, Worker


def set_slots(worker: Worker, slots: int, now: float) -> Outputs:
    """Change a worker's slot count (its machine's standing tasks ended, or
    started): busy slots beyond the new count finish what they run; a slot
    freed serves the queue. Zero slots is allowed here (a machine full of
    standing work serves nothing)."""
    worker.slots = max(0, int(slots))
    return worker.enqueue([], now)


def drop_running(worker: Worker, keys: Sequence[tuple[int, int]], now: float) -> Outputs:
    """The machine under ``worker`` lost these running tasks (its host
    died): their slots serve the queue again."""
    for k in keys:
        worker.running.pop(k, None)
    return worker.enqueue([], now)


def rebuild_book(lb: LateBinding, job_id: int, left: Sequence[Task], outstanding: int) -> None:
    """A restarted scheduler's book for a late-bound job, from what the
    node monitors still hold: its tasks not started yet, and reservations
    still waiting or asking (``outstanding``, at least ``len(left)``)."""
    if outstanding < len(left):
        raise ValueError(f"job {job_id}: {len(left)} tasks left but only {outstanding} reservations")
    if outstanding <= 0:
        lb.jobs.pop(job_id, None)
        return
    lb.jobs[job_id] = JobBook(collections.deque(left), outstanding)


def add_reservations(lb: LateBinding, job_id: int, count: int, rng: np.random.Generator, long: bool = False) -> list:
    """More reservations for a job already in ``lb`` (a recovered job with
    fewer reservations left than tasks): (worker, Reservation) pairs."""
    from schedlab.schedulers.archs.sparrow.worker import Reservation

    book = lb.jobs[job_id]
    book.outstanding += count
    lb.counters.add(0, count, count)
    res = Reservation(job_id, lb.scheduler, long)
    return [(int(w), res) for w in lb.targets(count, rng)]


def mean_duration(durations: Sequence[float]) -> float:
    """The job's estimate for the long/short cut: its mean task duration
    (a service task that never ends makes it infinite: long)."""
    return float(np.mean(durations)) if len(durations) else 0.0
