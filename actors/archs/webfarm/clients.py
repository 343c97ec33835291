"""The web farm's users (``clients``): the shell around the pure
``schedulers.archs.webfarm.clients.ClientBook``.

The submitter releases pages here (the workload); the clients send them to
whichever balancer holds the address (the latest to announce itself with
``vip``) and wait for an answer: a refusal comes back in the balancer's
reply, and a server that took a page in acknowledges it with its next load
report. A page nobody answered ``grace`` after its deadline is fenced at
every httpd (``fence``): taken in somewhere, that httpd owns its fate; if
nowhere, the client gave up on it (``job_rejected``, reason
``client_timeout``). So a page a balancer took and then died with, or
forwarded over a cut link, still has a fate, and never two.

Not a chaos target: the clients are the world outside the farm.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from schedlab.actors.common.shell import ActorShell
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.webfarm.clients import ClientBook
from schedlab.schedulers.archs.webfarm.events import WEBFARM_CLIENTS
from schedlab.schedulers.archs.webfarm.spec import CLIENTS, httpd_name
from schedlab.schedulers.events.shared import JOB_PENDING, JOB_REJECTED

REASON = "client_timeout"


@dataclass(frozen=True)
class ClientsConfig:
    timeout: float  # emulated s a client waits for an answer (client_timeout)
    grace: float  # emulated s past the deadline before a page is fenced
    tick: float  # emulated s between looks for pages to fence
    hosts: int  # httpds to fence at
    first_holder: str  # the balancer addressed before any announced itself


class Clients(ActorShell):
    def __init__(self, rt: Runtime, cfg: ClientsConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, CLIENTS, metrics, flush_interval)
        self.cfg = cfg
        self.book = ClientBook(cfg.timeout, cfg.grace)
        self.pages: dict[int, dict] = {}  # open page -> its wire form (to send again)
        self.holder, self.handle, self.epoch = cfg.first_holder, None, -1
        self.inflight: set[asyncio.Task] = set()
        self.httpds: dict[int, Any] = {}  # looked up once: httpds are never restarted
        self.counts = {"sent": 0, "refused": 0, "timed_out": 0, "fenced": 0, "resent": 0, "pending_at_end": 0}

    async def on_start(self) -> None:
        self.handle = self.rt.lookup(self.holder)
        self.spawn_loop(self._expiry_loop())

    # ----------------------------------------------------------------- pages

    async def submit(self, jobs: list[dict]) -> None:
        """The submitter's release: send at once, answer the submitter now
        (the clients wait on the farm, not the submitter)."""
        for wire in jobs:
            self.book.sent(int(wire["job_id"]), float(wire["submit_time"]))
            self.pages[int(wire["job_id"])] = wire
        self.counts["sent"] += len(jobs)
        self._send(jobs)

    def _send(self, jobs: list[dict]) -> None:
        if jobs:
            task = asyncio.get_running_loop().create_task(self._forward(self.holder, self.handle, jobs))
            self.inflight.add(task)
            task.add_done_callback(self.inflight.discard)

    async def _forward(self, holder: str, h: Any, jobs: list[dict]) -> None:
        """Send to the address holder as it was when they left (a handle,
        not a name: a dead holder restarted is not the address)."""
        wait = self.rt.wall(self.cfg.timeout + self.cfg.grace)
        try:
            if h is None:
                raise LookupError(holder)
            refused = await asyncio.wait_for(self.rt.call(h, "submit", jobs), wait)
        except TimeoutError:
            return  # a paused balancer: the fence settles these
        except Exception:
            # The balancer was dead when they came: no one received them.
            self.book.bounced(int(w["job_id"]) for w in jobs)
            if holder != self.holder:  # the address moved meanwhile
                await self._resend()
            return
        for job, reason in refused or ():
            if self.book.answered(int(job)):
                self.pages.pop(int(job), None)
                self.counts["refused"] += 1
                self.log.emit(JOB_REJECTED, job_id=int(job), reason=reason, scheduler=holder)

    async def vip(self, holder: str, epoch: int) -> None:
        """``holder`` took the address (its lease epoch): pages go there now,
        with those that bounced off the dead one and still wait."""
        if epoch < self.epoch:
            return  # an older announcement, overtaken
        self.holder, self.handle, self.epoch = holder, self.rt.lookup(holder), epoch
        await self._resend()

    async def _resend(self) -> None:
        """Send the bounced pages whose clients still wait to the holder,
        except those an httpd has: a balancer that died during the call
        (Ray cannot tell that from one dead before it) may have forwarded
        them, and a page forwarded twice would run twice."""
        waiting = self.book.resend(self.rt.now())
        if not waiting:
            return
        got = await asyncio.gather(*(self._ask(h, "taken", waiting) for h in range(self.cfg.hosts)))
        for p in {int(p) for rows in got for p in rows}:
            if self.book.answered(p):
                self.pages.pop(p, None)
        again = [self.pages[p] for p in waiting if p in self.book.open and p not in self.book.fencing]
        self.counts["resent"] += len(again)
        self._send(again)

    async def seen(self, pages: list[int]) -> None:
        """An httpd took these in: their fates are its."""
        for p in pages:
            if self.book.answered(int(p)):
                self.pages.pop(int(p), None)

    # ---------------------------------------------------------------- fences

    async def _expiry_loop(self) -> None:
        while await self.nap(self.cfg.tick):
            due = self.book.due(self.rt.now())
            if due:
                await self._fence(due, at_end=False)

    async def _fence(self, due: list[tuple[int, float]], at_end: bool) -> None:
        """Ask every httpd which took these in (each closes the rest); log the
        fate of those none took: a client timeout, or, at the end of the run
        with the client still within its timeout, pending."""
        got = await asyncio.gather(*(self._ask(h, "fence", [[p, d] for p, d in due]) for h in range(self.cfg.hosts)))
        taken = {int(p) for rows in got for p in rows}
        self.counts["fenced"] += len(due)
        now = self.rt.now()
        deadline = dict(due)
        for p in self.book.fenced([p for p, _ in due], taken):
            wire = self.pages.pop(p, None)
            if at_end and now <= deadline[p]:
                self.counts["pending_at_end"] += 1
                self.log.emit(JOB_PENDING, job_id=p, scheduler=self.holder, orphaned=True,
                              unplaced=len(wire["durations"]) if wire else 1)
            else:
                self.counts["timed_out"] += 1
                self.log.emit(JOB_REJECTED, job_id=p, reason=REASON, scheduler=CLIENTS,
                              gave_up_at=round(deadline[p], 6))

    async def _ask(self, host: int, method: str, pages: list) -> list[int]:
        """An httpd's answer to ``fence`` or ``taken``: the pages it took in.
        httpds are never restarted: one that is paused answers when it
        wakes. One that cannot answer (killed for good, its log with it) has
        taken nothing the run can still see."""
        h = self.httpds.get(host) or self.rt.lookup(httpd_name(host))
        if h is None:
            return []
        self.httpds[host] = h
        try:
            return await self.rt.call(h, method, pages)
        except Exception:
            return []

    async def on_stop(self) -> dict:
        for t in list(self.inflight):
            t.cancel()
        left = self.book.fence_all()
        if left:
            await self._fence(left, at_end=True)
        self.log.emit(WEBFARM_CLIENTS, **self.counts)
        return dict(self.counts)
