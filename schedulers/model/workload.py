"""Seeded synthetic workloads: job classes, distributions, prefill.

Same seed, same job list: each class draws from its own generator
(``rng_for(seed, "workload/<class>")``), so classes are independent.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from schedlab.schedulers.model.cluster import Cell
from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.placement.policies import random_first_fit
from schedlab.schedulers.model.resources import BASE, EPS
from schedlab.schedulers.model.seeding import rng_for

DIST_KINDS = ("constant", "exponential", "lognormal", "empirical", "uniform")
# A job's tasks are drawn, rounded up, at least 1 and at most this many: a
# heavy-tailed draw cannot build one giant job (see schedulers.scenario.limits,
# which also refuses classes whose mean or maximum is above it).
MAX_TASKS_PER_JOB = 100_000


@dataclass(frozen=True)
class Dist:
    """A univariate distribution.

    * constant: ``value``
    * exponential: ``mean``
    * lognormal: ``mean`` and ``sigma`` (sigma of the underlying normal; mu is
      chosen so the distribution's mean is ``mean``)
    * uniform: ``low``, ``high``
    * empirical: ``values`` with optional ``weights``
    * histogram: bins ``[values[i], highs[i])`` drawn by ``weights``, uniform
      within a bin (made by readers of other tools' inputs, e.g.
      ``css_workload``; not a scenario's ``dist``)
    """

    kind: str
    value: float = 0.0
    mean: float = 0.0
    sigma: float = 0.0
    low: float = 0.0
    high: float = 0.0
    values: tuple[float, ...] = ()
    weights: tuple[float, ...] = ()
    highs: tuple[float, ...] = ()  # histogram: each bin's upper end (``values`` are the lower ends)

    # The arrays a draw needs, built once per Dist: a CSS workload draws each
    # job's shape from 1,000-bin histograms one job at a time, and rebuilding
    # them per draw would be most of generating a day's jobs. (cached_property
    # writes the instance's __dict__, which a frozen dataclass allows.)

    @cached_property
    def _values(self) -> np.ndarray:
        return np.asarray(self.values, dtype=np.float64)

    @cached_property
    def _highs(self) -> np.ndarray:
        return np.asarray(self.highs, dtype=np.float64)

    @cached_property
    def _cdf(self) -> np.ndarray | None:
        if not self.weights:
            return None
        w = np.asarray(self.weights, dtype=np.float64)
        cdf = np.cumsum(w / w.sum())  # as NumPy's choice builds it, to the last bit
        cdf /= cdf[-1]
        return cdf

    def _pick(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """Indices into ``values``, each drawn by ``weights`` (else equally
        likely): the same numbers from the same generator state as
        ``rng.choice(len(values), size, p=weights / sum)`` (NumPy's own
        method: a uniform draw looked up in the cumulative weights; tested),
        without re-checking and re-summing the weights on every draw."""
        if self._cdf is None:
            return rng.integers(0, len(self._values), size=size)
        return self._cdf.searchsorted(rng.random(size), side="right")

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        if self.kind == "constant":
            return np.full(size, self.value, dtype=np.float64)
        if self.kind == "exponential":
            return rng.exponential(self.mean, size)
        if self.kind == "lognormal":
            mu = math.log(self.mean) - self.sigma**2 / 2
            return rng.lognormal(mu, self.sigma, size)
        if self.kind == "uniform":
            return rng.uniform(self.low, self.high, size)
        if self.kind == "empirical":
            return self._values[self._pick(rng, size)]
        if self.kind == "histogram":
            i = self._pick(rng, size)
            return rng.uniform(self._values[i], self._highs[i])
        raise ValueError(f"unknown distribution {self.kind!r}")

    def expected(self) -> float:
        if self.kind == "constant":
            return self.value
        if self.kind in ("exponential", "lognormal"):
            return self.mean
        if self.kind == "uniform":
            return (self.low + self.high) / 2
        if self.kind == "histogram":
            w = np.asarray(self.weights, dtype=np.float64)
            return float(np.dot((np.asarray(self.values) + np.asarray(self.highs)) / 2, w / w.sum()))
        if self.weights:
            w = np.asarray(self.weights, dtype=np.float64)
            return float(np.dot(self.values, w / w.sum()))
        return float(np.mean(self.values))

    def maximum(self) -> float:
        """Largest value the distribution can produce (inf when unbounded)."""
        if self.kind == "constant":
            return self.value
        if self.kind == "uniform":
            return self.high
        if self.kind == "empirical":
            return max(self.values)
        if self.kind == "histogram":
            return max(h for h, w in zip(self.highs, self.weights) if w > 0)
        return math.inf


@dataclass(frozen=True)
class TraceJob:
    """One job of a replayed trace: when it arrives, how many tasks, how
    long it really runs (every task, a rigid job) and its user's estimate."""

    submit: float
    tasks: int
    runtime: float
    estimate: float | None = None
    # Its own request and device models, where the trace records them per
    # job (a pod list); None: the class's mean request.
    request: tuple[float, ...] | None = None
    models: tuple[str, ...] = ()
    # Each task's own run time, where the trace records them per task (a
    # cluster trace); None: every task runs ``runtime``.
    runtimes: tuple[float, ...] | None = None
    # What the trace recorded of its real scheduling, a reference for the
    # replay (``actors.analysis.trace_reference``): each task's first start
    # after the job's submission, and the machine (cell index, -1 unknown)
    # it first ran on. None: not recorded.
    recorded_starts: tuple[float, ...] | None = None
    recorded_machines: tuple[int, ...] | None = None


@dataclass(frozen=True)
class JobClass:
    """A stream of similar jobs. A service class's ``duration`` defaults to
    infinite (its tasks run until the end of the run, as long-running
    services do); one it gives is honoured, as the Omega paper's simulator
    ends service jobs after their drawn runtime."""

    name: str
    kind: JobKind
    interarrival: Dist
    tasks: Dist  # rounded up, at least 1, at most MAX_TASKS_PER_JOB
    duration: Dist
    request: tuple[Dist, ...]  # per task, one per resource the cell declares
    priority: int = 0
    interarrival_mode: str = "exponential"  # or "fixed": interarrival.expected() apart
    start: float | None = None  # the first arrival (emulated s); None: one interarrival after 0
    one_duration: bool = False  # one duration drawn per job, every task runs for it (CSS's model, rigid jobs)
    # Bursty arrivals: (mean on, mean off) emulated s, both periods
    # exponential, starting on; jobs arrive only while on, ``interarrival``
    # apart on average (an on/off Markov-modulated Poisson process).
    bursts: tuple[float, float] | None = None
    # A replayed trace (an SWF log): its jobs arrive as recorded instead of
    # being drawn, each task asking the class's mean request.
    trace: tuple[TraceJob, ...] = ()
    models: tuple[str, ...] = ()  # device models its tasks may run on ([cell] devices; empty: any)
    gang_timeout: float | None = None  # its jobs are gangs (all tasks start together), partial holds released after this


def task_rate(jc: JobClass) -> float:
    """Tasks the class brings per emulated second, on average (its mean tasks per job over its mean gap)."""
    return jc.tasks.expected() / max(jc.interarrival.expected(), 1e-12)


def _job(job_id: int, jc: JobClass, at: float, rng: np.random.Generator) -> Job:
    n = max(1, math.ceil(min(float(jc.tasks.sample(rng, 1)[0]), MAX_TASKS_PER_JOB)))
    request = tuple(float(max(0.0, d.sample(rng, 1)[0])) for d in jc.request)
    # Every class's duration is drawn, a service class's too: a scenario
    # that gives service tasks a duration means them to end, and tasks
    # that ran forever instead would fill the cell with service work.
    drawn = np.maximum(jc.duration.sample(rng, 1 if jc.one_duration else n), 1e-3)
    durations = (float(drawn[0]),) * n if jc.one_duration else tuple(float(x) for x in drawn)
    return Job(job_id, jc.name, jc.kind, jc.priority, at, request, durations, models=jc.models, gang_timeout=jc.gang_timeout)


def generate_jobs(classes: tuple[JobClass, ...], horizon: float, seed: int,
                  sources: list[TraceJob | None] | None = None) -> list[Job]:
    """All jobs arriving in [0, horizon), sorted by submit time; ids are dense
    and assigned in that order so they are stable for a given seed.
    ``sources``: if given, filled with each job's trace record (None: drawn)."""
    raw: list[tuple[float, int, JobClass, np.random.Generator | TraceJob]] = []
    for ci, jc in enumerate(classes):
        if jc.trace:
            shift = jc.start or 0.0
            raw.extend((tj.submit + shift, ci, jc, tj) for tj in jc.trace if tj.submit + shift < horizon)
            continue
        rng = rng_for(seed, f"workload/{jc.name}")
        if jc.bursts is not None:
            raw.extend((t, ci, jc, rng) for t in on_off_times(rng, jc.interarrival, *jc.bursts, horizon, jc.start or 0.0))
            continue
        t = 0.0
        first = True
        while True:
            if first and jc.start is not None:
                t = jc.start
            elif jc.interarrival_mode == "fixed":
                t += jc.interarrival.expected()
            else:
                t += float(jc.interarrival.sample(rng, 1)[0])
            first = False
            if t >= horizon:
                break
            raw.append((t, ci, jc, rng))
    raw.sort(key=lambda r: (r[0], r[1]))
    if sources is not None:
        sources.extend(src if isinstance(src, TraceJob) else None for _t, _ci, _jc, src in raw)
    # Draw each job's shape in arrival order per class so the list depends only on seed.
    return [_replayed(i, jc, t, src) if isinstance(src, TraceJob) else _job(i, jc, t, src)
            for i, (t, _ci, jc, src) in enumerate(raw)]


def on_off_times(rng: np.random.Generator, gap: Dist, mean_on: float, mean_off: float, horizon: float,
                 start: float = 0.0, off_gap: Dist | None = None) -> list[float]:
    """Arrival times in [start, horizon) of an on/off process: on and off
    periods exponential (means ``mean_on``, ``mean_off``), starting on;
    ``gap`` apart while on and ``off_gap`` apart while off (None: nothing
    arrives while off). Memoryless gaps make restarting the draw at each
    switch exact. Why bursts: a Poisson stream at the same mean rate hides
    the queues a burst builds (web traffic, job submission waves)."""
    out: list[float] = []
    t, on = start, True
    while t < horizon:
        end = min(horizon, t + float(rng.exponential(mean_on if on else mean_off)))
        g = gap if on else off_gap
        if g is not None:
            t += float(g.sample(rng, 1)[0])
            while t < end:
                out.append(t)
                t += float(g.sample(rng, 1)[0])
        t, on = end, not on
    return out


def _replayed(job_id: int, jc: JobClass, at: float, tj: TraceJob) -> Job:
    request = tj.request if tj.request is not None else tuple(float(d.expected()) for d in jc.request)
    durations = tj.runtimes if tj.runtimes is not None else (float(tj.runtime),) * tj.tasks
    return Job(job_id, jc.name, jc.kind, jc.priority, at, request, durations, tj.estimate,
               tj.models or jc.models, jc.gang_timeout)


@dataclass(frozen=True)
class Prefill:
    """Tasks already running when measurement starts."""

    jobs: tuple[Job, ...]
    machines: tuple[np.ndarray, ...]  # per job, machine index per task
    free: np.ndarray  # [M, R] free resources after prefill

    def placed(self) -> Iterator[tuple[int, Job, int]]:
        """(machine, job, task) of every standing task."""
        for job, machines in zip(self.jobs, self.machines):
            for t, m in enumerate(machines.tolist()):
                yield int(m), job, t

    def by_machine(self) -> dict[int, list[tuple[int, int, tuple[float, ...]]]]:
        """machine -> its standing tasks as (job id, task, request): what a
        per-machine daemon finds running when the run starts."""
        out: dict[int, list[tuple[int, int, tuple[float, ...]]]] = {}
        for m, job, t in self.placed():
            out.setdefault(m, []).append((job.job_id, t, tuple(float(x) for x in job.request)))
        return out


def with_device_columns(pre: Prefill, cell: Cell) -> Prefill:
    """``pre`` on ``cell`` widened by ``cluster.with_devices``: its tasks
    ask for no device (``prefill`` takes none that do), so they take no
    device column; every device is free."""
    slots = cell.device_slots
    if not slots:
        return pre
    jobs = tuple(dataclasses.replace(j, request=j.request + (0.0,) * slots) for j in pre.jobs)
    return Prefill(jobs, pre.machines, np.hstack([pre.free, cell.capacity[:, cell.declared:]]))


def asks_no_device(jc: JobClass, cell: Cell) -> bool:
    return cell.device is None or jc.request[cell.device].maximum() <= 0


@dataclass(frozen=True)
class StandingJob:
    """A job already running when the run starts, as a trace's initial cell
    state lists it (``css_workload``): ``tasks`` copies of ``request``, each
    ending ``duration`` emulated seconds in (inf: running through the run)."""

    job_class: str
    tasks: int
    request: tuple[float, ...]  # per task, one per resource the cell declares
    duration: float = math.inf
    priority: int = 0
    # From a cluster trace: each task's remaining run time and the machine
    # (cell index, -1 unknown) it was running on, where it is placed if it
    # fits (else left out); an unknown one, and every task where this is
    # empty, by randomized first fit (``duration`` each where that is empty).
    durations: tuple[float, ...] = ()
    machines: tuple[int, ...] = ()


def prefill(cell: Cell, classes: tuple[JobClass, ...], target: float, seed: int,
            standing: tuple[StandingJob, ...] = (), standing_cpu_limit: float = 1.0) -> Prefill:
    """The load already running at time 0: first the ``standing`` jobs, then
    synthetic ones up to ``target`` (below). Prefill jobs get negative ids.

    ``standing`` jobs are taken in order until the next would bring their cpu
    to ``standing_cpu_limit`` of the cell's; each is placed by randomized
    first fit, tasks that fit nowhere left out (as the Omega simulator
    prefills its initial cell state). Then long-running jobs shaped like the
    workload's classes (service first, as the Omega simulator does) are placed
    the same way until mean cpu utilisation reaches ``target``. In a cell
    with devices, only classes asking for none: which device a standing
    task holds is an architecture's placement, not the prefill's."""
    classes = tuple(jc for jc in classes if asks_no_device(jc, cell))
    free = cell.capacity.copy()
    jobs: list[Job] = []
    placed: list[np.ndarray] = []
    cpu = BASE.index("cpu")
    total = cell.capacity[:, cpu].sum()
    if standing:
        free = _place_standing(free, standing, standing_cpu_limit * total, rng_for(seed, "prefill/standing"), jobs, placed)
    if target <= 0 or not classes:
        return Prefill(tuple(jobs), tuple(placed), free)
    rng = rng_for(seed, "prefill")
    ordered = sorted(classes, key=lambda c: c.kind is not JobKind.SERVICE)
    misses = 0
    draws = 0
    while (total - free[:, cpu].sum()) / total < target and misses < 50:
        # Round-robin over classes by draw, not by success, so one class that
        # no longer fits does not end the prefill while others still would.
        jc = ordered[draws % len(ordered)]
        draws += 1
        job = _job(-(len(jobs) + 1), jc, 0.0, rng)
        # Prefill tasks outlive the run: they model the standing load.
        job = Job(job.job_id, job.job_class, JobKind.SERVICE, job.priority, 0.0, job.request, (math.inf,) * job.tasks)
        work = free.copy()
        machines = random_first_fit(work, job.request_vector(), job.tasks, rng)
        if (machines < 0).any():
            misses += 1
            continue
        free = work
        jobs.append(job)
        placed.append(machines)
    return Prefill(tuple(jobs), tuple(placed), free)


def _place_standing(free: np.ndarray, standing: tuple[StandingJob, ...], cpu_limit: float, rng: np.random.Generator,
                    jobs: list[Job], placed: list[np.ndarray]) -> np.ndarray:
    """Place ``standing`` on ``free`` (changed), appending to ``jobs`` and ``placed``."""
    cpu = BASE.index("cpu")
    biggest = free.max(axis=0)
    asked = 0.0
    for sj in standing:
        request = np.asarray(sj.request, dtype=np.float64)
        asked += sj.tasks * request[cpu]
        if asked >= cpu_limit:
            break
        if np.any(request > biggest + EPS):
            continue  # a task larger than any machine: never placed
        durations = np.asarray(sj.durations if sj.durations else (float(sj.duration),) * sj.tasks, dtype=np.float64)
        recorded = np.asarray(sj.machines, dtype=np.int64) if sj.machines else np.full(sj.tasks, -1, dtype=np.int64)
        machines = _on_recorded(free, request, recorded)
        # A task the trace recorded nowhere is placed by randomized first
        # fit; one recorded on a machine it no longer fits is left out (a
        # snapshot's task belongs where it ran, not on a machine absent then).
        rest = np.flatnonzero(recorded < 0)
        if rest.size:
            machines[rest] = random_first_fit(free, request, int(rest.size), rng)
        ok = machines >= 0
        if not ok.any():
            continue
        kind = JobKind.SERVICE if np.isinf(durations).all() else JobKind.BATCH
        jobs.append(Job(-(len(jobs) + 1), sj.job_class, kind, sj.priority, 0.0, sj.request,
                        tuple(float(d) for d in durations[ok])))
        placed.append(machines[ok])
    return free


def _on_recorded(free: np.ndarray, request: np.ndarray, machines: np.ndarray) -> np.ndarray:
    """Each task on its recorded machine where it still fits (``free``
    changed), in order; -1 where it does not (or none was recorded)."""
    out = np.full(machines.size, -1, dtype=np.int64)
    for i, m in enumerate(machines.tolist()):
        if 0 <= m < free.shape[0] and np.all(free[m] + EPS >= request):
            free[m] -= request
            out[i] = m
    return out
