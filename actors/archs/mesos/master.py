"""A Mesos master: a thin actor over the pure ``MasterState``.

Only the leader acts. With one master it leads from the start; with
standbys every master campaigns for a lease in the coordinator group
(``schedulers.consensus.lease``, through ``actors.coordinator.lease``) and the holder leads until its lease runs out.
All of a master's state is soft: a new leader starts empty and rebuilds it
from agents and frameworks re-registering (the Mesos way), so a master's
replies carry its ``epoch`` and anything addressed to an older epoch is
refused.

Messages: agents call ``register_agent`` and ``exchange`` (finished tasks in,
launches and kills out, as on Omega: when the master rang the agent, a
task of its ended, or a heartbeat passed); frameworks
call ``register_framework``, ``respond`` (accept / hold / decline offers),
``revive`` and ``reconcile``; the master sends frameworks ``offers`` and
``status`` one message per framework per allocation round.

What the leader knows and decides (agents, offers, launches, kills, status
updates owed, write-offs) is ``schedulers.archs.mesos.master_state``; this
shell keeps leadership, the loops, the host watch, the calls and sends and
the events.
"""
from __future__ import annotations

import math
from typing import Any

from schedlab.actors.archs.mesos.link import master_name
from schedlab.actors.common.doorbell import Doorbells
from schedlab.actors.common.host_watch import (
    host_timeout,
    judge,
    silence_span,
    watch_for,
)
from schedlab.actors.common.events import report_held_at_end
from schedlab.actors.common.shell import ActorShell
from schedlab.actors.coordinator.lease import LeaseCampaign, holds_lease
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.mesos.events import (
    AGENT_REGISTERED, FRAMEWORK_REGISTERED, MASTER_ELECTED, MASTER_STEPPED_DOWN, MESOS_SAMPLE, OFFERS_CLOSED,
    OFFERS_MADE, REVOKED, TASKS_GONE,
)
from schedlab.schedulers.archs.mesos.master_state import MasterConfig, MasterState
from schedlab.schedulers.events.shared import CELL_SAMPLE, COMMITS_DROPPED, MACHINES_DOWN

__all__ = ["MesosMaster", "NOT_LEADER"]

NOT_LEADER = {"ok": False}
REREGISTER_SPANS = 3  # a new leader's agent re-registration window, in watch silence spans


class MesosMaster(ActorShell):
    def __init__(self, rt: Runtime, index: int, cfg: MasterConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, master_name(index), metrics, flush_interval)
        self.index = index
        self.cfg = cfg
        self.state = MasterState(cfg)
        self.lease_until = -math.inf
        self.leader_hint: str | None = None
        self.rereg_until = -math.inf
        self.lapsed = False  # refused its agents while its lease lapsed (see leading)
        self.fw_handles: dict[str, Any] = {}
        scale = rt.scale
        self.watch = watch_for(cfg.hosts, host_timeout(scale, cfg.heartbeat), cfg.liveness, scale)
        self.bells = Doorbells(rt)

    # -------------------------------------------------------------- leading

    def leading(self) -> bool:
        return self.state.leads and holds_lease(self)

    def _take_over(self, epoch: int) -> None:
        """Become leader with empty soft state."""
        old = self.state.epoch
        self._dropped(self.state.take_over(epoch), old)
        self.bells.forget_rings()
        self.watch.grace(self.rt.now(), give_up=True)
        # Agents get this long to re-register before the leader judges them
        # (Mesos' agent re-registration timeout): one that never does is
        # written off, so its tasks are reported lost instead of forgotten.
        self.rereg_until = self.rt.now() + REREGISTER_SPANS * silence_span(self.watch)
        self.log.emit(MASTER_ELECTED, master=self.name, epoch=epoch)

    def _step_down(self) -> None:
        if self.state.leads:
            self.log.emit(MASTER_STEPPED_DOWN, master=self.name, epoch=self.state.epoch)
        self._dropped(self.state.step_down(), self.state.epoch)

    def _dropped(self, launches: list[list[int]], epoch: int) -> None:
        if launches:
            # The invariant checker traces each commit to its launch or to this.
            self.log.emit(COMMITS_DROPPED, holder=self.name, epoch=epoch, tasks=launches)

    async def on_start(self) -> None:
        if self.cfg.masters == 1:
            # One master: it leads from the start; a restarted one is a new epoch.
            self.lease_until = math.inf
            # Epochs only need to grow across restarts: wall milliseconds do.
            self._take_over(self.rt.stamp() // 1000)
        else:
            self.campaign = LeaseCampaign(self.name, self.cfg.replicas, self.rt, self.cfg.lease_wall_s)
            self.spawn_loop(self._campaign_loop())
        self.spawn_loop(self._allocation_loop())
        self.spawn_loop(self._sample_loop())
        self.spawn_loop(self._agent_watch_loop())

    async def _campaign_loop(self) -> None:
        await self.campaign.run(self, lambda: self.state.leads, lambda: self.state.epoch, self._take_over,
                                self._step_down)

    # --------------------------------------------------------------- agents

    async def register_agent(self, owner: str, host: int, tasks: list, finished: list) -> dict:
        """``tasks``: [job, task, machine, request, framework] running there;
        ``finished``: keys of tasks that ended lately (their final status may
        have died with the old master; Mesos agents retry status updates
        until acknowledged, which this stands in for)."""
        if not self.leading():
            return NOT_LEADER
        self.watch.heard(host, self.rt.now())
        self.bells.rejoined(host)  # maybe a new incarnation
        reg = self.state.register_agent(host, tasks, finished)
        if reg.gone:
            self.log.emit(TASKS_GONE, master=self.name, host=host, tasks=[list(k) for k in reg.gone])
        if reg.unpulled:
            # Traced as every dropped commit is (the invariant checker reads this, not tasks_gone).
            self.log.emit(COMMITS_DROPPED, holder=self.name, epoch=self.state.epoch, reason="agent re-registered",
                          tasks=reg.unpulled)
        self.log.emit(AGENT_REGISTERED, master=self.name, epoch=self.state.epoch, host=host, tasks=reg.tasks, reset=reg.reset)
        return {"ok": True, "epoch": self.state.epoch, "reset": reg.reset}

    async def _agent_watch_loop(self) -> None:
        """Agents that stopped polling are removed: offers on them rescinded,
        their tasks reported lost to their frameworks (which place them again)."""
        while await self.nap(self.watch.timeout / 4):
            self._judge_agents()

    def _judge_agents(self) -> None:
        if not self.leading():
            return
        now = self.rt.now()
        if self.lapsed:
            # While its renewal was late the leader refused agents, so
            # their silence meanwhile is its own, not theirs: judged on it,
            # agents that polled all along would be written off. Their
            # clocks restart now.
            self.lapsed = False
            self.watch.grace(now, give_up=True)
            return
        unjudged = set(self.state.written_off)
        if now < self.rereg_until:
            unjudged |= set(range(self.cfg.hosts)) - self.state.agents
        silent = judge(self.watch, self.log, now, unjudged)
        if not silent:
            return
        w = self.state.write_off(silent, now)
        if w.rescinded:
            self.log.emit(OFFERS_CLOSED, offers=w.rescinded)
        # The frameworks log the lost tasks they place again (tasks_lost).
        self.log.emit(MACHINES_DOWN, hosts=silent, tasks_lost=len(w.lost), lost=w.lost, unpulled=len(w.unpulled),
                      timeout_s=silence_span(self.watch))
        self.bells.ring(silent)  # alive after all: its next poll re-registers it, empty

    async def exchange(self, owner: str, epoch: int, host: int, finished: list) -> dict:
        """Finished tasks in; the launches accepted for this agent (and any
        kills) out. Each launch is handed out once."""
        if not self.leading() or not self.state.agent_ok(epoch, host):
            return NOT_LEADER
        self.watch.heard(host, self.rt.now())
        self.bells.heard(host)
        launches, kills = self.state.exchange(host, finished)
        return {"ok": True, "launch": launches, "kill": kills}

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
        self.state.register_framework(name, wants, self.rt.now())
        # A restarted framework is a new actor under the same name: offers
        # sent to the cached handle of its predecessor would go nowhere.
        self.fw_handles.pop(name, None)
        self.log.emit(FRAMEWORK_REGISTERED, master=self.name, epoch=self.state.epoch, framework=name)
        return {"ok": True, "epoch": self.state.epoch}

    def _ok_for(self, name: str, epoch: int) -> bool:
        return self.leading() and self.state.framework_ok(name, epoch)

    async def revive(self, name: str, epoch: int, wants: bool) -> dict:
        if not self._ok_for(name, epoch):
            return NOT_LEADER
        self.state.revive(name, wants)
        return {"ok": True}

    async def respond(self, name: str, epoch: int, sections: list, declines: list, unholds: list, wants: bool) -> dict:
        """A framework's answer to its offers, atomically per offer.

        ``sections``: [(offer_id or None, launches, holds)], a launch being
        (job, task, machine, request, duration) and a hold (machine, request);
        ``declines``: [(offer_id, refuse_seconds)]; ``unholds``: [(machine,
        request)] given back. Returns per section (ok, launched mask, held mask)."""
        if not self._ok_for(name, epoch):
            return NOT_LEADER
        r = self.state.respond(name, sections, declines, unholds, wants, self.rt.now())
        if r.closed:
            self.log.emit(OFFERS_CLOSED, offers=r.closed)
        self.bells.ring(self.state.waiting())
        return {"ok": True, "results": r.results}

    async def recover_tasks(self, name: str, epoch: int, job_ids: list) -> dict:
        """For a restarted framework: the tasks of these jobs that run, wait
        to launch or finished (soft state: what this master has seen)."""
        if not self._ok_for(name, epoch):
            return NOT_LEADER
        return {"ok": True, "known": self.state.recover_tasks(name, job_ids)}

    async def reconcile(self, name: str, epoch: int, keys: list) -> dict:
        """Which of these launched tasks does no agent know about? Answered
        only once every agent has re-registered (before that, unknown)."""
        if not self._ok_for(name, epoch):
            return NOT_LEADER
        return {"ok": True, "lost": self.state.reconcile(keys)}

    # ------------------------------------------------------------ the loops

    async def _allocation_loop(self) -> None:
        while await self.nap(self.cfg.allocation_interval):
            if self.leading():
                self._allocate_round()

    def _allocate_round(self) -> None:
        rnd = self.state.allocate_round(self.rt.now())
        if rnd.rescinded:
            self.log.emit(OFFERS_CLOSED, offers=rnd.rescinded)
        if rnd.revoked is not None:
            self.log.emit(REVOKED, starving=rnd.revoked.starving, victims=rnd.revoked.victims, tasks=rnd.revoked.tasks)
            self.bells.ring(self.state.waiting())
        if rnd.made:
            self.log.emit(OFFERS_MADE, offers=rnd.made)
        for fw in rnd.recipients:
            h = self._fw_handle(fw)
            if h is None:
                continue  # its offers lapse; its status updates wait for the next round
            if fw in rnd.offers:
                self.rt.send(h, "offers", self.state.epoch, rnd.offers[fw])
            status = self.state.take_status(fw)
            if status is not None:
                self.rt.send(h, "status", self.state.epoch, *status)

    async def _sample_loop(self) -> None:
        while await self.nap(self.cfg.sample_interval):
            if not self.leading():
                continue
            cell, mesos = self.state.sample()
            self.log.emit(CELL_SAMPLE, **cell)
            self.log.emit(MESOS_SAMPLE, **mesos)

    async def status(self) -> dict:
        return {"master": self.name, "index": self.index, "leading": self.leading(), "epoch": self.state.epoch,
                "agents": len(self.state.agents), "frameworks": len(self.state.registered_fws)}

    async def on_stop(self) -> dict:
        report_held_at_end(self.log, self.name, self.state.drop_unpulled(), epoch=self.state.epoch)
        return await self.status()
