"""A load balancer (``lb-<i>``): the shell around the pure
``schedulers.archs.webfarm.balancer.Balancer``.

The clients (``actors.archs.webfarm.clients``) send it the run's pages
(jobs) as they are released; the active balancer routes each page to one
server by its policy and session mode and sends the page's requests to
that server's httpd, each with its deadline (its client's timeout). It
refuses a page in its reply to the clients, who log it (a refusal the
balancer logged itself would die with it): one that reaches it more than
``client_timeout`` after it was sent (the client gave up), one it has no
server for, every page while it does not hold the address. A page it took
and then died with has no answer: its client's timeout is its fate.

With ``lbs`` > 1 the balancers campaign for the coordinator group's lease
(as keepalived's VRRP instances claim a virtual IP): the holder is active,
tells the clients it holds the address and routes; standbys health-check the pool and
keep load reports, and route nothing. With one balancer it is active from
its start; killed, it is down until restarted in place (a single point of
failure).

Load information: ``fresh`` reads every httpd's true loads before each
batch of pages (the ideal no real balancer has); ``reported`` and
``reported+sent`` use the httpds' periodic pushes.
"""
from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.actors.common.shell import ActorShell
from schedlab.actors.coordinator.lease import LeaseCampaign
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.webfarm import policies
from schedlab.schedulers.archs.webfarm.balancer import Balancer
from schedlab.schedulers.archs.webfarm.events import (
    LB_ELECTED, LB_STEPPED_DOWN, SERVER_HEALTH, SESSION_LOST, WEBFARM_LB,
)
from schedlab.schedulers.archs.webfarm.clients import gave_up
from schedlab.schedulers.archs.webfarm.server import LoadReport
from schedlab.schedulers.archs.webfarm.spec import CLIENTS, WebfarmSpec, httpd_name, lb_name
from schedlab.schedulers.events.shared import JOB_ATTEMPT
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.model.seeding import rng_for

ROUTE = "loadbalancer"  # the submitter's route (the address users know), through the clients to the active balancer
CALL_WALL_S = 2.0


@dataclass(frozen=True)
class BalancerConfig:
    index: int
    spec: WebfarmSpec
    servers: int  # the cell's machines, one server each
    machines_per_host: int
    hosts: int
    weights: tuple[float, ...]  # per server
    sessions: np.ndarray  # job id -> session id
    last: np.ndarray  # job id -> it is its session's last page
    replicas: int  # coordinator replicas (the lease lives there)
    seed: int
    restarted: bool = False  # a restarted standby listens a lease before it campaigns


class LoadBalancer(ActorShell):
    def __init__(self, rt: Runtime, cfg: BalancerConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, lb_name(cfg.index), metrics, flush_interval)
        self.cfg = cfg
        s = cfg.spec
        self.fresh = [0.0] * cfg.servers  # fresh mode: true loads read before each batch, plus sends since
        policy = policies.build(s.policy, cfg.servers, weights=list(cfg.weights), d=s.d, info=s.info)
        self.core = Balancer(cfg.servers, policy, s.sessions, s.fall, s.rise, fresh=self.fresh.__getitem__)
        self.rng = rng_for(cfg.seed, self.name)
        self.leads = False
        self.epoch = 0
        self.lease_until = math.inf if s.lbs == 1 else -math.inf
        self.lapsed = False
        self.leader_hint: str | None = None
        self.counts = {"routed": 0, "client_timeouts": 0, "no_server": 0, "not_active": 0, "sessions_lost": 0}

    async def on_start(self) -> None:
        if self.cfg.spec.lbs == 1:
            self._take_over(self.rt.stamp() // 1000)  # epochs need only grow across restarts
        else:
            self.spawn_loop(self._campaign())
        self.spawn_loop(self._health_loop())

    async def _campaign(self) -> None:
        lease_s = self.cfg.spec.lease_ms / 1e3
        # A balancer that comes back listens for one lease before it claims
        # the address (VRRP's Master_Down_Interval after a backup starts):
        # the standby that saw the old master die takes over, and a flapping
        # node does not win back the address it just lost.
        if self.cfg.restarted and not await self.nap_wall(lease_s):
            return
        campaign = LeaseCampaign(self.name, self.cfg.replicas, self.rt, lease_s)
        await campaign.run(self, lambda: self.leads, lambda: self.epoch, self._take_over, self._step_down)

    def _take_over(self, epoch: int) -> None:
        self.leads, self.epoch = True, epoch
        self.log.emit(LB_ELECTED, lb=self.name, epoch=epoch)
        clients = self.rt.lookup(CLIENTS)
        if clients is not None:
            # Pages go here from now on; what could not be delivered to the
            # dead active one comes now (late pages are refused here).
            self.rt.send(clients, "vip", self.name, epoch)

    def _step_down(self) -> None:
        self.leads = False
        self.log.emit(LB_STEPPED_DOWN, lb=self.name, epoch=self.epoch)

    def active(self) -> bool:
        return self.leads and self.rt.now() < self.lease_until

    async def status(self) -> dict:
        return {"lb": self.name, "index": self.cfg.index, "leading": self.active(), "epoch": self.epoch}

    # ----------------------------------------------------------------- pages

    async def submit(self, jobs: list[dict]) -> list[list]:
        """Route the clients' pages; returns [job, reason] per page refused
        (the clients log the refusal: their log survives this balancer)."""
        if not self.active():
            # Pages reaching a balancer that does not hold the address (a
            # standby, one whose lease lapsed, none elected yet) are refused:
            # the client's connection fails.
            self.counts["not_active"] += len(jobs)
            return [[int(wire["job_id"]), "not_active"] for wire in jobs]
        if self.cfg.spec.info == "fresh":
            await self._read_fresh()
        now = self.rt.now()
        s, cfg = self.cfg.spec, self.cfg
        rows: dict[int, list[list]] = {}
        refused: list[list] = []
        for wire in jobs:
            job = Job.from_wire(wire)  # a service page's infinite demand: a connection held for good
            j = job.job_id
            if gave_up(job.submit_time, s.client_timeout, now):
                self.counts["client_timeouts"] += 1
                refused.append([j, "client_timeout"])
                continue
            session = int(cfg.sessions[j])
            route = self.core.route(session, self.rng)
            if route is None:
                self.counts["no_server"] += 1
                refused.append([j, "no_server"])
                continue
            if route.session_lost:
                self.counts["sessions_lost"] += 1
                self.log.emit(SESSION_LOST, session=session, server=route.server, lb=self.name)
            if bool(cfg.last[j]):
                self.core.end_session(session)
            self.fresh[route.server] += 1
            self.counts["routed"] += 1
            self.log.emit(JOB_ATTEMPT, job_id=j, attempt=1, first=True, scheduler=self.name)
            host = route.server // cfg.machines_per_host
            deadline = job.submit_time + s.client_timeout
            rows.setdefault(host, []).extend([j, t, route.server, d, route.carries_state, list(job.request), deadline]
                                             for t, d in enumerate(job.durations))
        for host, batch in rows.items():
            h = self.rt.lookup(httpd_name(host))
            if h is not None:
                self.rt.send(h, "accept", self.name, batch)
        return refused

    async def _read_fresh(self) -> None:
        got = await asyncio.gather(*(self._call(h, "loads_now") for h in range(self.cfg.hosts)))
        for rows in got:
            for m, load, _at in rows or ():
                self.fresh[int(m)] = float(load)

    async def _call(self, host: int, method: str) -> Any:
        h = self.rt.lookup(httpd_name(host))
        if h is None:
            return None
        try:
            return await asyncio.wait_for(self.rt.call(h, method), self.rt.wall(CALL_WALL_S * self.rt.scale))
        except Exception:
            return None

    async def loads(self, rows: list) -> None:
        """An httpd's periodic load report (stale from the moment it left)."""
        for m, load, at in rows:
            self.core.report(LoadReport(int(m), int(load), float(at)))

    # ---------------------------------------------------------------- health

    async def _health_loop(self) -> None:
        cfg = self.cfg
        while await self.nap(cfg.spec.health_interval):
            got = await asyncio.gather(*(self._call(h, "health") for h in range(cfg.hosts)))
            for h, rows in enumerate(got):
                first = h * cfg.machines_per_host
                states = {int(m): bool(ok) for m, ok in rows} if rows else {}
                for m in range(first, min(cfg.servers, first + cfg.machines_per_host)):
                    changed = self.core.check(m, states.get(m, False))
                    if changed is not None:
                        self.log.emit(SERVER_HEALTH, lb=self.name, machine=m, healthy=changed)

    async def hosts_stopping(self) -> None:
        pass

    async def on_stop(self) -> dict:
        self.log.emit(WEBFARM_LB, lb=self.name, **self.counts, refused=self.core.refused,
                      routed_per_server=list(self.core.routed))
        return {**self.counts, "leading": self.active()}
