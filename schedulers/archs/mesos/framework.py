"""A Mesos framework scheduler's decisions, pure.

Given the resources of the offers in hand, decide for one queued job which
tasks to launch where (and, for a rigid framework, which slots to hold until
the whole gang fits). The actor spends the think time, sends the answer to
the master and reports back which launches the master accepted (``settle``).

Delay scheduling (Zaharia et al., EuroSys 2010): every task has its data on
``data_replicas`` machines. A job launches local tasks whenever an offer has
room on one of them; otherwise it is skipped, until it has waited ``delay``
emulated seconds since its last local launch, after which it takes any
machine. Whether each launch was local is recorded.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

import numpy as np

from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.placement.policies import PlacementPolicy, slots


@dataclass(frozen=True)
class FrameworkParams:
    name: str
    t_job: float
    t_task: float
    policy: PlacementPolicy
    mode: str = "elastic"  # or "rigid"
    max_attempts: int = 1000
    delay: float = 0.0
    data_replicas: int = 0
    min_offer: tuple[float, ...] = ()
    preferred: np.ndarray | None = None  # bool per machine; None = any machine
    refuse_seconds: float = 5.0


@dataclass
class JobProgress:
    job: Job
    pending: np.ndarray  # task indices not launched yet
    data: np.ndarray  # [tasks, data_replicas] machines holding each task's input
    attempts: int = 0
    first_attempt_at: float | None = None
    first_slot_at: float | None = None
    wait_since: float | None = None  # delay scheduling: skipped for locality since
    held: list[int] = field(default_factory=list)  # rigid: one held slot per machine entry
    held_since: float | None = None  # a gang job: when it began holding what it holds


@dataclass
class Decision:
    """Rows index the pool the decision was made on."""

    tasks: np.ndarray  # task indices to launch
    rows: np.ndarray  # pool row per launch, or -1 = a slot this job holds
    machines: np.ndarray  # machine per launch
    local: np.ndarray  # bool per launch (False when the job has no data locality)
    hold_rows: np.ndarray  # rigid: pool rows to hold one slot on

    @property
    def empty(self) -> bool:
        return self.tasks.size == 0 and self.hold_rows.size == 0


class FrameworkCore:
    def __init__(self, params: FrameworkParams, n_machines: int, rng: np.random.Generator) -> None:
        self.p = params
        self.n_machines = n_machines
        self.rng = rng
        self.queue: collections.deque[JobProgress] = collections.deque()
        self.jobs: dict[int, JobProgress] = {}  # every job not finished with, by id

    def submit(self, jobs: list[Job]) -> None:
        for job in jobs:
            r = self.p.data_replicas
            data = (np.stack([self.rng.choice(self.n_machines, size=min(r, self.n_machines), replace=False) for _ in range(job.tasks)])
                    if r else np.zeros((job.tasks, 0), dtype=np.int64))
            jp = JobProgress(job, np.arange(job.tasks, dtype=np.int64), data)
            self.queue.append(jp)
            self.jobs[job.job_id] = jp

    def resume(self, job: Job, pending: np.ndarray) -> None:
        """A restarted framework's job, of which only ``pending`` tasks still
        need a place (the master knows the others run or ran). A job begun
        before keeps its first attempt; one with nothing pending is kept
        only so a task lost later can come back."""
        self.submit([job])
        jp = self.jobs[job.job_id]
        jp.pending = np.asarray(pending, dtype=np.int64)
        if jp.pending.size < job.tasks:
            jp.first_attempt_at = -1.0
        if jp.pending.size == 0:
            self.queue.remove(jp)

    def wants(self) -> bool:
        return bool(self.queue)

    def think_time(self, jp: JobProgress) -> float:
        return self.p.t_job + self.p.t_task * int(jp.pending.size)

    def usable(self, machines: np.ndarray, free: np.ndarray) -> bool:
        """Whether an offer passes the framework's filters (minimum size)."""
        if self.p.min_offer and np.any(free.sum(axis=0) + 1e-9 < np.asarray(self.p.min_offer)):
            return False
        return self.p.preferred is None or bool(self.p.preferred[machines].any())

    def begin(self, jp: JobProgress, now: float) -> bool:
        """Start considering a job; True on its first attempt ever."""
        first = jp.first_attempt_at is None
        if first:
            jp.first_attempt_at = now
        if jp.wait_since is None:
            jp.wait_since = now
        return first

    def fits(self, jp: JobProgress, free: np.ndarray) -> bool:
        """Whether one task of ``jp`` fits on some row of the pool (a cheap
        size check; placing is what costs think time)."""
        return bool(free.size) and bool(slots(free, jp.job.request_vector()).any())

    @staticmethod
    def nothing() -> Decision:
        none = np.zeros(0, np.int64)
        return Decision(none, none, none, np.zeros(0, bool), none)

    def place(self, jp: JobProgress, machines: np.ndarray, free: np.ndarray, now: float) -> Decision:
        """Choose launches for ``jp`` on the pool (``free`` [k, R] is updated
        in place, so later jobs in the same round see what this one took)."""
        if self.p.preferred is not None:
            free[~self.p.preferred[machines]] = 0.0
        req = jp.job.request_vector()
        if self.rigid(jp):
            return self._place_rigid(jp, machines, free, req)
        return self._place_elastic(jp, machines, free, req, now)

    def _place_elastic(self, jp: JobProgress, machines: np.ndarray, free: np.ndarray, req: np.ndarray, now: float) -> Decision:
        tasks: list[int] = []
        rows: list[int] = []
        local: list[bool] = []
        waiting: list[int] = []
        if jp.data.shape[1]:
            row_of = {int(m): i for i, m in enumerate(machines.tolist())}
            for t in jp.pending.tolist():
                spot = next((row_of[m] for m in jp.data[t].tolist() if m in row_of and slots(free[row_of[m]][None, :], req)[0] > 0), None)
                if spot is None:
                    waiting.append(t)
                    continue
                free[spot] -= req
                tasks.append(t)
                rows.append(spot)
                local.append(True)
            if tasks:
                jp.wait_since = now  # a local launch resets the wait (delay scheduling)
        else:
            waiting = jp.pending.tolist()
        assert jp.wait_since is not None
        if waiting and now - jp.wait_since >= self.p.delay:
            placed = self.p.policy(free, req, len(waiting), self.rng)
            for t, row in zip(waiting, placed.tolist()):
                if row >= 0:
                    tasks.append(t)
                    rows.append(row)
                    local.append(bool(jp.data.shape[1]) and int(machines[row]) in jp.data[t].tolist())
        r = np.asarray(rows, dtype=np.int64)
        return Decision(np.asarray(tasks, dtype=np.int64), r, machines[r] if r.size else r,
                        np.asarray(local, dtype=bool), np.zeros(0, dtype=np.int64))

    def _place_rigid(self, jp: JobProgress, machines: np.ndarray, free: np.ndarray, req: np.ndarray) -> Decision:
        """A rigid job only ever holds slots from offers; once it holds the
        whole gang, ``gang`` launches every task from the held slots at once
        (so a gang never starts half-way because one of several offers was
        rescinded)."""
        need = int(jp.pending.size) - len(jp.held)
        none = np.zeros(0, np.int64)
        if need <= 0:
            return Decision(none, none, none, np.zeros(0, bool), none)
        placed = self.p.policy(free, req, need, self.rng)
        return Decision(none, none, none, np.zeros(0, bool), placed[placed >= 0].astype(np.int64))

    def rigid(self, jp: JobProgress) -> bool:
        """Whether ``jp`` gathers its whole gang before launching: every job
        of a rigid framework, and a gang job (``Job.gang``) of any."""
        return self.p.mode == "rigid" or jp.job.gang

    def timed_out(self, jp: JobProgress, now: float) -> bool:
        """A gang job that has held part of its gang for its ``gang_timeout``:
        it should give back what it holds (``give_back``) and gather again,
        so two gangs each holding half the room do not wait for ever."""
        return (jp.job.gang_timeout is not None and bool(jp.held) and jp.held_since is not None
                and now - jp.held_since >= jp.job.gang_timeout)

    def gang(self, jp: JobProgress) -> Decision | None:
        """The launch of a rigid job's whole gang on its held slots, when it holds enough."""
        n = int(jp.pending.size)
        if not self.rigid(jp) or n == 0 or len(jp.held) < n:
            return None
        return Decision(jp.pending.copy(), np.full(n, -1, np.int64), np.asarray(jp.held[:n], np.int64),
                        np.zeros(n, bool), np.zeros(0, np.int64))

    def settle(self, jp: JobProgress, d: Decision, launched: np.ndarray, held: np.ndarray, machines: np.ndarray, now: float) -> str:
        """Apply the master's answer. Returns "scheduled" (every task
        launched), "waiting" (back in the queue) or "abandoned"."""
        if (launched.any() or held.any()) and jp.first_slot_at is None:
            jp.first_slot_at = now
        if d.tasks.size and launched.any():
            jp.pending = np.setdiff1d(jp.pending, d.tasks[launched])
            if self.rigid(jp):
                jp.held = []
                jp.held_since = None
        jp.held.extend(int(machines[r]) for r in d.hold_rows[held].tolist())
        if jp.held and jp.held_since is None:
            jp.held_since = now
        if jp.pending.size == 0:
            self._forget(jp)
            return "scheduled"
        jp.attempts += 1
        if jp.attempts >= self.p.max_attempts:
            self._forget(jp)
            return "abandoned"
        return "waiting"

    def give_back(self, jp: JobProgress) -> list[tuple[int, list]]:
        """An abandoned job's held slots, as (machine, request) to hand back
        to the master (``unholds``); the job holds nothing after."""
        out = [(m, list(jp.job.request)) for m in jp.held]
        jp.held = []
        jp.held_since = None
        return out

    def forget_holds(self) -> None:
        """A new master knows nothing of the slots we held: let go of them."""
        for jp in self.jobs.values():
            jp.held = []

    def _forget(self, jp: JobProgress) -> None:
        try:
            self.queue.remove(jp)
        except ValueError:
            pass
        if jp.pending.size:
            self.jobs.pop(jp.job.job_id, None)

    def task_done(self, job_id: int) -> None:
        """Nothing of this job can come back (all tasks confirmed): drop it."""
        self.jobs.pop(job_id, None)

    def lost(self, keys: list[tuple[int, int]]) -> list[int]:
        """Tasks the master reports lost or revoked go back to pending; a job
        that was fully scheduled rejoins the front of the queue. Returns the
        ids of jobs requeued."""
        back: list[int] = []
        for job_id, task in keys:
            jp = self.jobs.get(job_id)
            if jp is None or task in jp.pending.tolist():
                continue
            jp.pending = np.union1d(jp.pending, [task]).astype(np.int64)
            if jp not in self.queue:
                self.queue.appendleft(jp)
                back.append(job_id)
        return back
