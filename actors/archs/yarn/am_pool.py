"""ApplicationMasters, a pool of them per actor: thin shells over
``schedulers.archs.yarn.app_master.AppMasterCore``.

YARN runs each AM in a container process of its own; one actor per
application would be hundreds of processes on a small machine, so the AM
*container* is launched on its node (it holds its resources there, and
dies with its node) while the AM's logic runs here, in one of
``[yarn] am_pools`` actors (an application's pool is fixed by its id). The
pool pulls the AMs it must start from the ResourceManager, and its AMs'
heartbeats go to the RM as one batched call per ``am_heartbeat`` (every AM
of a pool heartbeats in step): one message per pool and interval, not per
application. A killed pool loses its AMs; the RM's AM liveness monitor
(``am_expiry``) notices their silence and starts new attempts. With
standby RMs the pool finds the active one through the coordinator
group's lease (after a failed call or a standby's answer), as the
NodeManagers do.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schedlab.actors.common.shell import ActorShell
from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.coordinator.lease import lease_holder
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.yarn.app_master import AMConfig, AppMasterCore
from schedlab.schedulers.archs.yarn.cores import am_config
from schedlab.schedulers.archs.yarn.events import AM_BOOKS, AM_HEARTBEAT_FAILED, AM_STARTED, AM_STOPPED, AM_UNREGISTERED
from schedlab.schedulers.archs.yarn.messages import GONE, STALE
from schedlab.schedulers.archs.yarn.spec import RM_NAME, YarnSpec


@dataclass(frozen=True)
class PoolConfig:
    spec: YarnSpec
    index: int
    replicas: int = 1  # the coordinator group's, where standby RMs hold the lease (rms > 1)


class AMPool(ActorShell):
    def __init__(self, rt: Runtime, name: str, cfg: PoolConfig, rm: Any, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, name, metrics, flush_interval)
        self.cfg = cfg
        self.rm = rm
        self.configs: dict[str, AMConfig] = {q.name: am_config(q) for q in cfg.spec.queues}
        self.ams: dict[int, AppMasterCore] = {}
        self.ended: list[int] = []  # applications whose AM here unregistered (job history)
        self.send_ended = False

    async def on_start(self) -> None:
        self.coord = CoordinatorClient(self.name, self.cfg.replicas, self.rt) if self.cfg.spec.rms > 1 else None
        self.spawn_loop(self._loop())

    async def _find_rm(self) -> None:
        """The RM again: by name (a restarted one), or the lease's holder."""
        if self.coord is None:
            self.rm = self.rt.lookup(RM_NAME) or self.rm
            return
        name = await lease_holder(self.coord)
        handle = self.rt.lookup(name) if name else None
        if handle is not None:
            self.rm = handle

    async def _loop(self) -> None:
        while await self.nap(self.cfg.spec.am_heartbeat):
            await self._beat()

    async def _beat(self) -> None:
        calls = [(app, am.next_call()) for app, am in self.ams.items() if not am.needs_resync and not am.done]
        resyncs = [(app, am.resync()) for app, am in self.ams.items() if am.needs_resync and not am.done]
        done = [app for app, am in self.ams.items() if am.done]
        ended = list(self.ended) if self.send_ended else None
        try:
            reply = await self.rt.call(self.rm, "am_heartbeat", self.cfg.index, calls, resyncs, done, ended)
        except Exception as e:  # the RM is gone: everything goes again, to its successor
            self._undo(calls, resyncs)
            self.log.emit(AM_HEARTBEAT_FAILED, error=f"{type(e).__name__}: {e}"[:200])
            await self._find_rm()
            return
        if reply.get("standby"):  # not the active RM (any more)
            self._undo(calls, resyncs)
            await self._find_rm()
            return
        if reply.get("wait"):  # a restarted RM not ready for its AMs yet
            self._undo(calls, resyncs)
            return
        self.send_ended = bool(reply.get("want_ended"))
        for app in done:
            self.ams.pop(app, None)
            self.ended.append(app)
            self.log.emit(AM_UNREGISTERED, app=app)
        for app, r in reply["replies"].items():
            am = self.ams.get(app)
            if am is None:
                continue
            if am.on_reply(r) in (STALE, GONE):
                del self.ams[app]
                self.log.emit(AM_STOPPED, app=app, attempt=am.attempt, status=r.status)
        for record, attempt, finished in reply["start"]:
            old = self.ams.get(record.app_id)
            if old is not None and old.attempt >= attempt:
                continue
            self.ams[record.app_id] = AppMasterCore(record, attempt=attempt, finished=finished,
                                                    config=self.configs.get(record.queue, AMConfig(locality=False)))
            self.log.emit(AM_STARTED, app=record.app_id, attempt=attempt, finished=len(finished))

    def _undo(self, calls: list, resyncs: list) -> None:
        for app, call in calls:
            self.ams[app].undo(call)
        for app, _r in resyncs:
            self.ams[app].needs_resync = True

    async def on_stop(self) -> dict:
        # Every AM's books at the end, for the run's request accounting
        # (tests/test_run_yarn.py holds them against the RM's yarn_books).
        self.log.emit(AM_BOOKS, pool=self.cfg.index, ams=[am.books() for _app, am in sorted(self.ams.items())])
        return {"ams": len(self.ams), "ended": len(self.ended)}
