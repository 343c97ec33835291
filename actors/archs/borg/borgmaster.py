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
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.actors.coordinator.replica import CoordinatorReplica, ReplicaConfig
from schedlab.actors.engines.runtime import Runtime
from schedlab.actors.common.host_watch import LivenessSpec, host_of_command, judge, report_down, watch_for
from schedlab.schedulers.archs.borg.placement import PlacementParams, place_job
from schedlab.schedulers.archs.borg.preemption import choose_preemption
from schedlab.schedulers.archs.borg.priority import band
from schedlab.schedulers.model.seeding import rng_for

BATCH_BANDS = ("batch", "best_effort")


@dataclass(frozen=True)
class BorgParams:
    t_job: float
    t_task: float
    batch_t_job: float
    batch_t_task: float
    placement: PlacementParams
    spread_service: bool
    preemption: bool
    multi_path: bool
    poll_interval: float  # emulated s between liveness checks
    missed_polls: int
    hosts: int
    racks: np.ndarray
    eligible: dict[str, np.ndarray]  # job class -> machines satisfying its constraints
    liveness: LivenessSpec = LivenessSpec()
    retry_backoff: float = 10.0  # emulated s before a job that placed nothing is tried again
    idle_wall: float = 0.02


class BorgmasterReplica(CoordinatorReplica):
    def __init__(self, rt: Runtime, cfg: ReplicaConfig, metrics: Any, *, params: BorgParams) -> None:
        super().__init__(rt, cfg, metrics)
        self.params = params
        # Borglets missing missed_polls polls are down (the same watch, and
        # the same guard against our own stalls, as Omega's cell state).
        self.watch = watch_for(params.hosts, params.missed_polls * params.poll_interval, params.liveness,
                               self.rt.scale)
        self.led_term = -1
        self.rid = 0
        self.inflight: set[int] = set()
        self.fruitless: dict[int, float] = {}  # job -> when an attempt last placed nothing
        self.scheduling = True
        self.rng = rng_for(cfg.seed, self.name)

    async def on_start(self) -> None:
        await super().on_start()
        paths = ["service", "batch"] if self.params.multi_path else ["all"]
        for path in paths:
            self.spawn_loop(self._schedule_loop(path))
        self.spawn_loop(self._poll_loop())

    async def quiesce(self) -> None:
        """End of run: stop deciding (a placement now would never reach a
        Borglet) and wait for the decision in flight to be written."""
        self.scheduling = False
        for _ in range(200):
            if not self.inflight:
                return
            await self.nap_wall(0.01)

    # ------------------------------------------------------ heartbeats in

    async def propose(self, client_id: str, request_id: int, command: Any) -> tuple:
        self._heard(command)
        return await super().propose(client_id, request_id, command)

    async def query(self, command: Any) -> tuple:
        self._heard(command)
        return await super().query(command)

    def _heard(self, command: Any) -> None:
        host = host_of_command(command)
        if host is not None:
            self.watch.heard(host, self.rt.now())

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
            self.inflight.clear()
            self.fruitless.clear()
            self.log.emit("borgmaster_elected", replica=self.index, term=self.node.term, queued=len(self.node.sm.inner.queue))
        return True

    async def _write(self, path: str, command: tuple) -> Any | None:
        """Through our own log; None if we stopped leading before it applied."""
        self.rid += 1
        ok, result, _err, _hint = await self.propose(f"{self.name}-t{self.led_term}-{path}", self.rid, command)
        return result if ok else None

    def _next(self, path: str) -> int | None:
        """The first queued job for this path, skipping jobs whose last
        attempt placed nothing less than ``retry_backoff`` ago: a job that
        fits nowhere must not block every job behind it (Borg scans the
        whole pending queue each pass)."""
        sm = self.node.sm.inner
        now = self.rt.now()
        for job_id in sm.queue.order():
            if job_id in self.inflight or now - self.fruitless.get(job_id, -1e18) < self.params.retry_backoff:
                continue
            is_batch = band(sm.jobs[job_id]["priority"]) in BATCH_BANDS
            if path == "all" or (path == "batch") == is_batch:
                return job_id
        return None

    async def _schedule_loop(self, path: str) -> None:
        p = self.params
        while self.running:
            if not self._leading() or (job_id := self._next(path)) is None:
                if not await self.nap_wall(p.idle_wall):
                    return
                continue
            term = self.node.term
            sm = self.node.sm.inner
            job = sm.jobs[job_id]
            self.inflight.add(job_id)
            try:
                await self._attempt(path, job_id, job, term)
            finally:
                self.inflight.discard(job_id)

    async def _attempt(self, path: str, job_id: int, job: dict, term: int) -> None:
        p = self.params
        if job["attempts"] == 0:
            self.log.emit("job_attempt", job_id=job_id, attempt=1, first=True, scheduler=f"borgmaster-{path}")
        batch = path == "batch"
        think = (p.batch_t_job if batch else p.t_job) + (p.batch_t_task if batch else p.t_task) * len(job["pending"])
        started = self.rt.now()
        if not await self.nap(think):
            return
        if not self.node.is_leader or self.node.term != term or job_id not in self.node.sm.inner.queue:
            return  # deposed, or the job changed under us: the queue has it
        placements, victims = self._decide(job)
        result = await self._write(path, ("place", job_id, placements, victims, self.rt.now()))
        if result is None:
            return
        accepted, preempted, status = result
        n_ok = int(sum(accepted))
        if n_ok == 0 and status == "waiting":
            self.fruitless[job_id] = self.rt.now()
        else:
            self.fruitless.pop(job_id, None)
        self.log.emit("txn", scheduler=f"borgmaster-{path}", job_id=job_id, claims=len(placements), committed=n_ok,
                      conflicted=len(placements) - n_ok, think=round(think, 6), span=round(self.rt.now() - started, 6),
                      rtt_ms=0.0, priority=job["priority"],
                      placed=[[t, m] for (t, m), ok in zip(placements, accepted) if ok])
        if preempted:
            self.log.emit("preempted", job_id=job_id, priority=job["priority"],
                          victims=[[j, t, prio, band(prio)] for j, t, prio, _ in preempted])
            withdrawn = [[j, t] for j, t, _prio, launched in preempted if not launched]
            if withdrawn:  # committed, never launched, back in their jobs' queues
                self.log.emit("tasks_lost", framework="borgmaster", reason="preempted_before_launch", tasks=withdrawn, requeued_jobs=[])
        if status == "scheduled":
            self.log.emit("job_scheduled", job_id=job_id, scheduler=f"borgmaster-{path}", attempts=job["attempts"] + 1)
        elif status == "abandoned":
            self.log.emit("job_abandoned", job_id=job_id, scheduler=f"borgmaster-{path}", attempts=job["attempts"],
                          unplaced=len(job["pending"]))

    def _decide(self, job: dict) -> tuple[list, list]:
        """Feasibility and scoring for the job's pending tasks (one
        equivalence class), then preemption for what did not fit."""
        p = self.params
        sm = self.node.sm.inner
        req = np.asarray(job["request"], dtype=np.float64)
        pending = list(job["pending"])
        eligible = sm.up & p.eligible.get(job["job_class"], np.ones_like(sm.up))
        free = np.where(sm.up[:, None], sm.free, 0.0)
        params = p.placement
        if p.spread_service and job["kind"] == "service":
            params = PlacementParams(params.policy, params.sample, True)
        machines = place_job(free, sm.capacity, req, len(pending), params, self.rng, eligible, p.racks)
        placements = [[t, int(m)] for t, m in zip(pending, machines.tolist()) if m >= 0]
        victims: list[list[int]] = []
        unplaced = [t for t, m in zip(pending, machines.tolist()) if m < 0]
        if unplaced and p.preemption:
            running = sm.running_by_machine()
            for t in unplaced:
                choice = choose_preemption(free, req, job["priority"], running, eligible)
                if choice is None:
                    break
                m, vs = choice
                for key, _prio, vreq in vs:
                    free[m] += vreq
                    victims.append([key[0], key[1]])
                gone = {v[0] for v in vs}
                running[m] = [v for v in running[m] if v[0] not in gone]
                free[m] -= req
                placements.append([t, m])
        return placements, victims

    # ------------------------------------------------------------ liveness

    async def _poll_loop(self) -> None:
        p = self.params
        while await self.nap(p.poll_interval):
            if not self._leading():
                continue
            now = self.rt.now()
            sm = self.node.sm.inner
            down = {h for h in range(p.hosts) if not sm.up[h * sm.k: (h + 1) * sm.k].any()}
            silent = judge(self.watch, self.log, now, down)
            if not silent:
                continue
            result = await self._write("poll", ("down", silent, now))
            if result is not None:
                report_down(self.log, silent, *result, by="borgmaster", watch=self.watch)

    async def on_stop(self) -> dict:
        if self.node.is_leader:
            sm = self.node.sm.inner
            # The replicated record of every job ever fully placed: a leader
            # killed mid-run took its unflushed job_scheduled events with it.
            self.log.emit("jobs_final", scheduled=sorted(sm.placed), queued=list(sm.queue.order()))
            self.log.emit("written_off_final", tasks=sm.written_off)
            # A task evicted whose Borglet had not yet confirmed the kill is
            # pending too: it would be queued again at the confirmation.
            evicting = collections.Counter(j for j, _t in sm.evicted)
            for job_id in sm.queue.order():
                job = sm.jobs[job_id]
                self.log.emit("job_pending", job_id=job_id, scheduler="borgmaster",
                              unplaced=len(job["pending"]) + evicting.pop(job_id, 0), attempts=job["attempts"])
            for job_id, n in sorted(evicting.items()):
                job = sm.jobs.get(job_id)
                self.log.emit("job_pending", job_id=job_id, scheduler="borgmaster", unplaced=n,
                              attempts=job["attempts"] if job else 0, evicting=n)
        return await super().on_stop()
