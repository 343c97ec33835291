"""The workload inputs of the Omega paper's simulator, read: file text in,
distributions and the initial cell state out. Pure (no I/O: the scenario
layer, ``schedulers.scenario.css``, reads the files and calls these).

CSS (google/cluster-scheduler-simulator, Schwarzkopf et al., EuroSys 2013)
builds its default experiment's workload from two kinds of text file (their
schemas: ``scenarios/paper/css-example/README.txt`` and
``job-distribution-traces/README.txt``):

* **job-distribution files**, one data point per line: ``cluster policy
  scheduler value``, scheduler 0 = batch, 1 = service; one file each for
  job interarrival times (s), tasks per job and job runtimes (s).
* **the initial cell state**: row ``11`` a job running at the start (8
  columns: ``11 time job prod sched_class tasks cpu ram_bytes``), row ``12``
  its end (6 columns; CSS reads column 1, the timestamp, as the job's task
  duration). Rows are split into batch and service by a policy; CMB_PBB:
  service iff prod and sched_class is 2 or 3.

How CSS samples them (``DistCache``, ``TraceAllWLGenerator`` and
``PrefillJobListsCache`` in ``src/main/scala/CoreClusterSimulation.scala``),
and what ``sampler`` reproduces:

* The data points of one scheduler id are sorted and summarised by a table of
  1001 quantiles, ``table[i] = sorted[int((n - 1) * i / 1000)]`` (so with n
  points the largest is drawn only at i = 1000: weight 1/1001, not 1/n).
* A draw takes u uniform in [0, 1), ``r = 1000 u``, ``b = table[floor r]``,
  ``a = table[ceil r]``, ``f = r - floor r`` and returns ``b + f * (b + a)``:
  meant as linear interpolation (``b + f * (a - b)``), it is uniform on
  ``[b, 2b + a)``, so in a flat stretch of the table a draw averages 2b.
  That is exactly a histogram of 1000 equally likely bins, which is how
  ``sampler(..., "css")`` returns it. ``"empirical"`` is the files as data
  instead: each point equally likely.
* Tasks per job: ``ceil`` of a draw (schedlab's job generator rounds up too).
  Runtime: redrawn while <= 0; one runtime per job, every task runs for it.
  Interarrival: as drawn (times a scale, CSS's lambda-sweep knob).
* Task shapes: per-task cpu and memory are the init-state jobs' aggregate
  cpu and ram divided by their tasks (one data point per job, ram in GiB),
  sampled as above and multiplied by 0.7; a draw at or above the cap (3.9
  cpu, 15.9 GB for 4-cpu, 16 GB machines) is drawn again. CSS caches these
  two tables by file name alone, so whichever workload asks first (Batch, in
  its default experiment) gives its table to both: ``shapes_for`` says which.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

from schedlab.schedulers.model.workload import Dist

BATCH, SERVICE = 0, 1
SCHEDULERS = {BATCH: "batch", SERVICE: "service"}
POLICIES = ("cmb_pbb",)
SAMPLINGS = ("css", "empirical")
QUANTILES = 1001  # CSS's table: the 0th to the 1000th permille
GIB = 1024 ** 3


class CssFormatError(ValueError):
    """A CSS input file is malformed; str() is ``line N: problem`` (the
    caller names the file)."""


@dataclass(frozen=True)
class InitJob:
    """A job of the initial cell state (its row 11, and its row 12 if any)."""

    job_id: str
    prod: bool
    sched_class: int
    tasks: int
    cpu: float  # aggregate, cores
    mem: float  # aggregate, GiB
    end: float = math.inf  # its row 12's timestamp (s); inf: no row 12, it runs through

    @property
    def cpu_per_task(self) -> float:
        return self.cpu / self.tasks

    @property
    def mem_per_task(self) -> float:
        return self.mem / self.tasks


def _number(field: str, line: int, what: str) -> float:
    try:
        v = float(field)
    except ValueError:
        raise CssFormatError(f"line {line}: {what} {field!r} is not a number") from None
    if not math.isfinite(v):
        raise CssFormatError(f"line {line}: {what} {field!r} is not finite")
    return v


def _rows(text: str) -> Iterable[tuple[int, list[str]]]:
    """Non-blank lines as (line number, whitespace-split fields)."""
    for i, line in enumerate(text.splitlines(), start=1):
        fields = line.split()
        if fields:
            yield i, fields


def read_job_distribution(text: str) -> dict[int, tuple[float, ...]]:
    """A job-distribution file: its values per scheduler id (0 batch,
    1 service), in file order; an id with no line is absent."""
    out: dict[int, list[float]] = {}
    for n, fields in _rows(text):
        if len(fields) != 4:
            raise CssFormatError(f"line {n}: expected 4 fields (cluster, policy, scheduler id, value), got {len(fields)}")
        if fields[2] not in ("0", "1"):
            raise CssFormatError(f"line {n}: scheduler id must be 0 (batch) or 1 (service), got {fields[2]!r}")
        v = _number(fields[3], n, "value")
        if v < 0:
            raise CssFormatError(f"line {n}: value must be >= 0, got {fields[3]!r}")
        out.setdefault(int(fields[2]), []).append(v)
    if not out:
        raise CssFormatError("line 1: no data points")
    return {k: tuple(v) for k, v in sorted(out.items())}


def read_init_state(text: str) -> tuple[InitJob, ...]:
    """The initial-cell-state file's jobs, in the order of their row 11."""
    jobs: dict[str, InitJob] = {}
    for n, fields in _rows(text):
        kind = fields[0]
        if kind not in ("11", "12"):
            raise CssFormatError(f"line {n}: the first field must be 11 (running at the start) or 12 (its end), got {kind!r}")
        want = 8 if kind == "11" else 6
        if len(fields) != want:
            raise CssFormatError(f"line {n}: a row {kind} has {want} fields, got {len(fields)}")
        t = _number(fields[1], n, "timestamp")
        job_id = fields[2]
        if fields[3] not in ("0", "1"):
            raise CssFormatError(f"line {n}: prod must be 0 or 1, got {fields[3]!r}")
        if fields[4] not in ("0", "1", "2", "3"):
            raise CssFormatError(f"line {n}: sched_class must be 0, 1, 2 or 3, got {fields[4]!r}")
        if kind == "12":
            if job_id not in jobs:
                raise CssFormatError(f"line {n}: job {job_id} ends but has no row 11 before it")
            if t <= 0:
                raise CssFormatError(f"line {n}: job {job_id}'s end must be > 0, got {fields[1]!r}")
            jobs[job_id] = InitJob(**{**jobs[job_id].__dict__, "end": t})
            continue
        if job_id in jobs:
            raise CssFormatError(f"line {n}: job {job_id} has a second row 11")
        try:
            tasks = int(fields[5])
        except ValueError:
            raise CssFormatError(f"line {n}: tasks {fields[5]!r} is not a whole number") from None
        if tasks < 1:
            raise CssFormatError(f"line {n}: tasks must be >= 1, got {fields[5]!r}")
        cpu, ram = _number(fields[6], n, "cpu"), _number(fields[7], n, "ram")
        if cpu < 0 or ram < 0:
            raise CssFormatError(f"line {n}: cpu and ram must be >= 0")
        jobs[job_id] = InitJob(job_id, fields[3] == "1", int(fields[4]), tasks, cpu, ram / GIB)
    if not jobs:
        raise CssFormatError("line 1: no row 11 (a job running at the start)")
    return tuple(jobs.values())


def scheduler_of(job: InitJob, policy: str = "cmb_pbb") -> int:
    """The scheduler id a policy assigns an init-state job. CMB_PBB
    (traces/README.txt): service iff prod and sched_class is neither 0 nor 1."""
    if policy != "cmb_pbb":
        raise ValueError(f"unknown split policy {policy!r} (known: {', '.join(POLICIES)})")
    return SERVICE if job.prod and job.sched_class not in (0, 1) else BATCH


def split(jobs: Iterable[InitJob], policy: str = "cmb_pbb") -> dict[int, tuple[InitJob, ...]]:
    """``jobs`` by scheduler id (both ids present, maybe empty), order kept."""
    out: dict[int, list[InitJob]] = {BATCH: [], SERVICE: []}
    for j in jobs:
        out[scheduler_of(j, policy)].append(j)
    return {k: tuple(v) for k, v in out.items()}


def quantile_table(values: Iterable[float]) -> tuple[float, ...]:
    """CSS's summary of a list of data points: 1001 quantiles."""
    s = sorted(values)
    if not s:
        raise ValueError("no data points")
    n = len(s)
    return tuple(s[int((n - 1) * i / 1000.0)] for i in range(QUANTILES))


def sampler(values: Iterable[float], sampling: str, scale: float = 1.0, above: float = -math.inf,
            below: float = math.inf) -> Dist:
    """The distribution a data set is drawn from, times ``scale``, kept to the
    open interval (``above``, ``below``) (CSS redraws outside it, so this is
    the distribution conditioned on it).

    ``"css"``: CSS's quantile-table draw, as a histogram of 1000 equally likely
    bins ``[b, 2b + a)`` (module docstring). ``"empirical"``: each data point
    equally likely. ValueError when nothing is left inside the interval."""
    vals = [float(v) for v in values]
    if sampling == "empirical":
        kept = [v * scale for v in vals if above < v * scale < below]
        if not kept:
            raise ValueError(f"no data point times {scale:g} lies in ({above:g}, {below:g})")
        return Dist("empirical", values=tuple(kept))
    if sampling != "css":
        raise ValueError(f"unknown sampling {sampling!r} (known: {', '.join(SAMPLINGS)})")
    table = quantile_table(vals)
    lows: list[float] = []
    highs: list[float] = []
    weights: list[float] = []
    for b, a in zip(table, table[1:]):
        lo, hi = b * scale, (2 * b + a) * scale
        if hi <= lo:  # b = a = 0: the draw is b itself
            if above < lo < below:
                lows.append(lo)
                highs.append(lo)
                weights.append(1.0)
            continue
        cut_lo, cut_hi = max(lo, above), min(hi, below)
        if cut_hi <= cut_lo:
            continue
        lows.append(cut_lo)
        highs.append(cut_hi)
        weights.append((cut_hi - cut_lo) / (hi - lo))
    if not weights:
        raise ValueError(f"no draw times {scale:g} lies in ({above:g}, {below:g})")
    return Dist("histogram", values=tuple(lows), highs=tuple(highs), weights=tuple(weights))


def shapes_for(scheduler: int, sampling: str) -> int:
    """Whose init-state jobs give ``scheduler``'s task shapes: CSS's cache
    hands Batch's table to both workloads (``"css"``); ``"empirical"`` gives
    each its own."""
    return BATCH if sampling == "css" else scheduler
