"""A site as the multi-cluster cores see it, and a FIFO stand-in for one.

In a scenario each site runs a registered single-cluster architecture (its
own scheduler, its own machines); the multi-cluster layer only needs a job's
size, where it came from and what the site would publish. ``FifoSite`` is
the simplest site with those observables: ``slots`` unit-speed slots and one
FIFO queue. It exists so the pure cores can be tested end to end without an
architecture behind them; it is not a model of any real site scheduler.

Contracts:

* A job's ``work`` is its run time on one slot; a site's ``capacity`` is its
  slot count, so work / capacity is seconds of the whole site.
* FIFO: a job starts when a slot frees and every job queued before it has
  started; a freed slot takes the head at the instant it frees, even if
  ``complete`` is called later.
* A job's wait is measured from its *first* submission (``Job.submitted``),
  so time held at a client or spent in transfer counts as waiting: that is
  what the user sees.
"""
from __future__ import annotations

import collections
import heapq
import math
from dataclasses import dataclass

from schedlab.schedulers.federation.bulletin import Publication, WaitWindow


@dataclass(frozen=True)
class Job:
    """One job: ``work`` slot-seconds, submitted by a local user of site
    ``home`` at ``submitted``; ``transfers`` counts peer-to-peer moves."""

    jid: int
    work: float
    home: int
    submitted: float
    transfers: int = 0


@dataclass
class Run:
    """One job at the site that runs it; ``start``/``finish`` None until then."""

    job: Job
    site: int
    queued_at: float
    start: float | None = None
    finish: float | None = None

    @property
    def wait(self) -> float:
        assert self.start is not None, "not started"
        return self.start - self.job.submitted


class FifoSite:
    def __init__(self, sid: int, slots: int, wait_window: float = 60.0) -> None:
        if slots < 1:
            raise ValueError(f"site {sid}: slots must be >= 1, got {slots}")
        self.sid, self.capacity = sid, float(slots)
        self.queue: collections.deque[Run] = collections.deque()
        self.running: list[tuple[float, int, Run]] = []  # heap of (finish, seq, run)
        self.waits = WaitWindow(wait_window)
        self._seq = 0
        self.busy_work = 0.0  # work of the jobs finished here
        self.finished: list[Run] = []

    def arrive(self, job: Job, now: float) -> Run:
        self.complete(now)
        run = Run(job, self.sid, now)
        self.queue.append(run)
        self._start(now)
        return run

    def _start(self, now: float) -> None:
        while self.queue and len(self.running) < self.capacity:
            run = self.queue.popleft()
            run.start = now
            self.waits.record(now, run.wait)
            self._seq += 1
            heapq.heappush(self.running, (now + run.job.work, self._seq, run))

    def next_event(self) -> float:
        """The next finish; inf when idle."""
        return self.running[0][0] if self.running else math.inf

    def complete(self, now: float) -> list[Run]:
        """Finish every job due by ``now``, each freed slot taking the queue
        head at its own finish time. Returns the runs finished."""
        done = []
        while self.running and self.running[0][0] <= now:
            t, _, run = heapq.heappop(self.running)
            run.finish = t
            self.busy_work += run.job.work
            done.append(run)
            self._start(t)
        self.finished.extend(done)
        return done

    def load(self) -> int:
        """Jobs at the site, queued + running (Eager et al.'s queue length)."""
        return len(self.queue) + len(self.running)

    def queued_work(self) -> float:
        return sum(r.job.work for r in self.queue)

    def running_work(self, now: float) -> float:
        """Remaining work of the running jobs at ``now``."""
        return sum(max(0.0, t - now) for t, _, _ in self.running)

    def publish(self, now: float) -> Publication:
        self.complete(now)
        return Publication(site=self.sid, at=now, queue_length=len(self.queue), queued_work=self.queued_work(),
                           running_work=self.running_work(now), capacity=self.capacity,
                           recent_wait_p50=self.waits.p50(now))
