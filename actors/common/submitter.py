"""The submitter: releases the workload's jobs at their arrival times and
routes each to one scheduler of its class by hashing the job id.

It is also the job store a restarted scheduler or framework recovers its
queue from (as an orchestrator's scheduler re-lists pods from its API server):
it keeps every job it routed to each, and a batch that could not be
delivered (its scheduler was dead) waits for the next delivery. A route
served by active/standby members (one route name, whichever member is
active) is moved by the member that becomes active: it calls ``reroute``
itself, and recovers what was routed there as a restarted one does."""
from __future__ import annotations

import asyncio
import functools
import itertools
from typing import Any

from schedlab.actors.common.shell import ActorShell
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.events.shared import JOB_PENDING, JOB_SUBMITTED, RECOVER_FAILED
from schedlab.schedulers.model.seeding import route


NAME = "submitter"


class Submitter(ActorShell):
    DELIVERY_WAIT_S = 1.0  # a slower answer is a paused scheduler, not a lost batch

    def __init__(
        self,
        rt: Runtime,
        jobs: list[dict],
        routes: dict[str, list[tuple[str, Any]]],
        metrics: Any,
        flush_interval: float,
        await_admission: bool = False,
        holders: dict[str, str] | None = None,
        open_ended: bool = False,
    ) -> None:
        """``await_admission``: the target is a stateless front end,
        which keeps nothing to recover from: wait for each batch to be
        admitted, however long a pause takes, and resend it if the front end
        died (admission ignores a job it already has). ``holders``: route
        name -> the member actor holding it, where that is not the route's
        own name (see ``Topology.route``). ``open_ended``: more jobs may be
        handed over while the run lasts (``inject``: a federation's front end
        sends this cell jobs its users submitted elsewhere), so it runs
        until stopped."""
        super().__init__(rt, NAME, metrics, flush_interval)
        self.await_admission = await_admission
        self.jobs = sorted(jobs, key=lambda j: j["submit_time"])
        self.routes = routes  # job class -> [(scheduler name, handle)]
        self.next = 0
        self.routed: dict[str, list[dict]] = {}  # scheduler name -> every job sent its way
        # scheduler name -> jobs a recovery already said scheduled, its events
        # shipped before it answered (``reroute``): later recoveries need not
        # say them again, which over a long run with many restarts would be
        # every job ever routed, again at each restart.
        self.said: dict[str, set[int]] = {}
        self.undelivered: dict[str, list[dict]] = {}
        # Batches sent but not answered within DELIVERY_WAIT_S (a paused or
        # slowed scheduler takes them when it can): number -> (scheduler,
        # batch, incarnation sent to). Until one is answered, only the
        # submitter can vouch for its jobs.
        self.in_flight: dict[int, tuple[str, list[dict], int]] = {}
        self._sends = itertools.count()
        self.handles = {name: h for targets in routes.values() for name, h in targets}
        self.holders = {name: (holders or {}).get(name, name) for name in self.handles}
        # Bumped when a scheduler is restarted and recovers everything routed
        # to it: a delivery to its predecessor that fails afterwards is not
        # queued again (the recovery has those jobs).
        self.incarnation: dict[str, int] = {}
        self.open_ended = open_ended
        self.handed = asyncio.Event()
        self.injected: set[int] = set()

    async def inject(self, jobs: list[dict]) -> None:
        """Jobs handed over now, released at the next turn of the loop in
        the order given (their wait counts from that release); a job handed
        over again (its sender retried) is taken once."""
        now = self.rt.now()
        fresh = [j for j in jobs if j["job_id"] not in self.injected]  # a front end retrying a batch
        self.injected.update(j["job_id"] for j in fresh)
        self.jobs.extend(dict(j, submit_time=now) for j in fresh)
        self.handed.set()

    async def on_start(self) -> None:
        self.spawn_loop(self._loop())

    def on_stopping(self) -> None:
        self.handed.set()

    async def _loop(self) -> None:
        while self.running and (self.open_ended or self.next < len(self.jobs) or any(self.undelivered.values())):
            now = self.rt.now()
            while self.next < len(self.jobs) and self.jobs[self.next]["submit_time"] <= now:
                job = dict(self.jobs[self.next])
                self.next += 1
                targets = self.routes[job["job_class"]]
                name, _ = targets[route(job["job_id"], len(targets))]
                # Wait time counts from the actual release, not the planned arrival.
                job["planned_time"], job["submit_time"] = job["submit_time"], now
                self.routed.setdefault(name, []).append(job)
                self.undelivered.setdefault(name, []).append(job)
                self.log.emit(
                    JOB_SUBMITTED,
                    job_id=job["job_id"],
                    job_class=job["job_class"],
                    kind=job["kind"],
                    tasks=len(job["durations"]),
                    request=job["request"],
                    **({"models": job["models"]} if job.get("models") else {}),
                    **({"gang_timeout": job["gang_timeout"]} if job.get("gang_timeout") is not None else {}),
                    scheduler=name,
                )
            await self._deliver()
            if self.open_ended and self.next >= len(self.jobs) and not any(self.undelivered.values()):
                self.handed.clear()
                try:
                    await asyncio.wait_for(self.handed.wait(), self.flush_interval * 4)
                except TimeoutError:
                    pass
                if not await self.nap_wall(self.flush_interval / 2):  # batch what is handed over meanwhile
                    break
            elif self.next < len(self.jobs) or any(self.undelivered.values()):
                # Release at most once per flush interval: one submit message
                # per scheduler per interval, however dense the arrivals.
                # Wait time still counts from the actual release.
                gap = (self.rt.wall(self.jobs[self.next]["submit_time"] - self.rt.now())
                       if self.next < len(self.jobs) else self.flush_interval * 4)
                if not await self.nap_wall(max(gap, self.flush_interval / 2)):
                    break

    async def _deliver(self) -> None:
        """Awaited, so a job logged as submitted has reached its scheduler
        before stop() returns, or is reported by the submitter at the end:
        undelivered, or still in flight (a paused scheduler had not
        answered). The driver stops the submitter before the schedulers, but
        a paused scheduler may take the driver's stop before a batch sent
        earlier (no order between two callers): it would report its queue
        without that batch and queue it afterwards, with no one left to say
        the job waits.

        Waiting gives up after DELIVERY_WAIT_S, but the request is never
        withdrawn: a paused scheduler still gets it when it wakes, and its
        late answer settles the batch then (``_settled``)."""
        names = [n for n, b in self.undelivered.items() if b]
        batches = [self.undelivered.pop(n) for n in names]
        sent_to = [self.incarnation.get(n, 0) for n in names]
        calls = [asyncio.ensure_future(self.rt.call(self.handles[n], "submit", b)) for n, b in zip(names, batches)]
        if not calls:
            return
        if self.await_admission:
            # Until admitted, or until the run stops: a control plane with no
            # leader at the end never answers, and the batch is then reported
            # in flight (on_stop) instead of dying with this loop.
            stopping = asyncio.ensure_future(self._stopping.wait())
            waiting = set(calls)
            while waiting and not stopping.done():
                _done, waiting = await asyncio.wait(waiting | {stopping}, return_when=asyncio.FIRST_COMPLETED)
                waiting.discard(stopping)
            stopping.cancel()
        else:
            await asyncio.wait(calls, timeout=self.DELIVERY_WAIT_S)
        for n, b, call, inc in zip(names, batches, calls, sent_to):
            if call.done():
                self._settled(n, b, inc, call)
            else:
                key = next(self._sends)
                self.in_flight[key] = (n, b, inc)
                call.add_done_callback(functools.partial(self._answered, key))

    def _answered(self, key: int, call: asyncio.Future) -> None:
        n, b, inc = self.in_flight.pop(key)
        self._settled(n, b, inc, call)

    def _settled(self, name: str, batch: list[dict], inc: int, call: asyncio.Future) -> None:
        """A dead or cut-off scheduler did not take the batch: keep it for its
        successor, unless that successor has already recovered every job of
        ours (``reroute`` bumped the incarnation)."""
        failed = call.cancelled() or call.exception() is not None
        if failed and self.incarnation.get(name, 0) == inc:
            self.undelivered.setdefault(name, [])[:0] = batch

    async def reroute(self, name: str, handle: Any, recover: bool, holder: str | None = None) -> None:
        """``name`` was restarted (or another member, ``holder``, became the
        active one behind it: ``handle``). A scheduler or framework recovers
        its queue from every job ever routed to it (it works out which are
        already placed); a stateless front end just gets what was not delivered."""
        self.handles[name] = handle
        self.holders[name] = holder or name
        if recover:
            self.incarnation[name] = self.incarnation.get(name, 0) + 1
            self.undelivered.pop(name, None)
            said = self.said.setdefault(name, set())
            jobs = [{**j, "scheduled_said": True} if j["job_id"] in said else j for j in self.routed.get(name, [])]
            try:
                reply = await self.rt.call(handle, "recover", jobs)
            except Exception as e:  # dead again already: its successor recovers
                self.log.emit(RECOVER_FAILED, scheduler=name, error=type(e).__name__)
            else:
                # A recovery may answer with the jobs it said scheduled
                # (``job_scheduled``, recovered), its events already shipped.
                if isinstance(reply, list):
                    said.update(int(j) for j in reply)
        else:
            await self._deliver()

    async def orphaned(self, names: list[str]) -> None:
        """These schedulers were killed during the run (dead at the end, or
        restarted and maybe still recovering): the jobs routed to them are
        reported pending (unless they were scheduled, which the summary
        knows), not silently lost with their queues. A route whose holder
        (an active member behind it) is among them is orphaned with it: no
        successor took the route over before the run ended."""
        dead = set(names)
        for name in [*names, *(r for r, h in self.holders.items() if h in dead and r not in dead)]:
            held = {j["job_id"] for j in self.undelivered.get(name, [])}
            self.undelivered.setdefault(name, []).extend(j for j in self.routed.get(name, []) if j["job_id"] not in held)

    async def on_stop(self) -> dict:
        if self.open_ended:
            # Handed over but not yet released when the run ended: they were
            # submitted here (a federation counts them routed), and wait.
            for job in self.jobs[self.next:]:
                targets = self.routes[job["job_class"]]
                name, _ = targets[route(job["job_id"], len(targets))]
                self.log.emit(JOB_SUBMITTED, job_id=job["job_id"], job_class=job["job_class"], kind=job["kind"],
                              tasks=len(job["durations"]), request=job["request"], scheduler=name,
                              **({"models": job["models"]} if job.get("models") else {}),
                              **({"gang_timeout": job["gang_timeout"]} if job.get("gang_timeout") is not None else {}))
                self.log.emit(JOB_PENDING, job_id=job["job_id"], scheduler=name, unplaced=len(job["durations"]),
                              orphaned=True)
            self.next = len(self.jobs)
        # A job whose scheduler was down at the end never got in, or died in
        # its queue, or waits in a successor's unfinished recovery: pending, not lost.
        reported: set[int] = set()
        for name, jobs in self.undelivered.items():
            for job in jobs:
                reported.add(job["job_id"])
                self.log.emit(JOB_PENDING, job_id=job["job_id"], scheduler=name, unplaced=len(job["durations"]), orphaned=True)
        # Sent and not yet answered: its scheduler may take it only after it
        # has reported its queue. One it does place first is counted
        # scheduled (the summary prefers that fate); a batch sent to an
        # incarnation whose successor recovered it is the successor's to report.
        for name, jobs, inc in self.in_flight.values():
            if self.incarnation.get(name, 0) != inc:
                continue
            for job in jobs:
                if job["job_id"] not in reported:
                    reported.add(job["job_id"])
                    self.log.emit(JOB_PENDING, job_id=job["job_id"], scheduler=name, unplaced=len(job["durations"]),
                                  in_flight=True)
        return {"released": self.next, "planned": len(self.jobs)}
