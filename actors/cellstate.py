"""Omega's cell-state keeper: a thin actor over ``SharedCell``.

Every commit goes through ``commit`` (the pure rule); schedulers refresh by
``sync`` deltas. Machine hosts *pull*: once per batch interval each host calls
``exchange`` with its finished tasks and gets back the tasks committed to its
machines since its last call (as a kubelet watches the API server for pods
bound to its node). One round trip per host per interval carries both
directions, whatever the number of schedulers; pushing launches from every
scheduler to every host cost schedulers x hosts messages per interval and,
measured, collapsed a 20-host cell on two cores.
"""
from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from actors.base import ActorShell
from actors.runtime import Runtime
from actors.machine_host import Launch
from actors.wire import pack_delta, unpack_claims, unpack_release, unpack_tasks
from schedulers.omega import ConflictMode, TxnMode
from schedulers.shared_state import SharedCell


class CellState(ActorShell):
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
    ) -> None:
        super().__init__(rt, "cellstate", metrics, flush_interval)
        self.cell = SharedCell(capacity, free)
        self.k = machines_per_actor
        self.to_launch: dict[int, list[Launch]] = {}
        self.conflict_mode = conflict_mode
        self.txn_mode = txn_mode
        self.sample_interval = sample_interval
        self.totals = self.cell.capacity.sum(axis=0)
        self.commits = 0

    async def on_start(self) -> None:
        self.spawn_loop(self._sample_loop())

    async def _sample_loop(self) -> None:
        self._sample()
        while await self.nap(self.sample_interval):
            self._sample()

    def _sample(self) -> None:
        util = self.cell.used().sum(axis=0) / self.totals
        self.log.emit("cell_sample", cpu=round(float(util[0]), 6), mem=round(float(util[1]), 6), version=self.cell.version)

    async def snapshot(self) -> bytes:
        return pack_delta(self.cell.full())

    async def sync(self, version: int) -> bytes:
        """Rows changed since ``version`` (see actors.wire for the encoding)."""
        return pack_delta(self.cell.delta_since(version))

    async def commit(self, scheduler: str, claims: bytes, since: int, job_id: int, tasks: bytes) -> tuple[bytes, bytes]:
        """Apply one transaction; reply (accepted mask as bytes, delta since
        ``since``). Accepted claims are queued for their hosts' next
        ``exchange``, starting now. Not idempotent: a scheduler must not
        resend a transaction (with one cell-state actor there is nothing to
        retry against)."""
        c = unpack_claims(claims)
        result = self.cell.commit(c, self.conflict_mode, self.txn_mode)
        self.commits += 1
        if result.committed:
            now = self.rt.now()
            task_idx, durations = unpack_tasks(tasks)
            for i in np.flatnonzero(result.accepted).tolist():
                m = int(c.machine[i])
                self.to_launch.setdefault(m // self.k, []).append(
                    (job_id, int(task_idx[i]), m, c.request[i].tolist(), float(durations[i]), now)
                )
        return result.accepted.tobytes(), pack_delta(self.cell.delta_since(since))

    async def exchange(self, host_id: int, finished: bytes) -> list[Launch]:
        """A host's poll: take its finished tasks' resources back
        (actors.wire.pack_release) and hand over what was committed to its
        machines since the last poll. Each launch is handed out exactly once."""
        if finished:
            self.cell.release(*unpack_release(finished))
        return self.to_launch.pop(host_id, [])

    async def on_stop(self) -> dict:
        self._sample()
        return {"commits": self.commits, "version": self.cell.version}
