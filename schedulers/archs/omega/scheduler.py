"""Decision logic of one Omega scheduler, free of Ray and clocks.

The actor drives it: ``submit`` jobs, ask ``next_job(now)``, spend
``think_time`` really waiting, ``plan`` on the synced local copy, send the
claims, then ``settle`` with what committed. Retries and abandonment are
decided here so they can be unit-tested without an event loop.
"""
from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.shared_state.commit import Claims
from schedlab.schedulers.placement.device_claims import DeviceView, place
from schedlab.schedulers.placement.policies import PlacementPolicy
from schedlab.schedulers.shared_state.cell import LocalCopy


@dataclass
class JobProgress:
    job: Job
    pending: np.ndarray  # task indices not yet committed
    attempts: int = 0
    first_attempt: float | None = None
    not_before: float = 0.0  # emulated time before which a retry is pointless


@dataclass(frozen=True)
class SchedulerParams:
    name: str
    t_job: float
    t_task: float
    policy: PlacementPolicy
    max_attempts: int = 1000
    retry_backoff: float = 1.0  # emulated seconds to wait when nothing fit
    devices: DeviceView | None = None  # a cell with device columns: a device ask is placed by its device policy


@dataclass(frozen=True)
class Plan:
    claims: Claims
    tasks: np.ndarray  # task index per claim


@dataclass
class Outcome:
    status: str  # "scheduled" | "abandoned" | "retry"
    committed_tasks: np.ndarray
    machines: np.ndarray  # machine per committed task


@dataclass(frozen=True)
class Recovered:
    """What a restarted scheduler made of its predecessor's jobs."""

    placed: list[Job]  # every task already placed: nothing to queue (the shell reports them scheduled)
    queued: int  # jobs queued again, whole or their unplaced tasks


@dataclass
class OmegaSchedulerCore:
    """One scheduler's queue and its decisions. It also follows the cell's
    write-off log (tasks lost with a failed machine) through ``lost_cursor``,
    which only moves forward: a read from a stale cell-state leader returns
    a prefix of the real log, and moving the cursor back would hand out
    entries already requeued (tasks running since would be placed twice)."""

    params: SchedulerParams
    local: LocalCopy
    rng: np.random.Generator
    queue: collections.deque[JobProgress] = field(default_factory=collections.deque)
    lost_cursor: int = 0
    # Between asking the cell for a recovery and its answer: a lost-log read
    # meanwhile would come from the new incarnation's cursor (0: the whole
    # day's write-offs) and requeue every task ever lost of the jobs just
    # added, one copy per loss: a task placed again as often as it was
    # ever lost.
    recovering: bool = False

    def submit(self, jobs: list[Job]) -> None:
        for job in jobs:
            self.queue.append(JobProgress(job, np.arange(job.tasks)))

    def resume(self, job: Job, pending: np.ndarray) -> JobProgress:
        """Queue tasks of a job some attempt already began (lost with a
        machine, or found unplaced by a restarted scheduler): no new first
        attempt, so the job's wait time keeps its original start."""
        jp = JobProgress(job, np.asarray(pending, dtype=np.int64), attempts=0, first_attempt=-1.0)
        self.queue.append(jp)
        return jp

    def put_back(self, jp: JobProgress) -> None:
        """An attempt that stopped before it planned (the run is ending):
        the job goes back to the head of the queue, to be reported pending."""
        self.queue.appendleft(jp)

    def recover(self, jobs: Sequence[Job], cursor: int, placed: Mapping[int, Sequence[int]],
                finished: Iterable[int] = ()) -> Recovered:
        """A restarted scheduler's queue from the jobs routed to its
        predecessor and what the cell holds placed of each (``placed``: job
        -> task indices) as of write-off log position ``cursor``: a job with
        every task placed, or done (``finished``: every task ended), stays
        placed, one with some is resumed with the rest (its wait time keeps
        its start), one with none is submitted anew. Ends the recovery
        ``begin_recovery`` started."""
        self.recovering = False
        self.lost_cursor = max(self.lost_cursor, int(cursor))
        done: list[Job] = []
        queued = 0
        ended = set(finished)
        for job in jobs:
            if job.job_id in ended:
                done.append(job)
                continue
            have = placed.get(job.job_id, [])
            pending = np.setdiff1d(np.arange(job.tasks), np.asarray(have, dtype=np.int64))
            if pending.size == 0:
                done.append(job)
            elif len(have):
                self.resume(job, pending)
                queued += 1
            else:
                self.submit([job])
                queued += 1
        return Recovered(done, queued)

    def begin_recovery(self) -> None:
        """A recovery was asked of the cell: no write-off read until it ends."""
        self.recovering = True

    def abort_recovery(self) -> None:
        """The cell did not answer the recovery: write-off reads resume."""
        self.recovering = False

    def lost_read_from(self) -> int | None:
        """Where a write-off log read should start (None: not now, a
        recovery is under way)."""
        return None if self.recovering else self.lost_cursor

    def requeue_lost(self, asked: int, cursor: int, lost: Iterable[tuple[int, int]],
                     known: Mapping[int, Job]) -> dict[int, list[int]]:
        """The answer to a write-off read from position ``asked``: ``lost``
        (job, task) pairs up to ``cursor``. The tasks of jobs this scheduler
        owns (``known``) are queued again, per job in task order; returned,
        job -> tasks. An answer that a recovery overtook (one began, or moved
        the cursor, while the read was out) is dropped whole."""
        if self.recovering or self.lost_cursor != asked:
            return {}
        self.lost_cursor = max(self.lost_cursor, int(cursor))
        mine: dict[int, list[int]] = {}
        for job_id, task in lost:
            if job_id in known:
                mine.setdefault(int(job_id), []).append(int(task))
        for job_id, tasks in mine.items():
            self.resume(known[job_id], np.asarray(sorted(tasks)))
        return mine

    def next_job(self, now: float) -> JobProgress | None:
        """Pop the first job that is due (FIFO otherwise); None if none is."""
        for i, jp in enumerate(self.queue):
            if jp.not_before <= now:
                del self.queue[i]
                return jp
        return None

    def next_due(self) -> float | None:
        """Earliest time a queued job becomes due (None when the queue is empty)."""
        return min((jp.not_before for jp in self.queue), default=None)

    def think_time(self, jp: JobProgress) -> float:
        return self.params.t_job + self.params.t_task * int(jp.pending.size)

    def begin_attempt(self, jp: JobProgress, now: float) -> bool:
        """Count an attempt; returns True when it is the job's first."""
        jp.attempts += 1
        first = jp.first_attempt is None
        if first:
            jp.first_attempt = now
        return first

    def plan(self, jp: JobProgress) -> Plan:
        """Place pending tasks on a scratch copy of the local state: the local
        copy itself changes only through deltas from the cell state, so a
        rejected claim never leaves a phantom reservation behind."""
        work = self.local.free.copy()
        request = jp.job.request_vector()
        view = self.params.devices
        if view is not None and view.asks(request):
            machines, rows = place(view, work, request, jp.job.models, int(jp.pending.size), self.rng)
        else:
            machines = self.params.policy(work, request, int(jp.pending.size), self.rng)
            rows = np.tile(request, (int((machines >= 0).sum()), 1))
        ok = machines >= 0
        if jp.job.gang and ok.sum() < jp.pending.size:
            # A gang claims all its tasks or none: what fits alone is not claimed (nothing held while it waits).
            ok[:] = False
            rows = rows[:0]
        m = machines[ok].astype(np.int64)
        claims = Claims(machine=m, request=rows, seen_seq=self.local.seq[m].copy())
        return Plan(claims, jp.pending[ok])

    def settle(self, jp: JobProgress, plan: Plan, accepted: np.ndarray, now: float) -> Outcome:
        """Record what committed; requeue, finish or abandon the job."""
        done = plan.tasks[accepted]
        machines = plan.claims.machine[accepted]
        jp.pending = np.setdiff1d(jp.pending, done, assume_unique=True)
        if jp.pending.size == 0:
            return Outcome("scheduled", done, machines)
        if jp.attempts >= self.params.max_attempts:
            return Outcome("abandoned", done, machines)
        if len(plan.tasks) == 0:
            # Nothing fit on our copy: waiting for the cell to change beats spinning.
            jp.not_before = now + self.params.retry_backoff
        self.queue.append(jp)
        return Outcome("retry", done, machines)
