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
applications' records: no state store, so attempts are learned from the
AMs' resync), the AM pools resync their AMs and name the applications they
finished; scheduling resumes when every host has registered or been written
off and every pool has synced (or the window, the host watch's silence
span, has passed).
"""
from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.actors.common.events import span_stamp
from schedlab.actors.common.host_watch import HOST_TIMEOUT_WALL_S, judge, report_down, silence_span, watch_for
from schedlab.actors.common.shell import ActorShell
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.yarn.apps import app_record, pool_of
from schedlab.schedulers.archs.yarn.cores import build_scheduler, rm_config
from schedlab.schedulers.archs.yarn.messages import RunningReport
from schedlab.schedulers.archs.yarn.rm_books import APP_FAILED, TERMINAL
from schedlab.schedulers.archs.yarn.rm_state import RMState
from schedlab.schedulers.archs.yarn.spec import RM_NAME, YarnSpec
from schedlab.schedulers.faults.liveness import LivenessSpec
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.model.wire import unpack_release, unpack_release_keys

NAME = RM_NAME


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


class ResourceManager(ActorShell):
    def __init__(self, rt: Runtime, cfg: RMShellConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, NAME, metrics, flush_interval)
        self.cfg = cfg
        self.spec = cfg.spec
        self.k = cfg.machines_per_host
        self.n = cfg.capacity.shape[0]
        self.hosts = -(-self.n // self.k)
        self.core: RMState | None = None
        self.watch = watch_for(self.hosts, HOST_TIMEOUT_WALL_S * rt.scale, cfg.liveness, rt.scale)
        self.down: set[int] = set()  # hosts written off, until they are heard again
        self.registered_hosts: set[int] = set(range(self.hosts)) if not cfg.restarted else set()
        self.tasks_of: dict[int, int] = {}
        self.scheduled: set[int] = set()
        self.outbox: dict[int, list] = collections.defaultdict(list)  # pool -> AMs to start
        self.epoch = 0
        self.restored = not cfg.restarted  # the submitter's jobs are back
        self.synced_pools: set[int] = set()
        self.ended: set[int] = set()  # applications their AM pools say finished
        self.started_at = 0.0
        self.handed = 0
        self._stopped_once = False

    async def start(self, epoch: float) -> None:
        if self.running:  # the driver starts it as a core actor and as a routed one
            return
        await super().start(epoch)

    async def on_start(self) -> None:
        cfg = self.cfg
        sched = build_scheduler(self.spec, cfg.capacity.copy(), cfg.rack)
        # A restarted RM's container ids start above any its predecessors
        # handed out: its epoch is the emulated second it started in.
        self.epoch = int(self.rt.now()) + 1 if cfg.restarted else 0
        self.core = RMState(sched, rm_config(self.spec), epoch=self.epoch, recovering=cfg.restarted)
        if not cfg.restarted:
            for machine, key, req in cfg.foreign:
                self.core.add_foreign(int(machine), key, req)
        self.started_at = self.rt.now()
        self.watch.grace(self.rt.now(), give_up=cfg.restarted)
        self.spawn_loop(self._watch_loop())
        self.spawn_loop(self._sample_loop())
        self.spawn_loop(self._expiry_loop())
        if self.spec.preemption:
            self.spawn_loop(self._preemption_loop())
        if self.spec.global_scheduling:
            self.spawn_loop(self._global_loop())

    # ------------------------------------------------------------ events

    def _drain(self) -> None:
        """Emit the core's events, and the generic ones they imply."""
        assert self.core is not None
        for e in self.core.take_events():
            kind = e.pop("event")
            self.log.emit(kind, **e)
            if kind == "am_launched":
                self.log.emit("job_attempt", job_id=e["app"], attempt=e["attempt"], first=True, scheduler=NAME)
            elif kind == "app_rejected":
                self.log.emit("job_rejected", job_id=e["app"], scheduler=NAME, reason=e["reason"])
            elif kind == "app_failed" and e["app"] not in self.scheduled:
                self.log.emit("job_abandoned", job_id=e["app"], scheduler=NAME, reason="max_am_attempts")

    def _check_scheduled(self, apps: Any) -> None:
        core = self.core
        assert core is not None
        for app in apps:
            if app in self.scheduled or app not in core.apps:
                continue
            if len(core.scheduled_tasks(app)) >= len(core.apps[app].tasks):
                self.scheduled.add(app)
                self.log.emit("job_scheduled", job_id=app, scheduler=NAME, attempts=core.apps[app].attempt,
                              **({"recovered": True} if self.cfg.restarted else {}))

    # ------------------------------------------------------------ jobs in

    async def submit(self, jobs: list[dict]) -> None:
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

    async def recover(self, jobs: list[dict]) -> None:
        """A restarted RM's applications: every job the submitter routed to
        its predecessors, restored with their attempt unknown (the AMs'
        resync tells it) and their AM not known to have run (an application
        no node reports an AM container for asks for one again, uncounted)."""
        core = self.core
        assert core is not None
        now = self.rt.now()
        for j in jobs:
            job = Job.from_wire(j)
            self.tasks_of[job.job_id] = job.tasks
            if job.job_id in core.apps or job.job_id in self.ended:
                continue
            core.restore_app(app_record(self.spec, job, self.n, self.cfg.seed, float(j["submit_time"])), now,
                             attempt=None, am_launched=False)
        self.restored = True
        self._drain()
        self._maybe_settle()

    def _maybe_settle(self, force: bool = False) -> None:
        core = self.core
        assert core is not None
        if not core.recovering:
            return
        window = silence_span(self.watch)
        waited = self.rt.now() - self.started_at
        hosts_known = len(self.registered_hosts | self.down) >= self.hosts
        pools_known = len(self.synced_pools) >= self.spec.am_pools or waited >= window
        if not force and not (self.restored and hosts_known and pools_known):
            return
        core.settle_recovery(self.rt.now())
        self._drain()
        self._check_scheduled(list(core.apps))

    # ------------------------------------------------------------ NodeManagers

    def _machines(self, host: int) -> range:
        return range(host * self.k, min((host + 1) * self.k, self.n))

    async def exchange(self, host: int, finished: bytes) -> Any:
        """A NodeManager heartbeat for each machine of the host: kills and
        launches for all of them in one reply."""
        core = self.core
        assert core is not None
        now = self.rt.now()
        self.watch.heard(host, now)
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
        for m in self._machines(host):
            r = core.node_heartbeat(m, by_machine.get(m, []), now)
            if r.resync:
                self._drain()
                return {"register": True}
            launches += r.launches
            kills += r.kills
            reset |= r.reset
            am_started += r.am_started
        if reset:
            self.down.discard(host)
            self.registered_hosts.add(host)
        self._handed_out(launches, am_started, now)
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
            self.log.emit("txn", scheduler=NAME, job_id=app, claims=len(placed), committed=len(placed), conflicted=0,
                          think=0.0, rtt_ms=0.0, placed=placed, outbox=NAME, **span_stamp(now, now))
        for app, attempt in am_started:
            self.outbox[pool_of(app, self.spec.am_pools)].append(
                (core.apps[app].record, attempt, core.finished_tasks(app)))
        self._check_scheduled(by_app)

    async def register_node(self, host: int, report: dict) -> None:
        """A NodeManager re-registering with a restarted RM: what runs on
        each machine (YARN containers, by the container id in their owner;
        anything else is foreign load) and what finished lately."""
        core = self.core
        assert core is not None
        now = self.rt.now()
        self.watch.heard(host, now)
        rows: dict[int, list] = collections.defaultdict(list)
        for row in report["tasks"]:
            rows[int(row[2])].append(row)
        finished = [(int(j), int(t)) for j, t in report["finished"]]
        for i, m in enumerate(self._machines(host)):
            running, foreign = [], []
            for row in rows.get(m, []):
                rep = RunningReport.from_host_row(row)
                if rep is None:
                    foreign.append(((int(row[0]), int(row[1])), [float(x) for x in row[3]]))
                else:
                    running.append(rep)
            core.recover_node(m, running, now, finished=finished if i == 0 else (), foreign=foreign)
        self.registered_hosts.add(host)
        self.down.discard(host)
        self.log.emit("node_registered", host=host, tasks=len(report["tasks"]))
        self._drain()
        self._maybe_settle()

    async def rejoin(self, host: int) -> list:
        """A restarted NodeManager's first word: what it ran is lost; it is
        back at once, empty."""
        core = self.core
        assert core is not None
        now = self.rt.now()
        self.watch.heard(host, now)
        lost: list[list[int]] = []
        unpulled: list[list[int]] = []
        for m in self._machines(host):
            s, q = core.node_contents(m)
            lost += s
            unpulled += q
            core.recover_node(m, [], now)
        self.registered_hosts.add(host)
        self.down.discard(host)
        self._drain()
        return [lost, unpulled]

    async def _watch_loop(self) -> None:
        core = self.core
        assert core is not None
        while await self.nap(self.watch.timeout / 4):
            now = self.rt.now()
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
                report_down(self.log, silent, lost, unpulled, by=NAME, watch=self.watch)
                self._drain()
            self._maybe_settle(force=now - self.started_at >= 3 * silence_span(self.watch))

    # ------------------------------------------------------------ ApplicationMasters

    async def am_heartbeat(self, pool: int, calls: list, resyncs: list, done: list[int], ended: list[int] | None) -> dict:
        """One AM pool's batched heartbeat: its AMs' allocate calls
        (``(app, AllocateCall)``), resyncs (``(app, AMResync)``) after an RM
        restart, the applications whose AM unregistered (``done``), and,
        when asked, every application it ever finished (``ended``). The
        reply: each AM's answer, the AMs it must start, and this RM's epoch."""
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
                    self.scheduled.add(app)
                    self.log.emit("job_scheduled", job_id=app, scheduler=NAME, attempts=0, recovered=True)
            self.synced_pools.add(pool)
        replies: dict[int, Any] = {}
        for app in done:
            core.finish_app(app, now)
        for app, r in resyncs:
            replies[app] = core.recover_app(app, list(r.asks), attempt=r.attempt, containers=r.containers,
                                            finished=r.finished, now=now)
        for app, call in calls:
            replies[app] = core.am_allocate(app, call.asks, call.releases, call.starts, now, attempt=call.attempt)
        start = self.outbox.pop(pool, [])
        self._drain()
        if ended is not None:
            self._maybe_settle()
        want = self.cfg.restarted and pool not in self.synced_pools
        return {"epoch": self.epoch, "replies": replies, "start": start, "want_ended": want}

    async def _expiry_loop(self) -> None:
        core = self.core
        assert core is not None
        while await self.nap(min(self.spec.am_expiry / 4, 5.0)):
            if core.expire_ams(self.rt.now(), self.spec.am_expiry):
                self._drain()

    async def _preemption_loop(self) -> None:
        core = self.core
        assert core is not None
        while await self.nap(self.spec.monitor_interval):
            if core.preempt(self.rt.now()):
                self._drain()

    async def _global_loop(self) -> None:
        core = self.core
        assert core is not None
        while await self.nap_wall(self.flush_interval):
            if core.schedule(self.rt.now()):
                self._drain()

    # ------------------------------------------------------------ samples and the end

    async def _sample_loop(self) -> None:
        self._sample()
        while await self.nap(self.cfg.sample_interval):
            self._sample()

    def _sample(self) -> None:
        core = self.core
        assert core is not None
        cpu, mem = core.utilization()
        self.log.emit("cell_sample", cpu=round(cpu, 6), mem=round(mem, 6), version=self.handed)
        self.log.emit("queue_usage", queues=[
            {"queue": q.queue, "used": list(q.used), "pending": list(q.pending), "entitlement": list(q.entitlement),
             "preemptions": q.preemptions} for q in core.queue_usage()])

    async def on_stop(self) -> dict:
        core = self.core
        if core is None or self._stopped_once:  # stopped as a routed actor and again as a core one
            return {}
        self._stopped_once = True
        self._sample()
        for app, book in core.apps.items():
            if app in self.scheduled or (book.state in TERMINAL and book.state != APP_FAILED):
                continue
            if book.state == APP_FAILED:
                continue  # abandoned (logged when it failed)
            left = len(book.tasks) - len(core.scheduled_tasks(app))
            self.log.emit("job_pending", job_id=app, scheduler=NAME, unplaced=left, attempts=book.attempt)
        self._drain()
        return {"apps": len(core.apps), "scheduled": len(self.scheduled), "recovering": core.recovering}
