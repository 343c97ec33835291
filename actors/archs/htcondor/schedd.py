"""A submit machine's schedd as an actor (``schedd-<i>``): a thin shell over
``schedulers.archs.htcondor.claims.Schedd``.

It receives its users' jobs from the submitter (each workload job is a
cluster, each task a proc: job key ``"<job>.<task>"``), hands its idle jobs
to the negotiator when a cycle asks (``idle``), claims each matched startd
itself (``request_claim``, which the startd may refuse: a stale match),
activates the claim to start the job (a shadow per running job: objects in
the core, made at activation, gone at exit or vacate), and when a job
exits reuses the claim for its user's next matching job without a new
negotiation. Spawning a shadow costs ``t_shadow`` of the schedd's time, one
at a time: the schedd's own throughput limit.

Jobs live here, not in the central manager: a restarted schedd gets every
job routed to it back from the submitter (HTCondor keeps them in its
job_queue.log) and reconnects to the jobs its startds still run.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from schedlab.actors.common.events import span_stamp
from schedlab.actors.common.roll_call import ask_everyone
from schedlab.actors.common.shell import ActorShell, said_before
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.htcondor.claims import Activate, ClaimReply, ClaimRequest, Match, Release, Schedd, Vacated
from schedlab.schedulers.archs.htcondor.events import (
    CLAIM_ACTIVATED, CLAIM_REFUSED, JOB_MATCHED, JOB_REQUEUED, SCHEDD_STATS,
)
from schedlab.schedulers.archs.htcondor.pool import JobAds, Running, job_ad, job_key, machine_of, rebuild, split_key
from schedlab.schedulers.archs.htcondor.spec import startd_name
from schedlab.schedulers.model.resources import DEFAULT
from schedlab.schedulers.events.shared import (
    JOB_ATTEMPT, JOB_PENDING, JOB_SCHEDULED, SCHEDULER_RECOVERED, TASKS_LOST, TXN,
)
from schedlab.schedulers.model.jobs import Job

CALL_WALL_S = 5.0


@dataclass(frozen=True)
class ScheddConfig:
    name: str
    classes: tuple[tuple[str, JobAds], ...]  # job class -> user and expressions (the classes routed here)
    machines_per_host: int
    hosts: int
    t_shadow: float
    restarted: bool = False  # a new incarnation: rebuild from the submitter's jobs and the startds
    resources: tuple[str, ...] = DEFAULT  # the cell's resource names (a further one is a Request<name>)


class ScheddActor(ActorShell):
    def __init__(self, rt: Runtime, cfg: ScheddConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, cfg.name, metrics, flush_interval)
        self.cfg = cfg
        self.core = Schedd(cfg.name)
        self.ads = dict(cfg.classes)
        self.jobs: dict[int, Job] = {}
        self.started: dict[int, set[int]] = {}  # job -> tasks started at least once
        self.scheduled: set[int] = set()
        self.attempted: set[int] = set()
        self.recovering = cfg.restarted
        self.early_done: set[str] = set()  # exits reported while recovering
        self.early_vacated: list[tuple[str, str, float]] = []
        self.lock = asyncio.Lock()  # one shadow spawned at a time

    # ------------------------------------------------------------------ jobs

    def _queue(self, jobs: list[Job]) -> list[tuple[str, str, dict]]:
        out = []
        for job in jobs:
            if job.job_id in self.jobs:
                continue
            self.jobs[job.job_id] = job
            self.started.setdefault(job.job_id, set())
            ads = self.ads[job.job_class]
            for t in range(job.tasks):
                out.append((job_key(job.job_id, t), ads.user, job_ad(job.job_id, t, job.job_class, job.request, ads,
                                                                        self.cfg.resources)))
        return out

    async def submit(self, jobs: list[dict]) -> None:
        now = self.rt.now()
        for key, user, ad in self._queue([Job.from_wire(j) for j in jobs]):
            self.core.submit(key, user, ad, now)

    async def recover(self, jobs: list[dict]) -> list[int] | None:
        """A restarted schedd: its queue from the submitter, its running jobs
        and completions from the startds (the shadows reconnect). Answers
        with the jobs it said scheduled (``vouch``)."""
        queued = self._queue([Job.from_wire(j) for j in jobs])
        self.scheduled |= said_before(jobs)  # an earlier recovery said so
        # Every startd's answer first (``actors.common.roll_call``): one cut
        # off may still run our jobs, and a job taken for idle would run twice.
        reports = await ask_everyone(self.cfg.hosts, lambda h: self._call(startd_name(h), "claims_of", self.name),
                                     lambda: self.nap(CALL_WALL_S * self.rt.scale))
        if reports is None:
            return None  # stopped first: the submitter reports the jobs of a restarted schedd
        running, finished = [], set(self.early_done)
        for rep in reports:
            finished.update(rep["finished"])
            running += [Running(k, c, slot, u, ad, started) for k, c, slot, u, ad, started in rep["running"]]
        # Jobs submitted to this incarnation before the recovery are already in the core.
        got = rebuild(self.core, queued, [r for r in running if r.key not in finished], finished, self.rt.now())
        self.recovering = False
        for key in set(finished) | {r.key for r in running}:
            j, t = split_key(key)
            if j in self.started:
                self.started[j].add(t)
        told = []
        for j in sorted(self.started):
            if len(self.started[j]) >= self.jobs[j].tasks and j not in self.scheduled:
                self.scheduled.add(j)
                self.log.emit(JOB_SCHEDULED, job_id=j, scheduler=self.name, attempts=0, recovered=True)
                told.append(j)
        for claim_id, key, ran in self.early_vacated:
            self._vacate(claim_id, key, ran)
        self.early_vacated = []
        self.log.emit(SCHEDULER_RECOVERED, jobs=len(jobs), running=got.running, finished=got.finished, idle=got.idle)
        return await self.vouch(told)

    async def idle(self) -> dict:
        """This schedd's part of a negotiation cycle: user -> idle jobs."""
        if self.recovering or not self.running:
            return {}
        out = self.core.idle()
        for queue in out.values():
            for key, _ad in queue:
                j, _t = split_key(str(key))
                if j not in self.attempted:
                    self.attempted.add(j)
                    self.log.emit(JOB_ATTEMPT, job_id=j, attempt=1, first=True, scheduler=self.name)
        return out

    # --------------------------------------------------------------- claiming

    async def _call(self, name: str, method: str, *args: Any) -> Any:
        handle = self.rt.lookup(name)
        if handle is None:
            raise ConnectionError(f"{name} is gone")
        return await asyncio.wait_for(self.rt.call(handle, method, *args), self.rt.wall(CALL_WALL_S * self.rt.scale))

    def _startd(self, slot: str) -> str:
        return startd_name(machine_of(slot) // self.cfg.machines_per_host)

    async def match(self, matches: list[Match]) -> None:
        """The negotiator's matches for this schedd: claim each (concurrently)."""
        for m in matches:
            self.spawn_loop(self._claim(m))

    async def _claim(self, m: Match) -> None:
        now = self.rt.now()
        if self.recovering or not self.running:
            await self._quiet(self._call(self._startd(m.machine), "release", m.machine, m.match_id))
            return
        step = self.core.on_match(m, now)
        if isinstance(step, Release):
            await self._quiet(self._call(self._startd(step.machine), "release", step.machine, step.id))
            return
        assert isinstance(step, ClaimRequest)
        self.log.emit(JOB_MATCHED, key=step.job_id, slot=m.machine, wait=round(self.core.stats.submit_to_match[-1], 6),
                      cycle_match=m.match_id)
        started = self.rt.now()
        try:
            accepted, reason, claim_id = await self._call(self._startd(m.machine), "request_claim", m.machine, m.match_id,
                                                          self.name, step.user, dict(step.job_ad))
        except Exception:
            accepted, reason, claim_id = False, "unreachable", None
        act = self.core.on_claim_reply(m.match_id, ClaimReply(accepted, reason, claim_id), self.rt.now())
        if act is None:
            j, t = split_key(str(step.job_id))
            self.log.emit(CLAIM_REFUSED, key=step.job_id, slot=m.machine, reason=reason)
            self.log.emit(TXN, scheduler=self.name, job_id=j, claims=1, committed=0, conflicted=1, think=0.0,
                          placed=[], reason=reason, **span_stamp(started, self.rt.now()))
            return
        await self._activate(act, started, matched=True)

    async def _activate(self, act: Activate, started: float, matched: bool) -> None:
        async with self.lock:
            t0 = self.rt.now()
            if not await self.nap(self.cfg.t_shadow):
                return
            try:
                ok = await self._call(self._startd(act.machine), "activate", act.machine, self._activation(act))
            except Exception:
                ok = False
        if not ok:
            self.core.on_claim_lost(act.claim_id, self.rt.now())
            self.log.emit(CLAIM_REFUSED, key=act.job_id, slot=act.machine, reason="activation")
            return
        self._placed(act, started, t0, self.rt.now() - started if matched else None)

    def _activation(self, act: Activate) -> dict:
        j, t = split_key(str(act.job_id))
        job = self.jobs[j]
        return {"key": act.job_id, "claim_id": act.claim_id, "job_ad": dict(act.job_ad), "request": list(job.request),
                "duration": job.durations[t]}

    def _placed(self, act: Activate, started: float, t0: float, match_to_start: float | None) -> None:
        j, t = split_key(str(act.job_id))
        m = machine_of(act.machine)
        self.log.emit(CLAIM_ACTIVATED, key=act.job_id, slot=act.machine, reused=act.reused,
                      match_to_start=None if match_to_start is None else round(match_to_start, 6))
        self.log.emit(TXN, scheduler=self.name, job_id=j, claims=1, committed=1,
                      think=round(self.rt.now() - t0, 6), placed=[[t, m]], reused=act.reused,
                      outbox=self._startd(act.machine), **span_stamp(started, self.rt.now()))
        if j not in self.attempted:  # started on a reused claim before any cycle saw it
            self.attempted.add(j)
            self.log.emit(JOB_ATTEMPT, job_id=j, attempt=1, first=True, scheduler=self.name)
        self.started[j].add(t)
        if j not in self.scheduled and len(self.started[j]) >= self.jobs[j].tasks:
            self.scheduled.add(j)
            self.log.emit(JOB_SCHEDULED, job_id=j, scheduler=self.name, attempts=1)

    @staticmethod
    async def _quiet(coro: Any) -> None:
        try:
            await coro
        except Exception:
            pass

    # ------------------------------------------------------------ from startds

    async def job_exited(self, key: str, claim_id: str, ran: float) -> dict | None:
        """A job ended on its claim: reuse the claim for the user's next
        matching idle job (its activation, for the startd), or None (release)."""
        if self.recovering:
            self.early_done.add(key)
            return None
        if key not in self.core.shadows or self.core.shadows[key].claim_id != claim_id:
            return None
        step = self.core.on_job_exit(key, self.rt.now(), ran)
        if isinstance(step, Release):
            return None
        if not self.running:  # stopping: give the job back instead
            self.core.on_claim_lost(step.claim_id, self.rt.now())
            return None
        # Reuse: the claim stays ours; the next job starts through a shadow
        # like any other (the startd is told by ``activate``), so a slow
        # schedd never holds the startd's call.
        self.spawn_loop(self._activate(step, self.rt.now(), matched=False))
        return {"hold": True}

    async def vacated(self, claim_id: str, key: str, ran: float) -> None:
        if self.recovering:
            self.early_vacated.append((claim_id, key, ran))
            return
        self._vacate(claim_id, key, ran)

    def _vacate(self, claim_id: str, key: str, ran: float) -> None:
        shadow = self.core.shadows.get(key)
        if shadow is None or shadow.claim_id != claim_id:
            return
        self.core.on_vacate(Vacated(claim_id, key, ran), self.rt.now())
        self.log.emit(JOB_REQUEUED, key=key, ran=round(ran, 6), slot=shadow.machine)

    async def claim_lost(self, claim_id: str, key: str) -> None:
        """The startd ended a claim before the job ran (its owner came back,
        or an activation raced it): the job is idle again."""
        if self.recovering:
            return
        had = [k for k, s in self.core.shadows.items() if s.claim_id == claim_id]
        self.core.on_claim_lost(claim_id, self.rt.now())
        if had:
            self.log.emit(TASKS_LOST, framework=self.name, reason="claim_lost",
                          tasks=[list(split_key(str(k))) for k in had], requeued_jobs=[])

    # ------------------------------------------------------------------ end

    async def on_stop(self) -> dict:
        unplaced = 0
        for j, job in self.jobs.items():
            if j not in self.scheduled:
                left = job.tasks - len(self.started.get(j, ()))
                unplaced += 1
                self.log.emit(JOB_PENDING, job_id=j, scheduler=self.name, unplaced=left, attempts=0)
        st = self.core.stats
        self.log.emit(SCHEDD_STATS, goodput=round(st.goodput, 6), badput=round(st.badput, 6), completed=st.completed,
                      vacated=st.vacated, reuses=st.reuses, refusals=dict(st.refusals))
        return {"pending": unplaced, "shadows": len(self.core.shadows)}
