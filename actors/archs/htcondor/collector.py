"""The central manager as an actor (``condor-collector``): the collector
(the startds' slot ads, pushed every ``update_interval``) and the
negotiator (a cycle every ``negotiator_interval``: idle jobs from every
schedd, ``schedulers.archs.htcondor.negotiator.negotiate`` on the ads,
each match sent to its startd and its schedd).

It holds no job: the jobs live in the schedds and the slots' state in the
startds, so a killed central manager loses nothing but soft state. Its
successor rebuilds the ads from the startds' next updates and resumes the
cycles (user priorities start over: HTCondor keeps them on disk, not
modelled). A cycle's duration is modelled as ``t_cycle + t_eval x`` the
job-kind x slot evaluations it made, spent before its matches go out (so
a long cycle matches on older ads: more stale matches).
"""
from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.actors.common.events import span_stamp
from schedlab.actors.common.shell import ActorShell
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.htcondor.events import NEGOTIATION_CYCLE
from schedlab.schedulers.archs.htcondor.negotiator import Machine, negotiate
from schedlab.schedulers.archs.htcondor.pool import machine_of
from schedlab.schedulers.archs.htcondor.spec import COLLECTOR, schedd_name, startd_name
from schedlab.schedulers.archs.htcondor.userprio import UserPrio
from schedlab.schedulers.events.shared import CELL_SAMPLE, TXN
from schedlab.schedulers.model.resources import sample_fields, used_shares

CALL_WALL_S = 5.0


@dataclass(frozen=True)
class CollectorConfig:
    schedds: int
    machines_per_host: int
    total: tuple[float, ...]  # the cell's capacity, per resource
    negotiator_interval: float
    update_interval: float
    priority_halflife: float
    t_cycle: float
    t_eval: float
    sample_interval: float


class Collector(ActorShell):
    def __init__(self, rt: Runtime, cfg: CollectorConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, COLLECTOR, metrics, flush_interval)
        self.cfg = cfg
        self.slots: dict[int, dict[str, tuple]] = {}  # host -> slot name -> its ad (name, state, ad, job ad, user)
        self.used: dict[int, list[float]] = {}
        self.prio = UserPrio(half_life=cfg.priority_halflife)
        self.cycles = 0
        self.base = 0

    async def on_start(self) -> None:
        # Unique match ids across incarnations: a successor's cycle numbers
        # start above any its predecessor used.
        self.base = int(self.rt.stamp()) * 100_000
        self.spawn_loop(self._negotiator_loop())
        self.spawn_loop(self._sample_loop())

    # ------------------------------------------------------------- collector

    async def advertise(self, host: int, slots: list, used: list[float], gone: list[str] | None = None) -> bool:
        """A startd's update: every slot in its pool (``gone`` None), or only
        the slots changed since its last update and ``gone``, those that left
        the pool (HTCondor's startds send an ad when a slot changes state).
        False: this collector has no full update from the host yet (it
        restarted): the startd sends every slot next."""
        if gone is None:
            self.slots[host] = {ad[0]: tuple(ad) for ad in slots}
        elif host not in self.slots:
            return False
        else:
            table = self.slots[host]
            for name in gone:
                table.pop(name, None)
            for ad in slots:
                table[ad[0]] = tuple(ad)
        self.used[host] = used
        return True

    # ------------------------------------------------------------ negotiator

    async def _call(self, name: str, method: str, *args: Any) -> Any:
        handle = self.rt.lookup(name)
        if handle is None:
            raise ConnectionError(f"{name} is gone")
        return await asyncio.wait_for(self.rt.call(handle, method, *args), self.rt.wall(CALL_WALL_S * self.rt.scale))

    async def _negotiator_loop(self) -> None:
        # The first cycle waits for a round of startd updates.
        if not await self.nap(min(self.cfg.negotiator_interval, self.cfg.update_interval * 1.5)):
            return
        while self.running:
            began = self.rt.now()
            await self._cycle()
            if not await self.nap(max(0.0, self.cfg.negotiator_interval - (self.rt.now() - began))):
                return

    async def _cycle(self) -> None:
        started = self.rt.now()
        machines = [Machine(name, state, ad, job) for host in sorted(self.slots)
                    for name, state, ad, job, _u in self.slots[host].values()]
        usage = Counter(u for host in self.slots.values() for _n, state, _a, _j, u in host.values() if state == "Claimed" and u)
        names = [schedd_name(i) for i in range(self.cfg.schedds)]
        got = await asyncio.gather(*(self._call(n, "idle") for n in names), return_exceptions=True)
        idle = {n: g for n, g in zip(names, got) if isinstance(g, dict) and g}
        waiting = sum(len(q) for g in idle.values() for q in g.values())
        self.cycles += 1
        self.prio.update(self.rt.now(), dict(usage))
        res = negotiate(machines, idle, self.prio, cycle=self.base + self.cycles)
        think = self.cfg.t_cycle + self.cfg.t_eval * res.stats.evaluations
        t0 = self.rt.now()
        if not await self.nap(think):
            return
        by_host: dict[int, list[tuple[str, str]]] = {}
        for m in res.matches:
            by_host.setdefault(machine_of(m.machine) // self.cfg.machines_per_host, []).append((m.machine, m.match_id))
        # The startds first (Matched), then the schedds, who claim them.
        told = await asyncio.gather(*(self._call(startd_name(h), "matched", pairs) for h, pairs in by_host.items()),
                                    return_exceptions=True)
        ignored = sum(x for x in told if isinstance(x, int))
        for n in names:
            mine = [m for m in res.matches if m.schedd == n]
            h = self.rt.lookup(n) if mine else None
            if h is not None:
                self.rt.send(h, "match", mine)
        st = res.stats
        unclaimed = sum(1 for m in machines if m.state == "Unclaimed")
        self.log.emit(NEGOTIATION_CYCLE, cycle=self.cycles, duration=round(think, 6), matches=st.matches,
                      rejected=st.rejected, evaluations=st.evaluations, users=st.users_considered, pie_spins=st.pie_spins,
                      idle_jobs=waiting, slots=len(machines), unclaimed=unclaimed, ignored=ignored,
                      users_eup={u: round(self.prio.eup(u), 4) for u in sorted(usage)})
        self.log.emit(TXN, scheduler=COLLECTOR, job_id=-1, claims=st.matches, committed=st.matches,
                      think=round(think, 6), placed=[], cycle=self.cycles, **span_stamp(started, t0 + think))

    # --------------------------------------------------------------- samples

    async def _sample_loop(self) -> None:
        while await self.nap(self.cfg.sample_interval):
            total = np.asarray(self.cfg.total, dtype=np.float64)
            used = np.sum([u for u in self.used.values()], axis=0) if self.used else np.zeros_like(total)
            self.log.emit(CELL_SAMPLE, **sample_fields(used_shares(used, total)), version=self.cycles)

    async def on_stop(self) -> dict:
        return {"cycles": self.cycles}
