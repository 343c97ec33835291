"""Omega's cell-state keeper: a thin actor over ``SharedCell``.

Every commit goes through ``commit`` (the pure rule); schedulers refresh by
``sync`` deltas; hosts return finished tasks' resources through ``release``.
"""
from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

from actors.base import ActorShell
from actors.runtime import Runtime
from actors.wire import pack_delta, unpack_claims
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
    ) -> None:
        super().__init__(rt, "cellstate", metrics, flush_interval)
        self.cell = SharedCell(capacity, free)
        self.conflict_mode = conflict_mode
        self.txn_mode = txn_mode
        self.sample_interval = sample_interval
        self.totals = self.cell.capacity.sum(axis=0)
        self.commits = 0

    async def on_start(self) -> None:
        self.spawn_loop(self._sample_loop())

    async def _sample_loop(self) -> None:
        while self.running:
            self._sample()
            await self.rt.sleep(self.sample_interval)

    def _sample(self) -> None:
        util = self.cell.used().sum(axis=0) / self.totals
        self.log.emit("cell_sample", cpu=round(float(util[0]), 6), mem=round(float(util[1]), 6), version=self.cell.version)

    async def snapshot(self) -> bytes:
        return pack_delta(self.cell.full())

    async def sync(self, version: int) -> bytes:
        """Rows changed since ``version`` (see actors.wire for the encoding)."""
        return pack_delta(self.cell.delta_since(version))

    async def commit(self, scheduler: str, claims: bytes, since: int) -> tuple[bytes, bytes]:
        """Apply one transaction; reply (accepted mask as bytes, delta since
        ``since``). Not idempotent: a scheduler must not resend a transaction
        (with one cell-state actor there is nothing to retry against)."""
        result = self.cell.commit(unpack_claims(claims), self.conflict_mode, self.txn_mode)
        self.commits += 1
        return result.accepted.tobytes(), pack_delta(self.cell.delta_since(since))

    async def release(self, machines: np.ndarray, requests: np.ndarray) -> None:
        self.cell.release(machines, requests)

    async def on_stop(self) -> dict:
        self._sample()
        return {"commits": self.commits, "version": self.cell.version}
