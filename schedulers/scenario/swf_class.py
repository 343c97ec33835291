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
from schedlab.schedulers.model.swf import SwfError, read_swf
from schedlab.schedulers.model.workload import Dist, JobClass, TraceJob
from schedlab.schedulers.scenario.css import input_file
from schedlab.schedulers.model.resources import DEFAULT
from schedlab.schedulers.scenario.fields import REQUIRED, Field, amounts, parse_fields, per_resource
from schedlab.schedulers.scenario.toml_table import Table, non_negative, positive, read_text

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios"  # scenarios/workloads/*.swf ship with schedlab


def _at_least_one(v: int) -> str | None:
    return None if v >= 1 else "must be >= 1"


# [[workload.classes]] with swf: one class replaying a log, in the order its
# keys are read (the log itself is read after them).
SWF_CLASS = (
    Field("name", str, doc="The class's name (unique), which sections route jobs by."),
    Field("swf", str, nested=True, read=lambda t, got: input_file(t, "swf", SHIPPED),
          doc="The SWF log: a path next to the scenario file, else a log shipped with schedlab."),
    Field("procs_per_task", int, 1, check=_at_least_one, schema={"minimum": 1},
          doc="Processors per task: a job of P processors is ceil(P / procs_per_task) tasks."),
    per_resource(lambda r, base: Field(r, float, REQUIRED if base else 0.0, check=positive if base else non_negative,
                                       doc=f"Each task's {r}." if base else "Each task's amount of a further resource (default 0).")),
    Field("max_jobs", int, None, check=_at_least_one, schema={"minimum": 1}, doc="Only the log's first N jobs (default: all)."),
    Field("start", float, None, unit="emulated s", check=non_negative, doc="Shifts every job's recorded submit time."),
    Field("priority", int, 0, doc="Its jobs' priority."),
)


def read_swf_class(t: Table, resources: tuple[str, ...] = DEFAULT) -> JobClass:
    """The class (its table closed), or ScenarioError naming the key, or the
    SWF file's line and field."""
    v = parse_fields(t, SWF_CLASS, values={"resources": resources})
    path, per_task, limit = v["swf"], v["procs_per_task"], v["max_jobs"]
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
        name=v["name"], kind=JobKind.BATCH,
        # What size checks and reports read of a class: the trace's means.
        interarrival=Dist("constant", value=max(mean(gaps), 1e-3) if gaps else 1.0),
        tasks=Dist("constant", value=float(max(tj.tasks for tj in trace))),
        duration=Dist("constant", value=mean([tj.runtime for tj in trace])),
        request=tuple(Dist("constant", value=x) for x in amounts(v, resources)),
        priority=v["priority"], start=v["start"], one_duration=True, trace=trace,
    )
