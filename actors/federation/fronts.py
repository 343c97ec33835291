"""The federation's own actors: the users releasing jobs (``users``), the
bulletin board (``board``), and the front ends that choose a site: an
observational client per home site (``client-<i>``), a meta-scheduler
(``meta``), or a peer gateway per site for sender-initiated load sharing
(``peer-<i>``). Decisions are the pure cores'
(``schedulers.federation``); a site is reached only through its
submitter (``inject``) and its metrics collector (``left_queue``), so any
architecture can be a site.

Every routing decision is one ``fed_routed`` event (job, home, site, work,
how): the federation's summary and its imbalance come from those.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from schedlab.actors.common.shell import ActorShell
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.federation.events import (
    FED_FELL_BACK, FED_HELD, FED_PUBLISHED, FED_RELEASED, FED_ROUTED, FED_TRANSFER,
)
from schedlab.schedulers.federation.bulletin import Board, Publication
from schedlab.schedulers.federation.spec import JoinSpec, client_name, job_work, peer_name
from schedlab.schedulers.federation.meta import MetaScheduler
from schedlab.schedulers.federation.observational import ObservationalClient
from schedlab.schedulers.federation.p2p import ThresholdSharing
from schedlab.schedulers.federation.site_queue import SiteQueue
from schedlab.schedulers.model.seeding import rng_for

CALL_WALL_S = 2.0


@dataclass(frozen=True)
class Sites:
    """How the federation reaches its sites (handles in their namespaces)."""

    names: tuple[str, ...]
    submitters: tuple[Any, ...]
    metrics: tuple[Any, ...]
    capacity: tuple[float, ...]


def front_of(join: JoinSpec, home: int) -> str:
    if join.mode == "observational":
        return client_name(home)
    if join.mode == "meta":
        return "meta"
    return peer_name(home)


class _Front(ActorShell):
    """What every front end does: hand jobs to a site and say so."""

    def __init__(self, rt: Runtime, name: str, join: JoinSpec, sites: Sites, seed: int, metrics: Any,
                 flush_interval: float) -> None:
        super().__init__(rt, name, metrics, flush_interval)
        self.join, self.sites = join, sites
        self.rng = rng_for(seed, f"multicluster/{name}")

    async def _hand(self, site: int, jobs: list[dict], how: str) -> None:
        """Jobs to ``site``'s submitter (awaited: a job said routed has
        reached it), told to the board for the site's queue."""
        if not jobs:
            return
        await self.rt.call(self.sites.submitters[site], "inject", jobs)
        now = self.rt.now()
        for j in jobs:
            self.log.emit(FED_ROUTED, job_id=j["job_id"], home=j["home"], site=site, work=job_work(j), how=how,
                          front=self.name)
        board = self.rt.lookup("board")
        if board is not None:
            self.rt.send(board, "handed", site, [[j["job_id"], now, job_work(j)] for j in jobs])


class Users(ActorShell):
    """The users of every site: each job released at its time to the front
    end its home site uses (a front end that is down keeps it waiting at
    the user; with a meta-scheduler down and ``on_failure = "home"`` it is
    handed straight to the home site)."""

    def __init__(self, rt: Runtime, jobs: list[dict], join: JoinSpec, sites: Sites, metrics: Any,
                 flush_interval: float) -> None:
        super().__init__(rt, "users", metrics, flush_interval)
        self.jobs = sorted(jobs, key=lambda j: j["submit_time"])
        self.join, self.sites = join, sites
        self.next = 0
        self.waiting: dict[str, list[dict]] = {}

    async def on_start(self) -> None:
        self.spawn_loop(self._loop())

    async def _loop(self) -> None:
        while self.running:
            now = self.rt.now()
            while self.next < len(self.jobs) and self.jobs[self.next]["submit_time"] <= now:
                job = dict(self.jobs[self.next], submit_time=now)
                self.next += 1
                self.log.emit(FED_RELEASED, job_id=job["job_id"], home=job["home"], work=job_work(job))
                self.waiting.setdefault(front_of(self.join, job["home"]), []).append(job)
            await self._deliver()
            gap = (self.rt.wall(self.jobs[self.next]["submit_time"] - self.rt.now())
                   if self.next < len(self.jobs) else self.flush_interval * 4)
            if not await self.nap_wall(max(gap, self.flush_interval / 2)):
                return

    async def _deliver(self) -> None:
        for name in [n for n, b in self.waiting.items() if b]:
            batch = self.waiting.pop(name)
            h = self.rt.lookup(name)
            try:
                if h is None:
                    raise RuntimeError(f"{name} is down")
                # No deadline: a slow or paused front end still takes the
                # batch (a call that timed out has still been sent), and a
                # dead one raises.
                await self.rt.call(h, "submit", batch)
            except Exception:
                if name == "meta" and self.join.on_failure == "home":
                    for job in batch:
                        self.log.emit(FED_FELL_BACK, job_id=job["job_id"], home=job["home"])
                    by_home: dict[int, list[dict]] = {}
                    for job in batch:
                        by_home.setdefault(job["home"], []).append(job)
                    for home, jobs in by_home.items():
                        await self.rt.call(self.sites.submitters[home], "inject", jobs)
                        for j in jobs:
                            self.log.emit(FED_ROUTED, job_id=j["job_id"], home=home, site=home, work=job_work(j),
                                          how="fell_back", front=self.name)
                else:
                    self.waiting.setdefault(name, [])[:0] = batch  # held by its user until the front end is back

    async def on_stop(self) -> dict:
        held = [j for b in self.waiting.values() for j in b]
        for j in held:
            self.log.emit(FED_HELD, job_id=j["job_id"], home=j["home"])
        return {"released": self.next, "held": len(held)}


class BoardActor(ActorShell):
    """The bulletin board: every ``publish_interval`` it reads each site's
    queue (what was handed to it, minus what its event log says left) and
    publishes it to every subscriber. Publications are stale by design."""

    def __init__(self, rt: Runtime, join: JoinSpec, sites: Sites, subscribers: list[str], metrics: Any,
                 flush_interval: float) -> None:
        super().__init__(rt, "board", metrics, flush_interval)
        self.join, self.sites, self.subscribers = join, sites, subscribers
        self.queues = [SiteQueue(i, c, join.wait_window) for i, c in enumerate(sites.capacity)]

    async def handed(self, site: int, rows: list) -> None:
        for job, at, work in rows:
            self.queues[site].handed(int(job), float(at), float(work))

    async def on_start(self) -> None:
        self.spawn_loop(self._loop())

    async def _loop(self) -> None:
        while True:
            await self._publish()
            if not await self.nap(self.join.publish_interval):
                return

    async def _publish(self) -> None:
        got = await asyncio.gather(*(self.rt.call(m, "left_queue", q.cursor) for m, q in zip(self.sites.metrics, self.queues)),
                                   return_exceptions=True)
        now = self.rt.now()
        pubs = []
        for q, g in zip(self.queues, got):
            if not isinstance(g, BaseException):
                q.left(g[0], g[1])
            pubs.append(q.publication(now))
        self.log.emit(FED_PUBLISHED, loads=[[p.site, p.queue_length, round(p.queued_work, 3)] for p in pubs])
        wire = [p.__dict__ for p in pubs]
        for name in self.subscribers:
            h = self.rt.lookup(name)
            if h is not None:
                self.rt.send(h, "published", wire)


class Client(_Front):
    """An observational client of one home site's users: each job to the
    site that looked best on the board, deciding alone."""

    def __init__(self, rt: Runtime, home: int, join: JoinSpec, sites: Sites, seed: int, metrics: Any,
                 flush_interval: float) -> None:
        super().__init__(rt, client_name(home), join, sites, seed, metrics, flush_interval)
        self.home = home
        self.board = Board(len(sites.names), join.publish_interval)
        self.client = ObservationalClient(join.score, join.margin)

    async def published(self, pubs: list[dict]) -> None:
        for p in pubs:
            self.board.publish(Publication(**p))

    async def submit(self, jobs: list[dict]) -> None:
        by_site: dict[int, list[dict]] = {}
        for job in jobs:
            site = self.client.choose(self.board, self.rng, self.home) if self.board.known() else self.home
            by_site.setdefault(site, []).append(job)
        for site, batch in by_site.items():
            await self._hand(site, batch, "observed")


class Meta(_Front):
    """The meta-scheduler: every job of every user through it; it counts
    what it sent each site since the site's last publication. Killed, it
    comes back with an empty book (stale until the next publications)."""

    def __init__(self, rt: Runtime, join: JoinSpec, sites: Sites, seed: int, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, "meta", join, sites, seed, metrics, flush_interval)
        self.meta = MetaScheduler(sites.capacity, on_failure=join.on_failure)

    async def published(self, pubs: list[dict]) -> None:
        for p in pubs:
            self.meta.observe(Publication(**p))

    async def submit(self, jobs: list[dict]) -> None:
        now = self.rt.now()
        by_site: dict[int, list[dict]] = {}
        for job in jobs:
            site = self.meta.route(job_work(job), now, self.rng, job["home"])
            by_site.setdefault(int(site if site is not None else job["home"]), []).append(job)
        for site, batch in by_site.items():
            await self._hand(site, batch, "meta")


class Peer(_Front):
    """A site's gateway for sender-initiated load sharing: its users' jobs
    go home unless home's queue per slot is above the threshold; then it
    probes up to ``probe_limit`` random peers and sends the job, after
    ``transfer_delay``, to the first below the threshold."""

    def __init__(self, rt: Runtime, site: int, join: JoinSpec, sites: Sites, seed: int, metrics: Any,
                 flush_interval: float) -> None:
        super().__init__(rt, peer_name(site), join, sites, seed, metrics, flush_interval)
        self.site = site
        self.queue = SiteQueue(site, sites.capacity[site], join.wait_window)
        self.sharing = ThresholdSharing(len(sites.names), threshold=join.threshold, probe_limit=join.probe_limit,
                                        transfer_delay=join.transfer_delay)
        self.in_flight: dict[asyncio.Task, list[dict]] = {}

    async def _refresh(self) -> None:
        rows, cursor = await self.rt.call(self.sites.metrics[self.site], "left_queue", self.queue.cursor)
        self.queue.left(rows, cursor)

    async def load(self) -> float:
        """A peer's probe: this site's jobs waiting per slot, now."""
        await self._refresh()
        return self.queue.load()

    async def submit(self, jobs: list[dict]) -> None:
        await self._refresh()
        home: list[dict] = []
        away: dict[int, list[dict]] = {}
        probes: dict[int, float] | None = None  # the peers' loads, read once per batch when first needed
        for job in jobs:
            own = self.queue.load()
            if own > self.join.threshold and probes is None:
                probes = await self._probe_all()
            known = probes or {}
            d = self.sharing.decide(self.site, 0, own, lambda p: known.get(p, float("inf")), self.rt.now(), self.rng)
            if d.to is None:
                home.append(job)
                self.queue.handed(job["job_id"], self.rt.now(), job_work(job))
            else:
                self.log.emit(FED_TRANSFER, job_id=job["job_id"], src=self.site, dst=d.to, probed=list(d.probed))
                away.setdefault(d.to, []).append(job)
        await self._hand(self.site, home, "home")
        for dst, batch in away.items():
            task = asyncio.get_running_loop().create_task(self._transfer(dst, batch))
            self.in_flight[task] = batch
            task.add_done_callback(lambda t: self.in_flight.pop(t, None))

    async def _probe_all(self) -> dict[int, float]:
        peers = [p for p in range(len(self.sites.names)) if p != self.site]
        handles = [self.rt.lookup(peer_name(p)) for p in peers]
        got = await asyncio.gather(*(asyncio.wait_for(self.rt.call(h, "load"), self.rt.wall(CALL_WALL_S * self.rt.scale))
                                     for h in handles if h is not None), return_exceptions=True)
        live = [p for p, h in zip(peers, handles) if h is not None]
        return {p: float(g) for p, g in zip(live, got) if not isinstance(g, BaseException)}

    async def _transfer(self, dst: int, jobs: list[dict]) -> None:
        await self.nap(self.join.transfer_delay)
        h = self.rt.lookup(peer_name(dst))
        try:
            await self.rt.call(h, "accept", jobs)
        except Exception:  # the peer is down: the jobs come back home
            await self._hand(self.site, jobs, "returned")

    async def accept(self, jobs: list[dict]) -> None:
        """Jobs a peer transferred here: they stay (one transfer at most)."""
        now = self.rt.now()
        for job in jobs:
            self.queue.handed(job["job_id"], now, job_work(job))
        await self._hand(self.site, jobs, "transferred")

    async def on_stop(self) -> dict:
        for t, jobs in list(self.in_flight.items()):
            t.cancel()
            for j in jobs:  # still on the wire when the run ended
                self.log.emit(FED_HELD, job_id=j["job_id"], home=j["home"])
        return {"probes": self.sharing.probes, "transfers": self.sharing.transfers, "kept_over": self.sharing.kept_over}
