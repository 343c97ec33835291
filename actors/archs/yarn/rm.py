"""The YARN ResourceManager as an actor: a thin shell over
``schedulers.archs.yarn.rm_state.RMState``. It keeps the timers (node
liveness, the preemption monitor, global scheduling, the AM liveness
monitor, queue samples, a restarted RM's recovery window), answers the
NodeManagers' heartbeats (the machine hosts, through ``endpoint``), the AM
pools' batched allocate calls and the submitter, and logs events; every
decision is the core's.

Generic events, for the common summary and invariants:

* ``job_attempt`` (first) when an application's AM container is handed
  to its node: the application starts scheduling its tasks then (its AM's
  first ask follows), as a framework's first attempt does;
* ``txn`` per application and node heartbeat that hands out containers
  (AM and task containers; ``outbox``: the RM holds them until the node
  pulls them); ``job_scheduled`` once every task of the application has
  started at least once;
* ``machines_down`` / ``tasks_lost`` when hosts are written off;
  ``job_rejected`` for an application admission refuses; ``job_pending``
  at the end for every application not yet fully started.

A restarted RM (``restarted``) starts empty (``RMState(recovering=True)``,
YARN's work-preserving restart): the NodeManagers re-register with what
they run, the submitter hands back every job routed to it (the
applications' records; with standbys the RM state store says which ended
and each one's attempt, otherwise the AMs' resync tells the attempt), the
AM pools resync their AMs and name the applications they finished;
scheduling resumes when every host has registered or been written off and
every pool has synced (or the window, the host watch's silence span, has
passed). Those calls, taking over and stepping down, and the state store
are the base class's (``rm_restart.RestartingRM``).
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from schedlab.schedulers.placement.device_claims import DeviceView
from schedlab.actors.archs.yarn.rm_restart import NAME, RestartingRM
from schedlab.actors.archs.yarn.store_link import StoreLink
from schedlab.actors.common.events import span_stamp
from schedlab.actors.common.slices import Slices
from schedlab.actors.common.head_endpoint import STANDBY
from schedlab.actors.common.host_watch import (
    HOST_TIMEOUT_WALL_S,
    judge,
    report_down,
    silence_span,
    watch_for,
)
from schedlab.actors.coordinator.lease import LeaseCampaign
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.yarn.apps import app_record, pool_of
from schedlab.schedulers.archs.yarn.cores import build_scheduler, rm_config
from schedlab.schedulers.archs.yarn import events as yarn_events
from schedlab.schedulers.archs.yarn.events import QUEUE_USAGE, YARN_BOOKS
from schedlab.schedulers.archs.yarn.rm_books import APP_FAILED, TERMINAL
from schedlab.schedulers.archs.yarn.rm_state import RMState
from schedlab.schedulers.archs.yarn.spec import RM_NAME, YarnSpec, rm_name
from schedlab.schedulers.events.shared import (
    CELL_SAMPLE, JOB_ABANDONED, JOB_ATTEMPT, JOB_PENDING, JOB_REJECTED, JOB_SCHEDULED, TXN,
)
from schedlab.schedulers.faults.liveness import LivenessSpec
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.model.wire import unpack_release, unpack_release_keys
from schedlab.schedulers.model.resources import sample_fields


class NotActive(RuntimeError):
    """A standby RM refusing a submission (the submitter keeps it)."""


@dataclass(frozen=True)
class RMShellConfig:
    spec: YarnSpec
    capacity: np.ndarray  # [M, R]
    rack: np.ndarray  # [M]
    foreign: tuple  # ((machine, (job, task), request), ...): the prefill, running at the start
    machines_per_host: int
    seed: int
    liveness: LivenessSpec
    sample_interval: float
    restarted: bool = False  # a new incarnation: rebuild from the nodes, the submitter and the AMs
    index: int = 0  # which RM of an active/standby set (rms > 1)
    replicas: int = 1  # the coordinator group's (rms > 1)
    lease_wall_s: float = 1.0  # [yarn] rm_lease_ms, in s
    devices: DeviceView | None = None  # [yarn] device_policy with global scheduling

    @property
    def name(self) -> str:
        return RM_NAME if self.spec.rms == 1 else rm_name(self.index)


class ResourceManager(RestartingRM):
    def __init__(self, rt: Runtime, cfg: RMShellConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, cfg.name, metrics, flush_interval)
        self.cfg = cfg
        self.spec = cfg.spec
        self.k = cfg.machines_per_host
        self.n = cfg.capacity.shape[0]
        self.hosts = -(-self.n // self.k)
        self.core: RMState | None = None  # None: not the active RM (a standby, or not started)
        self.watch = watch_for(self.hosts, HOST_TIMEOUT_WALL_S * rt.scale, cfg.liveness, rt.scale)
        self.single = cfg.spec.rms == 1
        self.lease_until = math.inf if self.single else -math.inf
        self.leader_hint: str | None = None
        self.lease_epoch = 0
        self.lapsed = False  # refused its NodeManagers while its lease renewal was late (see active)
        self.handed = 0
        self._stopped_once = False
        # The RM state store (rms > 1: on the coordinator group, with the lease).
        self.store = None if self.single else StoreLink(cfg.name, cfg.replicas, rt, cfg.lease_wall_s)
        self.unrecovered: list[dict] | None = None  # the submitter's jobs, held until the store is read
        self.deposed: dict[int, int] = {}  # app -> tasks not started, when it last stepped down
        self._books(rebuilt=cfg.restarted)

    def _books(self, rebuilt: bool) -> None:
        """What one incarnation of the active RM keeps besides its core."""
        self.rebuilt = rebuilt  # rebuilding from the nodes, the submitter and the AMs
        self.down: set[int] = set()  # hosts written off, until they are heard again
        self.registered_hosts: set[int] = set(range(self.hosts)) if not rebuilt else set()
        self.tasks_of: dict[int, int] = {}
        self.scheduled: set[int] = set()
        self.outbox: dict[int, list] = collections.defaultdict(list)  # pool -> AMs to start
        self.epoch = 0
        self.restored = not rebuilt  # the submitter's jobs are back
        self.synced_pools: set[int] = set()
        self.ended: set[int] = set()  # applications their AM pools say finished
        self.started_at = 0.0

    async def on_start(self) -> None:
        if self.single:
            self._incarnate(self.cfg.restarted)
        else:
            self.campaign = LeaseCampaign(self.name, self.cfg.replicas, self.rt, self.cfg.lease_wall_s)
            self.spawn_loop(self.campaign.run(self, lambda: self.core is not None, lambda: self.lease_epoch,
                                              self._take_over, self._step_down))
            self.spawn_loop(self._store_loop())
        self.spawn_loop(self._watch_loop())
        self.spawn_loop(self._sample_loop())
        self.spawn_loop(self._expiry_loop())
        if self.spec.preemption:
            self.spawn_loop(self._preemption_loop())
        if self.spec.global_scheduling:
            self.spawn_loop(self._global_loop())

    def _incarnate(self, rebuilt: bool) -> None:
        """Become the active RM: a fresh one (the run's start), or one that
        rebuilds by the work-preserving restart (a restarted RM, a standby
        taking over)."""
        cfg = self.cfg
        now = self.rt.now()
        self._books(rebuilt)
        sched = build_scheduler(self.spec, cfg.capacity.copy(), cfg.rack, cfg.devices)
        # A rebuilt RM's container ids start above any its predecessors
        # handed out: its epoch is the emulated second it started in.
        self.epoch = int(now) + 1 if rebuilt else 0
        self.core = RMState(sched, rm_config(self.spec), epoch=self.epoch, recovering=rebuilt)
        if not rebuilt:
            self.core.add_foreign_many(cfg.foreign)
        self.started_at = now
        self.watch.grace(now, give_up=rebuilt)

    # ------------------------------------------------------------ events

    def _drain(self) -> None:
        """Emit the core's events, and the generic ones they imply."""
        assert self.core is not None
        for e in self.core.take_events():
            if self.store is not None:
                self.store.fold(e)
            kind = e.pop("event")
            self.log.emit(kind, **e)
            if kind == yarn_events.AM_LAUNCHED:
                self.log.emit(JOB_ATTEMPT, job_id=e["app"], attempt=e["attempt"], first=True, scheduler=NAME)
            elif kind == yarn_events.APP_REJECTED:
                self.log.emit(JOB_REJECTED, job_id=e["app"], scheduler=NAME, reason=e["reason"])
            elif kind == yarn_events.APP_FAILED and e["app"] not in self.scheduled:
                self.log.emit(JOB_ABANDONED, job_id=e["app"], scheduler=NAME, reason="max_am_attempts")

    def _check_scheduled(self, apps: Any) -> None:
        core = self.core
        assert core is not None
        for app in apps:
            if app in self.scheduled or app not in core.apps:
                continue
            if len(core.scheduled_tasks(app)) >= len(core.apps[app].tasks):
                self._scheduled(app)
                self.log.emit(JOB_SCHEDULED, job_id=app, scheduler=NAME, attempts=core.apps[app].attempt,
                              **({"recovered": True} if self.rebuilt else {}))

    def _scheduled(self, app: int) -> None:
        self.scheduled.add(app)
        if self.store is not None:
            self.store.mark_scheduled(app)

    # ------------------------------------------------------------ jobs in

    async def submit(self, jobs: list[dict]) -> None:
        if not self.active():
            raise NotActive(f"{self.name} is a standby")  # the submitter keeps the batch for the active RM
        self._admit(jobs)

    def _admit(self, jobs: list[dict]) -> None:
        core = self.core
        assert core is not None
        now = self.rt.now()
        for j in jobs:
            job = Job.from_wire(j)
            if job.job_id in core.apps:
                continue  # sent twice around a restart
            self.tasks_of[job.job_id] = job.tasks
            core.submit(app_record(self.spec, job, self.n, self.cfg.seed, float(j["submit_time"])), now)
        self._drain()

    # ------------------------------------------------------------ NodeManagers

    def _machines(self, host: int) -> range:
        return range(host * self.k, min((host + 1) * self.k, self.n))

    async def exchange(self, host: int, finished: bytes) -> Any:
        """A NodeManager heartbeat for each machine of the host: kills and
        launches for all of them in one reply.

        A thousand machines' heartbeats are a long pass: it is cut into
        slices (``Slices``), what each slice handed out logged before the
        cut. Should this RM lose its books at a cut (it stepped down), the
        pass ends there and the host gets what was handed out so far, as if
        only those machines had heartbeated."""
        heard = self._heard(host)
        if heard is None:
            return STANDBY
        core, now = heard
        by_machine: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
        if finished:
            machines, _ = unpack_release(finished)
            for m, (job, task, killed) in zip(machines.tolist(), unpack_release_keys(finished)):
                if not killed:  # a kill the RM asked for was released when it asked
                    by_machine[int(m)].append((job, task))
        launches: list[list] = []
        kills: list[list[int]] = []
        reset = False
        am_started: list[tuple[int, int]] = []
        handed = 0  # launches[:handed] are logged
        slices = Slices(self.rt)
        for m in core.hearing(self._machines(host), by_machine):
            if slices.due():
                self._handed_out(launches[handed:], am_started, now)
                self._drain()
                handed, am_started = len(launches), []
                await slices.cut()
                if self.core is not core:
                    break
            r = core.node_heartbeat(m, by_machine.get(m, []), now)
            if r.resync:
                self._drain()
                return {"register": True}
            launches += r.launches
            kills += r.kills
            reset |= r.reset
            am_started += r.am_started
        if self.core is core:
            if reset:
                self.down.discard(host)
                self.registered_hosts.add(host)
            self._handed_out(launches[handed:], am_started, now)
            self._drain()
        if reset:
            return {"reset": True, "launches": (launches, kills)}
        return launches, kills

    def _handed_out(self, launches: list[list], am_started: list[tuple[int, int]], now: float) -> None:
        core = self.core
        assert core is not None
        by_app: dict[int, list] = collections.defaultdict(list)
        for app, task, machine, *_ in launches:
            by_app[int(app)].append([int(task), int(machine)])
        for app, placed in by_app.items():
            self.handed += len(placed)
            self.log.emit(TXN, scheduler=NAME, job_id=app, claims=len(placed), committed=len(placed),
                          think=0.0, placed=placed, outbox=self.name, **span_stamp(now, now))
        for app, attempt in am_started:
            self.outbox[pool_of(app, self.spec.am_pools)].append(
                (core.apps[app].record, attempt, core.finished_tasks(app)))
        self._check_scheduled(by_app)

    async def _watch_loop(self) -> None:
        while await self.nap(self.watch.timeout / 4):
            if not self.active():
                continue
            core = self.core
            assert core is not None
            now = self.rt.now()
            if self.lapsed:
                # Its lease renewal was late and it refused its NodeManagers
                # meanwhile: their clocks restart now.
                self.lapsed = False
                self.watch.grace(now, give_up=True)
                continue
            silent = judge(self.watch, self.log, now, self.down)
            if silent:
                lost: list[list[int]] = []
                unpulled: list[list[int]] = []
                for host in silent:
                    self.down.add(host)
                    self.registered_hosts.discard(host)
                    for m in self._machines(host):
                        s, q = core.node_contents(m)
                        lost += s
                        unpulled += q
                        core.node_lost(m, now)
                report_down(self.log, silent, lost, unpulled, by=self.name, watch=self.watch)
                self._drain()
            self._maybe_settle(force=now - self.started_at >= 3 * silence_span(self.watch))

    # ------------------------------------------------------------ ApplicationMasters

    async def am_heartbeat(self, pool: int, calls: list, resyncs: list, done: list[int], ended: list[int] | None) -> dict:
        """One AM pool's batched heartbeat: its AMs' allocate calls
        (``(app, AllocateCall)``), resyncs (``(app, AMResync)``) after an RM
        restart, the applications whose AM unregistered (``done``), and,
        when asked, every application it ever finished (``ended``). The
        reply: each AM's answer, the AMs it must start, and this RM's epoch."""
        if not self.active():
            return STANDBY
        core = self.core
        assert core is not None
        if core.recovering and not self.restored:
            return {"wait": True, "epoch": self.epoch}
        now = self.rt.now()
        if ended is not None:
            self.ended.update(ended)
            for app in ended:
                core.finish_app(app, now)
                if app not in self.scheduled:  # its AM saw every task finish: it was scheduled
                    self._scheduled(app)
                    self.log.emit(JOB_SCHEDULED, job_id=app, scheduler=NAME, attempts=0, recovered=True)
            self.synced_pools.add(pool)
        replies: dict[int, Any] = {}
        for app in done:
            core.finish_app(app, now)
        # Thousands of AMs' calls (every one resyncing after a take-over)
        # are a long pass: cut into slices; deposed at a cut, this RM
        # answers as a standby (the pool resyncs with whoever leads).
        slices = Slices(self.rt)
        for app, r in resyncs:
            if slices.due() and not await self._cut(slices, core):
                return STANDBY
            replies[app] = core.recover_app(app, list(r.asks), attempt=r.attempt, containers=r.containers,
                                            finished=r.finished, now=now)
        for app, call in calls:
            if slices.due() and not await self._cut(slices, core):
                return STANDBY
            replies[app] = core.am_allocate(app, call.asks, call.releases, call.starts, now, attempt=call.attempt)
        start = self.outbox.pop(pool, [])
        self._drain()
        if ended is not None:
            self._maybe_settle()
        want = self.rebuilt and pool not in self.synced_pools
        return {"epoch": self.epoch, "replies": replies, "start": start, "want_ended": want}

    async def _cut(self, slices: Slices, core: RMState) -> bool:
        """End a slice of a long pass: its events out, the loop handed back;
        False if this RM lost ``core`` (its books) meanwhile."""
        self._drain()
        await slices.cut()
        return self.core is core

    async def _expiry_loop(self) -> None:
        every = min(self.spec.am_expiry / 4, 5.0)
        last = self.rt.now()
        while await self.nap(every):
            now = self.rt.now()
            # Woken late: this RM was frozen (a pause) or starved, and the
            # AMs' calls waited on it meanwhile; their silence then is its
            # own, and counted against them it would expire live AMs en
            # masse at the thaw.
            late, last = now - last - every, now
            if self.active():
                core = self.core
                assert core is not None
                core.deaf(late, now)
                if core.expire_ams(now, self.spec.am_expiry):
                    self._drain()

    async def _preemption_loop(self) -> None:
        while await self.nap(self.spec.monitor_interval):
            if self.active() and self.core.preempt(self.rt.now()):  # type: ignore[union-attr]
                self._drain()

    async def _global_loop(self) -> None:
        while await self.nap_wall(self.flush_interval):
            if self.active() and self.core.schedule(self.rt.now()):  # type: ignore[union-attr]
                self._drain()

    # ------------------------------------------------------------ samples and the end

    async def _sample_loop(self) -> None:
        self._sample()
        while await self.nap(self.cfg.sample_interval):
            self._sample()

    def _sample(self) -> None:
        core = self.core
        if core is None or not self.active():
            return  # a standby's books are empty: the active RM samples the cell
        self.log.emit(CELL_SAMPLE, **sample_fields(core.utilization()), version=self.handed)
        self.log.emit(QUEUE_USAGE, queues=[
            {"queue": q.queue, "used": list(q.used), "pending": list(q.pending), "entitlement": list(q.entitlement),
             "preemptions": q.preemptions} for q in core.queue_usage()])

    async def on_stop(self) -> dict:
        core = self.core
        if core is not None:
            # The books at this stop (a single RM is stopped twice: as the
            # jobs' route, then after the hosts; the last word counts): what
            # every open application has asked for and holds, for the run's
            # request accounting (tests/test_run_yarn.py).
            self._drain()
            self.log.emit(YARN_BOOKS, rm=self.name, apps=core.open_books())
        if self.deposed:
            # It stepped down with these and no successor said their fate
            # (nor its own rebuilt books yet, if it leads again: a failover
            # just before the end).
            for app, left in sorted(self.deposed.items()):
                if core is None or app not in core.apps:
                    self.log.emit(JOB_PENDING, job_id=app, scheduler=NAME, unplaced=left, deposed=True)
            self.deposed = {}
        if core is None or self._stopped_once:  # a standby; or stopped as a routed actor and again as a core one
            return {}
        self._stopped_once = True
        self._sample()
        for app, book in core.apps.items():
            if app in self.scheduled or (book.state in TERMINAL and book.state != APP_FAILED):
                continue
            if book.state == APP_FAILED:
                continue  # abandoned (logged when it failed)
            left = len(book.tasks) - len(core.scheduled_tasks(app))
            self.log.emit(JOB_PENDING, job_id=app, scheduler=NAME, unplaced=left, attempts=book.attempt)
        self._drain()
        self.final_fates()
        return {"apps": len(core.apps), "scheduled": len(self.scheduled), "recovering": core.recovering}
