"""The head node as an actor: a thin shell over ``schedulers.archs.
dispatcher.head.HeadNode``. It keeps the timers (the dispatch loop's think
time, the host watch, utilization samples), answers the workers' polls and
the submitter, and logs events; every decision is the core's.

Workers are the machine hosts: they poll ``exchange`` once per batch
interval (finished tasks in, launches out), like kubelets watching an API
server. A restarted head asks each worker to ``register_worker`` (what it
runs and finished lately) before it trusts it, and gets its queue back from
the submitter (``recover``).
"""
from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from schedlab.schedulers.placement.device_claims import DeviceView
from schedlab.actors.common.events import report_held_at_end, span_stamp
from schedlab.actors.common.doorbell import Doorbells
from schedlab.actors.common.host_watch import host_timeout, judge, report_down, watch_for
from schedlab.actors.common.shell import ActorShell, said_before
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.dispatcher.events import HEAD_BLOCKED, QUEUE_SAMPLE, WORKER_REGISTERED
from schedlab.schedulers.archs.dispatcher.head import HeadNode
from schedlab.schedulers.archs.dispatcher.spec import NAME
from schedlab.schedulers.events.shared import (
    CELL_SAMPLE, JOB_ATTEMPT, JOB_PENDING, JOB_SCHEDULED, SCHEDULER_RECOVERED, TXN,
)
from schedlab.schedulers.faults.liveness import LivenessSpec
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.model.seeding import rng_for
from schedlab.schedulers.model.wire import unpack_release, unpack_release_keys
from schedlab.schedulers.model.resources import sample_fields

CLOCK_EPS = 1e-6  # emulated s: an omniscient head wakes this much after a task's end, so the clock has passed it


@dataclass(frozen=True)
class HeadConfig:
    capacity: np.ndarray
    free: np.ndarray  # free at the start (the prefill already runs)
    machines_per_host: int
    queue: str
    placement: Callable  # a placement policy (schedulers.placement)
    t_job: float
    t_task: float
    seed: int
    liveness: LivenessSpec
    sample_interval: float
    restarted: bool = False  # a new incarnation: rebuild from the workers, not from ``free``
    view: str = "reported"  # "omniscient": the reference (exact durations, a slot free at its task's end)
    heartbeat: float | None = None  # emulated s: the workers' (None: they poll every batch interval)
    devices: DeviceView | None = None  # a cell with devices: how the head places them


class Dispatcher(ActorShell):
    def __init__(self, rt: Runtime, cfg: HeadConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, NAME, metrics, flush_interval)
        self.cfg = cfg
        self.core = HeadNode(cfg.capacity, cfg.free, cfg.machines_per_host, cfg.queue, cfg.placement,
                             rng_for(cfg.seed, NAME), registered=not cfg.restarted, view=cfg.view, devices=cfg.devices)
        scale = rt.scale
        self.watch = watch_for(self.core.hosts, host_timeout(scale, cfg.heartbeat), cfg.liveness, scale)
        self.bells = Doorbells(rt)
        self.wakeup = asyncio.Event()
        self.blocked = False
        self.dispatched = 0
        self.said: set[int] = set()  # jobs an earlier recovery said scheduled (said_before)
        self.told: list[int] = []  # jobs this recovery said scheduled, not yet answered (vouch)

    async def on_start(self) -> None:
        # A restarted head gives every worker the time to find it.
        self.watch.grace(self.rt.now(), give_up=self.cfg.restarted)
        self.spawn_loop(self._dispatch_loop())
        self.spawn_loop(self._watch_loop())
        self.spawn_loop(self._sample_loop())

    def on_stopping(self) -> None:
        self.wakeup.set()

    # ------------------------------------------------------------ jobs in

    async def submit(self, jobs: list[dict]) -> None:
        if self.core.submit([Job.from_wire(j) for j in jobs]):
            self.wakeup.set()

    async def recover(self, jobs: list[dict]) -> list[int] | None:
        """A restarted head's queue, from every job the submitter routed to
        its predecessor; requeued once every worker registered. Answers,
        once that is done, with the jobs it said scheduled (``vouch``)."""
        self.said |= said_before(jobs)
        self.core.recover([Job.from_wire(j) for j in jobs])
        self._recovered(self.core.try_recover(), len(jobs))
        while self.core.awaiting_recovery:  # workers still to register: ``_recovered`` wakes this
            if not await self.nap_wall(math.inf, wakeable="recovered"):
                return None
        told, self.told = self.told, []
        return await self.vouch(told)

    def _recovered(self, done: list, routed: int) -> None:
        if not routed and not done:
            return
        for jp in done:
            # Its job_scheduled event may have died with the old incarnation
            # (unless an earlier recovery said it, and shipped that).
            if jp.job.job_id not in self.said:
                self.log.emit(JOB_SCHEDULED, job_id=jp.job.job_id, scheduler=NAME, attempts=0, recovered=True)
                self.told.append(jp.job.job_id)
        if not self.core.awaiting_recovery:
            self.log.emit(SCHEDULER_RECOVERED, jobs=len(self.core.jobs), already_placed=len(done), queued=self.core.queued())
            self.wake_early("recovered")
        self.wakeup.set()

    # ------------------------------------------------------------ workers

    async def exchange(self, host: int, finished: bytes) -> Any:
        """A worker's poll (see HeadNode.exchange for the replies)."""
        self.watch.heard(host, self.rt.now())
        self.bells.heard(host)
        machines, requests = (unpack_release(finished) if finished
                              else (np.zeros(0, np.int64), np.zeros((0, self.core.capacity.shape[1]))))
        keys = unpack_release_keys(finished) if finished else []
        reply = self.core.exchange(host, machines, requests, keys)
        if keys:
            self.wakeup.set()  # room came back
        return reply

    async def register_worker(self, host: int, report: dict) -> None:
        self.watch.heard(host, self.rt.now())
        self.bells.heard(host)
        self.core.register(host, [(int(j), int(t), int(m), req) for j, t, m, req, *_ in report["tasks"]],
                           [(int(j), int(t)) for j, t in report["finished"]],
                           unreported=[(int(j), int(t)) for j, t, *_ in report["unreported"]])
        self.log.emit(WORKER_REGISTERED, host=host, tasks=len(report["tasks"]))
        if self.core.awaiting_recovery:
            self._recovered(self.core.try_recover(), 1)
        self.wakeup.set()

    async def rejoin(self, host: int) -> list:
        """A restarted worker's first word: what it ran is written off."""
        self.watch.heard(host, self.rt.now())
        self.bells.rejoined(host)
        lost, unpulled = self.core.rejoin(host)
        self.wakeup.set()
        return [lost, unpulled]

    async def _watch_loop(self) -> None:
        while await self.nap(self.watch.timeout / 4):
            now = self.rt.now()
            silent = judge(self.watch, self.log, now, self.core.down)
            if silent:
                lost, unpulled = self.core.write_off(silent)
                report_down(self.log, silent, lost, unpulled, by=NAME, watch=self.watch)
                self.bells.ring(self.core.waiting())  # alive after all: told to start over
                if self.core.awaiting_recovery:
                    self._recovered(self.core.try_recover(), 1)
                self.wakeup.set()

    # ----------------------------------------------------------- dispatch

    async def _dispatch_loop(self) -> None:
        core, cfg = self.core, self.cfg
        while self.running:
            core.release_due(self.rt.now())  # omniscient view: tasks ended by the head's clock
            for fresh in core.first_turn():
                self.log.emit(JOB_ATTEMPT, job_id=fresh.job.job_id, attempt=1, first=True, scheduler=NAME)
            jp = core.turn()
            self._note_blocked(jp is None and core.blocked())
            if jp is None:
                self.wakeup.clear()
                wait = cfg.sample_interval
                end = core.next_end()
                if end is not None:  # wake when the next task ends (a hair after: the clock's rounding)
                    wait = min(wait, max(0.0, end - self.rt.now()) + CLOCK_EPS)
                try:
                    await asyncio.wait_for(self.wakeup.wait(), self.rt.wall(wait))
                except TimeoutError:
                    pass
                continue
            started = self.rt.now()
            think = cfg.t_job + cfg.t_task * len(jp.pending)
            if not await self.nap(think):
                return
            turn = core.dispatch(jp, self.rt.now())
            if not turn.placed:
                continue  # the room went while it thought (a worker written off)
            self.dispatched += len(turn.placed)
            self.log.emit(TXN, scheduler=NAME, job_id=jp.job.job_id, claims=len(turn.placed), committed=len(turn.placed),
                          think=round(think, 6), placed=[[t, m] for t, m in turn.placed],
                          outbox=NAME,  # here until the worker polls: a killed head loses it
                          **span_stamp(started, self.rt.now()))
            if turn.now_scheduled:
                self.log.emit(JOB_SCHEDULED, job_id=jp.job.job_id, scheduler=NAME, attempts=1)
            self.bells.ring(self.core.waiting())

    def _note_blocked(self, blocked: bool) -> None:
        """Head-of-line blocking starts or ends: the head is stuck while a
        job behind it would fit."""
        if blocked != self.blocked:
            self.blocked = blocked
            heads = [jp.job.job_id for jp in self.core.heads()]
            self.log.emit(HEAD_BLOCKED, on=blocked, heads=heads, queued=self.core.queued())

    async def _sample_loop(self) -> None:
        self._sample()
        while await self.nap(self.cfg.sample_interval):
            self._sample()

    def _sample(self) -> None:
        self.log.emit(CELL_SAMPLE, **sample_fields(self.core.utilization()), version=self.dispatched)
        self.log.emit(QUEUE_SAMPLE, queued=self.core.queued(), blocked=self.blocked)

    async def on_stop(self) -> dict:
        self._sample()
        self._note_blocked(False)
        for job_id, left in self.core.unplaced().items():
            self.log.emit(JOB_PENDING, job_id=job_id, scheduler=NAME, unplaced=left, attempts=0)
        for job in self.core.awaiting_recovery:
            self.log.emit(JOB_PENDING, job_id=job.job_id, scheduler=NAME, unplaced=job.tasks, attempts=0)
        report_held_at_end(self.log, NAME, self.core.held_launches())
        return {"dispatched": self.dispatched, "queued": self.core.queued()}
