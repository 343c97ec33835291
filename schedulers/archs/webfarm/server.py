"""One web server replica, pure: ``workers`` concurrent workers (threads or
processes of an httpd), one FIFO accept queue in front of them, a speed
factor. Nothing here knows the clock: every call takes ``now``, and the
caller advances time by asking ``next_event()`` and calling ``complete``.

Contracts:

* Service time of a request = ``demand / speed`` plus ``transfer_cost`` if
  the request carries session state in a cookie. The transfer cost is a
  fixed time, not scaled by speed: decoding and re-validating a state
  blob (or fetching it from a shared store) is mostly I/O and crypto
  latency that holds the worker, and charging it as time keeps the cost of
  request-level balancing the same on every server.
* FIFO: a request starts only when every request queued before it on this
  server has started. A free worker takes the head of the queue at the
  exact moment it frees, even if ``complete`` is called later.
* ``max_queue`` bounds the *waiting* requests (not the running ones); a
  request arriving to a full queue is dropped (refused, counted in
  ``dropped``) and never runs, as a full listen backlog refuses a
  connection.
* ``load()`` is the true instantaneous load (queued + running); what a
  balancer sees is a ``LoadReport`` snapshot taken at some time, which is
  stale from the moment it leaves.
"""
from __future__ import annotations

import collections
import heapq
import math
from dataclasses import dataclass


@dataclass
class Record:
    """Accounting for one request at one server. ``start``/``finish`` are
    None until they happen; a dropped request has neither."""

    rid: int
    server: int
    arrival: float
    service: float  # seconds it holds a worker (demand/speed + transfer)
    carries_state: bool = False
    start: float | None = None
    finish: float | None = None
    dropped: bool = False
    lost: bool = False  # the server crashed while it was queued or running

    @property
    def wait(self) -> float:
        assert self.start is not None, "not started"
        return self.start - self.arrival

    @property
    def latency(self) -> float:
        """Arrival to finish: queueing + service (what the user waits for)."""
        assert self.finish is not None, "not finished"
        return self.finish - self.arrival


@dataclass(frozen=True)
class LoadReport:
    """A server's load as sent to a balancer at time ``at``: it is only
    true at ``at``; the balancer must assume it ages."""

    server: int
    load: int
    at: float


class Server:
    def __init__(self, sid: int, workers: int, speed: float = 1.0, max_queue: int | None = None,
                 transfer_cost: float = 0.0) -> None:
        if workers < 1:
            raise ValueError(f"server {sid}: workers must be >= 1, got {workers}")
        if not (speed > 0 and math.isfinite(speed)):
            raise ValueError(f"server {sid}: speed must be positive and finite, got {speed}")
        if max_queue is not None and max_queue < 0:
            raise ValueError(f"server {sid}: max queue length must be >= 0 (or None: unbounded), got {max_queue}")
        if transfer_cost < 0:
            raise ValueError(f"server {sid}: state-transfer cost must be >= 0, got {transfer_cost}")
        self.sid = sid
        self.workers = workers
        self.speed = speed
        self.max_queue = max_queue
        self.transfer_cost = transfer_cost
        self.queue: collections.deque[Record] = collections.deque()
        self.running: list[tuple[float, int, Record]] = []  # heap of (finish, seq, record)
        self._seq = 0  # equal finish times end in start order
        self.up = True
        self.busy_time = 0.0  # worker-seconds of finished service (ended or cut short by a crash)
        self.served = 0
        self.dropped = 0
        self.lost = 0
        self.transfers = 0  # requests that paid the state-transfer cost

    # ------------------------------------------------------------ requests

    def service_time(self, demand: float, carries_state: bool = False) -> float:
        if demand < 0:
            raise ValueError(f"request demand must be >= 0, got {demand}")
        return demand / self.speed + (self.transfer_cost if carries_state else 0.0)

    def arrive(self, rid: int, demand: float, now: float, carries_state: bool = False) -> Record:
        """A request reaches this server at ``now``. Returns its record:
        started (a worker was free), queued, or dropped (queue full, or the
        server is down: the connection is refused). The caller must have
        called ``complete(now)`` first so workers freed by ``now`` count."""
        rec = Record(rid, self.sid, now, self.service_time(demand, carries_state), carries_state)
        if not self.up or (self.max_queue is not None and len(self.running) >= self.workers
                           and len(self.queue) >= self.max_queue):
            rec.dropped = True
            self.dropped += 1
            return rec
        if carries_state:
            self.transfers += 1
        if len(self.running) < self.workers:
            self._start(rec, now)
        else:
            self.queue.append(rec)
        return rec

    def _start(self, rec: Record, at: float) -> None:
        rec.start = at
        heapq.heappush(self.running, (at + rec.service, self._seq, rec))
        self._seq += 1

    def resize(self, workers: int, now: float) -> list[Record]:
        """The server now has ``workers`` workers (its machine's other
        work, standing before the run, ended or began): extra workers take
        the queue's head at ``now``; a worker beyond the new count finishes
        what it runs and takes nothing more. Zero is allowed: a machine full
        of other work serves nothing until it frees. Returns the requests
        started."""
        if workers < 0:
            raise ValueError(f"server {self.sid}: workers must be >= 0, got {workers}")
        self.workers = workers
        started = []
        while self.queue and len(self.running) < self.workers:
            rec = self.queue.popleft()
            self._start(rec, now)
            started.append(rec)
        return started

    def next_event(self) -> float:
        """When the next running request finishes (inf when idle): the
        caller's next wake-up for this server."""
        return self.running[0][0] if self.running else math.inf

    def complete(self, now: float) -> tuple[list[Record], list[Record]]:
        """Finish every request due by ``now``, in finish order; each freed
        worker takes the queue head at its own finish time. Returns
        (finished, started), both in time order."""
        finished: list[Record] = []
        started: list[Record] = []
        while self.running and self.running[0][0] <= now:
            t, _, rec = heapq.heappop(self.running)
            rec.finish = t
            self.busy_time += rec.service
            self.served += 1
            finished.append(rec)
            if self.queue and len(self.running) < self.workers:
                nxt = self.queue.popleft()
                self._start(nxt, t)
                started.append(nxt)
        return finished, started

    # ---------------------------------------------------------------- load

    def load(self) -> int:
        """Queued + running, now (the ideal, fresh information)."""
        return len(self.queue) + len(self.running)

    def busy(self) -> int:
        return len(self.running)

    def report(self, now: float) -> LoadReport:
        """The snapshot a stale-information balancer gets."""
        return LoadReport(self.sid, self.load(), now)

    def busy_until(self, now: float) -> float:
        """Worker-seconds of service done by ``now``, counting the elapsed
        part of requests still running (for utilization over a window that
        ends mid-request)."""
        return self.busy_time + sum(now - r.start for _, _, r in self.running
                                    if r.start is not None and r.start < now)

    # ------------------------------------------------------------- crashes

    def crash(self, now: float) -> list[Record]:
        """The process dies at ``now``: running and queued requests are lost
        (their users get an error), the time already spent on running ones
        counts as busy. It refuses connections until ``restart``."""
        lost = [r for _, _, r in sorted(self.running)] + list(self.queue)
        for _, _, r in self.running:
            self.busy_time += max(0.0, now - r.start)  # type: ignore[operator]
        for r in lost:
            r.lost = True
        self.lost += len(lost)
        self.running, self.queue = [], collections.deque()
        self.up = False
        return lost

    def restart(self) -> None:
        """Back, empty."""
        self.up = True
