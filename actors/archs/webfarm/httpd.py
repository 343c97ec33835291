"""The web servers of one machine host's machines, as one actor
(``httpd-<h>``), and the endpoint the machine host polls it through.

Each machine is one server replica: a ``schedulers.archs.webfarm.server.
Server`` core (workers, one FIFO accept queue, a speed). Balancers hand
requests here (``accept``); a request a worker takes is a placement (its
``txn``), handed to the host at its next poll (``exchange``) to run for its
service time. Every ``report_interval`` this actor pushes its servers'
loads to every balancer (stale from the moment they leave); ``loads_now``
is the ideal a fresh-information balancer reads; ``health`` answers a
balancer's checks.

What a server's death is here: its machine host dies. This actor and the
host are one box in the real system; split in two, the httpd sees the death
as its host's silence (no poll for ``silent_after``), and from then on the
server fails its health checks; what it had queued dies at the host's
restart (``rejoin``) or, if the host never returns, at the end of the run.
Requests routed to it before the balancers noticed wait with it and die
with it: a real balancer's requests to a dead server fail the same way.

Pages and their clients (``schedulers.archs.webfarm.clients``): a page
is taken in only while its client still waits and has not fenced it here
(``Intake``); one that comes later is dropped unanswered (its client's
timeout is its fate). Each load report also tells the clients which pages
were taken in since the last, and ``fence`` answers which of a list were.
"""
from __future__ import annotations

import asyncio
import heapq
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.actors.common.host_handoff import HostHandoff
from schedlab.actors.common.per_host_endpoint import PerHostEndpoint
from schedlab.actors.common.shell import ActorShell
from schedlab.actors.common.usage_sampler import sample_usage_loop
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.webfarm.events import WEBFARM_HTTPD
from schedlab.schedulers.archs.webfarm.clients import Intake
from schedlab.schedulers.archs.webfarm.server import Record, Server
from schedlab.schedulers.archs.webfarm.spec import CLIENTS, httpd_name
from schedlab.schedulers.events.shared import JOB_PENDING, JOB_REJECTED, JOB_SCHEDULED, TXN
from schedlab.schedulers.model.resources import slots_for

TASK_BITS = 20  # a request's id in its server core: job << TASK_BITS | task (tasks per job < 2**17)


def rid_of(job: int, task: int) -> int:
    return job << TASK_BITS | task


def key_of(rid: int) -> tuple[int, int]:
    return rid >> TASK_BITS, rid & ((1 << TASK_BITS) - 1)


@dataclass(frozen=True)
class HttpdConfig:
    host: int
    machines: tuple[int, ...]
    capacity: np.ndarray  # [machines of this host, R]
    largest: tuple[float, ...]  # the workload's largest request, per resource
    workers: tuple[int, ...]  # per machine as configured (0: as many as fit)
    speeds: tuple[float, ...]  # per machine
    max_queue: int | None
    transfer_cost: float
    standing: tuple[tuple[tuple[int, int, tuple[float, ...]], ...], ...]  # per machine: prefill tasks
    report_interval: float
    balancers: tuple[str, ...]
    silent_after: float  # emulated s without a poll: the host is dead to the balancers' checks
    hosts: int = 1
    sample_interval: float = 5.0  # httpd-0 samples the cell's utilization (cell_sample)
    total: tuple[float, ...] = ()  # the cell's capacity, per resource
    retention: float = 600.0  # emulated s past a page's deadline it is remembered as taken in (Intake)


class Httpd(ActorShell):
    def __init__(self, rt: Runtime, cfg: HttpdConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, httpd_name(cfg.host), metrics, flush_interval)
        self.cfg = cfg
        self.servers = {m: Server(m, 1, speed, cfg.max_queue, cfg.transfer_cost)
                        for m, speed in zip(cfg.machines, cfg.speeds)}
        self.standing = {m: {(j, t): np.asarray(r, dtype=np.float64) for j, t, r in tasks}
                         for m, tasks in zip(cfg.machines, cfg.standing)}
        self.req: dict[tuple[int, int], tuple[str, list[float]]] = {}  # accepted request -> (balancer, request)
        self.unstarted: dict[int, set[int]] = {}  # job -> its tasks accepted here and not started yet
        self.refused: set[int] = set()  # jobs one request of which was refused here
        self.intake = Intake(cfg.retention)  # pages taken in, and pages their clients fenced here
        self.clients: Any = None  # the clients' handle, looked up once (they are never restarted)
        self.handoff = HostHandoff(cfg.machines)  # started by a core, on the way to the host
        self.last_poll = 0.0
        self.frozen = False  # the hosts are stopping: nothing more starts
        self.wake = asyncio.Event()
        # (a server's next event, its machine), pushed at every change to a
        # server: stale entries are skipped. A poll or a clock turn looks at
        # the servers due, not at every server of the host.
        self.events: list[tuple[float, int]] = []
        self.counts = {"accepted": 0, "refused": 0, "crashed": 0, "reports": 0, "checks": 0, "client_gone": 0}

    async def on_start(self) -> None:
        now = self.rt.now()
        self.last_poll = now
        for m in self.cfg.machines:
            self._took(self.servers[m].resize(self._workers(m), now), now)
            self._moved(m)
        self.spawn_loop(self._clock_loop())
        self.spawn_loop(self._report_loop())
        if self.cfg.host == 0 and self.cfg.total:
            names = [httpd_name(h) for h in range(self.cfg.hosts)]
            self.spawn_loop(sample_usage_loop(self, names, self.cfg.total, self.cfg.sample_interval))

    def _workers(self, m: int) -> int:
        i = self.cfg.machines.index(m)
        used = sum(self.standing[m].values(), np.zeros(self.cfg.capacity.shape[1]))
        return slots_for(self.cfg.capacity[i], used, self.cfg.largest, self.cfg.workers[i])

    # -------------------------------------------------------------- requests

    async def accept(self, balancer: str, rows: list) -> None:
        """A balancer's requests: [job, task, machine, demand, carries state,
        request, deadline] each. A refused one (queue full, server down)
        refuses its page: the client sees an error. One whose client gave up
        (or fenced it here), or that comes after this httpd stopped, is
        dropped unanswered: its page's fate is the client's."""
        now = self.rt.now()
        self._complete_due(now)
        started: list[Record] = []
        refused: dict[int, str] = {}
        for job, task, m, demand, state, request, deadline in rows:
            if not self.running or not self.intake.admit(int(job), float(deadline), now):
                self.counts["client_gone"] += 1
                continue
            srv = self.servers[int(m)]
            rec = srv.arrive(rid_of(int(job), int(task)), float(demand), now, bool(state))
            self._moved(int(m))
            if rec.dropped:
                self.counts["refused"] += 1
                refused.setdefault(int(job), "queue_full" if srv.up else "server_down")
                continue
            self.counts["accepted"] += 1
            self.req[(int(job), int(task))] = (balancer, list(request))
            self.unstarted.setdefault(int(job), set()).add(int(task))
            if rec.start is not None:
                started.append(rec)
        for job, reason in refused.items():
            self._refuse(job, reason, balancer)
        self._took(started, now)

    def _refuse(self, job: int, reason: str, balancer: str) -> None:
        if job not in self.refused:
            self.refused.add(job)
            self.log.emit(JOB_REJECTED, job_id=job, reason=reason, scheduler=balancer)

    def _took(self, records: list[Record], now: float) -> None:
        """Requests a worker took: a placement each, handed to the host at
        its next poll with the exact time the worker took it."""
        by_job: dict[tuple[str, int], list] = {}
        for rec in records:
            job, task = key_of(rec.rid)
            if self.frozen:
                continue  # the run is ending: its host would never pull it (pending at the end)
            balancer, request = self.req[(job, task)]
            self.handoff.hold(rec.server, [job, task, rec.server, request, rec.service, rec.start, balancer])
            by_job.setdefault((balancer, job), []).append([task, rec.server])
            left = self.unstarted.get(job)
            if left is not None:
                left.discard(task)
                if not left:
                    del self.unstarted[job]
                    if job not in self.refused:
                        self.log.emit(JOB_SCHEDULED, job_id=job, scheduler=balancer, attempts=1)
        for (balancer, job), placed in by_job.items():
            self.log.emit(TXN, scheduler=balancer, job_id=job, claims=len(placed), committed=len(placed),
                          think=0.0, placed=placed, outbox=self.name, t=now, span=0.0)
        if records:
            self.wake.set()

    def _moved(self, m: int) -> None:
        """Server ``m`` changed: its next event (if any) goes on the heap."""
        t = self.servers[m].next_event()
        if math.isfinite(t):
            heapq.heappush(self.events, (t, m))

    def _next_event(self) -> float:
        """The earliest next event of any server (stale heap entries dropped)."""
        while self.events and self.events[0][0] != self.servers[self.events[0][1]].next_event():
            heapq.heappop(self.events)
        return self.events[0][0] if self.events else math.inf

    def _complete_due(self, now: float) -> None:
        due: set[int] = set()
        while self.events and self.events[0][0] <= now:
            _t, m = heapq.heappop(self.events)
            if self.servers[m].next_event() <= now:
                due.add(m)
        for m in sorted(due, key=self.handoff.order.__getitem__):  # machine order, as a scan of every server went
            _finished, started = self.servers[m].complete(now)
            self._took(started, now)
            self._moved(m)

    async def _clock_loop(self) -> None:
        cap = self.flush_interval * 4
        while self.running:
            now = self.rt.now()
            self._complete_due(now)
            nxt = self._next_event()
            wait = cap if not math.isfinite(nxt) else min(cap, max(0.0, self.rt.wall(nxt - self.rt.now())))
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), wait)
            except TimeoutError:
                pass

    def on_stopping(self) -> None:
        self.wake.set()

    # ------------------------------------------------------------ balancers

    def _loads(self) -> list[list]:
        now = self.rt.now()
        return [[m, s.load(), now] for m, s in self.servers.items()]

    async def loads_now(self) -> list[list]:
        """The true loads now: what a fresh-information balancer reads."""
        self._complete_due(self.rt.now())
        return self._loads()

    async def _report_loop(self) -> None:
        while await self.nap(self.cfg.report_interval):
            now = self.rt.now()
            self._complete_due(now)
            rows = self._loads()
            self.counts["reports"] += 1
            for name in self.cfg.balancers:
                h = self.rt.lookup(name)
                if h is not None:
                    self.rt.send(h, "loads", rows)
            taken = self.intake.acks()
            if taken:
                self.clients = self.clients or self.rt.lookup(CLIENTS)
                if self.clients is not None:
                    self.rt.send(self.clients, "seen", taken)
            self.intake.prune(now)

    async def taken(self, pages: list[int]) -> list[int]:
        """Which of these pages were taken in here (closes nothing)."""
        return self.intake.taken(int(p) for p in pages)

    async def fence(self, pages: list) -> list[int]:
        """The clients' question, [page, deadline] each: which of these were
        taken in here? The others never will be (closed here)."""
        return self.intake.fence((int(p), float(d)) for p, d in pages)

    async def health(self) -> list[list]:
        """[machine, up] per server: down while its host is silent (dead,
        restarting) or its server crashed and was not restarted."""
        self.counts["checks"] += 1
        alive = not self.frozen and self.rt.now() - self.last_poll <= self.cfg.silent_after
        return [[m, alive and s.up] for m, s in self.servers.items()]

    async def usage(self) -> list[float]:
        """What this host's machines run by this actor's account (requests
        handed to the host and not ended, standing tasks)."""
        used = np.zeros(self.cfg.capacity.shape[1])
        for m in self.cfg.machines:
            for key in self.handoff.running(m):
                used += np.asarray(self.req[key][1], dtype=np.float64)
            for r in self.standing[m].values():
                used += r
        return used.tolist()

    # ------------------------------------------------------------- the host

    async def exchange(self, host: int, finished: bytes) -> Any:
        now = self.rt.now()
        self.last_poll = now
        self._complete_due(now)
        for job, task, m in self.handoff.returned(finished):
            if job < 0:
                if self.standing.get(m, {}).pop((job, task), None) is not None:
                    self._took(self.servers[m].resize(self._workers(m), now), now)
                    self._moved(m)
            else:
                self.req.pop((job, task), None)
        return self.handoff.hand_out(lambda m: self.servers[m].workers)

    async def rejoin(self, host: int) -> list:
        """The host restarted: its servers died with it. What they ran is
        lost, launches it never pulled never ran, and what waited in their
        queues is refused (the clients got errors); they serve again, empty."""
        now = self.rt.now()
        self.last_poll = now
        lost, unpulled = [], []
        for m, srv in self.servers.items():
            for rec in srv.crash(now):
                job, task = key_of(rec.rid)
                if rec.start is None:  # waiting in the queue: never placed
                    self.counts["crashed"] += 1
                    balancer, _ = self.req.pop((job, task), ("?", []))
                    self.unstarted.pop(job, None)
                    self._refuse(job, "server_crashed", balancer)
            gone, never = self.handoff.drop(m)
            lost += gone
            unpulled += never
            for j, t in [*gone, *never]:
                self.req.pop((j, t), None)
            self.standing[m] = {}
            srv.restart()
            srv.resize(self._workers(m), now)
            self._moved(m)
        return [lost, unpulled]

    async def hosts_stopping(self) -> None:
        self.frozen = True

    async def on_stop(self) -> dict:
        self.handoff.log_never_pulled(self.log, self.name)
        for job, tasks in sorted(self.unstarted.items()):
            if job not in self.refused:
                balancer = next((self.req[(job, t)][0] for t in tasks if (job, t) in self.req), "?")
                self.log.emit(JOB_PENDING, job_id=job, scheduler=balancer, unplaced=len(tasks))
        servers = {m: {"served": s.served, "dropped": s.dropped, "lost": s.lost, "transfers": s.transfers,
                       "workers": s.workers} for m, s in self.servers.items()}
        self.log.emit(WEBFARM_HTTPD, host=self.cfg.host, **self.counts, servers=servers)
        return dict(self.counts)


class HttpdEndpoint(PerHostEndpoint):
    """What machine host ``h`` polls: its own ``httpd-<h>``."""
