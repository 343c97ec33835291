"""A ``[[workload.classes]]`` entry that replays a Standard Workload Format
log (``schedulers.model.swf``) instead of drawing its jobs:

```toml
[[workload.classes]]
name = "hpc"
swf = "workloads/slurm_sample.swf"  # next to the scenario file, else the sample shipped with schedlab
procs_per_task = 4                   # an SWF job of P processors is ceil(P / 4) tasks (nodes)
cpu = 4.0                            # what each task asks (a whole 4-cpu node here)
mem = 8.0
max_jobs = 500                       # optional: only the first N jobs of the log
```

Each SWF job becomes one job of the class at its recorded submit time (the
class's ``start`` shifts them all), every task running for its recorded
run time (a rigid job) and carrying its requested time as the user's
estimate (``Job.estimate``). Any architecture can run it; a batch system
uses the estimate as the job's time limit.
"""
from __future__ import annotations

import math
from pathlib import Path

from schedlab.schedulers.model.jobs import JobKind
from schedlab.schedulers.model.resources import RESOURCES
from schedlab.schedulers.model.swf import SwfError, read_swf
from schedlab.schedulers.model.workload import Dist, JobClass, TraceJob
from schedlab.schedulers.scenario.css import base_dirs
from schedlab.schedulers.scenario.toml_table import Table, non_negative, positive, read_text

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"  # scenarios/workloads/*.swf ship with schedlab


def _path(t: Table) -> Path:
    raw = t.get("swf", str, check=lambda v: None if v.strip() else "must not be empty")
    tried = [Path(raw)] if Path(raw).is_absolute() else [b / raw for b in base_dirs(t.source, SHIPPED)]
    for p in tried:
        if p.is_file():
            return p
    t.fail(t.key("swf"), f"no file {raw!r} (looked in {', '.join(str(p.parent) for p in tried)})")
    raise AssertionError  # fail raises


def read_swf_class(t: Table) -> JobClass:
    """The class (its table closed), or ScenarioError naming the key, or the
    SWF file's line and field."""
    name = t.get("name", str)
    path = _path(t)
    per_task = t.get("procs_per_task", int, default=1, check=lambda v: None if v >= 1 else "must be >= 1")
    request = tuple(t.get(r, float, check=positive) for r in RESOURCES)
    limit = t.get("max_jobs", int, default=None, check=lambda v: None if v >= 1 else "must be >= 1")
    start = t.get("start", float, default=None, check=non_negative)
    priority = t.get("priority", int, default=0)
    try:
        jobs = read_swf(read_text(path, "SWF log"), str(path))
    except SwfError as e:
        t.fail(t.key("swf"), str(e))
    if limit is not None:
        jobs = jobs[:limit]
    if not jobs:
        t.fail(t.key("swf"), f"{path}: no job with a size and a run time")
    t.done()
    trace = tuple(TraceJob(j.submit, math.ceil(j.procs / per_task), j.run, j.req_time) for j in jobs)
    gaps = [b.submit - a.submit for a, b in zip(trace, trace[1:])]
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    return JobClass(
        name=name, kind=JobKind.BATCH,
        # What size checks and reports read of a class: the trace's means.
        interarrival=Dist("constant", value=max(mean(gaps), 1e-3) if gaps else 1.0),
        tasks=Dist("constant", value=float(max(tj.tasks for tj in trace))),
        duration=Dist("constant", value=mean([tj.runtime for tj in trace])),
        request=tuple(Dist("constant", value=v) for v in request),
        priority=priority, start=start, one_duration=True, trace=trace,
    )
