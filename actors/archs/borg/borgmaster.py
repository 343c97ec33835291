"""A Borgmaster replica: a coordinator replica whose leader also schedules.

All replicas keep the cell state (``BorgStateMachine``) through the Raft
log. The elected leader runs the scheduler over its own copy: it takes the
next job from the replicated pending queue, thinks ``t_job + t_task x
tasks`` (really waiting), decides (feasibility, scoring, preemption) and
writes the decision through the log as a ``place`` command; the Borglets
learn their launches when they next poll. A new leader resumes from the
replicated queue: a decision a deposed leader did not get committed is
simply made again.

Borglets poll every batch interval (the pull model used throughout); the
leader keeps when it last heard from each (soft state, reset on election)
and marks a Borglet down through the log after ``missed_polls`` poll
intervals of silence.

Single path: one scheduling loop for every job, so a slow service decision
holds up the batch jobs queued behind it. Multi path: a second loop takes
batch and best-effort jobs with its own (short) think time.

What to schedule next, how long to think and where tasks go are decided by
the pure ``schedulers.archs.borg.scheduler.BorgScheduler``; this shell
keeps the timers, writes through the log and emits the events.
"""
from __future__ import annotations

import collections
from typing import Any

from schedlab.actors.coordinator.replica import ReplicaConfig
from schedlab.actors.coordinator.watching_replica import HearingReplica
from schedlab.actors.engines.runtime import Runtime
from schedlab.actors.common.host_watch import judge, report_down, watch_for
from schedlab.schedulers.archs.borg.events import BORGMASTER_ELECTED
from schedlab.schedulers.archs.borg.priority import band
from schedlab.schedulers.archs.borg.scheduler import BorgParams, BorgScheduler, hosts_down, paths
from schedlab.schedulers.events.shared import (
    JOBS_FINAL, JOB_ABANDONED, JOB_ATTEMPT, JOB_PENDING, JOB_SCHEDULED, PREEMPTED, TASKS_LOST, TXN,
    WRITTEN_OFF_FINAL,
)
from schedlab.schedulers.model.seeding import rng_for


class BorgmasterReplica(HearingReplica):  # Borglets are heard on their polls
    def __init__(self, rt: Runtime, cfg: ReplicaConfig, metrics: Any, *, params: BorgParams) -> None:
        super().__init__(rt, cfg, metrics)
        self.params = params
        # Borglets missing missed_polls polls are down (the same watch, and
        # the same guard against our own stalls, as Omega's cell state).
        self.watch = watch_for(params.hosts, params.missed_polls * params.poll_interval, params.liveness,
                               self.rt.scale)
        self.led_term = -1
        self.rid = 0
        self.core = BorgScheduler(params, rng_for(cfg.seed, self.name))
        self.scheduling = True

    async def on_start(self) -> None:
        await super().on_start()
        for path in paths(self.params):
            self.spawn_loop(self._schedule_loop(path))
        self.spawn_loop(self._poll_loop())

    async def quiesce(self) -> None:
        """End of run: stop deciding (a placement now would never reach a
        Borglet) and wait for the decision in flight to be written."""
        self.scheduling = False
        for _ in range(200):
            if not self.core.inflight:
                return
            await self.nap_wall(0.01)

    # ------------------------------------------------------------- leading

    def _leading(self) -> bool:
        if not (self.running and self.scheduling and self.node.is_leader):
            return False
        if self.led_term != self.node.term:
            # New leadership: every Borglet gets a full grace period, from
            # when one stuck on the old leader could reach us.
            self.led_term = self.node.term
            now = self.rt.now()
            self.watch.grace(now, give_up=True)
            self.core.reset()
            self.log.emit(BORGMASTER_ELECTED, replica=self.index, term=self.node.term, queued=len(self.node.sm.inner.queue))
        return True

    async def _write(self, path: str, command: tuple) -> Any | None:
        """Through our own log; None if we stopped leading before it applied."""
        self.rid += 1
        ok, result, _err, _hint = await self.propose(f"{self.name}-t{self.led_term}-{path}", self.rid, command)
        return result if ok else None

    async def _schedule_loop(self, path: str) -> None:
        p = self.params
        while self.running:
            if not self._leading() or (job_id := self.core.next_job(self.node.sm.inner, path, self.rt.now())) is None:
                if not await self.nap_wall(p.idle_wall):
                    return
                continue
            term = self.node.term
            sm = self.node.sm.inner
            job = sm.jobs[job_id]
            self.core.begin(job_id)
            try:
                await self._attempt(path, job_id, job, term)
            finally:
                self.core.end(job_id)

    async def _attempt(self, path: str, job_id: int, job: dict, term: int) -> None:
        if job["attempts"] == 0:
            self.log.emit(JOB_ATTEMPT, job_id=job_id, attempt=1, first=True, scheduler=f"borgmaster-{path}")
        think = self.core.think_time(path, job)
        started = self.rt.now()
        if not await self.nap(think):
            return
        if not self.node.is_leader or self.node.term != term or job_id not in self.node.sm.inner.queue:
            return  # deposed, or the job changed under us: the queue has it
        placements, victims = self.core.decide(self.node.sm.inner, job)
        result = await self._write(path, ("place", job_id, placements, victims, self.rt.now()))
        if result is None:
            return
        accepted, preempted, status = result
        n_ok = int(sum(accepted))
        self.core.settle(job_id, accepted, status, self.rt.now())
        self.log.emit(TXN, scheduler=f"borgmaster-{path}", job_id=job_id, claims=len(placements), committed=n_ok,
                      conflicted=len(placements) - n_ok, think=round(think, 6), span=round(self.rt.now() - started, 6),
                      priority=job["priority"],
                      placed=[[t, m] for (t, m), ok in zip(placements, accepted) if ok])
        if preempted:
            self.log.emit(PREEMPTED, job_id=job_id, priority=job["priority"],
                          victims=[[j, t, prio, band(prio)] for j, t, prio, _ in preempted])
            withdrawn = [[j, t] for j, t, _prio, launched in preempted if not launched]
            if withdrawn:  # committed, never launched, back in their jobs' queues
                self.log.emit(TASKS_LOST, framework="borgmaster", reason="preempted_before_launch", tasks=withdrawn, requeued_jobs=[])
        if status == "scheduled":
            self.log.emit(JOB_SCHEDULED, job_id=job_id, scheduler=f"borgmaster-{path}", attempts=job["attempts"] + 1)
        elif status == "abandoned":
            self.log.emit(JOB_ABANDONED, job_id=job_id, scheduler=f"borgmaster-{path}", attempts=job["attempts"],
                          unplaced=len(job["pending"]))

    # ------------------------------------------------------------ liveness

    async def _poll_loop(self) -> None:
        p = self.params
        while await self.nap(p.poll_interval):
            if not self._leading():
                continue
            self.ring_waiting()  # a new leader's first rings
            now = self.rt.now()
            silent = judge(self.watch, self.log, now, hosts_down(self.node.sm.inner, p.hosts))
            if not silent:
                continue
            result = await self._write("poll", ("down", silent, now))
            if result is not None:
                report_down(self.log, silent, *result, by="borgmaster", watch=self.watch)

    async def on_stop(self) -> dict:
        # Every live replica says what its applied state holds, leader or
        # not: a follower's applied entries are committed, a prefix of the
        # leader's, so what it reports is true (the summary counts by job),
        # and a run that ends with no leader (two of three replicas killed
        # in its last seconds, restarts due after the end) still accounts
        # for every job in the store instead of losing them all.
        sm = self.node.sm.inner
        # The replicated record of every job ever fully placed: a leader
        # killed mid-run took its unflushed job_scheduled events with it.
        self.log.emit(JOBS_FINAL, scheduled=sorted(sm.placed), queued=list(sm.queue.order()))
        self.log.emit(WRITTEN_OFF_FINAL, tasks=sm.written_off)
        # A task evicted whose Borglet had not yet confirmed the kill is
        # pending too: it would be queued again at the confirmation.
        evicting = collections.Counter(j for j, _t in sm.evicted)
        for job_id in sm.queue.order():
            job = sm.jobs[job_id]
            self.log.emit(JOB_PENDING, job_id=job_id, scheduler="borgmaster",
                          unplaced=len(job["pending"]) + evicting.pop(job_id, 0), attempts=job["attempts"])
        for job_id, n in sorted(evicting.items()):
            job = sm.jobs.get(job_id)
            self.log.emit(JOB_PENDING, job_id=job_id, scheduler="borgmaster", unplaced=n,
                          attempts=job["attempts"] if job else 0, evicting=n)
        return await super().on_stop()
