"""Omega's cell-state keeper: a thin actor over ``SharedCell``.

Every commit goes through ``commit`` (the pure rule); schedulers refresh by
``sync`` deltas. Machine hosts *pull*: a host calls ``exchange`` with its
finished tasks and gets back the tasks committed to its machines since its
last call (as a kubelet watches the API server for pods bound to its node),
when it has something to return or the keeper rang its doorbell (a commit
placed tasks there), and once per heartbeat. One round trip per host per interval carries both
directions, whatever the number of schedulers; pushing launches from every
scheduler to every host costs schedulers x hosts messages per interval,
enough to collapse a 20-host cell on two cores.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.actors.common.shell import ActorShell
from schedlab.schedulers.archs.omega.cell_machine import CellStateMachine
from schedlab.actors.common.doorbell import Doorbells
from schedlab.actors.common.host_watch import LivenessSpec, host_timeout, judge, report_down, watch_for
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.events.shared import CELL_SAMPLE
from schedlab.schedulers.shared_state.commit import ConflictMode, TxnMode
from schedlab.schedulers.model.resources import sample_fields


class CellState(ActorShell):
    """One actor applying ``CellStateMachine`` commands directly, in arrival
    order: the same state machine the coordinator replicas run from their log."""

    def __init__(
        self,
        rt: Runtime,
        capacity: np.ndarray,
        free: np.ndarray,
        conflict_mode: ConflictMode,
        txn_mode: TxnMode,
        metrics: Any,
        sample_interval: float,
        flush_interval: float,
        machines_per_actor: int = 1,
        liveness: LivenessSpec = LivenessSpec(),
        heartbeat: float | None = None,
    ) -> None:
        """``heartbeat``: the hosts' (emulated s; None: they poll every batch interval)."""
        super().__init__(rt, "cellstate", metrics, flush_interval)
        self.machine = CellStateMachine(capacity, free, conflict_mode.value, txn_mode.value, machines_per_actor)
        self.sample_interval = sample_interval
        hosts = -(-capacity.shape[0] // machines_per_actor)
        scale = rt.scale
        self.watch = watch_for(hosts, host_timeout(scale, heartbeat), liveness, scale)
        self.bells = Doorbells(rt)

    async def on_start(self) -> None:
        self.spawn_loop(self._sample_loop())
        self.watch.grace(self.rt.now())
        self.spawn_loop(self._watch_loop())

    async def _watch_loop(self) -> None:
        while await self.nap(self.watch.timeout / 4):
            now = self.rt.now()
            silent = judge(self.watch, self.log, now, self.machine.down)
            if silent:
                report_down(self.log, silent, *self.machine.apply(("down", silent, now)), by="cellstate", watch=self.watch)
                self.bells.ring(self.machine.waiting())  # alive after all: told to start over

    async def _sample_loop(self) -> None:
        self._sample()
        while await self.nap(self.sample_interval):
            self._sample()

    def _sample(self) -> None:
        shares, version = self.machine.query(("sample",))
        self.log.emit(CELL_SAMPLE, **sample_fields(shares), version=version)

    async def snapshot(self) -> bytes:
        return self.machine.query(("snapshot",))

    async def sync(self, version: int) -> bytes:
        """Rows changed since ``version`` (see schedulers.model.wire for the encoding)."""
        return self.machine.query(("sync", version))

    async def commit(self, scheduler: str, claims: bytes, since: int, job_id: int, tasks: bytes, n_tasks: int,
                     gang: bool = False) -> list:
        """Apply one transaction; reply [accepted mask bytes, delta since
        ``since``]. Accepted claims start now and wait for their hosts' next
        ``exchange``. Not idempotent: a scheduler must not resend a
        transaction (with one cell-state actor there is nothing to retry against)."""
        reply = self.machine.apply(("commit", claims, since, job_id, tasks, self.rt.now(), n_tasks, gang))
        self.bells.ring(self.machine.waiting())
        return reply

    async def exchange(self, host_id: int, finished: bytes) -> list:
        """A host's poll: take its finished tasks' resources back
        (schedulers.model.wire.pack_release) and hand over what was committed to its
        machines since the last poll. Each launch is handed out exactly once."""
        self.watch.heard(host_id, self.rt.now())
        self.bells.heard(host_id)
        return self.machine.apply(("exchange", host_id, finished))

    async def rejoin(self, host_id: int) -> list:
        """A restarted host's first word: write off what it ran before."""
        self.watch.heard(host_id, self.rt.now())
        self.bells.rejoined(host_id)
        return self.machine.apply(("rejoin", host_id, self.rt.now()))

    async def recover(self, job_ids: list[int]) -> list:
        """[lost cursor, {job: tasks placed and not lost}, [job done]] for a restarted scheduler."""
        return self.machine.query(("recover", job_ids))

    async def lost(self, cursor: int) -> list:
        return self.machine.query(("lost", cursor))

    async def on_stop(self) -> dict:
        self._sample()
        return {"commits": self.machine.commits, "version": self.machine.cell.version}
