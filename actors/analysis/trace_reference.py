"""What happened vs what schedlab did: for a replayed trace that recorded
its real scheduling (Google's SCHEDULE events, Alibaba's start times, an
SWF log's waits), each job class's recorded waits beside the replay's, and
how many tasks landed on the machine the trace recorded.

Not a fidelity claim: the replayed architecture is not the one that ran the
trace, and the trace's cell was busy with what the window left out. A
reference line: how far this architecture, on this cell, is from what the
real scheduler did with the same jobs.

Waits compared are to fully scheduled: submission to the last task's first
start in the trace; submission to the job's every task placed in the run
(summary.json ``wait_time_s.by_class.*.fully_scheduled``'s definition).
"""
from __future__ import annotations

from typing import Any

from schedlab.actors.analysis.stats import percentiles
from schedlab.schedulers.events.shared import TASKS_LAUNCHED
from schedlab.schedulers.model.jobs import Job
from schedlab.schedulers.model.workload import TraceJob


def reference(jobs: list[Job], sources: list[TraceJob | None]) -> dict[str, Any] | None:
    """What the run's summary compares against (RunInfo.trace), from the
    planned jobs and each one's trace record; None: nothing recorded."""
    waits: dict[str, list[float]] = {}
    machines: dict[int, list[int]] = {}
    for job, src in zip(jobs, sources):
        if src is None or src.recorded_starts is None:
            continue
        waits.setdefault(job.job_class, []).append(max(src.recorded_starts))
        if src.recorded_machines is not None and any(m >= 0 for m in src.recorded_machines):
            machines[job.job_id] = list(src.recorded_machines)
    if not waits:
        return None
    return {"waits": waits, "machines": machines}


def trace_summary(ev: dict[str, list[dict]], submitted: dict[int, dict], scheduled: dict[int, dict],
                  ref: dict[str, Any] | None) -> dict[str, Any] | None:
    """summary.json's ``trace`` block (None: not a replay of a trace that
    recorded its scheduling)."""
    if ref is None:
        return None
    by_class: dict[str, dict[str, Any]] = {}
    for cls, recorded in sorted(ref["waits"].items()):
        ids = [j for j, e in submitted.items() if e["job_class"] == cls]
        by_class[cls] = {"jobs": len(recorded), "recorded_s": percentiles(recorded),
                         "replayed_s": percentiles(scheduled[j]["t"] - submitted[j]["t"] for j in ids if j in scheduled)}
    same = compared = 0
    seen: set[tuple[int, int]] = set()
    machines = ref["machines"]
    for e in ev.get(TASKS_LAUNCHED, []):
        if e.get("prefill"):
            continue
        for t in e["tasks"]:
            key = (int(t[0]), int(t[1]))
            rec = machines.get(key[0])
            if rec is None or key in seen or key[1] >= len(rec) or rec[key[1]] < 0:
                continue
            seen.add(key)  # a task's first launch is its placement; a relaunch after a loss is not compared
            compared += 1
            same += int(t[2]) == rec[key[1]]
    return {"by_class": by_class, "tasks_compared": compared,
            "same_machine": round(same / compared, 6) if compared else None}
