"""Alibaba's GPU traces in a scenario (``schedulers.model.alibaba_gpu``
reads them): a node list as the cell's machines, a pod or task list as a
job class that replays it.

```toml
[cell]
resources = ["cpu", "mem", "gpu"]
devices = "gpu"                       # a node's GPUs are this resource's devices
nodes = { format = "openb", file = "workloads/openb_node_list_sample.csv" }

[[workload.classes]]
name = "pods"
gpu_trace = "workloads/openb_pod_list_sample.csv"
format = "openb"                      # or "pai" (pai_task_table; jobs = its pai_job_table)
```

Nodes alike (cpu, memory, GPUs, model) become one machine class, named by
model. Each pod (each instance of a PAI task) becomes a job of one task at
its recorded submission time, less the first one's (divided by the class's
``speedup``; its ``start`` shifts them all), asking its own cpu, memory and GPUs (whole, or a share of
one) on the models it names, and running as long as it ran in the trace:
from its start (scheduled time; without one, its submission) to its end
(deletion); a pod the trace never saw end runs until the run does. A file
path is looked for next to the scenario file, then among the samples
schedlab ships. Any architecture can replay it; shares and models need one
that places devices.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from schedlab.schedulers.model.alibaba_gpu import (Task, TraceError, openb_nodes, openb_tasks, pai_job_submits,
                                                   pai_machines, pai_tasks)
from schedlab.schedulers.model.cluster import MachineClass
from schedlab.schedulers.model.jobs import JobKind
from schedlab.schedulers.model.resources import BASE
from schedlab.schedulers.model.workload import Dist, JobClass, TraceJob
from schedlab.schedulers.scenario.css import input_file
from schedlab.schedulers.scenario.swf_class import SHIPPED  # scenarios/workloads/* ship with schedlab
from schedlab.schedulers.scenario.fields import Field, parse_fields
from schedlab.schedulers.scenario.toml_table import Table, non_negative

FORMATS = ("openb", "pai")


def _file(t: Table, key: str) -> Path:
    return input_file(t, key, SHIPPED)


def _at_least_one(v: int) -> str | None:
    return None if v >= 1 else "must be >= 1"


# [cell] nodes = { ... }: the machines of a trace's node list.
NODE_FIELDS = (
    Field("format", str, choices=FORMATS, doc="openb (openb_node_list_*.csv) or pai (pai_machine_spec)."),
    Field("file", str, nested=True, read=lambda t, got: _file(t, "file"),
          doc="The node list: a path next to the scenario file, else a sample shipped with schedlab."),
    Field("max_nodes", int, None, check=_at_least_one, schema={"minimum": 1}, doc="Only the list's first N nodes."),
)

# [[workload.classes]] with gpu_trace: one class replaying a pod or task list.
TRACE_CLASS = (
    Field("name", str, doc="The class's name (unique), which sections route jobs by."),
    Field("gpu_trace", str, nested=True, read=lambda t, got: _file(t, "gpu_trace"),
          doc="The pod list (openb_pod_list_*.csv) or task table (pai_task_table): next to the scenario file, else "
              "a sample shipped with schedlab."),
    Field("format", str, choices=FORMATS, doc="openb or pai."),
    Field("jobs", str, None, nested=True, read=lambda t, got: _file(t, "jobs") if "jobs" in t.data else None,
          doc="pai only: the pai_job_table that gives each task its job's submission time (default: the task's start)."),
    Field("max_jobs", int, None, check=_at_least_one, schema={"minimum": 1}, doc="Only the list's first N pods or tasks."),
    Field("start", float, None, unit="emulated s", check=non_negative, doc="Shifts every job's submission time."),
    Field("priority", int, 0, doc="Its jobs' priority."),
    Field("speedup", float, 1.0, check=lambda v: None if v > 0 else "must be > 0", schema={"exclusiveMinimum": 0},
          doc="Submissions this many times closer together (run times as recorded): the same pods as a heavier load."),
)


def read_nodes(t: Table, resources: tuple[str, ...], devices: str | None) -> tuple[MachineClass, ...]:
    """The node list's machines as machine classes, alike nodes together
    (the table closed), or ScenarioError naming the key or the file's line."""
    v = parse_fields(t, NODE_FIELDS)
    t.done()
    reader = openb_nodes if v["format"] == "openb" else pai_machines
    groups: dict[tuple[float, float, int, str], int] = {}
    try:
        for i, node in enumerate(reader(v["file"])):
            if v["max_nodes"] is not None and i >= v["max_nodes"]:
                break
            if node.devices and devices is None:
                t.fail(t.key("file"), f"{v['file']}: node {node.name} has GPUs: name the resource that holds them in "
                                      "[cell] devices")
            key = (node.cpu, node.mem, node.devices, node.model if node.devices else "")
            groups[key] = groups.get(key, 0) + 1
    except TraceError as e:
        t.fail(t.key("file"), str(e))
    if not groups:
        t.fail(t.key("file"), f"{v['file']}: no nodes")
    out: list[MachineClass] = []
    per_model: dict[str, int] = {}
    for (cpu, mem, n, model), count in groups.items():
        k = per_model[model] = per_model.get(model, 0) + 1
        amounts = dict(zip(BASE, (cpu, mem)))
        if devices is not None:
            amounts[devices] = float(n)
        out.append(MachineClass(f"{model or 'cpu'}-{k}", count, tuple(amounts.get(r, 0.0) for r in resources), model=model))
    return tuple(out)


def _tasks(v: dict) -> Iterator[Task]:
    if v["format"] == "openb":
        if v["jobs"] is not None:
            raise TraceError(f"{v['jobs']}: an openb pod list has its own submission times: no jobs file")
        return openb_tasks(v["gpu_trace"])
    return pai_tasks(v["gpu_trace"], pai_job_submits(v["jobs"]) if v["jobs"] is not None else None)


def read_trace_class(t: Table, resources: tuple[str, ...], devices: str | None,
                     machines: tuple[MachineClass, ...]) -> JobClass:
    """The class replaying the list (the table closed), or ScenarioError
    naming the key, or the file's line: a malformed row, a pod asking for
    GPUs in a cell without devices, one asking for a model no machine has,
    or one that fits no machine."""
    v = parse_fields(t, TRACE_CLASS)
    t.done()
    where = t.key("gpu_trace")
    caps = np.array([mc.capacity for mc in machines], dtype=np.float64).reshape(len(machines), len(resources))
    models = np.array([mc.model for mc in machines])
    jobs: list[TraceJob] = []
    try:
        for i, task in enumerate(_tasks(v)):
            if v["max_jobs"] is not None and i >= v["max_jobs"]:
                break
            request = dict(zip(BASE, (task.cpu, task.mem)))
            if task.devices:
                if devices is None:
                    t.fail(where, f"{v['gpu_trace']}: {task.name} asks for GPUs: name the resource that holds them in "
                                  "[cell] devices")
                request[str(devices)] = task.devices
            vec = tuple(float(request.get(r, 0.0)) for r in resources)
            ok = np.all(caps + 1e-9 >= np.asarray(vec), axis=1)
            if task.models and task.devices:
                ok &= np.isin(models, task.models)
            if not ok.any():
                asked = ", ".join(f"{r}={x:g}" for r, x in zip(resources, vec))
                t.fail(where, f"{v['gpu_trace']}: {task.name} ({asked}{', models ' + '|'.join(task.models) if task.models else ''})"
                              " fits no machine")
            began = task.start if task.start is not None else task.submit
            run = max(task.end - began, 1e-3) if task.end is not None else math.inf
            jobs.append(TraceJob(task.submit, 1, run, None, vec, task.models if task.devices else ()))
    except TraceError as e:
        t.fail(where, str(e))
    if not jobs:
        t.fail(where, f"{v['gpu_trace']}: no pods or tasks")
    t0 = min(j.submit for j in jobs)
    trace = tuple(sorted((TraceJob((j.submit - t0) / v["speedup"], j.tasks, j.runtime, None, j.request, j.models) for j in jobs),
                         key=lambda j: j.submit))
    gaps = [b.submit - a.submit for a, b in zip(trace, trace[1:])]
    finite = [j.runtime for j in trace if math.isfinite(j.runtime)]
    return JobClass(
        name=v["name"], kind=JobKind.BATCH,
        # What size checks and reports read of a class: the trace's means and, per resource, the values it asks.
        interarrival=Dist("constant", value=max(sum(gaps) / len(gaps), 1e-3) if gaps else 1.0),
        tasks=Dist("constant", value=1.0),
        duration=Dist("constant", value=sum(finite) / len(finite) if finite else 1.0),
        request=tuple(_values([j.request[r] for j in trace if j.request is not None]) for r in range(len(resources))),
        priority=v["priority"], start=v["start"], one_duration=True, trace=trace,
    )


def _values(xs: list[float]) -> Dist:
    """An empirical distribution of the values a trace asks, by count."""
    values, counts = np.unique(np.asarray(xs, dtype=np.float64), return_counts=True)
    return Dist("empirical", values=tuple(float(x) for x in values), weights=tuple(float(c) for c in counts))
