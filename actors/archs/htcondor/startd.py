"""The startds of one machine host's machines, as one actor (``startd-<h>``),
and the endpoint the machine host polls it through.

Each slot is a ``schedulers.archs.htcondor.claims.Startd`` state machine.
The actor answers the negotiator's match notifications and the schedds'
claim requests and activations directly (the schedd claims the startd
itself, as in HTCondor), pushes its slots' ads to the collector every
``update_interval``, and hands the jobs it starts to its machine host,
which pulls them once per batch interval (``exchange``), like every
machine host here. The host's polls also drive the startd's clock: job
exits, the desktop owner policy (suspend, vacate after the grace, resume),
and match / idle-claim timeouts are handled at each poll.

Suspending a job is modelled by stopping its task on the host (it holds no
cpu while suspended) and starting it again with what is left of its run on
resume; a vacated job goes back to its schedd's queue, its run all badput.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.actors.common.events import report_held_at_end
from schedlab.actors.common.per_host_endpoint import PerHostEndpoint
from schedlab.actors.common.shell import ActorShell
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.htcondor.claims import BUSY, CLAIMED, MATCHED, PREEMPTING, SUSPENDED, Startd
from schedlab.schedulers.archs.htcondor.events import JOB_EXITED, JOB_RESUMED, JOB_SUSPENDED, JOB_VACATED, STARTD_COUNTS
from schedlab.schedulers.archs.htcondor.pool import OwnerSchedule, reserved_slots, split_key
from schedlab.schedulers.archs.htcondor.spec import COLLECTOR, startd_name
from schedlab.schedulers.events.shared import TASKS_LOST
from schedlab.schedulers.model.wire import unpack_release, unpack_release_keys

CALL_WALL_S = 5.0  # a peer that does not answer this long (wall) is taken as gone


@dataclass(frozen=True)
class SlotSpec:
    name: str
    machine: int
    ad: dict


@dataclass(frozen=True)
class StartdConfig:
    host: int
    machines: tuple[int, ...]
    capacity: np.ndarray  # [machines of this host, R]
    slots: tuple[tuple[SlotSpec, ...], ...]  # per machine of this host
    owners: tuple[tuple[float, float], ...]  # per machine: (mean present s, mean away s); (0, 0): no owner
    prefill: tuple[tuple[tuple[int, int, tuple[float, ...]], ...], ...]  # per machine: standing tasks
    seed: int
    suspend_grace: float
    match_timeout: float
    update_interval: float


@dataclass
class Run:
    """A job a slot runs (or holds suspended) for a schedd."""

    key: str
    job_id: int
    task: int
    machine: int
    request: list[float]
    duration: float  # its whole run
    schedd: str
    claim_id: str
    started: float


@dataclass
class _Slot:
    spec: SlotSpec
    core: Startd
    schedd: str | None = None  # the claim's holder
    since: float = 0.0  # entered Matched / Claimed-Idle
    run: Run | None = None
    held: bool = False  # taken by standing (non-Condor) tasks: out of the pool


class StartdService(ActorShell):
    def __init__(self, rt: Runtime, cfg: StartdConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, startd_name(cfg.host), metrics, flush_interval)
        self.cfg = cfg
        self.slots: dict[str, _Slot] = {}
        self.by_machine: dict[int, list[str]] = {}
        # Slots whose state runs on a clock (Matched: its match times out;
        # Preempting; Suspended: its owner may stay), by slot order: the
        # per-poll checks visit these, not every slot of the host.
        self.ticking: dict[str, None] = {}
        self.dirty: dict[str, None] = {}  # slots whose ad changed since the collector's last update
        self.order: dict[str, int] = {}
        for m, specs in zip(cfg.machines, cfg.slots):
            self.by_machine[m] = [s.name for s in specs]
            for s in specs:
                self.order[s.name] = len(self.order)
                self.slots[s.name] = _Slot(s, Startd(s.name, s.ad, suspend_grace=cfg.suspend_grace, on_change=self._changed))
        self.owners = {m: OwnerSchedule.for_machine(cfg.seed, m, p, a) for m, (p, a) in zip(cfg.machines, cfg.owners)}
        self.owned = [(m, sched) for m, sched in self.owners.items() if sched is not None]
        self.standing: dict[int, dict[tuple[int, int], np.ndarray]] = {
            m: {(j, t): np.asarray(r, dtype=np.float64) for j, t, r in tasks} for m, tasks in zip(cfg.machines, cfg.prefill)}
        self.by_key: dict[tuple[int, int], str] = {}  # task on the host -> slot
        self.outbox: list[list] = []  # launches for the host's next poll
        self.kills: list[list[int]] = []
        self.finished: dict[str, set[str]] = {}  # schedd -> job keys that exited here (its job_queue.log's completions)
        self.collector = None
        self.counts = {"suspended": 0, "vacated": 0, "resumed": 0, "owner_returns": 0, "stale_notifications": 0}
        for m in cfg.machines:
            self._hold(m)

    # ------------------------------------------------------------------ helpers

    def _hold(self, m: int) -> None:
        """Slots the machine's standing tasks take out of the pool
        (``reserved_slots``); released as those tasks end."""
        idx = self.cfg.machines.index(m)
        held = sum(self.standing[m].values(), np.zeros(self.cfg.capacity.shape[1]))
        names = self.by_machine[m]
        reserved = set(reserved_slots(held, self.cfg.capacity[idx], len(names)))
        for i, name in enumerate(names):
            s = self.slots[name]
            want = i in reserved
            if want and not s.held and s.core.state in ("Unclaimed", "Owner"):
                s.held = True
                self.dirty[name] = None
            elif not want and s.held:
                s.held = False
                self.dirty[name] = None

    async def _call(self, name: str, method: str, *args: Any) -> Any:
        handle = self.rt.lookup(name)
        if handle is None:
            raise ConnectionError(f"{name} is gone")
        return await asyncio.wait_for(self.rt.call(handle, method, *args), self.rt.wall(CALL_WALL_S * self.rt.scale))

    def _launch(self, s: _Slot, duration: float) -> None:
        r = s.run
        assert r is not None
        self.by_key[(r.job_id, r.task)] = s.spec.name
        self.outbox.append([r.job_id, r.task, r.machine, list(r.request), duration, self.rt.now(), r.schedd])

    def _stop_task(self, s: _Slot) -> None:
        r = s.run
        if r is None:
            return
        if self.by_key.pop((r.job_id, r.task), None) is not None:
            # Still queued (not pulled yet): withdraw it; else stop it on the host.
            queued = [ln for ln in self.outbox if ln[0] == r.job_id and ln[1] == r.task]
            if queued:
                self.outbox = [ln for ln in self.outbox if not (ln[0] == r.job_id and ln[1] == r.task)]
                # Started and stopped before its host pulled it: it never ran there.
                self.log.emit(TASKS_LOST, framework=self.name, reason="withdrawn", tasks=[[r.job_id, r.task]],
                              requeued_jobs=[])
            else:
                self.kills.append([r.job_id, r.task])

    # ------------------------------------------------------------ the machine host

    async def exchange(self, host: int, finished: bytes) -> Any:
        now = self.rt.now()
        if finished:
            machines, requests = unpack_release(finished)
            for (job, task, killed), m, _req in zip(unpack_release_keys(finished), machines.tolist(), requests):
                if job < 0:
                    if self.standing.get(int(m), {}).pop((job, task), None) is not None:
                        self._hold(int(m))
                    continue
                if killed:
                    continue  # we stopped it (suspend or vacate)
                name = self.by_key.pop((job, task), None)
                if name is not None:
                    self._exited(self.slots[name], now)
        self._owners(now)
        self._timeouts(now)
        launches, self.outbox = self.outbox, []
        kills, self.kills = self.kills, []
        return (launches, kills) if kills else launches

    async def rejoin(self, host: int) -> list:
        """The host restarted: what ran there died with it. Every job it ran
        goes back to its schedd (as a vacate: the run is badput); queued
        launches were never pulled; the slots start over Unclaimed."""
        lost: list[list] = []
        unpulled: list[list] = []
        queued = {(ln[0], ln[1]) for ln in self.outbox}
        now = self.rt.now()
        for s in self.slots.values():
            r = s.run
            if r is not None:
                (unpulled if (r.job_id, r.task) in queued else lost).append([r.job_id, r.task])
                ran = s.core.ran + (now - s.core.busy_since if s.core.busy_since is not None else 0.0)
                self.log.emit(JOB_VACATED, slot=s.spec.name, key=r.key, schedd=r.schedd, ran=round(ran, 6), reason="host_lost")
                self._tell_vacated(r, ran)
            owner = s.core.owner_present
            self.ticking.pop(s.spec.name, None)
            self.dirty[s.spec.name] = None  # held or not, it is in the pool again
            s.core = Startd(s.spec.name, s.spec.ad, suspend_grace=self.cfg.suspend_grace, on_change=self._changed)
            if owner:
                s.core.owner_returns(now)
            s.run, s.schedd, s.held = None, None, False
        self.outbox, self.kills, self.by_key = [], [], {}
        for m in self.standing:
            self.standing[m] = {}  # a restarted host comes back empty
        return [lost, unpulled]

    def _exited(self, s: _Slot, now: float) -> None:
        r = s.run
        ran = s.core.job_exited(now)
        s.run = None
        if r is None or ran is None:
            return
        self.finished.setdefault(r.schedd, set()).add(r.key)
        s.since = now
        self.log.emit(JOB_EXITED, slot=s.spec.name, key=r.key, schedd=r.schedd, ran=round(ran, 6))
        self.spawn_loop(self._after_exit(s, r, ran))

    async def _after_exit(self, s: _Slot, r: Run, ran: float) -> None:
        """Tell the schedd; it reuses the claim for its user's next job or
        releases it (a schedd that does not answer: released)."""
        try:
            nxt = await self._call(r.schedd, "job_exited", r.key, r.claim_id, ran)
        except Exception:
            nxt = None
        if s.core.claim_id != r.claim_id:
            if nxt is not None:  # the claim went meanwhile (its owner came back)
                self._claim_gone(r.schedd, r.claim_id, "")
            return
        if nxt is None:
            s.core.release(self.rt.now())
            s.schedd = None
        # Else the schedd holds the claim for its user's next job, which it
        # activates when its shadow is up.

    def _start(self, s: _Slot, a: dict) -> bool:
        now = self.rt.now()
        if not s.core.activate(a["claim_id"], a["key"], a["job_ad"], now):
            self._claim_gone(s.schedd or "", a["claim_id"], a["key"])
            return False
        job, task = split_key(a["key"])
        s.run = Run(a["key"], job, task, s.spec.machine, list(a["request"]), float(a["duration"]), s.schedd or "",
                    a["claim_id"], now)
        self._launch(s, float(a["duration"]))
        return True

    def _claim_gone(self, schedd: str, claim_id: str, key: str) -> None:
        h = self.rt.lookup(schedd)
        if h is not None:
            self.rt.send(h, "claim_lost", claim_id, key)

    def _tell_vacated(self, r: Run, ran: float) -> None:
        h = self.rt.lookup(r.schedd)
        if h is not None:
            self.rt.send(h, "vacated", r.claim_id, r.key, ran)

    # ---------------------------------------------------------------- owners

    def _changed(self, core: Startd) -> None:
        self.dirty[core.name] = None
        if core.state in (MATCHED, PREEMPTING) or core.activity == SUSPENDED:
            self.ticking[core.name] = None
        else:
            self.ticking.pop(core.name, None)

    def _ticking(self) -> list[_Slot]:
        """The slots whose state runs on a clock, in slot order (the order a
        scan of every slot visited them in)."""
        return [self.slots[n] for n in sorted(self.ticking, key=self.order.__getitem__)]

    def _owners(self, now: float) -> None:
        for m, sched in self.owned:
            for _at, present in sched.due(now):
                for name in self.by_machine[m]:
                    s = self.slots[name]
                    if present:
                        self._owner_returns(s, now)
                    else:
                        self._owner_leaves(s, now)
        for s in self._ticking():
            if s.core.activity == SUSPENDED:
                v = s.core.owner_still_there(now)
                if v is not None:
                    self._vacated(s, v.ran, now)
            if s.core.state == PREEMPTING:
                s.core.vacate_done(now)

    def _owner_returns(self, s: _Slot, now: float) -> None:
        self.counts["owner_returns"] += 1
        r, cid = s.run, s.core.claim_id
        what = s.core.owner_returns(now)
        if what == "suspended" and r is not None:
            self._stop_task(s)
            self.counts["suspended"] += 1
            self.log.emit(JOB_SUSPENDED, slot=s.spec.name, key=r.key, schedd=r.schedd)
        elif what == "claim lost":
            if s.schedd is not None and s.run is None:
                h = self.rt.lookup(s.schedd)
                if h is not None:
                    self.rt.send(h, "claim_lost", str(cid or ""), "")
            s.schedd = None

    def _owner_leaves(self, s: _Slot, now: float) -> None:
        was_suspended = s.core.activity == SUSPENDED
        v = s.core.owner_leaves(now)
        if v is not None:
            self._vacated(s, v.ran, now)
            s.core.vacate_done(now)
        elif was_suspended and s.core.activity == BUSY and s.run is not None:
            left = max(s.run.duration - s.core.ran, 1e-3)
            self.counts["resumed"] += 1
            self.log.emit(JOB_RESUMED, slot=s.spec.name, key=s.run.key, left=round(left, 6))
            self._launch(s, left)

    def _vacated(self, s: _Slot, ran: float, now: float) -> None:
        r = s.run
        s.run, s.schedd = None, None
        if r is None:
            return
        self.by_key.pop((r.job_id, r.task), None)
        self.counts["vacated"] += 1
        self.log.emit(JOB_VACATED, slot=s.spec.name, key=r.key, schedd=r.schedd, ran=round(ran, 6))
        self._tell_vacated(r, ran)

    def _timeouts(self, now: float) -> None:
        """A match nobody claimed goes back to Unclaimed after
        ``match_timeout`` (its schedd died or never got it). An idle claim
        stays its schedd's (a slow schedd's shadows queue; HTCondor's claim
        keepalives): a dead schedd's claims are released when a call to it
        fails or when its successor reconnects (``claims_of``)."""
        for s in self._ticking():
            if s.core.state == MATCHED and now - s.since > self.cfg.match_timeout:
                s.core.release(now)
                s.schedd = None

    # ---------------------------------------------------------- the negotiator

    async def matched(self, pairs: list[tuple[str, str]]) -> int:
        """The negotiator's match notifications; returns how many it ignored
        (the slot changed since its ad: the claim will be refused as stale)."""
        now = self.rt.now()
        ignored = 0
        for name, match_id in pairs:
            s = self.slots.get(name)
            if s is None or s.held or not s.core.matched(match_id, now):
                ignored += 1
                continue
            s.since = now
        self.counts["stale_notifications"] += ignored
        return ignored

    # -------------------------------------------------------------- schedds

    async def request_claim(self, slot: str, match_id: str, schedd: str, user: str, job_ad: dict) -> tuple:
        s = self.slots[slot]
        reply = s.core.request_claim(match_id, schedd, user, job_ad, self.rt.now())
        if reply.accepted:
            s.schedd, s.since = schedd, self.rt.now()
        return reply.accepted, reply.reason, reply.claim_id

    async def activate(self, slot: str, a: dict) -> bool:
        return self._start(self.slots[slot], a)

    async def release(self, slot: str, ident: str) -> bool:
        s = self.slots[slot]
        if ident not in (s.core.claim_id, s.core.match_id):
            return False
        ok = s.core.release(self.rt.now())
        if ok:
            s.schedd = None
        return ok

    async def claims_of(self, schedd: str) -> dict:
        """A restarted schedd reconnecting: the jobs this startd runs for it
        (its shadows come back), the ones that exited here, and its idle
        claims are released (its predecessor's, of no use now)."""
        now = self.rt.now()
        running = []
        for s in self.slots.values():
            if s.schedd != schedd:
                continue
            if s.run is not None:
                running.append([s.run.key, s.run.claim_id, s.spec.name, s.core.user, dict(s.spec.ad), s.run.started])
            elif s.core.release(now):
                s.schedd = None
        return {"running": running, "finished": sorted(self.finished.get(schedd, ()))}

    # -------------------------------------------------------------- the collector

    def _ad(self, s: _Slot) -> tuple:
        c = s.core
        return (s.spec.name, c.state, s.spec.ad, c.job_ad if c.state == CLAIMED else None, c.user)

    def ads(self, full: bool) -> tuple[list, list[float], list[str] | None]:
        """(slot ads, what the machines use, slots gone from the pool): every
        slot in the pool as (name, state, ad, current job ad, user) and gone
        None when ``full``, else only the slots changed since the last update
        (``dirty``) and those of them now out of the pool. Use counts running
        jobs and standing tasks."""
        used = np.zeros(self.cfg.capacity.shape[1])
        for tasks in self.standing.values():
            for r in tasks.values():
                used += r
        for name in self.by_key.values():
            s = self.slots[name]
            if s.run is not None and s.core.activity == BUSY:
                used += np.asarray(s.run.request, dtype=np.float64)
        if full:
            return [self._ad(s) for s in self.slots.values() if not s.held], used.tolist(), None
        changed = [self.slots[n] for n in sorted(self.dirty, key=self.order.__getitem__)]
        return [self._ad(s) for s in changed if not s.held], used.tolist(), [s.spec.name for s in changed if s.held]

    async def _advertise_loop(self) -> None:
        full = True  # the first update, and after any that failed: the collector may be a new one
        while True:
            slots, used, gone = self.ads(full)
            dirty, self.dirty = self.dirty, {}
            try:
                full = not await self._call(COLLECTOR, "advertise", self.cfg.host, slots, used, gone)
            except Exception:
                full = True  # the collector is down: the next update finds its successor
            if full:
                self.dirty.update(dirty)
            if not await self.nap(self.cfg.update_interval):
                return

    async def on_start(self) -> None:
        self.spawn_loop(self._advertise_loop())

    async def on_stop(self) -> dict:
        report_held_at_end(self.log, self.name, self.outbox)
        self.log.emit(STARTD_COUNTS, host=self.cfg.host, **self.counts)
        return dict(self.counts)


class StartdEndpoint(PerHostEndpoint):
    """What machine host ``h`` polls: its own ``startd-<h>`` (a picklable
    recipe, bound in the host)."""
