"""Omega's cell state as a replicated state machine.

The same shared cell the single ``cellstate`` actor keeps, driven by commands
that every coordinator replica applies in log order. Commands carry every
input (including the emulated time of the commit) so applying them is
deterministic on every replica. Results and snapshots are plain bytes, lists
and numbers so they survive msgpack (the log and the snapshot on disk).
"""
from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from actors.wire import pack_delta, unpack_claims, unpack_release, unpack_tasks
from schedulers.omega import ConflictMode, TxnMode
from schedulers.shared_state import SharedCell


class CellStateMachine:
    """Commands:

    * ``("commit", claims, since, job_id, tasks, now)`` -> ``[accepted bytes, delta bytes]``
    * ``("exchange", host_id, finished)`` -> launches for that host (each handed out once)

    Queries (read-only, no log entry): ``("sync", version)`` -> delta bytes,
    ``("snapshot",)`` -> full delta bytes, ``("pending", host_id)`` -> bool.
    """

    def __init__(self, capacity: np.ndarray, free: np.ndarray, conflict_mode: str, txn_mode: str, machines_per_actor: int) -> None:
        self.cell = SharedCell(capacity, free)
        self.conflict_mode = ConflictMode(conflict_mode)
        self.txn_mode = TxnMode(txn_mode)
        self.k = machines_per_actor
        self.to_launch: dict[int, list[list]] = {}
        self.commits = 0

    # --------------------------------------------------------------- writes

    def apply(self, command: Any) -> Any:
        op = command[0]
        if op == "commit":
            return self._commit(*command[1:])
        if op == "exchange":
            return self._exchange(*command[1:])
        raise ValueError(f"unknown cell command {op!r}")

    def _commit(self, claims: bytes, since: int, job_id: int, tasks: bytes, now: float) -> list:
        c = unpack_claims(claims)
        result = self.cell.commit(c, self.conflict_mode, self.txn_mode)
        self.commits += 1
        if result.committed:
            task_idx, durations = unpack_tasks(tasks)
            for i in np.flatnonzero(result.accepted).tolist():
                m = int(c.machine[i])
                self.to_launch.setdefault(m // self.k, []).append(
                    [job_id, int(task_idx[i]), m, c.request[i].tolist(), float(durations[i]), float(now)]
                )
        return [result.accepted.tobytes(), pack_delta(self.cell.delta_since(since))]

    def _exchange(self, host_id: int, finished: bytes) -> list:
        if finished:
            self.cell.release(*unpack_release(finished))
        return self.to_launch.pop(host_id, [])

    # ---------------------------------------------------------------- reads

    def query(self, command: Any) -> Any:
        op = command[0]
        if op == "sync":
            return pack_delta(self.cell.delta_since(int(command[1])))
        if op == "snapshot":
            return pack_delta(self.cell.full())
        if op == "pending":
            return bool(self.to_launch.get(int(command[1])))
        if op == "sample":
            util = self.cell.used().sum(axis=0) / self.cell.capacity.sum(axis=0)
            return [float(util[0]), float(util[1]), self.cell.version]
        raise ValueError(f"unknown cell query {op!r}")

    # ------------------------------------------------------------ snapshots

    def snapshot(self) -> bytes:
        c = self.cell
        return msgpack.packb([
            c.capacity.shape[0], c.capacity.tobytes(), c.free.tobytes(), c.seq.tobytes(), c.version,
            c.changed_at.tobytes(), sorted(self.to_launch.items()), self.commits,
        ], use_bin_type=True)

    def restore(self, data: bytes) -> None:
        n, cap, free, seq, version, changed, pending, commits = msgpack.unpackb(data, raw=False, strict_map_key=False)
        self.cell.capacity = np.frombuffer(cap, dtype=np.float64).reshape(n, -1).copy()
        self.cell.free = np.frombuffer(free, dtype=np.float64).reshape(n, -1).copy()
        self.cell.seq = np.frombuffer(seq, dtype=np.int64).copy()
        self.cell.version = int(version)
        self.cell.changed_at = np.frombuffer(changed, dtype=np.int64).copy()
        self.to_launch = {int(h): [list(x) for x in ls] for h, ls in pending}
        self.commits = int(commits)


class CellMachineFactory:
    """Picklable recipe: every replica builds its own state machine from it."""

    def __init__(self, capacity: np.ndarray, free: np.ndarray, conflict_mode: str, txn_mode: str, machines_per_actor: int) -> None:
        self.args = (capacity, free, conflict_mode, txn_mode, machines_per_actor)

    def __call__(self) -> CellStateMachine:
        return CellStateMachine(*self.args)
