"""``[workload.trace]``: a converted cluster trace (``schedlab trace
convert``) as a scenario's cell and workload.

```toml
[workload.trace]
file = "traces/google2019_sample.npz"   # next to the scenario file, else a sample shipped with schedlab
window = [0.0, 3600.0]                   # seconds of the converted trace (default: all of it)
compress = 10.0                          # every time divided by this: the same load in a tenth of the time
tiers = ["production", "best_effort_batch"]   # which tiers replay (default: all)
classes = { best_effort_batch = "batch", production = "service" }   # tier -> job class (default: its own name)
units = { cpu = 1.0, mem = 1.0 }         # each amount times this (the cell's units from the trace's)
max_jobs = 5000                          # only the first N jobs of the window
```

Amounts: the trace's resources that ``[cell] resources`` declares (a
further one it does not, such as Azure's ssd, is left out), times
``units``. The cell: unless ``[cell]`` gives machine classes, the trace's
machines present in the window (with ``machine_events = false``: at its
start), alike ones one class (``trace-1``, ..., largest first). The
workload: one job class per class name the tiers map to
(a service class if every tier in it is one of the trace's service tiers),
each trace job one job at its recorded submission, its tasks each asking
the largest request any of them asked (the job's request: a job's tasks
share one shape in every architecture here) and running for its last
attempt's recorded run time (a task still running at the window's end: to
the end of the run). Tasks that never ran are not replayed. Jobs submitted
before the window with tasks running at its start are the cell's standing
load: each such task on the machine the trace recorded (by randomized
first fit where it recorded none), for what remained of its run. Priorities are the trace's own. Dependencies between jobs are not
replayed (each job arrives when the trace says it was submitted, which
already waited for what it depended on).

Machines join and leave as the trace says (``machine_events``, the
default): the cell holds every machine present at some time in the window,
each on a host actor of its own; one absent at the start is stopped at 0
and started, empty, when it joins; one the trace removes stops then
(``machine_faults``). A resize is not replayed (a keeper takes each
machine's capacity from the cell at the start).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from schedlab.schedulers.model.cluster import MachineClass
from schedlab.schedulers.model.jobs import JobKind
from schedlab.schedulers.model.workload import Dist, JobClass, StandingJob, TraceJob
from schedlab.schedulers.scenario.css import input_file
from schedlab.schedulers.scenario.fields import Field, parse_fields
from schedlab.schedulers.scenario.swf_class import SHIPPED
from schedlab.schedulers.scenario.toml_table import Table
from schedlab.schedulers.faults.plan import FaultSpec
from schedlab.schedulers.traces.form import Trace, TraceError
from schedlab.schedulers.traces.lifecycle import Presence, presence


def _positive(v: float) -> str | None:
    return None if v > 0 else "must be > 0"


def _window(v: list) -> str | None:
    if len(v) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in v):
        return "must be [start, end], two numbers of seconds"
    return None if 0 <= v[0] < v[1] else "must be [start, end] with 0 <= start < end"


def _names(v: Mapping) -> str | None:
    bad = [k for k, x in v.items() if not isinstance(x, str) or not x]
    return f"{bad[0]!r}: must name a job class (a string)" if bad else None


def _factors(v: Mapping) -> str | None:
    bad = [k for k, x in v.items() if isinstance(x, bool) or not isinstance(x, (int, float)) or x <= 0]
    return f"{bad[0]!r}: must be a number > 0" if bad else None


TRACE_FIELDS = (
    Field("file", str, nested=True, read=lambda t, got: input_file(t, "file", SHIPPED),
          doc="A converted trace (schedlab trace convert): next to the scenario file, else a sample shipped with schedlab."),
    Field("window", list, None, unit="s", check=_window,
          doc="[start, end]: the part of the converted trace to replay, in its seconds (default: all)."),
    Field("compress", float, 1.0, check=_positive, schema={"exclusiveMinimum": 0},
          doc="Every time (submissions, run times) divided by this: the same load in less emulated time."),
    Field("tiers", list, None, doc="The tiers to replay (default: all; schedlab trace info lists them)."),
    Field("classes", dict, None, check=_names, doc="Tier -> the job class its jobs join (default: a class per tier, named by it)."),
    Field("units", dict, None, check=_factors,
          doc="Resource -> factor: the cell's amounts are the trace's times this (default 1: the trace's own units)."),
    Field("max_jobs", int, None, check=lambda v: None if v >= 1 else "must be >= 1", schema={"minimum": 1},
          doc="Only the first N jobs submitted in the window."),
    Field("machine_events", bool, True,
          doc="Machines join and leave as the trace says (each on a host actor of its own: [cell] machines_per_actor "
              "= 1); false: the cell is the trace's machines at the window's start, all through the run."),
)


@dataclass(frozen=True)
class Replay:
    """What a scenario takes from a trace: machine classes (with the cell
    index of each trace machine present), job classes, standing load."""

    machines: tuple[MachineClass, ...]
    classes: tuple[JobClass, ...]
    standing: tuple[StandingJob, ...]
    skipped: int  # jobs with no task that ran
    faults: tuple[FaultSpec, ...] = ()  # machines joining and leaving (machine_faults)


@lru_cache(maxsize=4)
def _load(path: str, mtime: float) -> Trace:
    return Trace.load(path)


def load(path: Path) -> Trace:
    """The converted trace (cached by path and modification time: a
    comparison reads one file once for every architecture)."""
    return _load(str(path), path.stat().st_mtime)


def read_replay(t: Table, resources: tuple[str, ...], own_cell: bool) -> Replay:
    """The table read (and closed), or ScenarioError naming the key, or the
    file and the problem. ``own_cell``: the scenario gives its own machine
    classes (the trace's are not used, and its recorded machines mean
    nothing there)."""
    v = parse_fields(t, TRACE_FIELDS)
    t.done()
    try:
        trace = load(v["file"])
    except TraceError as e:
        t.fail(t.key("file"), str(e))
    units = dict(v["units"] or {})
    unknown = sorted(set(units) - set(trace.resources))
    if unknown:
        t.fail(t.key("units"), f"{unknown[0]!r} is not one of the trace's resources ({', '.join(trace.resources)})")
    # The cell's resources decide what is scheduled: a further resource of
    # the trace's the scenario does not declare is left out (cpu and mem,
    # every scenario's, never are).
    kept = [i for i, r in enumerate(trace.resources) if r in resources]
    scale = np.asarray([units.get(trace.resources[i], 1.0) for i in kept])
    cols = [resources.index(trace.resources[i]) for i in kept]
    start, end = (float(v["window"][0]), float(v["window"][1])) if v["window"] else (0.0, trace.span)
    if start >= trace.span:
        t.fail(t.key("window"), f"starts at {start:g} s, after the trace's end ({trace.span:g} s)")
    tiers = v["tiers"] if v["tiers"] is not None else list(trace.tiers)
    mapping = dict(v["classes"] or {})
    for key, named in (("tiers", tiers), ("classes", list(mapping))):
        odd = [x for x in named if x not in trace.tiers]
        if odd:
            t.fail(t.key(key), f"{odd[0]!r} is not a tier of the trace ({', '.join(trace.tiers)})")
    # The cell holds every machine present at some time in the window; with
    # machine_events, those absent at the start join when the trace says and
    # those it removes leave (else the cell is the one at the start).
    if v["machine_events"]:
        there = presence(trace, start, end)
        ids, caps = there.ids, there.capacity
    else:
        ids, caps = trace.machines_at(start)
    machines, cell_index = _machines(trace, ids, caps, scale, cols, kept, len(resources))
    if not machines and not own_cell:
        t.fail(t.key("window"), f"no machine of the trace is present in [{start:g}, {end:g}] s")
    out = _jobs(trace, start, end, tiers, mapping, scale, cols, kept, len(resources), v["compress"], v["max_jobs"],
                None if own_cell else cell_index)
    if not out[0]:
        t.fail(t.key("window"), f"no job of tiers {', '.join(tiers)} runs in [{start:g}, {end:g}] s")
    faults = () if own_cell or not v["machine_events"] else machine_faults(there, cell_index, v["compress"])
    return Replay(() if own_cell else machines, *out, faults)


def machine_faults(there: Presence, cell_index: np.ndarray, compress: float) -> tuple[FaultSpec, ...]:
    """The trace's machines joining and leaving as kills and restarts of
    their host actors (one machine each): a machine absent at the start is
    killed at 0 and restarted, empty, when it joins (a machine that
    registers); one removed is killed then, and restarted if it comes back.
    Its architecture finds out as it does of any machine that stops: its
    keeper's liveness check writes it off, its tasks lost and placed again."""
    out: list[FaultSpec] = []
    for m, spans in zip(there.ids.tolist(), there.intervals):
        host = f"machine-host-{int(cell_index[m])}"
        gone = 0.0 if spans[0][0] > 0 else None  # absent at the start: gone from 0 until its first span
        for a, b in spans:
            if gone is not None:
                out.append(FaultSpec(gone / compress, "kill", host, restart_after=(a - gone) / compress))
            gone = b if math.isfinite(b) else None
        if gone is not None:
            out.append(FaultSpec(gone / compress, "kill", host))
    return tuple(sorted(out, key=lambda f: f.at))


def _machines(trace: Trace, ids: np.ndarray, caps: np.ndarray, scale: np.ndarray, cols: list[int], kept: list[int],
              width: int) -> tuple[tuple[MachineClass, ...], np.ndarray]:
    """Machine classes of alike machines (``ids``, with capacities ``caps``;
    largest first) and, per trace machine, its index in the cell
    ``build_cell`` lays out (-1: not in it)."""
    amounts = np.zeros((ids.size, width))
    amounts[:, cols] = caps[:, kept] * scale
    shapes, inverse, counts = np.unique(amounts, axis=0, return_inverse=True, return_counts=True)
    order = np.lexsort(tuple(-shapes[:, c] for c in reversed(range(width))))  # largest first
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    classes = tuple(MachineClass(f"trace-{k + 1}", int(counts[i]), tuple(float(x) for x in shapes[i]))
                    for k, i in enumerate(order.tolist()))
    cell_index = np.full(trace.machines, -1, dtype=np.int64)
    inverse = rank[inverse.reshape(-1)]
    offsets = np.concatenate([[0], np.cumsum(counts[order])])
    by_class = np.argsort(inverse, kind="stable")
    within = np.empty(ids.size, dtype=np.int64)
    within[by_class] = np.arange(ids.size) - offsets[inverse[by_class]]
    cell_index[ids] = offsets[inverse] + within
    return classes, cell_index


def _jobs(trace: Trace, start: float, end: float, tiers: list[str], mapping: dict[str, str], scale: np.ndarray,
          cols: list[int], kept: list[int], width: int, compress: float, max_jobs: int | None, cell_index: np.ndarray | None
          ) -> tuple[tuple[JobClass, ...], tuple[StandingJob, ...], int]:
    run = trace.run_times()
    ran = ~np.isnan(run)
    keep_tier = np.isin(np.asarray(trace.tiers)[trace.job_tier] if trace.jobs else np.zeros(0, str), tiers)
    request = np.zeros((trace.tasks, width))
    request[:, cols] = trace.task_request[:, kept].astype(np.float64) * scale
    bounds = np.searchsorted(trace.task_job, np.arange(trace.jobs + 1))
    submit = trace.job_submit
    arriving = np.flatnonzero(keep_tier & (submit >= start) & (submit < end))
    if max_jobs is not None:
        arriving = arriving[:max_jobs]  # jobs are sorted by submission
    running = ran & (trace.task_last_start < start) & ~(trace.task_end <= start)
    standing_jobs = np.unique(trace.task_job[running])
    standing_jobs = standing_jobs[keep_tier[standing_jobs] & (submit[standing_jobs] < start)]
    class_of = {tier: mapping.get(tier, tier) for tier in trace.tiers}
    traced: dict[str, list[TraceJob]] = {}
    skipped = 0
    for j in arriving.tolist():
        a, b = bounds[j], bounds[j + 1]
        ok = ran[a:b]
        if not ok.any():
            skipped += 1
            continue
        times = run[a:b][ok] / compress
        req = request[a:b][ok].max(axis=0)
        began = (trace.task_start[a:b][ok] - submit[j]) / compress
        recorded = trace.recorded and not np.isnan(began).any()
        traced.setdefault(class_of[trace.tiers[trace.job_tier[j]]], []).append(TraceJob(
            float(submit[j] - start) / compress, int(ok.sum()), float(np.max(times)), None, tuple(float(x) for x in req),
            runtimes=tuple(float(x) for x in times),
            recorded_starts=tuple(float(x) for x in began) if recorded else None,
            recorded_machines=tuple(int(cell_index[m]) if m >= 0 else -1 for m in trace.task_machine[a:b][ok].tolist())
            if recorded and cell_index is not None else None))
    standing: list[StandingJob] = []
    for j in standing_jobs.tolist():
        a, b = bounds[j], bounds[j + 1]
        on = running[a:b]
        left = np.where(np.isnan(trace.task_end[a:b][on]), math.inf, (trace.task_end[a:b][on] - start) / compress)
        machines = trace.task_machine[a:b][on]
        standing.append(StandingJob(
            class_of[trace.tiers[trace.job_tier[j]]], int(on.sum()), tuple(float(x) for x in request[a:b][on].max(axis=0)),
            priority=int(trace.job_priority[j]), durations=tuple(float(x) for x in left),
            machines=tuple(int(cell_index[m]) if cell_index is not None and m >= 0 else -1 for m in machines.tolist())))
    service = set(trace.service_tiers)
    classes = []
    for name, jobs in traced.items():
        members = {tier for tier, c in class_of.items() if c == name}
        classes.append(_class(name, JobKind.SERVICE if members <= service else JobKind.BATCH, jobs, width,
                              _priority(trace, members), (end - start) / compress))
    return tuple(classes), tuple(standing), skipped


def _priority(trace: Trace, tiers: set[str]) -> int:
    codes = [i for i, x in enumerate(trace.tiers) if x in tiers]
    p = trace.job_priority[np.isin(trace.job_tier, codes)]
    return int(np.median(p)) if p.size else 0


def _mean_and_top(xs: list[float]) -> Dist:
    """A distribution whose expectation is the values' mean and whose
    maximum is their largest (the size checks read both; a replay draws
    nothing from it): the mean with all the weight, the largest with none."""
    a = np.asarray(xs, dtype=np.float64)
    return Dist("empirical", values=(float(a.mean()), float(a.max())), weights=(1.0, 0.0))


def _class(name: str, kind: JobKind, jobs: list[TraceJob], width: int, priority: int, span: float) -> JobClass:
    """A class replaying ``jobs`` over ``span`` emulated s; what size checks
    and reports read of a class (its distributions) are the trace's means
    and maxima (its mean gap: the span over its jobs, which many arriving
    at one instant cannot shrink to nothing)."""
    jobs.sort(key=lambda j: j.submit)
    finite = [j.runtime for j in jobs if math.isfinite(j.runtime)]
    req = np.asarray([j.request for j in jobs if j.request is not None], dtype=np.float64).reshape(-1, width)
    return JobClass(
        name=name, kind=kind,
        interarrival=Dist("constant", value=max(span / len(jobs), 1e-3)),
        tasks=_mean_and_top([float(j.tasks) for j in jobs]),
        duration=Dist("constant", value=sum(finite) / len(finite) if finite else 1.0),
        request=tuple(_mean_and_top(req[:, r].tolist()) for r in range(width)),
        priority=priority, one_duration=False, trace=tuple(jobs),
    )
