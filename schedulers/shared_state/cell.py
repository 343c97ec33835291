"""The master copy of Omega's shared cell state, with deltas for syncing.

Pure: the cell-state actor is a thin shell over ``SharedCell``. Every change
(commit or release) bumps a global version and stamps the machines it touched,
so a scheduler that last synced at version v fetches only the rows changed
since v, never the whole cell.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.shared_state.commit import Claims, CommitResult, ConflictMode, TxnMode, commit


@dataclass(frozen=True)
class Delta:
    """Rows changed since a version: apply with ``LocalCopy.apply``."""

    version: int
    machines: np.ndarray  # [D] int64
    free: np.ndarray  # [D, R]
    seq: np.ndarray  # [D]


class SharedCell:
    """Master copy: free resources and a sequence number per machine."""

    def __init__(self, capacity: np.ndarray, free: np.ndarray | None = None) -> None:
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.free = self.capacity.copy() if free is None else np.asarray(free, dtype=np.float64).copy()
        self.seq = np.zeros(self.capacity.shape[0], dtype=np.int64)
        self.version = 0
        self.changed_at = np.zeros(self.capacity.shape[0], dtype=np.int64)

    def _stamp(self, machines: np.ndarray) -> None:
        if machines.size:
            self.version += 1
            self.changed_at[machines] = self.version

    def delta_since(self, version: int) -> Delta:
        rows = np.flatnonzero(self.changed_at > version)
        return Delta(self.version, rows, self.free[rows].copy(), self.seq[rows].copy())

    def full(self) -> Delta:
        rows = np.arange(self.free.shape[0])
        return Delta(self.version, rows, self.free.copy(), self.seq.copy())

    def commit(self, claims: Claims, conflict_mode: ConflictMode, txn_mode: TxnMode) -> CommitResult:
        result = commit(self.free, self.seq, claims, conflict_mode, txn_mode)
        self.free, self.seq = result.free, result.seq
        self._stamp(result.touched)
        return result

    def set_available(self, machines: np.ndarray, up: bool) -> None:
        """A machine that failed offers nothing (free 0) until it comes back
        empty (free = capacity); either way its sequence number moves, so a
        claim planned against the old row conflicts."""
        machines = np.asarray(machines, dtype=np.int64)
        self.free[machines] = self.capacity[machines] if up else 0.0
        self.seq[machines] += 1
        self._stamp(machines)

    def release(self, machines: np.ndarray, requests: np.ndarray) -> None:
        """Return finished tasks' resources. Idempotence is the caller's job:
        each task is released exactly once by the host that ran it."""
        machines = np.asarray(machines, dtype=np.int64)
        if machines.size == 0:
            return
        np.add.at(self.free, machines, requests)
        # Guard against float drift pushing free above capacity.
        np.minimum(self.free, self.capacity, out=self.free)
        touched = np.unique(machines)
        self.seq[touched] += 1
        self._stamp(touched)

    def used(self) -> np.ndarray:
        return self.capacity - self.free


class LocalCopy:
    """A scheduler's private copy, refreshed by deltas."""

    def __init__(self, snapshot: Delta) -> None:
        self.free = snapshot.free.copy()
        self.seq = snapshot.seq.copy()
        self.version = snapshot.version

    def apply(self, delta: Delta) -> None:
        if delta.version < self.version:
            return  # a stale reply overtaken by a newer one
        self.free[delta.machines] = delta.free
        self.seq[delta.machines] = delta.seq
        self.version = delta.version
