"""SLURM's scheduling passes over one partition, pure: the main scheduler
(strict priority order, stop at the first job that does not fit) and
backfill, EASY (a reservation for the first blocked job only) or
conservative (a reservation for every queued job), driven by the users'
time estimates (their requested time limits).

Resources are whole nodes (SLURM allocates rigid jobs node by node);
running jobs free their nodes at their start plus their time limit, as far
as the scheduler can know (a job may end earlier; it is killed at its
limit). Every pass takes ``now`` and returns what to start now and the
reservations it made, so a shell only starts jobs and keeps the clock.

Why the availability profile: both backfill kinds ask "when is the
earliest time N nodes stay free for T seconds", and conservative backfill
asks it for every queued job in turn, each answer carving its reservation
out of the profile before the next job is asked (Mu'alem and Feitelson,
"Utilization, predictability, workloads, and user runtime estimates in
scheduling the IBM SP2 with backfilling", IEEE TPDS 2001).
"""
from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field
from typing import Literal, Sequence

Mode = Literal["fcfs", "easy", "conservative"]


@dataclass(frozen=True)
class QueuedJob:
    """A job waiting, in the partition's priority order. ``limit``: its
    requested time (the user's estimate, and the time it is killed at)."""

    job_id: int
    nodes: int
    limit: float


@dataclass(frozen=True)
class RunningJob:
    job_id: int
    nodes: int
    ends: float  # its start plus its time limit: when the scheduler may count its nodes free


@dataclass
class Pass:
    """What one scheduling pass decided: ``start`` (job ids to start now, in
    order), ``backfilled`` (those among them started out of priority order),
    ``reservations`` (job id -> planned start: the head job's for EASY,
    every queued job's for conservative)."""

    start: list[int] = field(default_factory=list)
    backfilled: list[int] = field(default_factory=list)
    reservations: dict[int, float] = field(default_factory=dict)


class Profile:
    """Free nodes over time, a step function: ``times[i]`` is when
    ``free[i]`` nodes become the count, until ``times[i + 1]``."""

    def __init__(self, now: float, total: int, running: Sequence[RunningJob]) -> None:
        self.times = [now]
        self.free = [total - sum(r.nodes for r in running)]
        for r in sorted(running, key=lambda r: r.ends):
            self._add(max(r.ends, now), math.inf, r.nodes)

    def _split(self, t: float) -> int:
        """The index of the step starting at ``t`` (made if need be)."""
        i = bisect.bisect_right(self.times, t) - 1
        if self.times[i] == t:
            return i
        self.times.insert(i + 1, t)
        self.free.insert(i + 1, self.free[i])
        return i + 1

    def _add(self, start: float, end: float, nodes: int) -> None:
        i = self._split(start)
        j = len(self.times) if math.isinf(end) else self._split(end)
        for k in range(i, j):
            self.free[k] += nodes

    def fits(self, start: float, duration: float, nodes: int) -> bool:
        end = start + duration
        i = bisect.bisect_right(self.times, start) - 1
        while i < len(self.times) and self.times[i] < end:
            if self.free[i] < nodes:
                return False
            i += 1
        return True

    def earliest(self, nodes: int, duration: float) -> float:
        """The earliest step start from which ``nodes`` stay free for
        ``duration``; inf if never (more nodes than the partition has)."""
        for t in self.times:
            if self.fits(t, duration, nodes):
                return t
        return math.inf

    def reserve(self, start: float, duration: float, nodes: int) -> None:
        self._add(start, start + duration, -nodes)


def schedule(now: float, total: int, running: Sequence[RunningJob], queue: Sequence[QueuedJob],
             mode: Mode = "easy") -> Pass:
    """One pass over a partition of ``total`` nodes. ``queue`` is in
    priority order. FCFS starts jobs in that order until one does not fit;
    EASY then reserves the earliest start for that job and starts any later
    job that fits now without delaying it; conservative reserves a start for
    every job in order and starts those whose reservation is now."""
    prof = Profile(now, total, running)
    out = Pass()
    if mode == "conservative":
        for pos, job in enumerate(queue):
            at = prof.earliest(job.nodes, job.limit)
            if math.isinf(at):
                continue  # larger than the partition: never (the parser refuses such jobs)
            prof.reserve(at, job.limit, job.nodes)
            if at <= now:
                out.start.append(job.job_id)
                if any(q.job_id not in out.start for q in queue[:pos]):
                    out.backfilled.append(job.job_id)
            else:
                out.reservations[job.job_id] = at
        return out
    head = None
    for pos, job in enumerate(queue):
        if prof.fits(now, job.limit, job.nodes):
            prof.reserve(now, job.limit, job.nodes)
            out.start.append(job.job_id)
            continue
        head = pos
        break
    if head is None or mode == "fcfs":
        return out
    blocked = queue[head]
    shadow = prof.earliest(blocked.nodes, blocked.limit)
    if math.isinf(shadow):
        return out
    prof.reserve(shadow, blocked.limit, blocked.nodes)
    out.reservations[blocked.job_id] = shadow
    for job in queue[head + 1:]:
        # Starts now only if the profile, with the head job's reservation
        # carved out, holds it for its whole time limit: it ends before the
        # shadow time, or uses nodes the head job will not need.
        if prof.fits(now, job.limit, job.nodes):
            prof.reserve(now, job.limit, job.nodes)
            out.start.append(job.job_id)
            out.backfilled.append(job.job_id)
    return out
