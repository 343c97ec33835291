"""Standard Workload Format logs (the Parallel Workloads Archive) as a
canonical trace. An SWF log records each job's submission, wait, run time,
processors and status but no machines: the cell is its header's
``MaxNodes`` (else ``ReadOptions.machines``) nodes of ``MaxProcs /
MaxNodes`` processors (else ``ReadOptions.cpus``, else 1).

Each job of P processors becomes a job of P one-processor tasks (its
status: 1 completed -> finished, 0 failed -> failed, 5 cancelled -> killed;
a job that never ran is not kept as tasks); its recorded start is its
submission plus its wait, so a replay's waits can be compared with the
log's; a log that leaves waits unknown (-1) records no start (the
task's run time is kept: it is taken to start at its submission). Memory: a node holds as many units as it has processors and a task
asks one (SWF's memory columns are mostly unknown). The preceding-job
field becomes a dependency; the queue is the tier.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from schedlab.schedulers.model.swf import FIELDS
from schedlab.schedulers.traces import form
from schedlab.schedulers.traces.builder import Builder
from schedlab.schedulers.traces.files import open_text
from schedlab.schedulers.traces.readers import ReadOptions, Reader

_HEADER = re.compile(r";\s*(MaxNodes|MaxProcs)\s*:\s*(\d+)")
_STATUS = {1: form.FINISHED, 0: form.FAILED, 5: form.KILLED}


def _file(src: Path) -> Path:
    if src.is_file():
        return src
    found = sorted(p for p in src.iterdir() if p.name.endswith((".swf", ".swf.gz")))
    if not found:
        raise form.TraceError(f"{src}: no .swf or .swf.gz file")
    return found[0]


def read(src: Path, options: ReadOptions) -> Builder:
    path = _file(src)
    name = str(path)
    header: dict[str, int] = {}
    submit: list[float] = []
    start: list[float] = []
    last_start: list[float] = []
    end: list[float] = []
    procs: list[int] = []
    ran: list[int] = []  # the job of each ran entry
    reason: list[int] = []
    jobs: list[tuple[int, float, str, str, int]] = []
    last = -math.inf
    with open_text(path) as fh:
        for n, line in enumerate(fh, start=1):
            head, _, comment = line.partition(";")
            m = _HEADER.match(";" + comment) if comment else None
            if m:
                header[m.group(1)] = int(m.group(2))
            parts = head.split()
            if not parts:
                continue
            if len(parts) != len(FIELDS):
                raise form.TraceError.at(name, n, None, f"{len(parts)} fields, an SWF line has {len(FIELDS)}")
            v = [_num(x, name, n, i) for i, x in enumerate(parts)]
            f = dict(zip(FIELDS, v))
            if f["submit"] < last:
                raise form.TraceError.at(name, n, "submit", f"time {f['submit']:g} is before the previous job's {last:g}")
            last = f["submit"]
            p = int(f["req_procs"]) if f["req_procs"] > 0 else int(f["procs"])
            job = int(f["job"])
            jobs.append((job, f["submit"], f"queue-{int(f['queue'])}", str(int(f["user"])), int(f["preceding"])))
            if p <= 0 or f["run"] <= 0:
                continue  # never ran: no tasks
            began = f["submit"] + max(f["wait"], 0.0)
            ran.append(job)
            submit.append(f["submit"])
            start.append(began if f["wait"] >= 0 else math.nan)
            last_start.append(began)
            end.append(began + f["run"])
            procs.append(p)
            reason.append(_STATUS.get(int(f["status"]), form.FINISHED))
    nodes = header.get("MaxNodes") or options.machines or max(procs, default=1)
    cpus = options.cpus or (header["MaxProcs"] / nodes if header.get("MaxProcs") else 1.0)
    b = Builder("swf", ("cpu", "mem"), ("a processor", "a processor's share of a node's memory"), (name,),
                recorded=not all(math.isnan(x) for x in start))
    for i in range(nodes):
        b.machine(0.0, i, form.ADD, (cpus, cpus))
    for job, sub, tier, user, after in jobs:
        b.job(job, sub, tier, 0, user, after=(after,) if after > 0 else ())
    if procs:
        counts = np.asarray(procs)
        owner = np.repeat(np.asarray(ran, np.int64), counts)
        index = np.concatenate([np.arange(c) for c in counts]).astype(np.int32)
        rep = lambda xs: np.repeat(np.asarray(xs, dtype=np.float64), counts)  # noqa: E731
        k = counts.sum()
        b.tasks({"job": owner, "index": index, "request": np.ones((k, 2), np.float32), "submit": rep(submit),
                 "start": rep(start), "last_start": rep(last_start), "end": rep(end),
                 "reason": np.repeat(np.asarray(reason, np.int8), counts), "machine": np.full(k, -1, np.int64),
                 "attempts": np.ones(k, np.int16)})
    b.notes["nodes"] = f"{nodes} of {cpus:g} processors ({'the log header' if header.get('MaxNodes') else 'options'})"
    return b


def _num(x: str, name: str, line: int, i: int) -> float:
    try:
        v = float(x)
    except ValueError:
        raise form.TraceError.at(name, line, FIELDS[i], f"not a number: {x!r}") from None
    if not math.isfinite(v):
        raise form.TraceError.at(name, line, FIELDS[i], f"not a finite number: {x!r}")
    return v


READER = Reader("swf", read, default_tier="queue-1")
