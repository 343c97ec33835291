"""slurmctld as an actor: a thin shell over ``schedulers.archs.slurm.ctld``.
It keeps the timers (scheduling passes at every submission and job end,
every ``sched_interval``, and at the next time limit; the node daemons'
watch; samples; the state save), answers the daemons' polls and the
submitter, and logs events; every decision is the core's.

The node daemons (slurmd) are the machine hosts: they poll ``exchange`` once
per batch interval (ended tasks in, kills and launches out). A new
controller asks each daemon to ``register_node`` (what it runs and finished
lately) and schedules nothing until every daemon has registered or been
written off.

State save: with ``controllers = 1`` the controller saves to a file in the
run's folder (StateSaveLocation on its own disk), read back when it is
restarted; with a backup (``controllers = 2``) both campaign for the
coordinator group's lease and the active one saves to the fenced store on
the group, which the backup reads when it takes over
(``slurmctld_ha.HAController``).
"""
from __future__ import annotations

import asyncio
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgpack
import numpy as np

from schedlab.actors.common.events import report_held_at_end, span_stamp
from schedlab.actors.common.host_watch import HOST_TIMEOUT_WALL_S, judge, report_down, watch_for
from schedlab.actors.common.shell import ActorShell
from schedlab.actors.common.slices import Slices
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.slurm.controller import SlurmCore
from schedlab.schedulers.archs.slurm.ctld import Slurmctld, Started
from schedlab.schedulers.archs.slurm.events import (
    SLURMCTLD_ACTIVE, SLURMCTLD_RESTORED, SLURM_END, SLURM_QUEUE, SLURM_START,
)
from schedlab.schedulers.archs.slurm.priority import FairShare
from schedlab.schedulers.archs.slurm.spec import NAME, SlurmSpec, controller_name, time_limit
from schedlab.schedulers.archs.slurm.state_save import Restored, StateMirror
from schedlab.schedulers.events.shared import (
    CELL_SAMPLE, COMMITS_DROPPED, JOB_ATTEMPT, JOB_PENDING, JOB_REJECTED, JOB_SCHEDULED, NODE_REGISTERED,
    SCHEDULER_RECOVERED, TXN,
)
from schedlab.schedulers.faults.liveness import LivenessSpec
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.model.wire import held_launches, unpack_release_keys
from schedlab.schedulers.model.resources import sample_fields, used_shares


@dataclass(frozen=True)
class CtldConfig:
    spec: SlurmSpec
    capacity: np.ndarray
    machines_per_host: int
    foreign: tuple[tuple[int, int, int, float, tuple[float, ...]], ...]  # the prefill: (machine, job, task, end, request)
    seed: int
    liveness: LivenessSpec
    sample_interval: float
    state_file: str  # controllers = 1: where it saves its state
    replicas: int = 1
    index: int = 0
    restarted: bool = False  # a new incarnation (controllers = 1): reads its saved state

    @property
    def name(self) -> str:
        return controller_name(self.index)


def new_books(cfg: CtldConfig, recovering: bool) -> Slurmctld:
    s = cfg.spec
    accounts = {jc: s.accounts.get(jc, 1.0) for p in s.partitions for jc in p.classes} | s.accounts
    core = SlurmCore(tuple(p.partition for p in s.partitions), int(cfg.capacity.shape[0]), s.weights,
                     FairShare(accounts or {"": 1.0}, s.half_life), qos=dict(s.qos),
                     capacity=cfg.capacity if s.select == "cons_tres" else None, bf_max_job_test=s.bf_max_job_test)
    ctld = Slurmctld(core, cfg.capacity, cfg.machines_per_host, recovering=recovering)
    if not recovering:
        for m, job, task, end, req in cfg.foreign:
            ctld.add_foreign(m, (job, task), end, req)
    return ctld


class StateFile:
    """The saved state on the controller's own disk: every record in one
    msgpack file, replaced atomically at each save."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.records: dict[int, list] = {}

    def load(self) -> dict[int, list]:
        try:
            pairs = msgpack.unpackb(self.path.read_bytes(), raw=False)
        except FileNotFoundError:
            return {}
        self.records = {int(k): r for k, r in pairs}
        return dict(self.records)

    def write(self, mirror: StateMirror) -> None:
        updates = mirror.take_dirty()
        if not updates:
            return
        self.records.update(updates)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(msgpack.packb([[k, r] for k, r in self.records.items()], use_bin_type=True))
        os.replace(tmp, self.path)


class SlurmController(ActorShell):
    def __init__(self, rt: Runtime, cfg: CtldConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, cfg.name, metrics, flush_interval)
        self.cfg = cfg
        self.spec = cfg.spec
        self.hosts = -(-int(cfg.capacity.shape[0]) // cfg.machines_per_host)
        self.watch = watch_for(self.hosts, HOST_TIMEOUT_WALL_S * rt.scale, cfg.liveness, rt.scale)
        self.ctld: Slurmctld | None = None  # None: not the active controller
        self.mirror: StateMirror | None = None
        self.placing = True  # False once the daemons are about to stop
        self.wakeup = asyncio.Event()
        self.expiry_changed = asyncio.Event()  # a job started: the next time limit may be sooner
        self.scheduled: set[int] = set()  # jobs started once (a requeued one is not scheduled twice)
        self.partition_of: dict[int, str] = {}
        self.unrecovered: list[dict] | None = None  # the submitter's jobs, held until the saved state is read
        self.file = StateFile(cfg.state_file) if cfg.spec.controllers == 1 else None
        self.foreign_until = {(job, task): end for _m, job, task, end, _req in cfg.foreign}

    async def on_start(self) -> None:
        if self.file is not None:
            self._incarnate(self.cfg.restarted)
            if self.cfg.restarted:
                self._restore(self.file.load())
        self.spawn_loop(self._sched_loop())
        self.spawn_loop(self._expiry_loop())
        self.spawn_loop(self._watch_loop())
        self.spawn_loop(self._sample_loop())
        self.spawn_loop(self._save_loop())

    async def hosts_stopping(self) -> None:
        """The run is about to stop the node daemons: no more passes (a job
        started now would never launch: with a backup, the controllers are
        stopped after the daemons, and their passes run on a timer)."""
        await super().hosts_stopping()
        self.placing = False

    def on_stopping(self) -> None:
        self.wakeup.set()
        self.expiry_changed.set()

    def active(self) -> bool:
        return self.ctld is not None

    def _incarnate(self, recovering: bool) -> None:
        """Become the active controller: fresh (the run's start) or a new one
        that reads the saved state and waits for every daemon."""
        now = self.rt.now()
        self.ctld = new_books(self.cfg, recovering)
        self.mirror = StateMirror({})
        self.mirror.ctld = self.ctld
        self.watch.grace(now, give_up=recovering)
        self.log.emit(SLURMCTLD_ACTIVE, controller=self.name, recovering=recovering)

    def _restore(self, records: dict[int, list]) -> None:
        assert self.ctld is not None
        r = Restored.of(records)
        r.into(self.ctld)
        for j in r.jobs:
            self.partition_of[j.job_id] = j.partition
            if j.started is not None:
                self.scheduled.add(j.job_id)
                # Its job_scheduled event may have died with the controller
                # that started it (killed before its events shipped); the
                # summary counts an original over this one.
                self.log.emit(JOB_SCHEDULED, job_id=j.job_id, scheduler=NAME, attempts=1, recovered=True)
        self.scheduled |= r.ended
        self.log.emit(SLURMCTLD_RESTORED, controller=self.name, jobs=len(r.jobs), ended=len(r.ended))
        jobs, self.unrecovered = self.unrecovered, None
        if jobs:
            self._admit(jobs)

    # ------------------------------------------------------------ jobs in

    async def submit(self, jobs: list[dict]) -> None:
        if not self.active():
            raise ConnectionError(f"{self.name} is not the active controller")  # the submitter keeps them
        self._admit(jobs)

    async def recover(self, jobs: list[dict]) -> None:
        """Every job the submitter routed to the controller, to a new one:
        those its saved state does not know are queued as submitted (held
        until the saved state is read)."""
        if self.ctld is not None and self._loaded():
            self._admit(jobs)
        else:
            self.unrecovered = (self.unrecovered or []) + jobs

    def _loaded(self) -> bool:
        """Whether the saved state is read (the state file is, at start)."""
        return True

    def _admit(self, jobs: list[dict]) -> None:
        ctld = self.ctld
        assert ctld is not None
        now = self.rt.now()
        for w in jobs:
            job = Job.from_wire(w)
            part = self.spec.partition_of(job.job_class).partition.name
            why = ctld.submit(job, part, time_limit(self.spec, job, self.cfg.seed), now)
            if why:
                self.log.emit(JOB_REJECTED, job_id=job.job_id, scheduler=NAME, reason=why)
            else:
                self.partition_of.setdefault(job.job_id, part)
        self.wakeup.set()

    # ------------------------------------------------------------ node daemons

    def _heard(self, host: int) -> Slurmctld | None:
        if not self.active():
            return None
        self.watch.heard(host, self.rt.now())
        return self.ctld

    async def exchange(self, host: int, finished: bytes) -> Any:
        ctld = self._heard(host)
        if ctld is None:
            return {"standby": True}
        keys = unpack_release_keys(finished) if finished else []
        reply = ctld.exchange(host, keys, self.rt.now())
        if keys:
            self._drain()
            self.wakeup.set()  # nodes came back
        return reply

    async def register_node(self, host: int, report: dict) -> None:
        ctld = self._heard(host)
        if ctld is None:
            raise ConnectionError(f"{self.name} is not the active controller")
        ctld.register(host, [(int(j), int(t), int(m), req) for j, t, m, req, *_ in report["tasks"]],
                      [(int(j), int(t)) for j, t in report["finished"]], self.foreign_until,
                      unreported=[(int(j), int(t)) for j, t, *_ in report["unreported"]])
        self.log.emit(NODE_REGISTERED, host=host, tasks=len(report["tasks"]))
        self._maybe_settle()

    async def rejoin(self, host: int) -> list:
        ctld = self._heard(host)
        if ctld is None:
            raise ConnectionError(f"{self.name} is not the active controller")
        lost, unpulled = ctld.rejoin(host, self.rt.now())
        self._drain()
        self.wakeup.set()
        return [lost, unpulled]

    def _maybe_settle(self) -> None:
        ctld = self.ctld
        if ctld is None or not ctld.recovering or not self._loaded():
            return
        if not ctld.roll.complete():
            return
        requeued = ctld.settle(self.rt.now())
        self._drain()
        self.log.emit(SCHEDULER_RECOVERED, jobs=len(ctld.core.jobs), requeued=len(requeued),
                      queued=sum(ctld.queued().values()))
        self.wakeup.set()

    async def _watch_loop(self) -> None:
        while await self.nap(self.watch.timeout / 4):
            ctld = self.ctld
            if ctld is None:
                continue
            now = self.rt.now()
            silent = judge(self.watch, self.log, now, ctld.down)
            if silent:
                lost, unpulled = ctld.write_off(silent, now)
                report_down(self.log, silent, lost, unpulled, by=self.name, watch=self.watch)
                self._drain()
                self.wakeup.set()
            self._maybe_settle()

    # ------------------------------------------------------------ scheduling

    async def _sched_loop(self) -> None:
        while self.running:
            ctld = self.ctld
            if ctld is not None and not ctld.recovering and self.placing:
                if self.spec.pass_time > 0 and not await self.nap(self.spec.pass_time):
                    return
                ctld = self.ctld
                if ctld is not None and not ctld.recovering and self.placing:
                    await self._pass(ctld)
            self.wakeup.clear()
            try:
                await asyncio.wait_for(self.wakeup.wait(), self.rt.wall(self.spec.sched_interval))
            except TimeoutError:
                pass

    async def _expiry_loop(self) -> None:
        """Time limits on their own timer, as slurmctld enforces them: a job
        is killed at its limit, not at the end of a pass that happens to be
        thinking then; the nodes it frees wake a pass."""
        while self.running:
            ctld = self.ctld
            due = ctld.next_expiry() if ctld is not None and not ctld.recovering else math.inf
            now = self.rt.now()
            if ctld is not None and due <= now:
                if ctld.expire(now):
                    self._drain()
                    self.wakeup.set()
                    continue
                due = math.inf  # nothing to kill after all: wait for the next start
            self.expiry_changed.clear()
            try:
                await asyncio.wait_for(self.expiry_changed.wait(),
                                       self.rt.wall(min(due - now, self.spec.sched_interval)))
            except TimeoutError:
                pass

    async def _pass(self, ctld: Slurmctld) -> None:
        """One scheduling pass, cut into slices (``Slices``) between the
        jobs it looks at: at ten thousand nodes a pass takes seconds, and
        the controller's lease renewal must not wait it out. What a step
        started is logged at once (a daemon may pull it at the next cut).
        Should this controller lose its books at a cut (it went standby),
        the pass ends there."""
        now = self.rt.now()
        ctld.expire(now)
        steps = ctld.schedule_steps(now)
        slices = Slices(self.rt)
        for started in steps:
            if started:
                self._log_starts(started, now)
            if slices.due():
                await slices.cut()
                if self.ctld is not ctld or not self.running:  # deposed, or the run ended meanwhile
                    steps.close()
                    return
        self._drain()

    def _log_starts(self, started: list[Started], now: float) -> None:
        self.expiry_changed.set()
        for s in started:
            self.log.emit(TXN, scheduler=NAME, job_id=s.job_id, claims=len(s.nodes), committed=len(s.nodes),
                          think=self.spec.pass_time,
                          placed=[[t, n] for t, n in enumerate(s.nodes)], outbox=self.name, **span_stamp(now, now))
            first = s.job_id not in self.scheduled
            if first:
                self.scheduled.add(s.job_id)
                self.log.emit(JOB_ATTEMPT, job_id=s.job_id, attempt=1, first=True, scheduler=NAME)
                self.log.emit(JOB_SCHEDULED, job_id=s.job_id, scheduler=NAME, attempts=1)
            self.log.emit(SLURM_START, job_id=s.job_id, partition=self.partition_of.get(s.job_id, ""),
                          nodes=len(s.nodes), backfilled=s.backfilled, reserved=s.reserved,
                          waited=round(s.waited, 6), first=first)
        self._drain()

    def _drain(self) -> None:
        ctld = self.ctld
        if ctld is None:
            return
        now = self.rt.now()
        for e in ctld.ended:
            spec = ctld.specs.get(e.job_id)
            self.log.emit(SLURM_END, job_id=e.job_id, state=e.state, reason=e.reason,
                          partition=self.partition_of.get(e.job_id, ""), account=spec.job_class if spec else "",
                          nodes=e.nodes, ran=round(now - e.started, 6))
        ctld.ended = []
        if ctld.withdrawn:
            # Launches no daemon pulled, taken back (killed at its limit or
            # requeued first): the invariant checker traces each commit to
            # its launch or to this.
            self.log.emit(COMMITS_DROPPED, holder=self.name, reason="withdrawn", tasks=ctld.withdrawn)
            ctld.withdrawn = []

    # ------------------------------------------------------------ samples and state

    async def _sample_loop(self) -> None:
        self._sample()
        while await self.nap(self.cfg.sample_interval):
            self._sample()

    def _sample(self) -> None:
        ctld = self.ctld
        if ctld is None:
            return
        cap = self.cfg.capacity
        core = ctld.core
        if core.whole_nodes:  # a node taken is taken whole
            used = cap[(core.used[:, 0] > 0.5)].sum(axis=0)
        else:
            used = core.used.sum(axis=0)
        self.log.emit(CELL_SAMPLE, **sample_fields(used_shares(used, cap.sum(axis=0))), version=len(self.scheduled))
        self.log.emit(SLURM_QUEUE, queued=ctld.queued(),
                      running=sum(1 for j in core.jobs.values() if j.started is not None),
                      recovering=ctld.recovering)

    async def _save_loop(self) -> None:
        while await self.nap_wall(self.flush_interval):
            await self._save()

    async def _save(self) -> None:
        if self.file is not None and self.mirror is not None:
            self.file.write(self.mirror)

    async def status(self) -> dict:
        return {"controller": self.name, "index": self.cfg.index, "leading": self.active()}

    async def on_stop(self) -> dict:
        ctld = self.ctld
        if ctld is None:
            return {"controller": self.name, "active": False}
        self._sample()
        await self._save()
        waiting = {j.job_id for j in ctld.core.jobs.values() if j.started is None and j.job_id >= 0} | set(ctld.parked)
        for jid in sorted(waiting - self.scheduled):
            self.log.emit(JOB_PENDING, job_id=jid, scheduler=NAME, unplaced=ctld.specs[jid].tasks, attempts=0)
        for w in self.unrecovered or []:
            self.log.emit(JOB_PENDING, job_id=w["job_id"], scheduler=NAME, unplaced=len(w["durations"]), attempts=0)
        # Started and never pulled (a pass still running when the run
        # ended): in flight, not lost, and no daemon's last poll takes them now.
        report_held_at_end(self.log, self.name, held_launches(ctld.to_launch))
        ctld.to_launch.clear()
        return {"controller": self.name, "active": True, "scheduled": len(self.scheduled)}
