"""The ResourceManager's restart and high-availability half (a base of
``rm.ResourceManager``): being the active RM or a standby, taking over and
stepping down, the RM state store, and the work-preserving restart's
calls (the submitter's applications back, NodeManagers re-registering or
rejoining). Kept apart from the scheduling half because it is its own
protocol, and the RM shell grew past what one module should hold.

Every decision is still the core's (``schedulers.archs.yarn.rm_state``,
``rm_recovery``); this keeps the order of the calls and what a standby
answers."""
from __future__ import annotations

import collections
from typing import Any

from schedlab.actors.archs.yarn.store_link import StoreLink
from schedlab.actors.common.head_endpoint import STANDBY
from schedlab.actors.common.host_watch import silence_span
from schedlab.actors.common.shell import ActorShell
from schedlab.actors.common.slices import Slices
from schedlab.actors.common.submitter import NAME as SUBMITTER
from schedlab.actors.coordinator.lease import holds_lease
from schedlab.schedulers.archs.yarn.apps import app_record
from schedlab.schedulers.archs.yarn.events import RM_ELECTED, RM_STEPPED_DOWN
from schedlab.schedulers.archs.yarn.messages import RunningReport
from schedlab.schedulers.archs.yarn.rm_books import APP_FAILED, APP_FINISHED, TERMINAL
from schedlab.schedulers.archs.yarn.rm_state import RMState
from schedlab.schedulers.archs.yarn.spec import RM_NAME
from schedlab.schedulers.archs.yarn.state_store import StoredApp
from schedlab.schedulers.events.shared import COMMITS_DROPPED, JOBS_FINAL, JOB_ABANDONED, NODE_REGISTERED
from schedlab.schedulers.model.jobs import Job

NAME = RM_NAME  # the decider and the route jobs come by, whichever RM is active


class RestartingRM(ActorShell):
    """What the restart half needs of the ResourceManager (set there)."""

    cfg: Any
    spec: Any
    n: int
    hosts: int
    core: RMState | None
    store: StoreLink | None
    watch: Any
    lease_until: float
    lease_epoch: int
    lapsed: bool
    rebuilt: bool
    restored: bool
    ended: set[int]
    scheduled: set[int]
    tasks_of: dict[int, int]
    registered_hosts: set[int]
    down: set[int]
    synced_pools: set[int]
    started_at: float
    unrecovered: list[dict] | None
    deposed: dict[int, int]

    def _incarnate(self, rebuilt: bool) -> None:
        raise NotImplementedError

    def _drain(self) -> None:
        raise NotImplementedError

    def _admit(self, jobs: list[dict]) -> None:
        raise NotImplementedError

    def _machines(self, host: int) -> range:
        raise NotImplementedError

    def _check_scheduled(self, apps: Any) -> None:
        raise NotImplementedError

    def active(self) -> bool:
        return self.core is not None and holds_lease(self)

    def _heard(self, host: int) -> tuple[RMState, float] | None:
        """A NodeManager's call: None if this RM is not the active one (the
        caller is told it is a standby), else its core and the time, the
        host heard."""
        if not self.active():
            return None
        assert self.core is not None
        now = self.rt.now()
        self.watch.heard(host, now)
        return self.core, now

    def _take_over(self, epoch: int) -> None:
        """Won the lease with a new epoch: rebuild (fresh at epoch 1) and
        take the submitter's route."""
        if self.core is not None:  # our own lease lapsed and was won again: those books are stale
            self._step_down()
        self.lease_epoch = epoch
        # Leading again, the new books will say every fate, but only once
        # they are rebuilt (the store read, the submitter's applications
        # restored: asynchronous); a run that ends before would leave what
        # this RM held when deposed unaccounted, so ``deposed`` stays until
        # the stop, which reports those the books do not know.
        self._incarnate(rebuilt=epoch > 1)
        assert self.store is not None
        self.store.begin(epoch, fresh=epoch == 1)
        self.unrecovered = None
        if epoch > 1:
            self.spawn_loop(self._load_store(epoch))
        self.log.emit(RM_ELECTED, rm=self.name, epoch=epoch, rebuilt=epoch > 1)
        me, submitter = self.rt.lookup(self.name), self.rt.lookup(SUBMITTER)
        if me is not None and submitter is not None:
            # The submitter sends the RM's jobs here from now on, and hands
            # back every job routed to the RM (``recover``), as it does to a
            # restarted RM.
            self.rt.send(submitter, "reroute", NAME, me, True, self.name)

    def _step_down(self) -> None:
        """Lost the lease: hand out nothing more. Launches no node pulled
        are dropped (the next active RM learns what runs from the nodes,
        and the AMs ask again); everything else goes with the books."""
        core = self.core
        if core is None:
            return
        self._drain()
        dropped = []
        for m in range(self.n):
            dropped += [[app, task, m] for app, task in core.node_contents(m)[1]]
        if dropped:
            # The invariant checker traces each commit to its launch or to this.
            self.log.emit(COMMITS_DROPPED, holder=self.name, epoch=self.lease_epoch, tasks=dropped)
        self.log.emit(RM_STEPPED_DOWN, rm=self.name, epoch=self.lease_epoch)
        # Its applications not yet fully started: reported pending at the
        # end unless this RM leads again (a successor rebuilds them from the
        # submitter and says their fate itself; a fate it says outranks a
        # pending). With no successor before the run ended, nobody else would.
        # (Those it was deposed with before and has not rebuilt yet stay.)
        self.deposed = {**{app: left for app, left in self.deposed.items() if app not in core.apps},
                        **{app: len(book.tasks) - len(core.scheduled_tasks(app)) for app, book in core.apps.items()
                           if app not in self.scheduled and book.state not in TERMINAL}}
        self.core = None
        assert self.store is not None
        self.store.end()

    async def status(self) -> dict:
        return {"rm": self.name, "index": self.cfg.index, "leading": self.active(), "epoch": self.lease_epoch}

    async def _store_loop(self) -> None:
        assert self.store is not None
        while await self.nap_wall(self.flush_interval):
            if self.active():
                await self.store.write()

    async def _load_store(self, epoch: int) -> None:
        """A standby that took over reads the store before it restores the
        submitter's applications (held until then)."""
        assert self.store is not None
        while self.lease_epoch == epoch and self.core is not None:
            got = await self.store.load(epoch)
            if got is False:
                return  # deposed meanwhile
            if got:
                jobs, self.unrecovered = self.unrecovered, None
                if jobs is not None:
                    await self.recover(jobs)
                return
            if not await self.nap_wall(self.flush_interval):
                return

    def _ended_before(self, app: int, rec: StoredApp) -> None:
        """An application the store says ended under an earlier RM: not run
        again. Its job's fate, whose event may have died with that RM, is
        said once at the end of the run (``final_fates``), not at every
        take-over: a soak takes over hundreds of times."""
        self.ended.add(app)
        if rec.scheduled or rec.final == APP_FINISHED:
            self.scheduled.add(app)

    def final_fates(self) -> None:
        """The active RM at the end of the run: every job the store knows
        fully scheduled (``jobs_final``, the generic record a replicated
        control plane's last leader logs), and every application it knows
        failed before all its tasks started (abandoned)."""
        if self.store is None or self.store.mirror is None:
            return
        apps = self.store.mirror.apps
        self.log.emit(JOBS_FINAL, scheduled=sorted(a for a, r in apps.items() if r.scheduled or r.final == APP_FINISHED),
                      queued=[])
        for app, rec in sorted(apps.items()):
            if rec.final is not None and rec.final != APP_FINISHED and not rec.scheduled and app not in self.scheduled:
                reason = "max_am_attempts" if rec.final == APP_FAILED else str(rec.final)
                self.log.emit(JOB_ABANDONED, job_id=app, scheduler=NAME, reason=reason, recovered=True)

    async def recover(self, jobs: list[dict]) -> None:
        """A restarted RM's applications: every job the submitter routed to
        its predecessors, restored with their attempt unknown (the AMs'
        resync tells it) and their AM not known to have run (an application
        no node reports an AM container for asks for one again, uncounted).
        The first active RM of a standby set, fresh, admits them.

        Thousands of applications are a long pass: cut into slices
        (``Slices``); should this RM lose its books at a cut, it stops
        there (whoever leads next gets every job from the submitter)."""
        core = self.core
        if core is None:
            return  # not active (any more): whoever is recovers them
        if not core.recovering:
            slices = Slices(self.rt)
            done = 0
            for i in range(len(jobs) + 1):
                if i == len(jobs) or slices.due():
                    self._admit(jobs[done:i])
                    done = i
                    if i == len(jobs):
                        return
                    await slices.cut()
                    if self.core is not core:
                        return
            return
        if self.store is not None and self.store.mirror is None:
            self.unrecovered = jobs  # restored once the store is read
            return
        await self._recover(jobs)

    async def _recover(self, jobs: list[dict]) -> None:
        """Restore each application with what the store kept of it (its
        attempt, counted failures, whether its AM ran; one that ended is
        not run again), or, with no store (a single RM), with its attempt
        unknown and its AM not known to have run."""
        core = self.core
        assert core is not None
        now = self.rt.now()
        slices = Slices(self.rt)
        for j in jobs:
            if slices.due():
                self._drain()
                await slices.cut()
                if self.core is not core:
                    return
                now = self.rt.now()
            job = Job.from_wire(j)
            self.tasks_of[job.job_id] = job.tasks
            if job.job_id in core.apps or job.job_id in self.ended:
                continue
            rec = None if self.store is None else self.store.record(job.job_id)
            if rec is not None and rec.final is not None:
                self._ended_before(job.job_id, rec)
                continue
            record = app_record(self.spec, job, self.n, self.cfg.seed, float(j["submit_time"]))
            if rec is None:
                core.restore_app(record, now, attempt=None, am_launched=False)
            else:
                core.restore_app(record, now, attempt=rec.attempt, failures=rec.failures, am_launched=rec.am_launched)
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

    async def register_node(self, host: int, report: dict) -> dict | None:
        """A NodeManager re-registering with a restarted RM: what runs on
        each machine (YARN containers, by the container id in their owner;
        anything else is foreign load) and what finished lately."""
        heard = self._heard(host)
        if heard is None:
            return STANDBY
        core, now = heard
        rows: dict[int, list] = collections.defaultdict(list)
        for row in report["tasks"]:
            rows[int(row[2])].append(row)
        finished = [(int(j), int(t)) for j, t in report["finished"]]
        slices = Slices(self.rt)
        for i, m in enumerate(self._machines(host)):
            if slices.due():  # a thousand machines' reports: a long pass
                self._drain()
                await slices.cut()
                if self.core is not core:
                    return STANDBY  # deposed meanwhile: the host registers with whoever leads
                now = self.rt.now()
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
        self.log.emit(NODE_REGISTERED, host=host, tasks=len(report["tasks"]))
        self._drain()
        self._maybe_settle()
        return None

    async def rejoin(self, host: int) -> list:
        """A restarted NodeManager's first word: what it ran is lost; it is
        back at once, empty."""
        heard = self._heard(host)
        if heard is None:
            return STANDBY  # type: ignore[return-value]
        core, now = heard
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
