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

from schedlab.schedulers.model.wire import held_launches, pack_delta, unpack_claims, unpack_release, unpack_release_keys, unpack_tasks
from schedlab.schedulers.shared_state.commit import ConflictMode, TxnMode
from schedlab.schedulers.shared_state.cell import SharedCell
from schedlab.schedulers.model.resources import used_shares


class CellStateMachine:
    """Commands:

    * ``("commit", claims, since, job_id, tasks, now[, n_tasks[, gang]])`` -> ``[accepted bytes, delta bytes]``
      (``n_tasks``: the job's task count, so the cell knows when the job is done; ``gang``: the
      transaction is all-or-nothing whatever the cell's transaction mode)
    * ``("exchange", host_id, finished)`` -> launches for that host (each handed out once);
      to a host marked down, ``{"reset": True, "launches": []}``: it comes back empty
      (whatever it still ran was written off and placed again elsewhere)
    * ``("down", [host], now)`` -> [tasks lost, launches never pulled] as (job, task) keys:
      the hosts' machines offer nothing until they poll again
    * ``("rejoin", host, now)`` -> like ``down``, then the host's machines are up and empty
      (a restarted host announcing itself)
    * ``("recover", [job])`` -> [lost cursor, {job: [task indices placed and not lost]}, [job done]]
      (a restarted scheduler: the cursor is where its watch for lost tasks starts; a job
      with no task placed is left out; a done job, every task finished, is listed apart)
    * ``("lost", cursor)`` -> [next cursor, [[job, task], ...]]: tasks lost since ``cursor``

    Queries (read-only, no log entry): ``("sync", version)`` -> delta bytes,
    ``("snapshot",)`` -> full delta bytes, ``("pending", host_id)`` -> bool.
    """

    def __init__(self, capacity: np.ndarray, free: np.ndarray, conflict_mode: str, txn_mode: str, machines_per_actor: int) -> None:
        self.cell = SharedCell(capacity, free)
        self.conflict_mode = ConflictMode(conflict_mode)
        self.txn_mode = TxnMode(txn_mode)
        self.k = machines_per_actor
        self.to_launch: dict[int, list[list]] = {}
        self._sampled: tuple[tuple, list] | None = None  # the last sample, by (version, down hosts)
        self.commits = 0
        self.where: dict[tuple[int, int], int] = {}  # committed task -> machine, until released or lost
        # What a restarted scheduler needs to rebuild its queue. Like Omega's
        # cell state, it holds jobs in flight, not the run's history: a job
        # whose every task finished leaves ``placed`` for ``done`` (an id), so
        # the state (and every replica's snapshot and restore) grows with the
        # work in the cell, not with the run's length.
        self.placed: dict[int, set[int]] = {}  # job -> its tasks placed and not lost, while the job runs
        self.total: dict[int, int] = {}  # job -> its task count (from its commits), while it runs
        self.finished: dict[int, set[int]] = {}  # job -> its tasks that ended (not killed), while it runs
        self.done: set[int] = set()  # jobs whose every task finished
        self.lost: list[list[int]] = []  # (job, task) written off with a failed machine, in order
        self.down: set[int] = set()  # hosts marked down, until they poll again

    # --------------------------------------------------------------- writes

    def apply(self, command: Any) -> Any:
        op = command[0]
        if op == "commit":
            return self._commit(*command[1:])
        if op == "exchange":
            return self._exchange(*command[1:])
        if op == "down":
            return self._down(*command[1:])
        if op == "read":
            # A read through the log, so linearizable: for a decision a stale
            # leader's answer would spoil (a restarted scheduler's recovery).
            return self.query(command[1])
        if op == "rejoin":
            # A restarted host, empty: whatever it ran is written off now and
            # its machines offer their whole capacity again.
            host, now = int(command[1]), float(command[2])
            result = self._down([host], now)
            self.down.discard(host)
            self.cell.set_available(self._machines(host), up=True)
            return result
        raise ValueError(f"unknown cell command {op!r}")

    def _commit(self, claims: bytes, since: int, job_id: int, tasks: bytes, now: float, n_tasks: int | None = None,
                gang: bool = False) -> list:
        c = unpack_claims(claims)
        result = self.cell.commit(c, self.conflict_mode, TxnMode.ALL_OR_NOTHING if gang else self.txn_mode)
        self.commits += 1
        if result.committed:
            task_idx, durations = unpack_tasks(tasks)
            for i in np.flatnonzero(result.accepted).tolist():
                m, task = int(c.machine[i]), int(task_idx[i])
                self.to_launch.setdefault(m // self.k, []).append(
                    [job_id, task, m, c.request[i].tolist(), float(durations[i]), float(now)]
                )
                self.where[(job_id, task)] = m
                self.placed.setdefault(job_id, set()).add(task)
            if n_tasks is not None:
                self.total[job_id] = int(n_tasks)
        return [result.accepted.tobytes(), pack_delta(self.cell.delta_since(since))]

    def _exchange(self, host_id: int, finished: bytes) -> Any:
        if host_id in self.down:
            # Back after being written off: what it reports belongs to tasks
            # already placed again elsewhere; it starts over empty.
            self.down.discard(host_id)
            self.cell.set_available(self._machines(host_id), up=True)
            return {"reset": True, "launches": []}
        if finished:
            self.cell.release(*unpack_release(finished))
            for job, task, killed in unpack_release_keys(finished):
                self.where.pop((job, task), None)
                if not killed and job in self.total:
                    self._ended(job, task)
        return self.to_launch.pop(host_id, [])

    def _ended(self, job: int, task: int) -> None:
        """A task of a job in flight finished; the job is done with its last."""
        ended = self.finished.setdefault(job, set())
        ended.add(task)
        if len(ended) >= self.total[job]:
            self.done.add(job)
            for held in (self.placed, self.total, self.finished):
                held.pop(job, None)

    def _machines(self, host: int) -> np.ndarray:
        return np.arange(host * self.k, min((host + 1) * self.k, self.cell.capacity.shape[0]))

    def _down(self, hosts: list[int], now: float) -> list:
        lost: list[list] = []
        unpulled: list[list] = []
        for host in hosts:
            if host in self.down:
                continue
            self.down.add(host)
            machines = self._machines(host)
            self.cell.set_available(machines, up=False)
            lo, hi = int(machines[0]), int(machines[-1]) + 1
            gone = [key for key, m in self.where.items() if lo <= m < hi]
            never_pulled = {(x[0], x[1]) for x in self.to_launch.pop(host, [])}
            for key in gone:
                del self.where[key]
                self.placed.get(key[0], set()).discard(key[1])
                self.lost.append([key[0], key[1]])
                (unpulled if key in never_pulled else lost).append([key[0], key[1]])
        return [lost, unpulled]

    # ---------------------------------------------------------------- reads

    def query(self, command: Any) -> Any:
        op = command[0]
        if op == "sync":
            return pack_delta(self.cell.delta_since(int(command[1])))
        if op == "snapshot":
            return pack_delta(self.cell.full())
        if op == "pending":
            h = int(command[1])
            return bool(self.to_launch.get(h)) or h in self.down
        if op == "recover":
            asked = [int(j) for j in command[1]]
            return [len(self.lost), {j: sorted(self.placed[j]) for j in asked if self.placed.get(j)},
                    [j for j in asked if j in self.done]]
        if op == "lost":
            cursor = int(command[1])
            return [len(self.lost), self.lost[cursor:]]
        if op == "sample":
            # Kept while nothing changed: an idle cell is sampled for free.
            key = (self.cell.version, tuple(sorted(self.down)))
            if self._sampled is None or self._sampled[0] != key:
                up = np.ones(self.cell.capacity.shape[0], dtype=bool)
                for h in self.down:
                    up[self._machines(h)] = False
                self._sampled = (key, [used_shares(self.cell.used()[up].sum(axis=0), self.cell.capacity[up].sum(axis=0)),
                                       self.cell.version])
            return list(self._sampled[1])
        raise ValueError(f"unknown cell query {op!r}")

    def waiting(self) -> list[int]:
        """Hosts something waits for: launches not pulled, or a reset (a
        host written off); their keeper rings them (``actors.common.doorbell``)."""
        return [h for h, ls in self.to_launch.items() if ls] + sorted(self.down)

    # ------------------------------------------------------------ snapshots

    def held_launches(self) -> list[list]:
        """Launches committed and not yet pulled by their hosts."""
        return held_launches(self.to_launch)

    def snapshot(self) -> bytes:
        c = self.cell
        return msgpack.packb([
            c.capacity.shape[0], c.capacity.tobytes(), c.free.tobytes(), c.seq.tobytes(), c.version,
            c.changed_at.tobytes(), sorted(self.to_launch.items()), self.commits,
            [[j, t, m] for (j, t), m in self.where.items()], [[j, sorted(ts)] for j, ts in self.placed.items()],
            self.lost, sorted(self.down), sorted(self.total.items()), [[j, sorted(ts)] for j, ts in self.finished.items()],
            sorted(self.done),
        ], use_bin_type=True)

    def restore(self, data: bytes) -> None:
        n, cap, free, seq, version, changed, pending, commits, where, placed, lost, down, total, ended, done = msgpack.unpackb(
            data, raw=False, strict_map_key=False)
        self.cell.capacity = np.frombuffer(cap, dtype=np.float64).reshape(n, -1).copy()
        self.cell.free = np.frombuffer(free, dtype=np.float64).reshape(n, -1).copy()
        self.cell.seq = np.frombuffer(seq, dtype=np.int64).copy()
        self.cell.version = int(version)
        self.cell.changed_at = np.frombuffer(changed, dtype=np.int64).copy()
        self.to_launch = {int(h): [list(x) for x in ls] for h, ls in pending}
        self.commits = int(commits)
        self.where = {(int(j), int(t)): int(m) for j, t, m in where}
        self.placed = {int(j): set(ts) for j, ts in placed}
        self.lost = lost  # msgpack's lists already: a copy per restore cost a quarter of a long soak's CPU
        self.down = set(down)
        self.total = {int(j): int(k) for j, k in total}
        self.finished = {int(j): set(ts) for j, ts in ended}
        self.done = set(done)
        self._sampled = None


class CellMachineFactory:
    """Picklable recipe: every replica builds its own state machine from it."""

    def __init__(self, capacity: np.ndarray, free: np.ndarray, conflict_mode: str, txn_mode: str, machines_per_actor: int) -> None:
        self.args = (capacity, free, conflict_mode, txn_mode, machines_per_actor)

    def __call__(self) -> CellStateMachine:
        return CellStateMachine(*self.args)
