"""A Mesos framework scheduler actor: a thin shell over ``FrameworkCore``.

Offers arrive (one message per allocation round); the framework thinks
``t_job + t_task x tasks`` per job it considers, really waiting while the
offered resources stay locked at the master, then answers once for the
round: launches and holds per offer, declines (with a refuse filter) for
offers it did not use. Rigid frameworks hold slots until a job's whole gang
is held, then launch it from the held slots in a second call.

After a master failover it re-registers (``MasterLink``), drops the slots
it held (a new master knows nothing of them) and reconciles the tasks it
launched but never heard running: the ones no agent reports are requeued.

Which offers to use, which jobs to consider before the offers' deadline,
where tasks go and how the answer is packed are decided by the pure
``schedulers.archs.mesos.offer_round.OfferRound`` over ``FrameworkCore``;
this shell naps for think time, calls the master and logs.
"""
from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from schedlab.actors.common.shell import ActorShell, said_before
from schedlab.actors.common.events import span_stamp
from schedlab.actors.archs.mesos.link import MasterLink
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.mesos.events import JOB_FIRST_SLOT, TASKS_PLACED
from schedlab.schedulers.events.shared import (
    GANG_RELEASED, JOB_ABANDONED, JOB_ATTEMPT, JOB_PENDING, JOB_SCHEDULED, SCHEDULER_RECOVERED, SCHEDULER_START, TASKS_LOST, TXN,
)
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.archs.mesos.framework import Decision, FrameworkCore, FrameworkParams, JobProgress
from schedlab.schedulers.archs.mesos.offer_round import OfferRound, suppress
from schedlab.schedulers.model.seeding import rng_for


class MesosFramework(ActorShell):
    def __init__(self, rt: Runtime, params: FrameworkParams, n_machines: int, seed: int, link: MasterLink,
                 metrics: Any, flush_interval: float, lease_wall_s: float) -> None:
        super().__init__(rt, f"framework-{params.name}", metrics, flush_interval)
        self.params = params
        self.core = FrameworkCore(params, n_machines, rng_for(seed, f"framework-{params.name}"))
        self.link = link
        self.inbox: list[tuple[int, dict]] = []
        self.wakeup = asyncio.Event()
        self.watch_wall = lease_wall_s / 2
        self.unconfirmed: dict[tuple[int, int], float] = {}  # launched, not yet seen running
        self.needs_reconcile = False
        self.think_s = 0.0
        self.current: JobProgress | None = None
        self.unholds: list[tuple[int, list]] = []
        self.told_wants = False
        self.early: set[tuple[int, int]] = set()  # what the master last heard: offers wanted or suppressed
        self._to_recover: list[dict] = []
        self.seen: set[int] = set()  # every job id given to this incarnation, finished ones too

    async def on_start(self) -> None:
        self.link.bind(self.rt, self.name, self.log, "framework", self._register)
        self.log.emit(SCHEDULER_START, framework=self.params.name, mode=self.params.mode)
        self.spawn_loop(self._loop())
        self.spawn_loop(self._watch_loop())
        if self._to_recover:
            self.spawn_loop(self._recover(self._to_recover))
            self._to_recover = []

    async def _register(self, handle: Any) -> dict:
        wants = self.core.wants()
        reply = await self.rt.call(handle, "register_framework", self.name, wants)
        if reply.get("ok"):
            self.told_wants = wants
            # A new master knows nothing of slots we held; let go of them.
            self.core.forget_holds()
            self.unholds = []
            self.inbox = []
            self.needs_reconcile = bool(self.unconfirmed)
        return reply

    # ------------------------------------------------------------- messages

    async def submit(self, jobs: list[dict]) -> None:
        # A job we already have (recovered, or sent twice around a restart) is
        # not queued again: it may be placed, running or finished already.
        fresh = [j for j in map(Job.from_wire, jobs) if j.job_id not in self.seen]
        self.seen.update(j.job_id for j in fresh)
        self.core.submit(fresh)
        self.wakeup.set()
        await self._sync_wants()

    async def recover(self, jobs: list[dict]) -> list[int] | None:
        """A restarted framework's queue, from every job routed to its
        predecessor (the submitter keeps them), minus the tasks the master
        knows run, wait to launch or finished (Mesos frameworks keep such
        state in their own store; the master's view stands in for it).
        Answers with the jobs it said scheduled (``vouch``), or None when
        it recovers after answering (asked before it started)."""
        if not self.running:
            self._to_recover.extend(jobs)
            return None
        return await self._recover(jobs)

    async def _recover(self, wire_jobs: list[dict]) -> list[int] | None:
        said = said_before(wire_jobs)
        jobs = [j for j in map(Job.from_wire, wire_jobs) if j.job_id not in self.seen]  # not resubmitted meanwhile
        self.seen.update(j.job_id for j in jobs)
        reply = None
        while reply is None:
            if await self.link.connected():
                reply = await self.link.call("recover_tasks", [j.job_id for j in jobs])
                if reply is not None and reply["known"] is None:
                    reply = None  # the master is still hearing from its agents: ask again
            if reply is None and not await self.nap_wall(self.watch_wall):
                return None
        done, told = 0, []
        for job in jobs:
            pending = np.setdiff1d(np.arange(job.tasks), np.asarray(reply["known"].get(job.job_id, []), dtype=np.int64))
            self.core.resume(job, pending)
            if pending.size == 0:
                # Its job_scheduled event may have died with the old
                # incarnation (unless an earlier recovery said it, and shipped that).
                if job.job_id not in said:
                    self.log.emit(JOB_SCHEDULED, job_id=job.job_id, scheduler=self.name, attempts=0, recovered=True)
                    told.append(job.job_id)
                done += 1
        self.log.emit(SCHEDULER_RECOVERED, jobs=len(jobs), already_placed=done, queued=len(jobs) - done)
        self.wakeup.set()
        await self._sync_wants()
        return await self.vouch(told)

    async def _sync_wants(self) -> None:
        """Revive offers when work arrived after we suppressed them (or
        while registering, with the answer in flight)."""
        wants = self.core.wants()
        if wants != self.told_wants and self.link.handle is not None:
            if await self.link.call("revive", wants) is not None:
                self.told_wants = wants

    async def offers(self, epoch: int, offers: list[dict]) -> None:
        self.inbox.extend((epoch, o) for o in offers)
        self.wakeup.set()

    async def status(self, epoch: int, seen: list, lost: list) -> None:
        """``seen``: tasks an agent runs or ran; ``lost``: revoked tasks."""
        for k in seen:
            key = tuple(k)
            if self.unconfirmed.pop(key, None) is None:
                self.early.add(key)  # the update beat our own record of the launch
        if lost:
            self._requeue([tuple(k) for k in lost], "revoked")

    def _requeue(self, keys: list[tuple[int, int]], why: str) -> None:
        for k in keys:
            self.unconfirmed.pop(k, None)
        back = self.core.lost(keys)
        self.log.emit(TASKS_LOST, framework=self.params.name, reason=why, tasks=[list(k) for k in keys], requeued_jobs=back)
        self.wakeup.set()

    # ---------------------------------------------------------------- loops

    async def _watch_loop(self) -> None:
        """Stay registered with the current leader (a standby master may have
        taken over) and reconcile after a re-registration."""
        while await self.nap_wall(self.watch_wall):
            if await self.link.stale():
                self.link.lost()
            if not await self.link.connected():
                continue
            await self._sync_wants()
            if self.needs_reconcile:
                reply = await self.link.call("reconcile", list(self.unconfirmed))
                if reply is not None and reply["lost"] is not None:
                    self.needs_reconcile = False
                    lost = [tuple(k) for k in reply["lost"]]
                    self.unconfirmed.clear()
                    if lost:
                        self._requeue(lost, "master_failover")

    async def _loop(self) -> None:
        while self.running:
            if not self.inbox:
                self.wakeup.clear()
                try:
                    await asyncio.wait_for(self.wakeup.wait(), self.watch_wall)
                except TimeoutError:
                    pass
                continue
            batch, self.inbox = self.inbox, []
            fresh = [o for e, o in batch if e == self.link.epoch]
            if fresh:
                await self._round(fresh)

    async def _round(self, offers: list[dict]) -> None:
        core = self.core
        if not core.wants():
            if await self.link.call("respond", [], suppress(offers), self._take_unholds(), False):
                self.told_wants = False
            return
        rnd = OfferRound(core, offers, self.link.reply_s)
        while (step := rnd.next(self.rt.now())) is not None:
            jp = step.jp
            if step.first:
                self.log.emit(JOB_ATTEMPT, job_id=jp.job.job_id, attempt=jp.attempts + 1, first=True, scheduler=self.name)
            if not step.fits:
                continue  # a failed attempt that needs no thought; the round is over
            started = self.rt.now()
            self.current = jp
            ok = await self.nap(core.think_time(jp))
            self.current = None
            spent = self.rt.now() - started
            self.think_s += spent
            if not ok:
                break
            rnd.place(jp, spent, started, self.rt.now())
        sections, declines = rnd.answer()
        w0 = self.rt.wall_clock()
        reply = await self.link.call("respond", sections, declines, self._take_unholds(), True)
        rtt_ms = (self.rt.wall_clock() - w0) * 1e3
        for c, launched, held in rnd.split(reply["results"] if reply else None):
            await self._settle(c.jp, c.decision, launched, held, rnd.machines, c.spent, c.started, rtt_ms)

    async def _settle(self, jp: JobProgress, d: Decision, launched: np.ndarray, held: np.ndarray, machines: np.ndarray,
                      spent: float, started: float, rtt_ms: float) -> None:
        now = self.rt.now()
        had_slot = jp.first_slot_at is not None
        status = self.core.settle(jp, d, launched, held, machines, now)
        if not had_slot and jp.first_slot_at is not None:
            self.log.emit(JOB_FIRST_SLOT, job_id=jp.job.job_id, scheduler=self.name)
        if not d.empty:
            self._record(jp, d, launched, spent, started, rtt_ms, int(held.sum()))
        if status == "waiting" and (gang := self.core.gang(jp)) is not None:
            status = await self._launch_gang(jp, gang)
        if status == "waiting" and self.core.timed_out(jp, self.rt.now()):
            gathered = len(jp.held)
            self.unholds.extend(self.core.give_back(jp))
            self.log.emit(GANG_RELEASED, job_id=jp.job.job_id, tasks=gathered, scheduler=self.name)
        self._finish(jp, status)

    async def _launch_gang(self, jp: JobProgress, d: Decision) -> str:
        """The whole gang is held: launch every task from the held slots."""
        launches = [(jp.job.job_id, t, m, list(jp.job.request), jp.job.durations[t]) for t, m in zip(d.tasks.tolist(), d.machines.tolist())]
        w0, started = self.rt.wall_clock(), self.rt.now()  # before the call: its launches may start before the reply
        reply = await self.link.call("respond", [(None, launches, [])], [], [], True)
        rtt_ms = (self.rt.wall_clock() - w0) * 1e3
        launched = np.asarray(reply["results"][0][1], dtype=bool) if reply else np.zeros(d.tasks.size, dtype=bool)
        status = self.core.settle(jp, d, launched, np.zeros(0, bool), d.machines, self.rt.now())
        self._record(jp, d, launched, 0.0, started, rtt_ms, 0)
        return status

    def _record(self, jp: JobProgress, d: Decision, launched: np.ndarray, spent: float, started: float, rtt_ms: float, held: int) -> None:
        n = int(d.tasks.size)
        ok = int(launched.sum())
        now = self.rt.now()
        # [task, machine] per accepted launch: the checker follows each one to
        # its launch, its loss or the failure of its host (actors.analysis.invariants).
        accepted = [[t, m] for t, m, good in zip(d.tasks.tolist(), d.machines.tolist(), launched.tolist()) if good]
        self.log.emit(TXN, scheduler=self.name, job_id=jp.job.job_id, claims=n, committed=ok, conflicted=n - ok, held=held,
                      think=round(spent, 6), **span_stamp(started, now), rtt_ms=round(rtt_ms, 3), placed=accepted,
                      outbox=self.link.master)  # the master holds a launch until its agent polls
        if ok:
            placed = []
            for t, m, loc, good in zip(d.tasks.tolist(), d.machines.tolist(), d.local.tolist() or [False] * n, launched.tolist()):
                if good:
                    key = (jp.job.job_id, t)
                    if key in self.early:
                        self.early.discard(key)
                    else:
                        self.unconfirmed[key] = now
                    placed.append([jp.job.job_id, t, m, bool(loc)])
            self.log.emit(TASKS_PLACED, scheduler=self.name, locality=self.params.data_replicas > 0, tasks=placed)

    def _finish(self, jp: JobProgress, status: str) -> None:
        if status == "scheduled":
            self.log.emit(JOB_SCHEDULED, job_id=jp.job.job_id, scheduler=self.name, attempts=jp.attempts)
        elif status == "abandoned":
            self.unholds.extend(self.core.give_back(jp))
            self.log.emit(JOB_ABANDONED, job_id=jp.job.job_id, scheduler=self.name, attempts=jp.attempts, unplaced=int(jp.pending.size))

    def _take_unholds(self) -> list:
        out, self.unholds = self.unholds, []
        return out

    def on_stopping(self) -> None:
        self.wakeup.set()

    async def on_stop(self) -> dict:
        waiting = list(self.core.queue)
        if self.current is not None and self.current not in waiting:
            waiting.append(self.current)
        for jp in waiting:
            self.log.emit(JOB_PENDING, job_id=jp.job.job_id, scheduler=self.name, unplaced=int(jp.pending.size), attempts=jp.attempts)
        return {"name": self.name, "think_s": self.think_s, "pending": len(waiting)}
