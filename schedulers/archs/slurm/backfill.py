"""SLURM's scheduling passes over one partition, pure: the main scheduler
(strict priority order, stop at the first job that does not fit) and
backfill, EASY (a reservation for the first blocked job only) or
conservative (a reservation for every queued job), driven by the users'
time estimates (their requested time limits).

Resources are tracked per node (SLURM's trackable resources): a job is
``tasks`` tasks of one request vector, all started together (rigid), each
on one node, several on a node if it has room. Whole-node allocation
(select/linear) is the same with every node's capacity 1 and every task
asking 1. Running jobs free their resources at their start plus their
time limit, as far as the scheduler can know (a job may end earlier; it is
killed at its limit). Every pass takes ``now`` and returns what to start
now, on which nodes, and the reservations it made, so a shell only starts
jobs and keeps the clock.

Why the availability profile: both backfill kinds ask "when is the
earliest time this job fits for its whole limit", and conservative
backfill asks it for every queued job in turn, each answer carving its
reservation out of the profile before the next job is asked (Mu'alem and
Feitelson, "Utilization, predictability, workloads, and user runtime
estimates in scheduling the IBM SP2 with backfilling", IEEE TPDS 2001).
The question is answered for every candidate start at once: the free
resources over a window of steps come from a sparse table of minima
(log2 steps levels), so a job costs O(steps x nodes) numpy work, not a
loop over windows.
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Any, Generator, Literal, Sequence, TypeVar

import numpy as np

Mode = Literal["fcfs", "easy", "conservative"]
T = TypeVar("T")
EPS = 1e-9


@dataclass(frozen=True)
class QueuedJob:
    """A job waiting, in the partition's priority order. ``limit``: its
    requested time (the user's estimate, and the time it is killed at)."""

    job_id: int
    tasks: int
    limit: float
    request: tuple[float, ...] = (1.0,)


@dataclass(frozen=True)
class RunningJob:
    """What holds resources: ``nodes`` (one per task, positions in the
    partition's node list) each holding ``request`` until ``ends``."""

    job_id: int
    nodes: tuple[int, ...]
    ends: float
    request: tuple[float, ...] = (1.0,)


@dataclass
class Pass:
    """What one scheduling pass decided: ``start`` (job ids to start now, in
    order) with ``placed`` (job id -> its tasks' nodes, positions in the
    partition's node list), ``backfilled`` (those started out of priority
    order), ``reservations`` (job id -> planned start: the head job's for
    EASY, every queued job's for conservative)."""

    start: list[int] = field(default_factory=list)
    placed: dict[int, tuple[int, ...]] = field(default_factory=dict)
    backfilled: list[int] = field(default_factory=list)
    reservations: dict[int, float] = field(default_factory=dict)


class Profile:
    """Free resources of each node over time, a step function:
    ``free[i]`` (nodes x resources) from ``times[i]`` until ``times[i + 1]``
    (the last step lasts forever)."""

    def __init__(self, now: float, free: np.ndarray, running: Sequence[RunningJob] = ()) -> None:
        """``free``: what each node has free now, nothing counted back yet;
        each running job's resources come back at its end."""
        self.times = [now]
        self.free = [np.asarray(free, dtype=np.float64).copy()]
        # Each end adds its resources to every step from it on: built in
        # one sweep, each step the last plus the ends at its time (the same
        # sums, in the same order, as adding each end to every later step,
        # without the running x steps x nodes work).
        for r in sorted(running, key=lambda r: r.ends):
            if math.isinf(r.ends):
                continue
            t = max(r.ends, now)
            delta = np.zeros_like(self.free[0])
            np.add.at(delta, np.asarray(r.nodes, dtype=np.int64), np.asarray(r.request, dtype=np.float64))
            if t != self.times[-1]:
                self.times.append(t)
                self.free.append(self.free[-1])
            self.free[-1] = self.free[-1] + delta
        self._table: list[np.ndarray] | None = None

    def _split(self, t: float) -> int:
        i = bisect.bisect_right(self.times, t) - 1
        if self.times[i] == t:
            return i
        self.times.insert(i + 1, t)
        self.free.insert(i + 1, self.free[i].copy())
        return i + 1

    def _add(self, start: float, end: float, nodes: Sequence[int], request: Sequence[float], sign: float) -> None:
        i = self._split(start)
        j = len(self.times) if math.isinf(end) else self._split(end)
        delta = np.zeros_like(self.free[0])
        np.add.at(delta, np.asarray(nodes, dtype=np.int64), np.asarray(request, dtype=np.float64))
        for k in range(i, j):
            self.free[k] = self.free[k] + sign * delta
        self._table = None

    def reserve(self, start: float, duration: float, nodes: Sequence[int], request: Sequence[float]) -> None:
        self._add(start, start + duration, nodes, request, -1.0)

    def _minima(self) -> list[np.ndarray]:
        """Sparse table: level k holds, per step i, the minimum free over
        steps i .. i + 2**k - 1 (clipped at the last step)."""
        if self._table is None:
            level = np.stack(self.free)  # steps x nodes x resources
            table = [level]
            span = 1
            while span < len(self.times):
                nxt = level.copy()
                nxt[:-span] = np.minimum(level[:-span], level[span:])
                table.append(nxt)
                level, span = nxt, span * 2
            self._table = table
        return self._table

    def _window_free(self, duration: float) -> np.ndarray:
        """For every step start i: the least free resources over the steps a
        job starting at ``times[i]`` for ``duration`` overlaps."""
        times = np.asarray(self.times)
        last = np.searchsorted(times, times + duration, side="left") - 1  # last step overlapped
        last = np.maximum(last, np.arange(len(times)))
        length = last - np.arange(len(times)) + 1
        k = np.floor(np.log2(length)).astype(np.int64)
        table = self._minima()
        idx = np.arange(len(times))
        out = np.empty_like(table[0])
        for lvl in np.unique(k):
            sel = idx[k == lvl]
            a = table[lvl][sel]
            b = table[lvl][last[sel] - (1 << int(lvl)) + 1]
            out[sel] = np.minimum(a, b)
        return out

    def slots(self, free: np.ndarray, request: Sequence[float]) -> np.ndarray:
        """Tasks of ``request`` each node's ``free`` holds (per node)."""
        req = np.asarray(request, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(req > 0, np.floor((free + EPS) / np.where(req > 0, req, 1.0)), np.inf)
        return np.maximum(per.min(axis=-1), 0.0)

    def earliest(self, job: QueuedJob, not_before: float | None = None) -> tuple[float, tuple[int, ...]]:
        """The earliest step start (at or after ``not_before``) from which
        the job fits on some nodes for its whole limit, and those nodes
        (lowest-numbered first, as SLURM's default selection packs them);
        (inf, ()) if never."""
        window = self._window_free(job.limit)
        fit = self.slots(window, job.request)  # steps x nodes
        ok = np.minimum(fit, job.tasks).sum(axis=1) >= job.tasks
        if not_before is not None:
            ok &= np.asarray(self.times) <= not_before + EPS
        hits = np.flatnonzero(ok)
        if hits.size == 0:
            return math.inf, ()
        i = int(hits[0])
        return self.times[i], _pick(fit[i], job.tasks)

    def fits_now(self, job: QueuedJob) -> tuple[int, ...] | None:
        """The nodes the job would start on now and keep for its whole
        limit, or None: one window (from the first step), not every start."""
        last = max(int(np.searchsorted(self.times, self.times[0] + job.limit, side="left")) - 1, 0)
        table = self._minima()
        k = int(math.floor(math.log2(last + 1)))
        window = np.minimum(table[k][0], table[k][last - (1 << k) + 1])
        fit = self.slots(window, job.request)
        if np.minimum(fit, job.tasks).sum() < job.tasks:
            return None
        return _pick(fit, job.tasks)


def _pick(slots: np.ndarray, tasks: int) -> tuple[int, ...]:
    """``tasks`` nodes (a node repeated once per task it takes), filling the
    lowest-numbered nodes first."""
    out: list[int] = []
    for n in np.flatnonzero(slots >= 1).tolist():
        take = min(int(slots[n]), tasks - len(out))
        out.extend([n] * take)
        if len(out) == tasks:
            break
    return tuple(out)


def schedule(now: float, free: np.ndarray, running: Sequence[RunningJob], queue: Sequence[QueuedJob],
             mode: Mode = "easy", max_test: int | None = None) -> Pass:
    """``schedule_steps`` run to its end in one go."""
    return run_steps(schedule_steps(now, free, running, queue, mode, max_test))


def run_steps(steps: Generator[Any, None, T]) -> T:
    """A pass cut into steps (a generator yielding between them), run to
    its end: what it returns."""
    while True:
        try:
            next(steps)
        except StopIteration as end:
            return end.value


def schedule_steps(now: float, free: np.ndarray, running: Sequence[RunningJob], queue: Sequence[QueuedJob],
                   mode: Mode = "easy", max_test: int | None = None) -> Generator[None, None, Pass]:
    """One pass over a partition whose nodes have ``free`` now (nodes x
    resources; positions are the partition's). ``queue`` is in priority
    order. FCFS starts jobs in that order until one does not fit; EASY then
    reserves the earliest start for that job and starts any later job that
    fits now without delaying it; conservative reserves a start for every
    job in order and starts those whose reservation is now. ``max_test``:
    how many queued jobs backfill looks at (SLURM's bf_max_job_test).

    A generator: it yields after each job it looked at, so a shell can
    hand its loop back between jobs (a pass over a long queue on ten
    thousand nodes takes seconds; SLURM's own backfill yields its locks
    every ``bf_yield_interval`` for the same reason), and returns the
    ``Pass``. Run without pause (``schedule``) it decides the same.
    Nothing it decides is applied: what the queue and the nodes became
    meanwhile is the caller's to check."""
    prof = Profile(now, free, running)
    out = Pass()
    yield
    if mode == "conservative":
        for pos, job in enumerate(queue[:max_test]):
            at, nodes = prof.earliest(job)
            if math.isinf(at):
                continue  # larger than the partition: never (sbatch refuses such jobs)
            prof.reserve(at, job.limit, nodes, job.request)
            if at <= now:
                out.start.append(job.job_id)
                out.placed[job.job_id] = nodes
                if any(q.job_id not in out.start for q in queue[:pos]):
                    out.backfilled.append(job.job_id)
            else:
                out.reservations[job.job_id] = at
            yield
        return out
    head = None
    for pos, job in enumerate(queue):
        fit = prof.fits_now(job)
        if fit is not None:
            prof.reserve(now, job.limit, fit, job.request)
            out.start.append(job.job_id)
            out.placed[job.job_id] = fit
            yield
            continue
        head = pos
        break
    if head is None or mode == "fcfs":
        return out
    blocked = queue[head]
    shadow, nodes = prof.earliest(blocked)
    if math.isinf(shadow):
        return out
    prof.reserve(shadow, blocked.limit, nodes, blocked.request)
    out.reservations[blocked.job_id] = shadow
    yield
    for job in queue[head + 1:head + 1 + (max_test if max_test is not None else len(queue))]:
        # Starts now only if the profile, with the head job's reservation
        # carved out, holds it for its whole time limit.
        fit = prof.fits_now(job)
        if fit is not None:
            prof.reserve(now, job.limit, fit, job.request)
            out.start.append(job.job_id)
            out.placed[job.job_id] = fit
            out.backfilled.append(job.job_id)
        yield
    return out
