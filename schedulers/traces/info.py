"""What ``schedlab trace info`` says of a converted trace: its span,
machines (and how they changed), jobs and tasks per tier, how tasks ended,
and the load over time per resource: the requests of the tasks running
(from their last start to their end, as the trace recorded them) over the
capacity of the machines present, in equal bins."""
from __future__ import annotations

from typing import Any

import numpy as np

from schedlab.schedulers.traces import form
from schedlab.schedulers.traces.form import Trace


def load_over_time(trace: Trace, bins: int = 48) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bin starts s, running requests [bins, R], capacity present [bins, R]).

    A task counts in every bin its run overlaps (a task still running at
    the end, to the end); a difference array per bin keeps it O(tasks)."""
    edges = np.linspace(0.0, max(trace.span, 1e-9), bins + 1)
    R = len(trace.resources)
    run = trace.run_times()
    ok = ~np.isnan(run)
    start = np.clip(trace.task_last_start[ok], 0.0, None)
    end = np.where(np.isinf(run[ok]), trace.span, trace.task_last_start[ok] + run[ok])
    a = np.clip(np.searchsorted(edges, start, side="right") - 1, 0, bins - 1)
    b = np.clip(np.searchsorted(edges, end, side="left"), 0, bins)
    keep = (end > 0) & (b > a)
    diff = np.zeros((bins + 1, R))
    req = trace.task_request[ok][keep].astype(np.float64)
    np.add.at(diff, a[keep], req)
    np.add.at(diff, b[keep], -req)
    used = np.cumsum(diff, axis=0)[:bins]
    cap = np.zeros((bins, R))
    for i, t in enumerate(edges[:-1]):
        cap[i] = trace.machines_at(float(t))[1].sum(axis=0)
    return edges[:-1], used, cap


def describe(trace: Trace, bins: int = 48) -> dict[str, Any]:
    """The facts ``trace info`` prints (and writes as JSON)."""
    ev = trace.machine_event
    mid = trace.machine_time > 0
    tiers = {}
    for code, name in enumerate(trace.tiers):
        jobs = np.flatnonzero(trace.job_tier == code)
        tiers[name] = {"jobs": int(jobs.size), "tasks": int(np.isin(trace.task_job, jobs).sum()),
                       "service": name in trace.service_tiers}
    reasons = np.bincount(trace.task_end_reason, minlength=len(form.END_REASONS))
    t, used, cap = load_over_time(trace, bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(cap > 0, used / cap, np.nan)
    out: dict[str, Any] = {
        "format": trace.format, "sources": list(trace.sources), "origin_s": trace.origin, "span_s": trace.span,
        "resources": dict(zip(trace.resources, trace.units)),
        "machines": {"at_start": int(trace.machines_at(0.0)[0].size), "ids": trace.machines,
                     "added": int(((ev == form.ADD) & mid).sum()), "removed": int(((ev == form.REMOVE) & mid).sum()),
                     "updated": int(((ev == form.UPDATE) & mid).sum())},
        "jobs": trace.jobs, "tasks": trace.tasks, "standing_jobs": int((trace.job_submit < 0).sum()),
        "tiers": tiers,
        "tasks_ended": {name: int(n) for name, n in zip(form.END_REASONS, reasons)},
        "never_ran": int(np.isnan(trace.run_times()).sum()),
        "recorded": trace.recorded,
        "load": {"bin_s": float(t[1] - t[0]) if t.size > 1 else trace.span,
                 **{r: {"mean": _f(np.nanmean(share[:, i])), "peak": _f(np.nanmax(share[:, i]))}
                    for i, r in enumerate(trace.resources)}} if np.isfinite(share).any() else {},
        "notes": trace.meta,
    }
    return out


def _f(x: float | np.floating) -> float | None:
    return None if not np.isfinite(x) else round(float(x), 4)


def plot(trace: Trace, path: str, bins: int = 96) -> None:
    """The load per resource over time (and machines present) as a PNG (needs matplotlib)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, used, cap = load_over_time(trace, bins)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    hours = t / 3600.0
    with np.errstate(invalid="ignore", divide="ignore"):
        for i, r in enumerate(trace.resources):
            ax.plot(hours, np.where(cap[:, i] > 0, used[:, i] / cap[:, i], np.nan), label=f"{r} requested / capacity")
    ax.set_xlabel("hours into the window")
    ax.set_ylabel("share of the cell")
    ax.set_title(f"{trace.format}: {trace.machines} machines, {trace.jobs} jobs, {trace.tasks} tasks")
    ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
