"""A small canonical trace built through the Builder, for tests of what
replays a converted trace (not of any reader): machines of two shapes, one
removed and one resized mid-trace; a production tier (service) and a batch
tier; standing tasks running on recorded machines at the start; tasks
finished, evicted and rescheduled, killed, still running, never run."""
from __future__ import annotations

import numpy as np

from schedlab.schedulers.traces import form, task_events as te
from schedlab.schedulers.traces.builder import Builder, Select
from schedlab.schedulers.traces.form import Trace

MACHINES = 12


def small_trace(seed: int = 0, jobs: int = 40, span: float = 600.0) -> Trace:
    rng = np.random.default_rng(seed)
    b = Builder("test", ("cpu", "mem"), ("fraction", "fraction"), ("<test>",), recorded=True, service_tiers=("production",))
    for m in range(MACHINES):
        b.machine(0.0, 1000 + m, form.ADD, (1.0, 1.0) if m < 8 else (0.5, 0.5))
    b.machine(span / 2, 1000, form.REMOVE)
    b.machine(span / 3, 1001, form.UPDATE, (0.75, 1.0))
    rows: list[tuple[float, int, int, int, int, float, float]] = []
    # Two standing jobs: submitted before 0, running on recorded machines at 0.
    for j, tier in ((1, "production"), (2, "batch")):
        b.job(j, -100.0, tier, 200 if tier == "production" else 100, "u0")
        for k in range(3):
            rows += [(-100.0, j, k, te.SUBMIT, -1, 0.1, 0.1), (-90.0, j, k, te.SCHEDULE, 1002 + k + 3 * (j - 1), np.nan, np.nan)]
            if tier == "batch":
                rows.append((50.0 + 10 * k, j, k, te.FINISH, 1002 + k + 3 * (j - 1), np.nan, np.nan))
    for j in range(10, 10 + jobs):
        tier = "production" if j % 4 == 0 else "batch"
        at = float(rng.uniform(0, span * 0.8))
        b.job(j, at, tier, 200 if tier == "production" else 100, f"u{j % 3}")
        for k in range(int(rng.integers(1, 4))):
            m = 1000 + int(rng.integers(0, MACHINES))
            cpu, mem = float(rng.choice([0.05, 0.1, 0.2])), float(rng.choice([0.05, 0.1]))
            rows += [(at, j, k, te.SUBMIT, -1, cpu, mem), (at + 1.0, j, k, te.SCHEDULE, m, np.nan, np.nan)]
            fate = j % 5
            if fate == 1:  # evicted and rescheduled, then finished
                rows += [(at + 5.0, j, k, te.EVICT, m, np.nan, np.nan), (at + 7.0, j, k, te.SCHEDULE, m, np.nan, np.nan),
                         (at + 40.0, j, k, te.FINISH, m, np.nan, np.nan)]
            elif fate == 2:
                rows.append((at + 20.0, j, k, te.KILL, m, np.nan, np.nan))
            elif fate == 3 and tier == "batch":
                rows.append((min(at + 60.0, span), j, k, te.FINISH, m, np.nan, np.nan))
    never = 10 + jobs  # a job killed while it waited: nothing to replay
    b.job(never, 10.0, "batch", 100, "u1")
    rows += [(10.0, never, 0, te.SUBMIT, -1, 0.1, 0.1), (12.0, never, 0, te.KILL, -1, np.nan, np.nan)]
    rows.sort(key=lambda r: r[0])
    cols = list(zip(*rows))
    b.tasks(te.fold(np.asarray(cols[0]), np.asarray(cols[1], np.int64), np.asarray(cols[2]), np.asarray(cols[3]),
                    np.asarray(cols[4], np.int64), np.column_stack([np.asarray(cols[5]), np.asarray(cols[6])])))
    b.machine(span, 1001, form.UPDATE, (0.75, 1.0))  # the trace's clock runs to span
    return b.build(Select(window=(0.0, span)))
