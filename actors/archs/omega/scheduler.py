"""An Omega scheduler actor: a thin shell over ``OmegaSchedulerCore``.

Per attempt: sync the local copy by delta, think for t_job + t_task x tasks
(really waiting, so other schedulers commit meanwhile), place on the local
copy, send one transaction. The cell state hands committed tasks to the
machine hosts when they next poll; the scheduler never talks to hosts.
"""
from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from schedlab.actors.common.shell import ActorShell, said_before
from schedlab.actors.common.events import span_stamp
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.omega.events import COMMIT_FAILED, TASKS_REQUEUED
from schedlab.schedulers.events.shared import (
    JOB_ABANDONED, JOB_ATTEMPT, JOB_PENDING, JOB_SCHEDULED, SCHEDULER_RECOVERED, SCHEDULER_START, TXN,
)
from schedlab.schedulers.model.wire import pack_claims, pack_tasks, unpack_delta
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.archs.omega.scheduler import JobProgress, OmegaSchedulerCore, SchedulerParams
from schedlab.schedulers.model.seeding import rng_for
from schedlab.schedulers.shared_state.cell import LocalCopy


class OmegaScheduler(ActorShell):
    LOST_POLL_WALL_S = 0.25

    def __init__(
        self,
        rt: Runtime,
        name: str,
        params: SchedulerParams,
        seed: int,
        cell: Any,
        metrics: Any,
        flush_interval: float,
    ) -> None:
        super().__init__(rt, name, metrics, flush_interval)
        self.params = params
        self.seed = seed
        self.cell = cell  # an actors.common.cell_endpoint endpoint: one actor or a Raft group
        self.core: OmegaSchedulerCore | None = None
        self.current: JobProgress | None = None
        self.wakeup = asyncio.Event()
        self.think_s = 0.0
        self.refreshed_at = 0.0  # perf_counter() of the request that last refreshed the copy
        self.rtt_s = 0.002
        self._early: list[Job] = []
        self._core_ready = asyncio.Event()  # on_start has the cell's snapshot: a recovery may begin
        self._early_recover: list[dict] | None = None  # jobs of recoveries waiting for it (said pending if the run ends first)
        self.jobs: dict[int, Job] = {}  # every job routed here: lost tasks are found by job

    async def on_start(self) -> None:
        self.cell.bind(self.rt, self.name, self.log)
        snap = unpack_delta(await self.cell.snapshot())
        self.core = OmegaSchedulerCore(self.params, LocalCopy(snap), rng_for(self.seed, self.name))
        self.log.emit(SCHEDULER_START, seed=self.seed, policy=getattr(self.params.policy, "__name__", "?"))
        if self._early:
            self.core.submit(self._early)
            self._early = []
        self._core_ready.set()
        self.spawn_loop(self._loop())
        self.spawn_loop(self._lost_loop())

    async def submit(self, jobs: list[dict]) -> None:
        # A job we already have (recovered, or sent twice around a restart)
        # is not queued again: it may be placed, running or finished already.
        parsed = [j for j in map(Job.from_wire, jobs) if j.job_id not in self.jobs]
        self.jobs.update((j.job_id, j) for j in parsed)
        if self.core is None:
            self._early.extend(parsed)
        else:
            self.core.submit(parsed)
        self.wakeup.set()

    async def recover(self, jobs: list[dict]) -> list[int] | None:
        """A restarted scheduler's queue, from every job routed to its
        predecessor (the submitter keeps them): what the cell state holds as
        placed stays placed; the rest is queued again. Answers with the jobs
        it said scheduled, once their events are shipped (None if it said
        nothing it can vouch for), so the next recovery need not say them
        again (the submitter marks them ``scheduled_said``)."""
        if self.core is None:  # came before the cell's snapshot: wait for it
            self._early_recover = (self._early_recover or []) + jobs
            await self._core_ready.wait()
            self._early_recover = None
        return await self._recover(jobs)

    async def _recover(self, wire_jobs: list[dict]) -> list[int] | None:
        core = self.core
        assert core is not None
        fresh = [w for w in wire_jobs if int(w["job_id"]) not in self.jobs]  # not resubmitted meanwhile
        said = said_before(fresh)
        jobs = [Job.from_wire(w) for w in fresh]
        self.jobs.update((j.job_id, j) for j in jobs)
        core.begin_recovery()
        try:
            cursor, placed, finished = await self.cell.recover([j.job_id for j in jobs])
        except BaseException:
            core.abort_recovery()
            raise
        got = core.recover(jobs, cursor, placed, finished)
        told = []
        for job in got.placed:
            # Its job_scheduled event may have died with the old incarnation
            # (unless an earlier recovery said it, and shipped that).
            if job.job_id not in said:
                self.log.emit(JOB_SCHEDULED, job_id=job.job_id, scheduler=self.name, attempts=0, recovered=True)
                told.append(job.job_id)
        self.log.emit(SCHEDULER_RECOVERED, jobs=len(jobs), already_placed=len(got.placed), queued=got.queued)
        self.wakeup.set()
        return await self.vouch(told)

    async def _lost_loop(self) -> None:
        """Tasks written off with a failed machine are placed again by the
        scheduler that owns their job."""
        while await self.nap_wall(self.LOST_POLL_WALL_S):
            await self._poll_lost()

    async def _poll_lost(self) -> None:
        """Read the cell's write-off log past the core's cursor; the core
        decides what of the answer is still news and requeues it."""
        core = self.core
        assert core is not None
        asked = core.lost_read_from()
        if asked is None:
            return
        try:
            cursor, lost = await self.cell.lost(asked)
        except Exception:  # the cell state is between leaders: next time
            return
        mine = core.requeue_lost(asked, cursor, lost, self.jobs)
        if mine:
            self.log.emit(TASKS_REQUEUED, scheduler=self.name, tasks=sum(map(len, mine.values())), jobs=len(mine))
            self.wakeup.set()

    async def _wait_for_work(self) -> None:
        assert self.core is not None
        due = self.core.next_due()
        self.wakeup.clear()
        timeout = None if due is None else max(0.0, self.rt.wall(due - self.rt.now()))
        try:
            await asyncio.wait_for(self.wakeup.wait(), timeout)
        except TimeoutError:
            pass

    async def _loop(self) -> None:
        core = self.core
        assert core is not None
        while self.running:
            jp = core.next_job(self.rt.now())
            if jp is None:
                await self._wait_for_work()
                continue
            self.current = jp
            await self._attempt(core, jp)
            self.current = None

    async def _attempt(self, core: OmegaSchedulerCore, jp: JobProgress) -> None:
        started = self.rt.now()
        first = core.begin_attempt(jp, started)
        if first:
            # Later attempts are visible in their txn events (attempt number).
            self.log.emit(JOB_ATTEMPT, job_id=jp.job.job_id, attempt=jp.attempts, first=True, scheduler=self.name)
        if self.rt.wall_clock() - self.refreshed_at > self.rtt_s:
            # A copy refreshed less than one round trip ago is as fresh as a
            # sync could make it; skipping the sync then saves a round trip
            # per attempt for a busy scheduler without making it see less.
            w0 = self.rt.wall_clock()
            try:
                delta = await self.cell.sync(core.local.version)
            except Exception as e:  # no leader answered (a cell between leaders, or with none at the end): the job waits
                self.log.emit(COMMIT_FAILED, job_id=jp.job.job_id, error=f"sync: {type(e).__name__}: {e}")
                core.put_back(jp)  # the next sync waits its own deadline: no spin
                return
            core.local.apply(unpack_delta(delta))
            self._refreshed(w0)

        think = core.think_time(jp)
        t0 = self.rt.now()
        if not await self.nap(think):
            core.put_back(jp)  # stopping: reported pending
            return
        spent = self.rt.now() - t0
        self.think_s += spent

        plan = core.plan(jp)
        rtt_ms = 0.0
        if len(plan.claims):
            w0 = self.rt.wall_clock()
            job = jp.job
            meta = pack_tasks(plan.tasks, np.asarray(job.durations, dtype=np.float64)[plan.tasks])
            try:
                mask, delta = await self.cell.commit(self.name, pack_claims(plan.claims), core.local.version, job.job_id, meta,
                                                     self.rt.now(), job.tasks, job.gang)
            except Exception as e:  # the cell state is gone (a dead actor); the job retries
                self.log.emit(COMMIT_FAILED, job_id=job.job_id, error=f"{type(e).__name__}: {e}")
                accepted = np.zeros(len(plan.claims), dtype=bool)
            else:
                accepted = np.frombuffer(mask, dtype=bool)
                core.local.apply(unpack_delta(delta))
                self._refreshed(w0)
            rtt_ms = (self.rt.wall_clock() - w0) * 1e3
        else:
            accepted = np.zeros(0, dtype=bool)
        now = self.rt.now()
        outcome = core.settle(jp, plan, accepted, now)
        self.log.emit(
            TXN,
            scheduler=self.name,
            job_id=jp.job.job_id,
            claims=len(plan.claims),
            committed=int(accepted.sum()),
            conflicted=int(len(accepted) - accepted.sum()),
            think=round(spent, 6),
            **span_stamp(started, now),  # t is now, not when the line is stamped: the checker reads t - span
            rtt_ms=round(rtt_ms, 3),
            # [task, machine] per committed claim: the checker follows each one
            # to its launch (or to the failure of the host it was meant for).
            placed=np.stack([outcome.committed_tasks, outcome.machines], axis=1).tolist() if len(outcome.committed_tasks) else [],
        )
        if outcome.status == "scheduled":
            self.log.emit(JOB_SCHEDULED, job_id=jp.job.job_id, scheduler=self.name, attempts=jp.attempts)
        elif outcome.status == "abandoned":
            self.log.emit(JOB_ABANDONED, job_id=jp.job.job_id, scheduler=self.name, attempts=jp.attempts, unplaced=int(jp.pending.size))

    def _refreshed(self, sent_at: float) -> None:
        """The copy is as of when the request was sent; keep a smoothed RTT."""
        now = self.rt.wall_clock()
        self.rtt_s = 0.8 * self.rtt_s + 0.2 * (now - sent_at)
        self.refreshed_at = sent_at

    def on_stopping(self) -> None:
        self.wakeup.set()

    async def on_stop(self) -> dict:
        if self.core is None:
            # Stopped before its first snapshot came (a restart that took
            # long to start, on a loaded machine): every job handed to it
            # waits (one placed by a predecessor the summary knows placed).
            # This is a normal end, not an error: raising here would lose
            # those jobs with the rest of its events.
            early = [*self._early, *map(Job.from_wire, self._early_recover or [])]
            for job in early:
                self.log.emit(JOB_PENDING, job_id=job.job_id, scheduler=self.name, unplaced=job.tasks, attempts=0)
            return {"name": self.name, "think_s": self.think_s, "pending": len(early)}
        waiting = list(self.core.queue)
        if self.current is not None:
            waiting.append(self.current)
        for jp in waiting:
            self.log.emit(JOB_PENDING, job_id=jp.job.job_id, scheduler=self.name, unplaced=int(jp.pending.size), attempts=jp.attempts)
        return {"name": self.name, "think_s": self.think_s, "pending": len(waiting)}
