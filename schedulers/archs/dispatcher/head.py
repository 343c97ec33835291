"""The head node of a central dispatcher: its queue, its view of the
workers, and every decision it makes. Pure: no Ray, no clock (times are
passed in), randomness only through the Generator it is given.

The model is the lecture's "typical cluster scheduler": one head node
receives every job into a queue and hands tasks to worker machines when
they have room. Two queue disciplines:

* ``fifo``: strict arrival order. Only the job at the head is tried; its
  tasks start as room appears, and no job behind it starts before it has
  every task placed. With no preemption, a job at the head that does not
  fit (a big one, or a cell full of long tasks) holds back every job behind
  it, even ones that would fit: head-of-line blocking.
* ``fair``: one FIFO queue per user (a job class is a user here), served in
  round robin, one job's turn per user, as the Octopus scheduler's fair
  option does; a user whose head job does not fit is passed over for this
  round, so one user's big job holds back only that user's own queue.

Within a turn, the job's pending tasks go where the placement policy (any
of ``schedulers.placement``: first fit, round-robin filling, ...) finds
room, in task order, stopping at the first task that fits nowhere.

Workers report back: finished tasks free their resources; a worker silent
too long is written off and its tasks queued again (at the front of their
job); a restarted worker or a worker back after a write-off starts empty.
After the head itself restarts it knows nothing: it rebuilds its view
from the workers' registrations (what each runs and finished lately) and
its queue from the submitter's copy of every job routed to it.

The head's view of free resources, two ways:

* ``reported`` (the real head): a task's resources come back when its
  worker reports it finished, at the worker's next poll. The FIFO queue is
  already a global queue over every slot (a task starts as soon as the
  head sees room anywhere, an M/G/n queue for one-slot tasks), but a slot
  sits idle from a task's end to the report, and while the head thinks.
* ``omniscient`` (the reference Sparrow is measured against: Ousterhout et
  al., SOSP 2013): the head knows every task's exact duration, so a slot is
  free for the next task at the very end of the one before (``release_due``)
  and the next task starts then. With a FIFO queue and no think time each
  task starts where it starts earliest, in arrival order: the greedy
  earliest-start schedule of ``schedulers.archs.sparrow.omniscient``. The
  worker still learns of the launch at its next poll; the launch carries
  its start time (the worker backdates it) and is handed out only once the
  worker's own account, from its reports, has room (``room``), so a worker
  never holds two tasks in one slot.
"""
from __future__ import annotations

import collections
import heapq
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from schedlab.schedulers.placement.device_claims import DeviceView, place
from schedlab.schedulers.placement.device_claims import fits as device_fits
from schedlab.schedulers.model.host_roll import HostRoll
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.model.resources import fits, used_shares
from schedlab.schedulers.model.wire import held_launches

QUEUES = ("fifo", "fair")
VIEWS = ("reported", "omniscient")
TaskKey = tuple[int, int]
# A launch as machine hosts take it: [job, task, machine, request, duration, start].
Launch = list


@dataclass
class JobProgress:
    job: Job
    pending: collections.deque[int]  # task indices still to place, in order
    placed: set[int] = field(default_factory=set)
    attempted: bool = False  # its first turn came (the wait-time clock stops)
    scheduled: bool = False  # every task placed once (it may lose some later)

    @property
    def user(self) -> str:
        return self.job.job_class


@dataclass(frozen=True)
class Turn:
    """What one dispatch decided: which tasks of which job go where."""

    job: JobProgress
    placed: list[tuple[int, int]]  # (task, machine)
    now_scheduled: bool  # this turn placed the job's last pending task for the first time


class HeadNode:
    def __init__(self, capacity: np.ndarray, free: np.ndarray, machines_per_host: int, queue: str,
                 policy: Callable, rng: np.random.Generator, registered: bool = True, view: str = "reported",
                 devices: DeviceView | None = None) -> None:
        """``free``: what the cell has free at the start (the prefill already
        runs). ``registered``: False for a restarted head, which trusts no
        worker until it registered (its view is rebuilt from theirs).
        ``view``: ``reported`` or ``omniscient`` (see the module's doc)."""
        if queue not in QUEUES:
            raise ValueError(f"queue must be one of {QUEUES}")
        if view not in VIEWS:
            raise ValueError(f"view must be one of {VIEWS}")
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.free = np.asarray(free, dtype=np.float64).copy()
        # The workers' own account: freed only by their reports, taken when a
        # launch is handed out. The omniscient view hands a launch out only
        # where this has room (its ``free`` runs ahead of the reports).
        self.room = self.free.copy()
        self.omniscient = view == "omniscient"
        self.ends: list[tuple[float, int, int, int]] = []  # heap of (end, job, task, machine): omniscient
        self.foreseen: set[TaskKey] = set()  # ended by the head's clock, not reported yet: freed already
        self.k = machines_per_host
        self.hosts = -(-self.capacity.shape[0] // self.k)
        self.queue_kind = queue
        self.policy = policy
        self.rng = rng
        # A cell with devices: a task asking for some is placed by ``devices``' policy, its
        # launch naming the devices (its request row); kept per task to free them exactly.
        self.devices = devices
        self.rows: dict[TaskKey, np.ndarray] = {}
        # A restarted head uses no worker it has not heard from: what its
        # machines hold is unknown until the worker registers.
        self.up = np.full(self.capacity.shape[0], registered, dtype=bool)
        self.roll = HostRoll.of(self.hosts, trusted=registered)  # which workers it knows, which are written off
        self.jobs: dict[int, JobProgress] = {}
        self.queues: dict[str, collections.deque[int]] = collections.defaultdict(collections.deque)
        self.users: list[str] = []  # round-robin order (fair)
        self.next_user = 0
        self.running: dict[TaskKey, int] = {}  # task -> machine, jobs of ours only
        self.finished: set[TaskKey] = set()  # reported finished (a recovered job's done tasks)
        self.to_launch: dict[int, list[Launch]] = collections.defaultdict(list)
        self.awaiting_recovery: list[Job] = []

    @property
    def down(self) -> set[int]:
        """Workers written off (back only by resetting or rejoining)."""
        return self.roll.down

    # ------------------------------------------------------------- the queue

    def submit(self, jobs: list[Job]) -> list[Job]:
        """Queue new jobs (a job already known is ignored: it was recovered
        or sent twice around a restart); returns the ones queued."""
        new = [j for j in jobs if j.job_id not in self.jobs]
        for j in new:
            self._enqueue(JobProgress(j, collections.deque(range(j.tasks))))
        return new

    def _enqueue(self, jp: JobProgress) -> None:
        self.jobs[jp.job.job_id] = jp
        user = jp.user if self.queue_kind == "fair" else ""
        if user not in self.users:
            self.users.append(user)
        self.queues[user].append(jp.job.job_id)

    def recover(self, jobs: list[Job]) -> None:
        """A restarted head's queue: every job routed to its predecessor.
        Held until every worker has registered (or been written off): a task
        running on a worker not yet heard from would otherwise run twice."""
        self.awaiting_recovery.extend(j for j in jobs if j.job_id not in self.jobs)
        self.try_recover()

    def try_recover(self) -> list[JobProgress]:
        """Requeue the recovered jobs once the view is complete: a task
        running or finished on some worker is not pending. Returns the jobs
        that need nothing more (already fully placed)."""
        if not self.awaiting_recovery or not self.roll.complete():
            return []
        done = []
        for job in self.awaiting_recovery:
            if job.job_id in self.jobs:
                continue
            have = {t for t in range(job.tasks) if (job.job_id, t) in self.running or (job.job_id, t) in self.finished}
            jp = JobProgress(job, collections.deque(t for t in range(job.tasks) if t not in have), placed=have,
                             attempted=bool(have), scheduled=len(have) == job.tasks)
            if jp.pending:
                self._enqueue(jp)
            else:
                self.jobs[job.job_id] = jp
                done.append(jp)
        self.awaiting_recovery = []
        return done

    def queued(self) -> int:
        return sum(len(q) for q in self.queues.values())

    def heads(self) -> list[JobProgress]:
        """Whose turn it is, in order: the one head (fifo), or each user's
        head from the next user in the round (fair)."""
        if self.queue_kind == "fifo":
            q = self.queues[""]
            return [self.jobs[q[0]]] if q else []
        n = len(self.users)
        order = [self.users[(self.next_user + i) % n] for i in range(n)]
        return [self.jobs[self.queues[u][0]] for u in order if self.queues[u]]

    def turn(self) -> JobProgress | None:
        """The job to dispatch now: the first head with a task that fits
        somewhere; None when the queue is empty or every head is stuck (the
        head waits for room: no job behind a stuck head is tried)."""
        for jp in self.heads():
            if self.fits_now(jp):
                return jp
        return None

    def first_turn(self) -> list[JobProgress]:
        """Heads reaching their first turn (tried for the first time), marked
        now: their wait to first attempt ends here, fitting or not."""
        out = [jp for jp in self.heads() if not jp.attempted]
        for jp in out:
            jp.attempted = True
        return out

    def fits_now(self, jp: JobProgress) -> bool:
        req = jp.job.request_vector()
        if self.devices is not None and self.devices.asks(req):
            return bool(jp.pending) and bool((device_fits(self.devices, self.free, req, jp.job.models) & self.up).any())
        return bool(jp.pending) and bool((fits(self.free, req) & self.up).any())

    def blocked(self) -> bool:
        """Head-of-line blocking: every head is stuck while a job further
        back has a task that would fit now."""
        heads = self.heads()
        if not heads or any(self.fits_now(jp) for jp in heads):
            return False
        ids = {jp.job.job_id for jp in heads}
        room = self.free[self.up]
        tried: set[tuple[float, ...]] = set()  # one check per distinct request shape
        for q in self.queues.values():
            for j in q:
                r = self.jobs[j].job.request
                if j not in ids and r not in tried:
                    tried.add(r)
                    if fits(room, np.asarray(r, dtype=np.float64)).any():
                        return True
        return False

    # -------------------------------------------------------------- dispatch

    def dispatch(self, jp: JobProgress, now: float) -> Turn:
        """Place what fits of ``jp``'s pending tasks now, in task order,
        stopping at the first that fits nowhere; queue the launches for their
        workers. The job leaves the queue once every task is placed; in the
        fair queue the next user gets the next turn."""
        req = jp.job.request_vector()
        view = np.where(self.up[:, None], self.free, 0.0)  # machines down hold nothing
        rows = None
        if self.devices is not None and self.devices.asks(req):
            machines, rows = place(self.devices, view, req, jp.job.models, len(jp.pending), self.rng)
        else:
            machines = self.policy(view, req, len(jp.pending), self.rng)
        placed: list[tuple[int, int]] = []
        for i, m in enumerate(machines.tolist()):
            if m < 0:
                break
            task = jp.pending.popleft()
            row = req if rows is None else rows[i]
            if rows is not None:
                self.rows[(jp.job.job_id, task)] = row
            self.free[m] -= row
            self.running[(jp.job.job_id, task)] = m
            jp.placed.add(task)
            duration = jp.job.durations[task]
            self.to_launch[m // self.k].append([jp.job.job_id, task, m, row.tolist(), duration, now])
            if self.omniscient and math.isfinite(duration):
                heapq.heappush(self.ends, (now + duration, jp.job.job_id, task, m))
            placed.append((task, m))
        first_time = not jp.pending and not jp.scheduled
        if not jp.pending:
            jp.scheduled = True
            self._dequeue(jp)
        if self.queue_kind == "fair" and placed:
            self.next_user = (self.users.index(jp.user) + 1) % len(self.users)  # the next user's turn
        return Turn(jp, placed, first_time)

    def _dequeue(self, jp: JobProgress) -> None:
        q = self.queues[jp.user if self.queue_kind == "fair" else ""]
        if jp.job.job_id in q:
            q.remove(jp.job.job_id)

    # --------------------------------------------------------------- workers

    def _machines(self, host: int) -> range:
        return range(host * self.k, min((host + 1) * self.k, self.capacity.shape[0]))

    def exchange(self, host: int, machines: np.ndarray, requests: np.ndarray,
                 keys: list[tuple[int, int, bool]]) -> list[Launch] | dict:
        """A worker's poll: its finished tasks' resources come back, the
        launches queued for it go out (each once). A worker written off
        meanwhile is told to reset (it comes back empty); one the head does
        not know (the head restarted) is asked to register first. Ends its
        registration already counted are not given back twice (HostRoll)."""
        greeting = self.roll.greet(host)
        if greeting is not None:
            if greeting.get("reset"):
                self._machines_up(host, empty=True)
            return greeting
        back = self.roll.news(host, keys)
        machines = np.asarray(machines, dtype=np.int64)
        requests = np.asarray(requests, dtype=np.float64)
        np.add.at(self.room, machines[back], requests[back])
        # Freed already when the head's clock saw them end (omniscient view).
        unforeseen = [i for i in back if (keys[i][0], keys[i][1]) not in self.foreseen]
        np.add.at(self.free, machines[unforeseen], requests[unforeseen])
        for job, task, killed in (keys[i] for i in back):
            self.foreseen.discard((job, task))
            self.rows.pop((job, task), None)
            if self.running.get((job, task), -1) // self.k == host:
                del self.running[(job, task)]
                if not killed:
                    self.finished.add((job, task))
        return self._hand_out(host)

    def waiting(self) -> list[int]:
        """Workers something waits for: launches decided for them, or a
        reset (written off); the head rings them (``actors.common.doorbell``)."""
        return sorted({h for h, ls in self.to_launch.items() if ls} | self.down)

    def held_launches(self) -> list[Launch]:
        """Every launch decided and not handed out yet, host by host: what
        the head still holds for workers that have not polled for it."""
        return held_launches(self.to_launch)

    def _hand_out(self, host: int) -> list[Launch]:
        """The launches decided for ``host``, in order. The omniscient view
        keeps back those the worker has no room for yet by its own reports
        (the task before it in that slot ended by the head's clock but the
        worker has not said so): they go at a later poll, their start time
        unchanged. A launch held back holds back later ones on its machine."""
        launches = self.to_launch.pop(host, [])
        out: list[Launch] = []
        keep: list[Launch] = []
        held: set[int] = set()
        for ln in launches:
            m, req = ln[2], np.asarray(ln[3], dtype=np.float64)
            if self.omniscient and (m in held or not fits(self.room[m:m + 1], req)[0]):
                held.add(m)
                keep.append(ln)
                continue
            self.room[m] -= req
            out.append(ln)
        if keep:
            self.to_launch[host] = keep
        return out

    # ------------------------------------------------------- the omniscient clock

    def release_due(self, now: float) -> int:
        """Omniscient view: free every task of ours whose end (its start plus
        its exact duration) is not after ``now``; returns how many."""
        n = 0
        while self.ends and self.ends[0][0] <= now:
            _end, job, task, m = heapq.heappop(self.ends)
            key = (job, task)
            if self.running.get(key) != m or key in self.foreseen:
                continue  # reported, written off or placed again meanwhile
            self.foreseen.add(key)
            self.free[m] += self.rows.get(key, self.jobs[job].job.request_vector())
            n += 1
        return n

    def next_end(self) -> float | None:
        """When the next task of ours ends by the head's clock (omniscient
        view; None when nothing is running or the view is reported)."""
        while self.ends:
            _end, job, task, m = self.ends[0]
            if self.running.get((job, task)) == m and (job, task) not in self.foreseen:
                return self.ends[0][0]
            heapq.heappop(self.ends)
        return None

    def register(self, host: int, running: list[tuple[int, int, int, list[float]]], finished: list[TaskKey], *,
                 unreported: list[TaskKey]) -> None:
        """A worker telling a restarted head what it runs and finished
        lately: the head's view of that worker is exactly this.
        ``unreported``: the ends it has not delivered yet, which its next
        polls repeat (already free in this view: not given back twice)."""
        ms = list(self._machines(host))
        self.free[ms] = self.capacity[ms]
        for job, task, m, req in running:
            self.free[m] -= np.asarray(req, dtype=np.float64)
            if job >= 0:
                self.running[(job, task)] = m
        self.room[ms] = self.free[ms]  # the worker's account is exactly its report
        self._forget(ms)
        for job, task, m, req, *_ in self.to_launch.get(host, []):  # decided, not handed out yet: still taken
            if (job, task) not in {(j, t) for j, t, *_ in running}:
                self.free[m] -= np.asarray(req, dtype=np.float64)
        self.finished.update((j, t) for j, t in finished)
        self.roll.register(host, unreported)
        self.up[ms] = True

    def write_off(self, hosts: list[int]) -> tuple[list[list[int]], list[list[int]]]:
        """Workers gone (silent too long): their machines are down, their
        tasks queued again at the front of their jobs. Returns (lost: were
        running, unpulled: never handed out), as [job, task] lists."""
        lost: list[list[int]] = []
        unpulled: list[list[int]] = []
        for host in hosts:
            if not self.roll.write_off(host):
                continue
            never = {(ln[0], ln[1]) for ln in self.to_launch.pop(host, [])}
            ms = self._machines(host)
            self.up[ms.start:ms.stop] = False
            self._forget(ms)
            for key in [k for k, m in self.running.items() if m in ms]:
                del self.running[key]
                (unpulled if key in never else lost).append([key[0], key[1]])
                self._requeue(key)
        return lost, unpulled

    def rejoin(self, host: int) -> tuple[list[list[int]], list[list[int]]]:
        """A restarted worker's first word: what it ran died with its
        predecessor (written off); it is back at once, empty."""
        out = self.write_off([host])
        self.roll.back(host)
        self._machines_up(host, empty=True)
        return out

    def _machines_up(self, host: int, empty: bool) -> None:
        ms = list(self._machines(host))
        self.up[ms] = True
        if empty:
            self.free[ms] = self.capacity[ms]
            self.room[ms] = self.capacity[ms]

    def _forget(self, machines: range | list[int]) -> None:
        """Tasks on these machines the head's clock saw end: the worker's
        report (or its write-off) settles them now, not the clock."""
        ms = set(machines)
        self.foreseen = {key for key in self.foreseen if self.running.get(key, -1) not in ms}

    def _requeue(self, key: TaskKey) -> None:
        jp = self.jobs.get(key[0])
        if jp is None:
            return
        jp.placed.discard(key[1])
        was_queued = bool(jp.pending) or not jp.scheduled
        jp.pending = collections.deque(sorted([*jp.pending, key[1]]))  # tasks stay in order
        if not was_queued:  # back in the queue, at the front: its tasks ran before
            user = jp.user if self.queue_kind == "fair" else ""
            if user not in self.users:
                self.users.append(user)
            self.queues[user].appendleft(jp.job.job_id)

    # --------------------------------------------------------------- numbers

    def utilization(self) -> list[float]:
        """The share in use per resource (a machine down counts as used)."""
        total = self.capacity.sum(axis=0)
        used = (self.capacity - np.where(self.up[:, None], self.free, self.capacity)).sum(axis=0)
        return used_shares(used, total)

    def unplaced(self) -> dict[int, int]:
        """job -> tasks still pending, for jobs not fully placed (reported at the end)."""
        return {j: len(jp.pending) for j, jp in self.jobs.items() if jp.pending}
