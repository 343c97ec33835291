"""Small pure helpers the live Sparrow shells need besides the cores
(``worker``, ``placement``, ``hybrid``): how many slots a machine has, a
host lost under a node monitor, a restarted scheduler's late-binding
books, and the long/short cut. No Ray, no clock."""
from __future__ import annotations

import collections
import math
from collections.abc import Sequence

import numpy as np

from schedlab.schedulers.archs.sparrow.placement import JobBook, LateBinding
from schedlab.schedulers.archs.sparrow.worker import Outputs, Task, Worker


def slots_for(capacity: Sequence[float], used: Sequence[float], largest: Sequence[float], configured: int = 0) -> int:
    """Slots of a machine: how many tasks of the workload's largest request
    (per resource) fit in what ``used`` (standing tasks) leaves of
    ``capacity``; ``configured`` > 0 caps it (never more than fit: a slot
    must be able to run any task without overcommitting the machine)."""
    cap = np.asarray(capacity, dtype=np.float64) - np.asarray(used, dtype=np.float64)
    req = np.asarray(largest, dtype=np.float64)
    fit = int(min((math.floor(c / r + 1e-9) for c, r in zip(cap, req) if r > 0), default=0))
    fit = max(0, fit)
    return min(fit, configured) if configured > 0 else fit


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
