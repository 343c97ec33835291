"""Sparrow's schedulers as actors: ``sparrow-<i>`` (distributed: probes
node monitors and places eagerly, or leaves reservations and late-binds)
and, with Hawk, ``sparrow-central`` (long jobs, full knowledge of the long
work it placed). Thin shells over ``schedulers.archs.sparrow``'s cores:
they keep the think time, send the probes, entries and answers, and log.

A job counts as scheduled when every task has started on a node monitor
(the node monitors report starts once per batch interval). A restarted
scheduler knows nothing: it gets its jobs back from the submitter (the
central one: from its peers) and asks every node monitor what it holds of
theirs (tasks started or queued, reservations waiting or asking), then
rebuilds its late-binding books and places again what nobody holds.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.actors.common.roll_call import ask_everyone
from schedlab.actors.common.shell import ActorShell, said_before
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.sparrow.events import SPARROW_JOB, SPARROW_PLACED
from schedlab.schedulers.archs.sparrow.holdings import (Holdings, add_long_work, merge_holdings, missing, not_started,
                                                        reservations_to_add)
from schedlab.schedulers.archs.sparrow.hybrid import LongScheduler, partition
from schedlab.schedulers.archs.sparrow.nodes import mean_duration, rebuild_book
from schedlab.schedulers.archs.sparrow.placement import (
    PerTaskSampling, Placement, batch_sampling, late_binding, per_task_sampling, random_placement,
)
from schedlab.schedulers.archs.sparrow.spec import CENTRAL, nodemon_name, scheduler_name
from schedlab.schedulers.archs.sparrow.worker import Reservation, Task
from schedlab.schedulers.events.shared import JOB_ATTEMPT, JOB_PENDING, JOB_SCHEDULED, SCHEDULER_RECOVERED
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.model.seeding import rng_for

CALL_WALL_S = 5.0


@dataclass(frozen=True)
class SchedConfig:
    index: int  # CENTRAL_ID for Hawk's central scheduler
    policy: str
    d: int
    workers: int  # machines in the cell (one worker each)
    machines_per_host: int
    hosts: int
    peers: int  # distributed schedulers (the central one recovers from them)
    t_job: float
    t_task: float
    seed: int
    cutoff: float | None  # long/short cut (None: every job is short)
    hawk: bool = False
    short_fraction: float = 0.1
    retry: float = 1.0
    restarted: bool = False


class _Base(ActorShell):
    def __init__(self, rt: Runtime, cfg: SchedConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, scheduler_name(cfg.index), metrics, flush_interval)
        self.cfg = cfg
        self.rng = rng_for(cfg.seed, self.name)
        self.jobs: dict[int, Job] = {}
        self.started: dict[int, set[int]] = {}
        self.scheduled: set[int] = set()
        self.attempted: set[int] = set()
        self.recovering = cfg.restarted
        self.work: set[asyncio.Task] = set()

    # -------------------------------------------------------------- helpers

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self.work.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self.work.discard(task)
        self._loop_ended(task)

    async def _call(self, name: str, method: str, *args: Any) -> Any:
        handle = self.rt.lookup(name)
        if handle is None:
            raise ConnectionError(f"{name} is gone")
        return await asyncio.wait_for(self.rt.call(handle, method, *args), self.rt.wall(CALL_WALL_S * self.rt.scale))

    def _host(self, machine: int) -> int:
        return int(machine) // self.cfg.machines_per_host

    async def _send(self, job: Job, pairs: list[tuple[int, Any]]) -> None:
        """Entries to their node monitors, one message per host."""
        by_host: dict[int, list] = {}
        for m, e in pairs:
            by_host.setdefault(self._host(m), []).append((int(m), e))
        await asyncio.gather(*(self._quiet(self._call(nodemon_name(h), "enqueue", self.name, job.job_id,
                                                      list(job.request), entries))
                               for h, entries in sorted(by_host.items())))

    @staticmethod
    async def _quiet(coro: Any) -> Any:
        try:
            return await coro
        except Exception:
            return None

    def _attempt(self, job: Job) -> None:
        if job.job_id not in self.attempted:
            self.attempted.add(job.job_id)
            self.log.emit(JOB_ATTEMPT, job_id=job.job_id, attempt=1, first=True, scheduler=self.name)

    def _note_started(self, j: int, tasks: Any, recovered: bool = False) -> bool:
        """True when this said the job scheduled."""
        if j not in self.jobs:
            return False
        self.started.setdefault(j, set()).update(int(t) for t in tasks)
        if j not in self.scheduled and len(self.started[j]) >= self.jobs[j].tasks:
            self.scheduled.add(j)
            self.log.emit(JOB_SCHEDULED, job_id=j, scheduler=self.name, attempts=1,
                          **({"recovered": True} if recovered else {}))
            return True
        return False

    async def report(self, started: list, finished: list) -> None:
        """A node monitor's batch: tasks of ours that started, and ended."""
        if not self.running:
            return
        by_job: dict[int, list[int]] = {}
        for j, t in started:
            by_job.setdefault(int(j), []).append(int(t))
        for j, ts in by_job.items():
            self._note_started(j, ts)
        self._finished(finished)

    def _finished(self, finished: list) -> None:
        pass

    async def _holdings(self) -> Holdings | None:
        """What every node monitor holds of ours, once each has answered
        (``actors.common.roll_call``: a silent one may still run our
        tasks); None if we stop first."""
        replies = await ask_everyone(
            self.cfg.hosts, lambda h: self._call(nodemon_name(h), "owned", self.name, self.cfg.index),
            lambda: self.nap(CALL_WALL_S * self.rt.scale))
        return None if replies is None else merge_holdings(replies)

    async def on_stop(self) -> dict:
        for t in list(self.work):
            t.cancel()
        pending = 0
        for j, job in self.jobs.items():
            if j not in self.scheduled and self._reports_pending(j):
                pending += 1
                self.log.emit(JOB_PENDING, job_id=j, scheduler=self.name,
                              unplaced=job.tasks - len(self.started.get(j, ())), attempts=0)
        return {"pending": pending, "jobs": len(self.jobs)}

    def _reports_pending(self, j: int) -> bool:
        return True


class SparrowScheduler(_Base):
    """A distributed scheduler, ``sparrow-<i>``."""

    def __init__(self, rt: Runtime, cfg: SchedConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, cfg, metrics, flush_interval)
        n = cfg.workers
        self.lb = late_binding(cfg.d, n, cfg.index)
        self.sampler = (per_task_sampling(cfg.d, n) if cfg.policy == "per_task"
                        else batch_sampling(cfg.d, n) if cfg.policy == "batch" else None)
        self.long: dict[int, dict] = {}  # Hawk: long jobs this scheduler routed to the central one
        self.unforwarded: list[dict] = []

    async def on_start(self) -> None:
        if self.cfg.hawk:
            self.spawn_loop(self._forward_loop())

    # ------------------------------------------------------------ jobs in

    async def submit(self, jobs: list[dict]) -> None:
        if self.recovering:
            return  # the recovery gets every job routed here
        for w in jobs:
            self._take(w, Job.from_wire(w))

    def _take(self, wire: dict, job: Job, recovered: bool = False) -> bool:
        if job.job_id in self.jobs:
            return False
        self.jobs[job.job_id] = job
        self.started.setdefault(job.job_id, set())
        est = mean_duration(job.durations)
        long = self.cfg.cutoff is not None and est > self.cfg.cutoff
        if not recovered:
            self.log.emit(SPARROW_JOB, job_id=job.job_id, long=long, estimate=round(est, 6) if np.isfinite(est) else None,
                          tasks=job.tasks, routed=CENTRAL if (long and self.cfg.hawk) else self.name)
        if long and self.cfg.hawk:
            self.long[job.job_id] = wire
            self.unforwarded.append(wire)
            return True
        if not recovered:
            self._spawn(self._place(job, list(range(job.tasks))))
        return True

    async def _forward_loop(self) -> None:
        while True:
            if self.unforwarded and not self.recovering:
                batch, self.unforwarded = self.unforwarded, []
                try:
                    await self._call(CENTRAL, "submit_long", batch)
                except Exception:
                    self.unforwarded[:0] = batch
            if not await self.nap_wall(self.flush_interval):
                return

    async def long_jobs(self) -> list[dict]:
        return list(self.long.values())

    def _reports_pending(self, j: int) -> bool:
        # A long job delivered to the central scheduler is its to report.
        return j not in self.long or any(w["job_id"] == j for w in self.unforwarded)

    # ----------------------------------------------------------- placing

    async def _place(self, job: Job, indices: list[int]) -> None:
        cfg = self.cfg
        self._attempt(job)
        if not await self.nap(cfg.t_job + cfg.t_task * len(indices)):
            return
        tasks = [Task(job.job_id, i, float(job.durations[i])) for i in indices]
        m = len(tasks)
        if cfg.policy == "late_binding" or cfg.hawk:
            pairs = self.lb.submit(job.job_id, tasks, self.rng)
            self.log.emit(SPARROW_PLACED, job_id=job.job_id, tasks=m, probes=len(pairs), messages=len(pairs))
            await self._send(job, pairs)
            return
        if cfg.policy == "random":
            p: Placement = random_placement(m, cfg.workers, self.rng)
        else:
            assert self.sampler is not None
            targets = self.sampler.targets(m, self.rng)
            loads = await self._probe(np.asarray(targets).ravel())
            if isinstance(self.sampler, PerTaskSampling):  # policy "per_task"
                p = self.sampler.choose(targets, loads.reshape(targets.shape), self.rng)
            else:
                p = self.sampler.choose(targets, loads, m, self.rng)
        self.log.emit(SPARROW_PLACED, job_id=job.job_id, tasks=m, probes=p.probes, messages=p.messages)
        await self._send(job, [(int(w), t) for w, t in zip(p.workers.tolist(), tasks)])

    async def _probe(self, machines: np.ndarray) -> np.ndarray:
        """Queue lengths of ``machines``, one probe message per host (a
        node monitor that does not answer looks infinitely loaded)."""
        uniq = sorted({int(x) for x in machines})
        by_host: dict[int, list[int]] = {}
        for mm in uniq:
            by_host.setdefault(self._host(mm), []).append(mm)
        hosts = sorted(by_host)
        got = await asyncio.gather(*(self._call(nodemon_name(h), "probe", by_host[h]) for h in hosts),
                                   return_exceptions=True)
        load: dict[int, float] = {}
        for h, g in zip(hosts, got):
            for mm, q in zip(by_host[h], g if not isinstance(g, BaseException) else [np.inf] * len(by_host[h])):
                load[mm] = float(q)
        return np.asarray([load[int(x)] for x in machines], dtype=np.float64)

    # ------------------------------------------------------- late binding

    async def get_task(self, job_id: int) -> dict:
        """A node monitor's GetTask for a reservation of ``job_id``: the
        job's next task, or a cancel (None); retry while recovering."""
        if self.recovering:
            return {"retry": True}
        try:
            task = self.lb.get_task(job_id)
        except ValueError:
            task = None  # a reservation this incarnation's books do not count: nothing for it
        job = self.jobs.get(job_id)
        return {"task": task, "request": list(job.request) if job else []}

    # ------------------------------------------------------------- recovery

    async def recover(self, jobs: list[dict]) -> list[int] | None:
        """A restarted scheduler: its jobs from the submitter, what ran and
        waits from the node monitors. Answers with the jobs it said
        scheduled (``vouch``)."""
        held = await self._holdings()
        if held is None:
            return None  # stopped while recovering: the jobs stay with the submitter, which reports them
        started, queued = held.started, held.queued
        replace: list[tuple[Job, list[int]]] = []
        said = said_before(jobs)
        told = []
        for w in jobs:
            job = Job.from_wire(w)
            if not self._take(w, job, recovered=True):
                continue
            j = job.job_id
            if j in said:
                self.scheduled.add(j)  # an earlier recovery said so
            if self._note_started(j, started.get(j, ()), recovered=True):
                told.append(j)
            if j in self.long:
                continue  # the central scheduler places it (forwarded again; it ignores what it has)
            left = not_started(job.tasks, started.get(j, ()))
            if self.cfg.policy == "late_binding" or self.cfg.hawk:
                have = held.reservations.get(j, 0)
                extra = reservations_to_add(self.cfg.d, len(left), have)
                rebuild_book(self.lb, j, [Task(j, i, float(job.durations[i])) for i in left], have + extra)
                if extra:
                    r = Reservation(j, self.cfg.index)
                    self._attempt(job)
                    self.log.emit(SPARROW_PLACED, job_id=j, tasks=0, probes=extra, messages=extra)
                    self._spawn(self._send(job, [(int(m), r) for m in self.lb.targets(extra, self.rng)]))
            else:
                lost = missing(job.tasks, started.get(j, ()), queued.get(j, ()))
                if lost:
                    replace.append((job, lost))
        self.recovering = False
        for job, lost in replace:
            self._spawn(self._place(job, lost))
        self.log.emit(SCHEDULER_RECOVERED, jobs=len(jobs), replaced=len(replace), scheduled=len(self.scheduled))
        return await self.vouch(told)


class CentralScheduler(_Base):
    """Hawk's centralized scheduler, ``sparrow-central``: long jobs, each
    task to the general worker whose long work ends first."""

    def __init__(self, rt: Runtime, cfg: SchedConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, cfg, metrics, flush_interval)
        general, _short = partition(cfg.workers, cfg.short_fraction)
        self.core = LongScheduler(general)
        self.estimate: dict[int, float] = {}
        self.queue: list[int] = []
        self.kick = asyncio.Event()

    async def on_start(self) -> None:
        self.spawn_loop(self._loop())
        if self.recovering:
            self._spawn(self._recover())

    def on_stopping(self) -> None:
        self.kick.set()

    async def submit_long(self, jobs: list[dict]) -> None:
        for w in jobs:
            job = Job.from_wire(w)
            if job.job_id in self.jobs:
                continue
            self.jobs[job.job_id] = job
            self.started.setdefault(job.job_id, set())
            self.estimate[job.job_id] = mean_duration(job.durations)
            if not self.recovering:
                self.queue.append(job.job_id)
        self.kick.set()

    async def _loop(self) -> None:
        """One long job at a time, in arrival order (a centralized scheduler's
        think time serializes it)."""
        while self.running:
            if not self.queue or self.recovering:
                self.kick.clear()
                try:
                    await asyncio.wait_for(self.kick.wait(), self.flush_interval * 10)
                except TimeoutError:
                    pass
                continue
            j = self.queue.pop(0)
            job = self.jobs[j]
            indices = [i for i in range(job.tasks) if i not in self.started.get(j, set())]
            self._attempt(job)
            if not await self.nap(self.cfg.t_job + self.cfg.t_task * len(indices)):
                return
            await self._place(job, indices)

    async def _place(self, job: Job, indices: list[int]) -> None:
        est = self.estimate[job.job_id]
        tasks = [Task(job.job_id, i, float(job.durations[i]), True) for i in indices]
        pairs = self.core.place(tasks, est if np.isfinite(est) else 1e12)
        self.log.emit(SPARROW_PLACED, job_id=job.job_id, tasks=len(tasks), probes=0, messages=len(tasks))
        await self._send(job, pairs)

    def _finished(self, finished: list) -> None:
        for j, _t, m in finished:
            est = self.estimate.get(int(j))
            if est is not None and np.isfinite(est):
                self.core.finished(int(m), est)

    async def _recover(self) -> None:
        """Its long jobs from the distributed schedulers, what the node
        monitors hold of them, and the long work still ahead per worker."""
        got = await asyncio.gather(*(self._call(scheduler_name(i), "long_jobs") for i in range(self.cfg.peers)),
                                   return_exceptions=True)
        wires = [w for g in got if not isinstance(g, BaseException) for w in g]
        self.recovering = True
        await self.submit_long(wires)
        held = await self._holdings()
        if held is None:
            return
        add_long_work(self.core.waiting, self.core.general, held.running, self.estimate)
        again = []
        for j, job in self.jobs.items():
            self._note_started(j, held.started.get(j, ()), recovered=True)
            lost = missing(job.tasks, held.started.get(j, ()), held.queued.get(j, ()))
            if lost:
                again.append((job, lost))
        self.recovering = False
        for job, lost in again:
            self._attempt(job)
            await self._place(job, lost)
        self.log.emit(SCHEDULER_RECOVERED, jobs=len(self.jobs), replaced=len(again), scheduled=len(self.scheduled))
        self.kick.set()
