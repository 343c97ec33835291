"""A cell at an instant, from a converted trace: the machines present then
and the tasks running on them, as the Borg paper built the workloads it
compacted (section 5.1: a cell's machines and the tasks in it at a point in
time, packed into fewer machines until they no longer fit)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.traces.form import Trace


@dataclass(frozen=True)
class Running:
    """One job's tasks running at the instant that ask the same request."""

    request: np.ndarray  # [R], in the trace's units
    tasks: int
    priority: int


def snapshot(trace: Trace, at: float) -> tuple[np.ndarray, list[Running]]:
    """(capacity [M, R] of the machines present at ``at``, the running
    tasks grouped by job and request). A task runs at ``at`` when its last
    attempt started by then and had not ended (what the canonical form
    keeps of a task: an earlier attempt it was evicted from is not seen)."""
    _ids, capacity = trace.machines_at(at)
    run = ~np.isnan(trace.task_last_start) & (trace.task_last_start <= at) & ~(trace.task_end <= at)
    idx = np.flatnonzero(run)
    if idx.size == 0:
        return capacity, []
    keys = np.column_stack([trace.task_job[idx].astype(np.float64), trace.task_request[idx].astype(np.float64)])
    shapes, counts = np.unique(keys, axis=0, return_counts=True)
    return capacity, [Running(row[1:], int(n), int(trace.job_priority[int(row[0])])) for row, n in zip(shapes, counts)]
