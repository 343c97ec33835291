"""A Mesos master: a thin actor over the pure ``Allocator``.

Only the leader acts. With one master it leads from the start; with
standbys every master campaigns for a lease in the coordinator group
(``actors.master_lease``) and the holder leads until its lease runs out.
All of a master's state is soft: a new leader starts empty and rebuilds it
from agents and frameworks re-registering (the Mesos way), so a master's
replies carry its ``epoch`` and anything addressed to an older epoch is
refused.

Messages: agents call ``register_agent`` and ``exchange`` (finished tasks in,
launches and kills out, once per batch interval, as on Omega); frameworks
call ``register_framework``, ``respond`` (accept / hold / decline offers),
``revive`` and ``reconcile``; the master sends frameworks ``offers`` and
``status`` one message per framework per allocation round.
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.actors.common.shell import ActorShell
from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.common.host_watch import HOST_TIMEOUT_WALL_S, LivenessSpec, judge, silence_span, watch_for
from schedlab.actors.archs.mesos.link import master_name
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.model.wire import withdraw_launch
from schedlab.schedulers.archs.mesos.allocator import Allocator, Launch, OrderPolicy

NOT_LEADER = {"ok": False}


@dataclass(frozen=True)
class MasterConfig:
    capacity: np.ndarray
    machines_per_host: int
    hosts: int
    frameworks: dict[str, tuple[float, int, float]]  # actor name -> (weight, priority, guarantee)
    policy: OrderPolicy
    granularity: str
    allocation_interval: float  # emulated s
    offer_timeout: float
    revocation: bool
    starvation_timeout: float
    masters: int
    replicas: int
    lease_wall_s: float
    sample_interval: float
    liveness: LivenessSpec = LivenessSpec()


class MesosMaster(ActorShell):
    def __init__(self, rt: Runtime, index: int, cfg: MasterConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, master_name(index), metrics, flush_interval)
        self.index = index
        self.cfg = cfg
        self.alloc: Allocator | None = None
        self.epoch = 0
        self.lease_until = -math.inf
        self.leader_hint: str | None = None
        self.agents: set[int] = set()
        self.registered_fws: set[str] = set()
        self.fw_handles: dict[str, Any] = {}
        self.to_launch: dict[int, list[list]] = collections.defaultdict(list)
        self.kills: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
        self.running_updates: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
        self.lost_updates: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
        self.finished_updates: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
        self.recent_finished: set[tuple[int, int]] = set()  # reported by re-registering agents
        self.done_by_fw: dict[str, set[tuple[int, int]]] = collections.defaultdict(set)  # for a restarted framework
        scale = rt.scale
        self.watch = watch_for(cfg.hosts, HOST_TIMEOUT_WALL_S * scale, cfg.liveness, scale)
        self.written_off: set[int] = set()  # agents removed as silent: they come back empty

    # -------------------------------------------------------------- leading

    def leading(self) -> bool:
        return self.alloc is not None and self.rt.now() < self.lease_until

    def _take_over(self, epoch: int) -> None:
        """Become leader with empty soft state."""
        c = self.cfg
        self.alloc = Allocator(c.capacity, c.policy, c.granularity, c.offer_timeout)
        self.epoch = epoch
        self.agents.clear()
        self.registered_fws.clear()
        for d in (self.to_launch, self.kills, self.running_updates, self.lost_updates, self.finished_updates):
            d.clear()
        self.recent_finished.clear()
        self.done_by_fw.clear()
        self.written_off.clear()
        self.watch.grace(self.rt.now(), give_up=True)
        self.log.emit("master_elected", master=self.name, epoch=epoch)

    def _step_down(self) -> None:
        if self.alloc is not None:
            self.log.emit("master_stepped_down", master=self.name, epoch=self.epoch)
        self.alloc = None

    async def on_start(self) -> None:
        if self.cfg.masters == 1:
            # One master: it leads from the start; a restarted one is a new epoch.
            self.lease_until = math.inf
            # Epochs only need to grow across restarts: wall milliseconds do.
            self._take_over(self.rt.stamp() // 1000)
        else:
            self.coord = CoordinatorClient(self.name, self.cfg.replicas, self.rt)
            self.spawn_loop(self._campaign_loop())
        self.spawn_loop(self._allocation_loop())
        self.spawn_loop(self._sample_loop())
        self.spawn_loop(self._agent_watch_loop())

    async def _campaign_loop(self) -> None:
        lease_e = self.cfg.lease_wall_s * self.rt.scale
        while self.running:
            sent = self.rt.now()
            try:
                holder, epoch, _expires = await self.coord.submit(("campaign", self.name, sent, lease_e), deadline=self.cfg.lease_wall_s)
            except Exception:  # no coordinator leader within a lease: we cannot know we still lead
                holder, epoch = None, self.epoch
            if holder == self.name:
                # Counted from when we asked: the lease might have been granted then.
                self.lease_until = sent + lease_e
                if self.alloc is None or epoch != self.epoch:
                    self._take_over(epoch)
            else:
                self.leader_hint = holder
                if self.alloc is not None and (holder is not None or self.rt.now() >= self.lease_until):
                    self._step_down()
            if not await self.nap_wall(self.cfg.lease_wall_s / 4):
                return

    # --------------------------------------------------------------- agents

    def _machines(self, host: int) -> np.ndarray:
        k = self.cfg.machines_per_host
        return np.arange(host * k, min((host + 1) * k, self.cfg.capacity.shape[0]), dtype=np.int64)

    async def register_agent(self, owner: str, host: int, tasks: list, finished: list) -> dict:
        """``tasks``: [job, task, machine, request, framework] running there;
        ``finished``: keys of tasks that ended lately (their final status may
        have died with the old master; Mesos agents retry status updates
        until acknowledged, which this stands in for)."""
        if not self.leading():
            return NOT_LEADER
        assert self.alloc is not None
        self.watch.heard(host, self.rt.now())
        reset = host in self.written_off
        if reset:
            # Removed as silent, its tasks already given up and placed again:
            # it must come back empty (Mesos tells such an agent to shut down).
            self.written_off.discard(host)
            tasks, finished = [], []
        # What we thought ran there (or waited to launch) and the agent does
        # not report, running or finished, is gone with a previous incarnation:
        # its framework must hear it was lost, or its job never completes.
        ms = set(self._machines(host).tolist())
        reported = {(int(j), int(t)) for j, t, *_ in tasks} | {(int(j), int(t)) for j, t in finished}
        gone = [(k, v[0]) for k, v in self.alloc.tasks.items() if v[1] in ms and k not in reported]
        for key, fw in gone:
            self.lost_updates[fw].append(key)
        if gone:
            self.log.emit("tasks_gone", master=self.name, host=host, tasks=[list(k) for k, _ in gone])
        self.alloc.add_agent(self._machines(host), [((int(j), int(t)), fw, int(m), np.asarray(req, dtype=np.float64))
                                                    for j, t, m, req, fw in tasks])
        self.to_launch.pop(host, None)
        self.recent_finished.update((int(j), int(t)) for j, t in finished)
        self.agents.add(host)
        self.log.emit("agent_registered", master=self.name, epoch=self.epoch, host=host, tasks=len(tasks), reset=reset)
        return {"ok": True, "epoch": self.epoch, "reset": reset}

    async def _agent_watch_loop(self) -> None:
        """Agents that stopped polling are removed: offers on them rescinded,
        their tasks reported lost to their frameworks (which place them again)."""
        while await self.nap(self.watch.timeout / 4):
            if not self.leading():
                continue
            assert self.alloc is not None
            now = self.rt.now()
            silent = judge(self.watch, self.log, now, set(range(self.cfg.hosts)) - self.agents)
            if not silent:
                continue
            lost, unpulled, rescinded = [], [], []
            for host in silent:
                machines = self._machines(host)
                ms = set(machines.tolist())
                rescinded += [[o.offer_id, o.framework, "rescinded", round(now - o.made_at, 6), *np.round(o.resources.sum(axis=0), 6).tolist()]
                              for o in self.alloc.offers.values() if ms & set(o.machines.tolist())]
                never = {(ln[0], ln[1]) for ln in self.to_launch.pop(host, [])}
                self.kills.pop(host, None)
                owners = {k: v[0] for k, v in self.alloc.tasks.items() if v[1] in ms}
                self.alloc.remove_agent(machines)
                for key, fw in owners.items():
                    (unpulled if key in never else lost).append([key[0], key[1]])
                    self.lost_updates[fw].append(key)
                self.agents.discard(host)
                self.written_off.add(host)
            if rescinded:
                self.log.emit("offers_closed", offers=rescinded)
            # The frameworks log the lost tasks they place again (tasks_lost).
            self.log.emit("machines_down", hosts=silent, tasks_lost=len(lost), lost=lost, unpulled=len(unpulled),
                          timeout_s=silence_span(self.watch))

    async def exchange(self, owner: str, epoch: int, host: int, finished: list) -> dict:
        """Finished tasks in; the launches accepted for this agent (and any
        kills) out. Each launch is handed out once."""
        if not self.leading() or epoch != self.epoch or host not in self.agents:
            return NOT_LEADER
        assert self.alloc is not None
        self.watch.heard(host, self.rt.now())
        if finished:
            keys = []
            k = self.cfg.machines_per_host
            for j, t, killed in finished:
                key = (int(j), int(t))
                owner_fw = self.alloc.tasks.get(key)
                if owner_fw is not None and owner_fw[1] // k != host:
                    # A task this agent ran before it was given up on, placed
                    # again elsewhere since: the report is not about that copy.
                    continue
                if owner_fw is not None:
                    # A revoked task is reported once its agent killed it, not
                    # when revocation was decided: one that finished first ran.
                    (self.lost_updates if killed else self.finished_updates)[owner_fw[0]].append(key)
                    if not killed:
                        self.done_by_fw[owner_fw[0]].add(key)
                keys.append(key)
            self.alloc.release(keys)
        launches = self.to_launch.pop(host, [])
        for ln in launches:
            self.running_updates[ln[6]].append((ln[0], ln[1]))
        return {"ok": True, "launch": launches, "kill": self.kills.pop(host, [])}

    # ----------------------------------------------------------- frameworks

    def _fw_handle(self, name: str) -> Any:
        h = self.fw_handles.get(name)
        if h is None:
            h = self.fw_handles[name] = self.rt.lookup(name)
        return h

    async def register_framework(self, name: str, wants: bool) -> dict:
        """``name`` is the framework's actor name, its identity everywhere."""
        if not self.leading():
            return NOT_LEADER
        assert self.alloc is not None
        weight, priority, guarantee = self.cfg.frameworks.get(name, (1.0, 0, 0.0))
        self.alloc.add_framework(name, weight, priority, guarantee, wants, self.rt.now())
        self.registered_fws.add(name)
        # A restarted framework is a new actor under the same name: offers
        # sent to the cached handle of its predecessor would go nowhere.
        self.fw_handles.pop(name, None)
        self.log.emit("framework_registered", master=self.name, epoch=self.epoch, framework=name)
        return {"ok": True, "epoch": self.epoch}

    def _ok_for(self, name: str, epoch: int) -> bool:
        return self.leading() and epoch == self.epoch and name in self.registered_fws

    async def revive(self, name: str, epoch: int, wants: bool) -> dict:
        if not self._ok_for(name, epoch):
            return NOT_LEADER
        assert self.alloc is not None
        self.alloc.set_wants(name, wants)
        return {"ok": True}

    async def respond(self, name: str, epoch: int, sections: list, declines: list, unholds: list, wants: bool) -> dict:
        """A framework's answer to its offers, atomically per offer.

        ``sections``: [(offer_id or None, launches, holds)], a launch being
        (job, task, machine, request, duration) and a hold (machine, request);
        ``declines``: [(offer_id, refuse_seconds)]; ``unholds``: [(machine,
        request)] given back. Returns per section (ok, launched mask, held mask)."""
        if not self._ok_for(name, epoch):
            return NOT_LEADER
        a = self.alloc
        assert a is not None
        now = self.rt.now()
        closed = []
        for machine, req in unholds:
            a.unhold(name, int(machine), np.asarray(req, dtype=np.float64))
        for oid, refuse in declines:
            o = a.offers.get(oid)
            if o is not None and a.decline(oid, name, float(refuse), now):
                closed.append([oid, name, "declined", round(now - o.made_at, 6), *np.round(o.resources.sum(axis=0), 6).tolist()])
        results = []
        for oid, launches, holds in sections:
            o = a.offers.get(oid) if oid is not None else None
            res = a.accept(oid, name, [Launch((int(j), int(t)), int(m), np.asarray(r, dtype=np.float64)) for j, t, m, r, _d in launches],
                           [(int(m), np.asarray(r, dtype=np.float64)) for m, r in holds])
            if o is not None and o.framework == name:
                # An answer to an offer rescinded earlier closes nothing: the
                # rescind was its close (the framework sees its claims conflict).
                outcome = "accepted" if res.ok else "rescinded"
                closed.append([oid, name, outcome, round(now - o.made_at, 6), *np.round(o.resources.sum(axis=0), 6).tolist()])
            k = self.cfg.machines_per_host
            for (j, t, m, r, d), ok in zip(launches, res.launched.tolist()):
                if ok:
                    self.to_launch[int(m) // k].append([int(j), int(t), int(m), list(r), float(d), now, name])
            results.append((res.ok, res.launched.tolist(), res.held.tolist()))
        a.set_wants(name, wants)
        if closed:
            self.log.emit("offers_closed", offers=closed)
        return {"ok": True, "results": results}

    async def recover_tasks(self, name: str, epoch: int, job_ids: list) -> dict:
        """For a restarted framework: the tasks of these jobs that run, wait
        to launch or finished (soft state: what this master has seen)."""
        if not self._ok_for(name, epoch):
            return NOT_LEADER
        assert self.alloc is not None
        jobs = set(int(j) for j in job_ids)
        known = {k for k, v in self.alloc.tasks.items() if v[0] == name and k[0] in jobs}
        known |= {(ln[0], ln[1]) for ls in self.to_launch.values() for ln in ls if ln[6] == name and ln[0] in jobs}
        known |= {k for k in self.done_by_fw.get(name, set()) | self.recent_finished if k[0] in jobs}
        by_job: dict[int, list[int]] = collections.defaultdict(list)
        for j, t in known:
            by_job[j].append(t)
        return {"ok": True, "known": dict(by_job)}

    async def reconcile(self, name: str, epoch: int, keys: list) -> dict:
        """Which of these launched tasks does no agent know about? Answered
        only once every agent has re-registered (before that, unknown)."""
        if not self._ok_for(name, epoch):
            return NOT_LEADER
        if len(self.agents) < self.cfg.hosts:
            return {"ok": True, "lost": None}
        assert self.alloc is not None
        queued = {(ln[0], ln[1]) for ls in self.to_launch.values() for ln in ls}
        lost = [k for k in (tuple(x) for x in keys)
                if k not in self.alloc.tasks and k not in queued and k not in self.recent_finished]
        return {"ok": True, "lost": lost}

    # ------------------------------------------------------------ the loops

    async def _allocation_loop(self) -> None:
        while await self.nap(self.cfg.allocation_interval):
            if self.leading():
                self._allocate_round()

    def _allocate_round(self) -> None:
        a = self.alloc
        assert a is not None
        now = self.rt.now()
        rescinded = a.expire(now)
        if rescinded:
            self.log.emit("offers_closed", offers=[[o.offer_id, o.framework, "rescinded", round(now - o.made_at, 6),
                                                    *np.round(o.resources.sum(axis=0), 6).tolist()] for o in rescinded])
        if self.cfg.revocation:
            self._revoke(now)
        # Only registered frameworks get offers; an agent-reported one may not be yet.
        for n, acct in a.accounts.items():
            if n not in self.registered_fws:
                acct.wants = False
        offers = a.allocate(now)
        by_fw: dict[str, list[dict]] = collections.defaultdict(list)
        for o in offers:
            by_fw[o.framework].append({"id": o.offer_id, "machines": o.machines, "free": o.resources, "expires": o.expires_at})
        if offers:
            self.log.emit("offers_made", offers=[[o.offer_id, o.framework, o.machines.tolist(),
                                                  *np.round(o.resources.sum(axis=0), 6).tolist()] for o in offers])
        for fw in set(by_fw) | set(self.running_updates) | set(self.lost_updates) | set(self.finished_updates):
            h = self._fw_handle(fw)
            if h is None:
                continue
            if fw in by_fw:
                self.rt.send(h, "offers", self.epoch, by_fw[fw])
            running, lost = self.running_updates.pop(fw, []), self.lost_updates.pop(fw, [])
            finished = self.finished_updates.pop(fw, [])
            if running or lost or finished:
                self.rt.send(h, "status", self.epoch, running + finished, lost)

    def _revoke(self, now: float) -> None:
        a = self.alloc
        assert a is not None
        starving = a.starving(now, self.cfg.starvation_timeout)
        keys = a.revocations(starving)
        if not keys:
            return
        k = self.cfg.machines_per_host
        victims: dict[str, int] = collections.Counter()
        for key in keys:
            fw, machine, _req = a.tasks[key]
            if withdraw_launch(self.to_launch, machine // k, key):  # not on its agent yet
                a.release([key])
                self.lost_updates[fw].append(key)
            else:
                self.kills[machine // k].append(key)
            victims[fw] += 1
        self.log.emit("revoked", starving=starving, victims=dict(victims), tasks=len(keys))

    async def _sample_loop(self) -> None:
        while await self.nap(self.cfg.sample_interval):
            if not self.leading():
                continue
            a = self.alloc
            assert a is not None
            total = a.total
            used, locked, held = a.used() / total, a.locked() / total, a.held_total() / total
            self.log.emit("cell_sample", cpu=round(float(used[0]), 6), mem=round(float(used[1]), 6), version=self.epoch)
            self.log.emit("mesos_sample", epoch=self.epoch, shares={k: round(v, 6) for k, v in a.shares().items()},
                          locked=np.round(locked, 6).tolist(), held=np.round(held, 6).tolist(),
                          agents=len(self.agents), frameworks=len(self.registered_fws))

    async def status(self) -> dict:
        return {"master": self.name, "index": self.index, "leading": self.leading(), "epoch": self.epoch,
                "agents": len(self.agents), "frameworks": len(self.registered_fws)}

    async def on_stop(self) -> dict:
        return await self.status()
