"""The Omega paper simulator's inputs (CSS: distributions of interarrival
times, tasks per job and run times per scheduler, and an initial cell
state) as a canonical trace: what CSS would replay, drawn once.

CSS describes a workload rather than recording one, so converting draws it:
the jobs arriving over ``ReadOptions.horizon`` seconds with its seed, each
drawn as ``schedulers.scenario.css`` draws them for a run (its defaults:
CMB_PBB, CSS's quantile-table sampling), and the initial cell state's jobs
as standing load (submitted and started before 0, each running its
recorded duration), taken in file order up to CSS's 60% of the cell's cpu.
The cell is CSS's: ``ReadOptions.machines`` (default 10,000) machines of 4
cpu and 16 GB. Nothing is recorded of real scheduling (no starts).
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from schedlab.schedulers.model.workload import generate_jobs
from schedlab.schedulers.scenario.css import read_css
from schedlab.schedulers.scenario.toml_table import ScenarioError, Table
from schedlab.schedulers.traces import form
from schedlab.schedulers.traces.builder import Builder
from schedlab.schedulers.traces.readers import ReadOptions, Reader

MACHINES, CPU, MEM = 10_000, 4.0, 16.0


def read(src: Path, options: ReadOptions) -> Builder:
    folder = src if src.is_dir() else src.parent
    try:
        classes, standing, limit = read_css(Table({"dir": str(folder.resolve())}, "", str(folder)))
    except ScenarioError as e:
        raise form.TraceError(str(e)) from None
    machines = options.machines or MACHINES
    b = Builder("css", ("cpu", "mem"), ("a core", "GB"), (str(folder),), recorded=False, service_tiers=("service",))
    for i in range(machines):
        b.machine(0.0, i, form.ADD, (CPU, MEM))
    rows: list[tuple[int, int, tuple[float, ...], float, float, float]] = []  # job, tasks, request, submit, start, end
    budget, used = limit * machines * CPU, 0.0
    for k, sj in enumerate(standing):
        used += sj.tasks * sj.request[0]
        if used >= budget:
            break
        jid = -(k + 1)
        b.job(jid, -1.0, sj.job_class, sj.priority)
        rows.append((jid, sj.tasks, sj.request, -1.0, -1.0, sj.duration if math.isfinite(sj.duration) else math.nan))
    for job in generate_jobs(classes, options.horizon, options.seed):
        b.job(job.job_id, job.submit_time, job.job_class, job.priority)
        rows.append((job.job_id, job.tasks, job.request, job.submit_time, math.nan, job.submit_time + job.durations[0]))
    counts = np.asarray([r[1] for r in rows], dtype=np.int64)
    rep = lambda i: np.repeat(np.asarray([r[i] for r in rows], dtype=np.float64), counts)  # noqa: E731
    submit, start, end = rep(3), rep(4), rep(5)
    k = int(counts.sum())
    # A drawn job has no recorded start: its run time is kept by taking its
    # last start as its submission (as a log without waits).
    last_start = np.where(np.isnan(start), submit, start)
    b.tasks({"job": np.repeat(np.asarray([r[0] for r in rows], np.int64), counts),
             "index": np.concatenate([np.arange(c) for c in counts]).astype(np.int32) if k else np.zeros(0, np.int32),
             "request": np.repeat(np.asarray([r[2][:2] for r in rows], np.float32).reshape(len(rows), 2), counts, axis=0),
             "submit": submit, "start": start, "last_start": last_start, "end": end,
             "reason": np.where(np.isnan(end), form.NONE, form.FINISHED).astype(np.int8),
             "machine": np.full(k, -1, np.int64), "attempts": np.ones(k, np.int16)})
    b.notes["drawn"] = f"{options.horizon:g} s of CSS's workload, seed {options.seed}; initial state to {limit:.0%} of cpu"
    return b


READER = Reader("css", read, default_tier="batch")
