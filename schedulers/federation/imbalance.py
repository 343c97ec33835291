"""Multi-cluster metrics: per-site load over time, imbalance, goodput,
completed jobs, wait per site, transfers.

Load is *submitted* work per unit capacity: the slot-seconds of work that
site s accepted in a time window, divided by its capacity (slots), i.e. how
many seconds of the whole site that window's arrivals cost it. A job counts
where it is accepted to run (after any transfers) at the time it is
accepted there: the caller records ``Accepted(at, site, work)`` once per
job, when it joins the queue it stays in. Submitted rather than completed
work, so the metric shows the routing decisions themselves, not the queues
smoothing them out.

Imbalance across sites: max/min of the per-site loads (inf when the least
loaded site got nothing and another did; nan when no site got anything:
no load, nothing to compare) and max/mean (1 = perfectly even, n sites =
all on one; always finite when any load). Over sliding windows this shows
herding, which an overall figure averages away: a site can get the right
total in the wrong bursts.
"""
from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from schedlab.schedulers.federation.site import Job, Run


@dataclass(frozen=True)
class Accepted:
    at: float
    site: int
    work: float


@dataclass(frozen=True)
class Imbalance:
    max_min: float
    max_mean: float


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    loads: tuple[float, ...]  # per site, work / capacity
    imbalance: Imbalance


def _check(capacities: Sequence[float]) -> None:
    if not capacities or not all(c > 0 and math.isfinite(c) for c in capacities):
        raise ValueError(f"capacities must be positive and finite, got {list(capacities)}")


def loads(records: Iterable[Accepted], capacities: Sequence[float], start: float = -math.inf,
          end: float = math.inf) -> list[float]:
    """Per-site work accepted in ``[start, end)`` per unit capacity."""
    _check(capacities)
    work = [0.0] * len(capacities)
    for r in records:
        if start <= r.at < end:
            work[r.site] += r.work
    return [w / c for w, c in zip(work, capacities)]


def imbalance(per_site: Sequence[float]) -> Imbalance:
    """max/min and max/mean of per-site loads (see the module docstring)."""
    if not per_site:
        raise ValueError("no sites")
    hi, lo, mean = max(per_site), min(per_site), sum(per_site) / len(per_site)
    if hi == 0:
        return Imbalance(math.nan, math.nan)
    return Imbalance(math.inf if lo == 0 else hi / lo, hi / mean)


def overall(records: Iterable[Accepted], capacities: Sequence[float]) -> Imbalance:
    return imbalance(loads(records, capacities))


def windows(records: Sequence[Accepted], capacities: Sequence[float], *, window: float, step: float,
            start: float, end: float) -> list[Window]:
    """Sliding windows ``[t, t + window)`` for t = start, start + step, ...
    while t + window <= end (only whole windows: a partial last one would
    read as a lull)."""
    if not (window > 0 and step > 0):
        raise ValueError(f"window and step must be > 0, got {window}, {step}")
    out = []
    k = 0
    while start + k * step + window <= end + 1e-9:
        t = start + k * step
        per = loads(records, capacities, t, t + window)
        out.append(Window(t, t + window, tuple(per), imbalance(per)))
        k += 1
    return out


@dataclass(frozen=True)
class WindowStats:
    """Over the windows that had any load: how many, the median and worst
    max/min (the median is robust to a few inf windows), mean max/mean."""

    n: int
    median_max_min: float
    worst_max_min: float
    mean_max_mean: float


def window_stats(ws: Sequence[Window]) -> WindowStats:
    live = [w.imbalance for w in ws if not math.isnan(w.imbalance.max_min)]
    if not live:
        return WindowStats(0, math.nan, math.nan, math.nan)
    mm = [i.max_min for i in live]
    return WindowStats(len(live), statistics.median(mm), max(mm), sum(i.max_mean for i in live) / len(live))


@dataclass(frozen=True)
class Outcome:
    completed: int
    goodput: float  # work completed per second of horizon (slot-seconds / s)
    utilization: float  # goodput / total capacity
    jobs_transferred: int  # jobs moved at least once
    transfers: int  # moves in all


def outcome(runs: Iterable[Run], capacities: Sequence[float], horizon: float) -> Outcome:
    """Completed jobs and goodput by ``horizon``: only work of jobs that
    finished by then counts (a job running at the end is not good yet).
    Transfers count over every run given, finished or not."""
    _check(capacities)
    if not horizon > 0:
        raise ValueError(f"horizon must be > 0 s, got {horizon}")
    runs = list(runs)
    done = [r for r in runs if r.finish is not None and r.finish <= horizon]
    good = sum(r.job.work for r in done) / horizon
    jobs: list[Job] = [r.job for r in runs]
    return Outcome(len(done), good, good / sum(capacities), sum(1 for j in jobs if j.transfers),
                   sum(j.transfers for j in jobs))


def wait_per_site(runs: Iterable[Run], n_sites: int) -> list[tuple[int, float, float]]:
    """Per site: (jobs started, median wait, mean wait); nan with none."""
    waits: list[list[float]] = [[] for _ in range(n_sites)]
    for r in runs:
        if r.start is not None:
            waits[r.site].append(r.wait)
    return [(len(w), statistics.median(w) if w else math.nan, sum(w) / len(w) if w else math.nan) for w in waits]
