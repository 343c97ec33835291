"""An Omega scheduler actor: a thin shell over ``OmegaSchedulerCore``.

Per attempt: sync the local copy by delta, think for t_job + t_task x tasks
(really waiting, so other schedulers commit meanwhile), place on the local
copy, send one transaction, launch what committed on the machine hosts.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any

import numpy as np

from actors.base import ActorShell
from actors.runtime import Runtime
from actors.wire import pack_claims, unpack_delta
from schedulers.cluster import host_of
from schedulers.jobs import Job
from schedulers.omega_scheduler import JobProgress, OmegaSchedulerCore, SchedulerParams
from schedulers.seeding import rng_for
from schedulers.shared_state import LocalCopy


class OmegaScheduler(ActorShell):
    def __init__(
        self,
        rt: Runtime,
        name: str,
        params: SchedulerParams,
        seed: int,
        cellstate: Any,
        hosts: list[Any],
        machines_per_actor: int,
        metrics: Any,
        flush_interval: float,
    ) -> None:
        super().__init__(rt, name, metrics, flush_interval)
        self.params = params
        self.seed = seed
        self.cellstate = cellstate
        self.hosts = hosts
        self.k = machines_per_actor
        self.core: OmegaSchedulerCore | None = None
        self.current: JobProgress | None = None
        self.outbox: dict[int, list] = {}
        self.wakeup = asyncio.Event()
        self.think_s = 0.0
        self._early: list[Job] = []

    async def on_start(self) -> None:
        snap = unpack_delta(await self.rt.call(self.cellstate, "snapshot"))
        self.core = OmegaSchedulerCore(self.params, LocalCopy(snap), rng_for(self.seed, self.name))
        self.log.emit("scheduler_start", seed=self.seed, policy=getattr(self.params.policy, "__name__", "?"))
        if self._early:
            self.core.submit(self._early)
            self._early = []
        self.spawn_loop(self._loop())

    async def submit(self, jobs: list[dict]) -> None:
        parsed = [Job.from_wire(j) for j in jobs]
        if self.core is None:
            self._early.extend(parsed)
        else:
            self.core.submit(parsed)
        self.wakeup.set()

    async def _wait_for_work(self) -> None:
        assert self.core is not None
        due = self.core.next_due()
        self.wakeup.clear()
        timeout = None if due is None else max(0.0, self.rt.clock.wall(due - self.rt.now()))  # type: ignore[attr-defined]
        try:
            await asyncio.wait_for(self.wakeup.wait(), timeout)
        except asyncio.TimeoutError:
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
        now = self.rt.now()
        first = core.begin_attempt(jp, now)
        self.log.emit("job_attempt", job_id=jp.job.job_id, attempt=jp.attempts, first=first, scheduler=self.name)
        core.local.apply(unpack_delta(await self.rt.call(self.cellstate, "sync", core.local.version)))

        think = core.think_time(jp)
        t0 = self.rt.now()
        think_start_lag = t0 - now
        await self.rt.sleep(think)
        spent = self.rt.now() - t0
        self.think_s += spent

        plan = core.plan(jp)
        rtt_ms = 0.0
        if len(plan.claims):
            w0 = time.perf_counter()
            mask, delta = await self.rt.call(self.cellstate, "commit", self.name, pack_claims(plan.claims), core.local.version)
            accepted = np.frombuffer(mask, dtype=bool)
            rtt_ms = (time.perf_counter() - w0) * 1e3
            core.local.apply(unpack_delta(delta))
        else:
            accepted = np.zeros(0, dtype=bool)
        now = self.rt.now()
        span = now - t0 + think_start_lag
        outcome = core.settle(jp, plan, accepted, now)
        self.log.emit(
            "txn",
            scheduler=self.name,
            job_id=jp.job.job_id,
            claims=len(plan.claims),
            committed=int(accepted.sum()),
            conflicted=int(len(accepted) - accepted.sum()),
            think=round(spent, 6),
            span=round(span, 6),
            rtt_ms=round(rtt_ms, 3),
        )
        self._queue_launches(jp.job, outcome.committed_tasks, outcome.machines, now)
        if outcome.status == "scheduled":
            self.log.emit("job_scheduled", job_id=jp.job.job_id, scheduler=self.name, attempts=jp.attempts)
        elif outcome.status == "abandoned":
            self.log.emit("job_abandoned", job_id=jp.job.job_id, scheduler=self.name, attempts=jp.attempts, unplaced=int(jp.pending.size))

    def _queue_launches(self, job: Job, tasks: np.ndarray, machines: np.ndarray, now: float) -> None:
        req = list(job.request)
        for t, m in zip(tasks.tolist(), machines.tolist()):
            self.outbox.setdefault(int(host_of(m, self.k)), []).append((job.job_id, t, m, req, job.durations[t], now))

    async def flush(self, final: bool = False) -> None:
        # One launch message per host per flush, however many transactions fed it.
        outbox, self.outbox = self.outbox, {}
        if final:
            await asyncio.gather(*(self.rt.call(self.hosts[h], "launch", ls) for h, ls in outbox.items()))
        else:
            for host, launches in outbox.items():
                self.rt.send(self.hosts[host], "launch", launches)
        await super().flush(final)

    async def on_stop(self) -> dict:
        assert self.core is not None
        waiting = list(self.core.queue)
        if self.current is not None:
            waiting.append(self.current)
        for jp in waiting:
            self.log.emit("job_pending", job_id=jp.job.job_id, scheduler=self.name, unplaced=int(jp.pending.size), attempts=jp.attempts)
        return {"name": self.name, "think_s": self.think_s, "pending": len(waiting)}
