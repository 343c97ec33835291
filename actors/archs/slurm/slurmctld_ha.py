"""slurmctld with a backup (``[slurm] controllers = 2``): both controllers
campaign for the coordinator group's lease; the holder is the active one
and saves its state to the fenced store on the group (StateSaveLocation,
shared with the backup), which a controller reads when it takes over,
before it trusts the daemons' registrations. Every write is fenced by the
lease epoch, so a deposed controller's late save is refused.

Real SLURM's backup takes over after SlurmctldTimeout without hearing the
primary; here that is the lease (``controller_lease_ms``), the same
election every replicated master of schedlab uses.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from schedlab.actors import engines
from schedlab.actors.archs.slurm.slurmctld import CtldConfig, SlurmController
from schedlab.actors.common.submitter import NAME as SUBMITTER
from schedlab.actors.coordinator.fenced_store_link import FencedStoreLink
from schedlab.actors.coordinator.lease import LeaseCampaign, holds_lease
from schedlab.actors.coordinator.replica_set import LeasedSet
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.slurm.events import SLURMCTLD_STANDBY
from schedlab.schedulers.archs.slurm.spec import NAME
from schedlab.schedulers.archs.slurm.state_save import StateMirror
from schedlab.schedulers.events.shared import COMMITS_DROPPED


class HAController(SlurmController):
    def __init__(self, rt: Runtime, cfg: CtldConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, cfg, metrics, flush_interval)
        self.lease_wall_s = cfg.spec.controller_lease_ms / 1e3
        self.link = FencedStoreLink(cfg.name, cfg.replicas, rt, self.lease_wall_s, StateMirror)
        self.lease_until = -float("inf")
        self.leader_hint: str | None = None
        self.lease_epoch = 0
        self.lapsed = False
        self.loaded = False

    async def on_start(self) -> None:
        campaign = LeaseCampaign(self.name, self.cfg.replicas, self.rt, self.lease_wall_s)
        self.spawn_loop(campaign.run(self, lambda: self.ctld is not None, lambda: self.lease_epoch,
                                     self._take_over, self._step_down))
        await super().on_start()

    def active(self) -> bool:
        return self.ctld is not None and holds_lease(self)

    def _loaded(self) -> bool:
        return self.loaded

    def _take_over(self, epoch: int) -> None:
        """Won the lease with a new epoch: fresh books at epoch 1, else read
        the saved state first; take the submitter's route."""
        if self.ctld is not None:  # our own lease lapsed and was won again: those books are stale
            self._step_down()
        self.lease_epoch = epoch
        fresh = epoch == 1
        self._incarnate(recovering=not fresh)
        self.link.begin(epoch, fresh=fresh)
        self.loaded = fresh
        if fresh:
            self.mirror = self.link.mirror
            self.mirror.ctld = self.ctld
        else:
            self.mirror = None
            self.spawn_loop(self._load(epoch))
        me, submitter = self.rt.lookup(self.name), self.rt.lookup(SUBMITTER)
        if me is not None and submitter is not None:
            # Jobs come here from now on, and every job routed to the
            # controller is handed back (``recover``), as to a restarted one.
            self.rt.send(submitter, "reroute", NAME, me, True, self.name)

    async def _load(self, epoch: int) -> None:
        while self.lease_epoch == epoch and self.ctld is not None:
            got = await self.link.load(epoch)
            if got is False:
                return  # deposed meanwhile
            if got and self.lease_epoch == epoch and self.ctld is not None:
                mirror = self.link.mirror
                loaded, mirror.loaded = mirror.loaded, None
                mirror.ctld, self.mirror, self.loaded = self.ctld, mirror, True
                self._restore(loaded or {})
                self._maybe_settle()
                return
            if not await self.nap_wall(self.lease_wall_s / 4):
                return

    def _step_down(self) -> None:
        """Lost the lease: hand out nothing more. Launches no daemon pulled
        are dropped (the next controller learns what runs from the daemons)."""
        ctld = self.ctld
        if ctld is None:
            return
        self._drain()
        dropped = [[ln[0], ln[1], ln[2]] for launches in ctld.to_launch.values() for ln in launches]
        if dropped:
            # The invariant checker traces each commit to its launch or to this.
            self.log.emit(COMMITS_DROPPED, holder=self.name, epoch=self.lease_epoch, tasks=dropped)
        self.log.emit(SLURMCTLD_STANDBY, controller=self.name, epoch=self.lease_epoch)
        self.ctld = None
        self.mirror = None
        self.link.end()

    async def _save(self) -> None:
        if self.active() and self.loaded:
            await self.link.write()

    async def status(self) -> dict:
        return {"controller": self.name, "index": self.cfg.index, "leading": self.active(), "epoch": self.lease_epoch}


class ControllerSet(LeasedSet):
    """Driver-side handle on the two controllers: spawn, find the active
    one, kill, restart (a restarted one comes back as the backup)."""

    def __init__(self, cfg: CtldConfig, rt: Any, metrics: Any, flush: float, on_spawn: Callable[[Any], Any]) -> None:
        super().__init__(cfg.spec.controllers, on_spawn)
        self.cfg, self.rt, self.metrics, self.flush = cfg, rt, metrics, flush

    def make(self, i: int) -> Any:
        cfg = dataclasses.replace(self.cfg, index=i)
        return engines.current().spawn(HAController, cfg.name, self.rt.namespace, self.rt, cfg, self.metrics, self.flush)
