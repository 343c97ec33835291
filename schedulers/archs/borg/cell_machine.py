"""The Borgmaster's cell state as a replicated state machine.

Every replica applies the same commands in log order; the leader's
scheduler decides on its own copy and writes each decision as a ``place``
command, which is validated again when applied (a decision made on a state
that changed meanwhile, or by a deposed leader, is refused, not applied).
Commands carry all their inputs (including emulated time) so applying them
is deterministic; results and snapshots are plain msgpack values.

Commands
* ``("submit", jobs, now)`` -> [[job_id, admitted, reason]]: quota at admission.
* ``("place", job_id, [[task, machine]], [[job, task]] victims, now)`` ->
  [accepted mask, preempted [[job, task, priority, was launched]], status] where status is
  "scheduled", "waiting", "abandoned" or "stale".
* ``("exchange", host, [[job, task, killed]] finished, now)`` -> [launches, kills, reset]
  for that Borglet; a Borglet marked down that polls again is brought back
  up empty and told to start over (reset: stop everything it still runs).
  A preempted task is pending again once its Borglet reports it killed;
  one it reports ended on its own (the kill came too late) is done.
* ``("down", [host], now)`` -> [tasks lost, launches never pulled] (keys): the host
  missed its polls; its tasks go back to their jobs' pending sets, their jobs
  to the front of the queue.
* ``("rejoin", host, now)``: a restarted Borglet, written off as ``down``
  (its next poll brings it back up, empty).

Queries: ``("sample",)`` (``[shares per resource, queued]``), ``("pending", host)``.
"""
from __future__ import annotations

from typing import Any

import msgpack
import numpy as np

from schedlab.schedulers.model.wire import held_launches, withdraw_launch
from schedlab.schedulers.archs.borg.priority import PendingQueue, may_preempt
from schedlab.schedulers.archs.borg.quota import QuotaBook
from schedlab.schedulers.model.resources import DEFAULT, EPS, used_shares

Key = tuple[int, int]


class BorgStateMachine:
    def __init__(self, capacity: np.ndarray, free: np.ndarray, machines_per_host: int,
                 quota: dict[tuple[str, str], list[float]], max_attempts: int, prefill: list | None = None,
                 resources: tuple[str, ...] = DEFAULT) -> None:
        """``prefill``: the standing load, [job, task, machine, request, priority]
        each (already subtracted from ``free``): tracked like any running task,
        so it can be preempted and a machine that comes back is known empty."""
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.free = np.asarray(free, dtype=np.float64).copy()
        self.k = machines_per_host
        self.up = np.ones(self.capacity.shape[0], dtype=bool)
        self.quota = QuotaBook({key: np.asarray(v, dtype=np.float64) for key, v in quota.items()}, resources=resources)
        self.max_attempts = max_attempts
        self.jobs: dict[int, dict] = {}  # queued or running jobs, wire form + user, pending, attempts
        self.queue: PendingQueue[int] = PendingQueue()
        self.running: dict[Key, list] = {}  # key -> [machine, priority, request]
        self.to_launch: dict[int, list[list]] = {}
        self.to_kill: dict[int, list[list]] = {}
        # Killed here and already freed, not yet confirmed dead by their Borglet
        # (key -> host): the task is pending again only once it is, so it never
        # runs on two machines at once, and its end report frees nothing.
        self.evicted: dict[Key, int] = {}
        # Jobs that were fully placed at some point: the replicated truth a
        # final report can rely on when a dead leader's events were lost.
        self.placed: set[int] = set()
        self.admitted: set[int] = set()  # every job ever submitted: a resubmission is a no-op
        # [job, task, machine, now] of every committed placement taken back
        # before or while it ran (machine down, preempted before launch): the
        # replicated record the invariant checker relies on when the leader
        # that wrote it off died before its events were shipped.
        self.written_off: list[list] = []
        for j, t, m, req, prio in prefill or []:
            self.running[(int(j), int(t))] = [int(m), int(prio), list(req)]

    # --------------------------------------------------------------- writes

    def apply(self, command: Any) -> Any:
        op = command[0]
        if op == "submit":
            return self._submit(*command[1:])
        if op == "place":
            return self._place(*command[1:])
        if op == "exchange":
            return self._exchange(*command[1:])
        if op == "down":
            return self._down(*command[1:])
        if op == "rejoin":
            return self._down([int(command[1])], float(command[2]))
        raise ValueError(f"unknown Borg command {op!r}")

    def _submit(self, jobs: list[dict], now: float) -> list:
        out = []
        for j in jobs:
            if j["job_id"] in self.admitted:
                # A batch resent after its front end died mid-admission.
                out.append([j["job_id"], True, "already submitted"])
                continue
            self.admitted.add(j["job_id"])
            ok, reason = self.quota.admit(j["user"], j["priority"], np.asarray(j["request"]), len(j["durations"]))
            if ok:
                job = dict(j, pending=list(range(len(j["durations"]))), attempts=0, done=0)
                self.jobs[j["job_id"]] = job
                self.queue.push(j["job_id"], j["priority"], j["user"])
            out.append([j["job_id"], ok, reason])
        return out

    def _requeue(self, job_id: int, front: bool) -> None:
        job = self.jobs[job_id]
        if job_id not in self.queue:
            self.queue.push(job_id, job["priority"], job["user"], front=front)

    def _evict(self, key: Key, now: float) -> list | None:
        """Take a running task off its machine; its job gets it back as pending."""
        entry = self.running.pop(key, None)
        if entry is None:
            return None
        machine, priority, request = entry
        self.free[machine] += np.asarray(request)
        host = machine // self.k
        if withdraw_launch(self.to_launch, host, key):
            # Never reached its Borglet: nothing to kill, pending again at once.
            self.written_off.append([key[0], key[1], machine, now])
            self._repend(key)
            return [*entry, False]
        self.to_kill.setdefault(host, []).append([key[0], key[1]])
        self.evicted[key] = host
        return [*entry, True]

    def _repend(self, key: Key) -> None:
        job = self.jobs.get(key[0])
        if job is not None:
            job["pending"].append(key[1])
            self._requeue(key[0], front=True)

    def _place(self, job_id: int, placements: list, victims: list, now: float) -> list:
        job = self.jobs.get(job_id)
        if job is None or job_id not in self.queue:
            return [[False] * len(placements), [], "stale"]
        preempted = []
        for vj, vt in victims:
            entry = self.running.get((vj, vt))
            if entry is not None and may_preempt(job["priority"], entry[1]):
                evicted = self._evict((vj, vt), now)
                assert evicted is not None
                preempted.append([vj, vt, entry[1], evicted[3]])
        req = np.asarray(job["request"], dtype=np.float64)
        accepted = []
        pending = set(job["pending"])
        for task, machine in placements:
            ok = task in pending and bool(self.up[machine]) and bool(np.all(self.free[machine] + EPS >= req))
            if ok:
                self.free[machine] -= req
                self.running[(job_id, task)] = [machine, job["priority"], job["request"]]
                d = job["durations"][task]
                d = float("inf") if d < 0 else d  # a service task runs until the end
                self.to_launch.setdefault(machine // self.k, []).append([job_id, task, machine, job["request"], d, now])
                pending.discard(task)
            accepted.append(ok)
        job["pending"] = sorted(pending)
        self.queue.remove(job_id)
        if not pending:
            self.placed.add(job_id)
            return [accepted, preempted, "scheduled"]
        job["attempts"] += 1
        if job["attempts"] >= self.max_attempts:
            self.quota.refund(job["user"], job["priority"], req, len(job["pending"]))
            return [accepted, preempted, "abandoned"]
        self._requeue(job_id, front=False)  # back of its user's turn
        return [accepted, preempted, "waiting"]

    def _exchange(self, host: int, finished: list, now: float) -> list:
        kills = self.to_kill.pop(host, [])
        lo, hi = host * self.k, (host + 1) * self.k
        if not self.up[lo:hi].all():
            # A Borglet we gave up on is back: its machines are empty to us,
            # and whatever it still runs was rescheduled elsewhere. It starts
            # over empty (reset) rather than killing task by task: a kill's
            # confirmation would arrive after the same task may have been
            # placed there again, and free the new copy's resources.
            self.up[lo:hi] = True
            self.free[lo:hi] = self.capacity[lo:hi]
            return [self.to_launch.pop(host, []), kills, True]
        for j, t, killed in finished:
            if (j, t) in self.evicted:
                # Confirmed dead (its resources were freed at the eviction).
                # Killed: pending again. Ended on its own before the kill
                # reached it: done, like any finished task; placing it again
                # would run a finished task a second time.
                del self.evicted[(j, t)]
                if killed:
                    self._repend((j, t))
                else:
                    self._done(j)
                continue
            entry = self.running.get((j, t))
            if entry is not None and lo <= entry[0] < hi:
                del self.running[(j, t)]
                self.free[entry[0]] += np.asarray(entry[2])
                self._done(j)
        return [self.to_launch.pop(host, []), kills, False]

    def _done(self, job_id: int) -> None:
        """One more task of ``job_id`` ran to its end; the last one ends the
        job and brings its quota charge back."""
        job = self.jobs.get(job_id)
        if job is not None:
            job["done"] += 1
            if job["done"] >= len(job["durations"]):
                self.quota.refund(job["user"], job["priority"], np.asarray(job["request"]), len(job["durations"]))
                del self.jobs[job_id]

    def _down(self, hosts: list[int], now: float) -> list:
        """[[[job, task]] of tasks lost, [[job, task]] of launches the host never pulled]."""
        lost: list[list[int]] = []
        unpulled: list[list[int]] = []
        for host in hosts:
            lo, hi = host * self.k, (host + 1) * self.k
            if not self.up[lo:hi].any():
                continue
            self.up[lo:hi] = False
            withdrawn = self.to_launch.pop(host, [])
            never_pulled = {(ln[0], ln[1]) for ln in withdrawn}
            self.written_off += [[ln[0], ln[1], ln[2], now] for ln in withdrawn]
            unpulled += [[j, t] for j, t in sorted(never_pulled)]
            keys = [key for key, e in self.running.items() if lo <= e[0] < hi]
            self.written_off += [[j, t, self.running[(j, t)][0], now] for j, t in keys if (j, t) not in never_pulled]
            for key in keys:
                self._evict(key, now)
            # Nobody will confirm those kills now: the tasks are pending again
            # (if the host comes back, it starts over empty).
            for key in [k for k, h in self.evicted.items() if h == host]:
                del self.evicted[key]
                self._repend(key)
            self.to_kill.pop(host, None)
            self.free[lo:hi] = 0.0
            lost += [[j, t] for j, t in keys if (j, t) not in never_pulled]
        return [lost, unpulled]

    def waiting(self) -> list[int]:
        """Borglets something waits for: launches or kills not pulled, or a
        reset (written off); the leader rings them (``actors.common.doorbell``)."""
        hosts = [h for h, ls in self.to_launch.items() if ls] + [h for h, ks in self.to_kill.items() if ks]
        if not self.up.all():
            hosts += sorted(set((np.flatnonzero(~self.up) // self.k).tolist()))
        return hosts

    # ---------------------------------------------------------------- reads

    def query(self, command: Any) -> Any:
        op = command[0]
        if op == "pending":
            h = int(command[1])
            lo, hi = h * self.k, (h + 1) * self.k
            return bool(self.to_launch.get(h) or self.to_kill.get(h)) or not self.up[lo:hi].all()
        if op == "sample":
            cap = self.capacity[self.up].sum(axis=0)
            used = (self.capacity[self.up] - self.free[self.up]).sum(axis=0)
            return [used_shares(used, cap), len(self.queue)]
        raise ValueError(f"unknown Borg query {op!r}")

    def running_by_machine(self) -> dict[int, list[tuple[Key, int, np.ndarray]]]:
        out: dict[int, list[tuple[Key, int, np.ndarray]]] = {}
        for key, (m, prio, req) in self.running.items():
            out.setdefault(m, []).append((key, prio, np.asarray(req, dtype=np.float64)))
        return out

    # ------------------------------------------------------------ snapshots

    def held_launches(self) -> list[list]:
        """Launches committed and not yet pulled by their hosts."""
        return held_launches(self.to_launch)

    def snapshot(self) -> bytes:
        queue = [[j, self.jobs[j]["priority"], self.jobs[j]["user"]] for j in self.queue.order()]
        return msgpack.packb([
            self.capacity.shape[0], self.free.tobytes(), self.up.tobytes(),
            [[u, b, v.tolist()] for (u, b), v in self.quota.used.items()],
            list(self.jobs.values()), queue,
            [[j, t, *e] for (j, t), e in self.running.items()],
            sorted(self.to_launch.items()), sorted(self.to_kill.items()),
            sorted([j, t, h] for (j, t), h in self.evicted.items()), sorted(self.placed),
            sorted(self.admitted), self.written_off,
        ], use_bin_type=True)

    def restore(self, data: bytes) -> None:
        n, free, up, used, jobs, queue, running, launch, kill, evicted, placed, admitted, written_off = msgpack.unpackb(
            data, raw=False, strict_map_key=False)
        self.written_off = [list(w) for w in written_off]
        self.placed = {int(j) for j in placed}
        self.admitted = {int(j) for j in admitted}
        self.evicted = {(int(j), int(t)): int(h) for j, t, h in evicted}
        self.free = np.frombuffer(free, dtype=np.float64).reshape(n, -1).copy()
        self.up = np.frombuffer(up, dtype=bool).copy()
        self.quota.used = {(u, b): np.asarray(v, dtype=np.float64) for u, b, v in used}
        self.jobs = {j["job_id"]: j for j in jobs}
        self.queue = PendingQueue()
        for j, prio, user in queue:
            self.queue.push(j, prio, user)
        self.running = {(j, t): [m, p, r] for j, t, m, p, r in running}
        self.to_launch = {int(h): ls for h, ls in launch}
        self.to_kill = {int(h): ls for h, ls in kill}


class BorgMachineFactory:
    def __init__(self, *args: Any) -> None:
        self.args = args

    def __call__(self) -> BorgStateMachine:
        return BorgStateMachine(*self.args)
