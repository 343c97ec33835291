"""Sparrow's live registration: its build and its summary section (task
queueing delay and job response time for short and long jobs, probes and
messages per task, GetTask answers, steals)."""
from __future__ import annotations

from typing import Any

from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.analysis.stats import percentiles
from schedlab.actors.arch import Architecture
from schedlab.actors.archs.sparrow.build import build
from schedlab.schedulers.archs.sparrow.events import SPARROW_JOB, SPARROW_NODEMON, SPARROW_PLACED
from schedlab.schedulers.events.shared import JOB_SUBMITTED, TASKS_COMPLETED, TASKS_LAUNCHED


def sparrow_summary(ev: dict[str, list[dict]], info: RunInfo, out: dict[str, Any]) -> dict[str, Any]:
    """Pure: every number from the run's events.

    Task queueing delay: the job's release (``job_submitted``) to the task's
    start on its node monitor (the launch's start time). Job response time:
    release to the end of its last task, for jobs every task of which ended
    in the run. Long or short: as the scheduler classified the job (its mean
    task duration against the cutoff)."""
    submitted = {e["job_id"]: e["t"] for e in ev.get(JOB_SUBMITTED, [])}
    long = {e["job_id"]: bool(e["long"]) for e in ev.get(SPARROW_JOB, [])}
    ntasks = {e["job_id"]: int(e["tasks"]) for e in ev.get(SPARROW_JOB, [])}
    start: dict[tuple[int, int], float] = {}
    for e in ev.get(TASKS_LAUNCHED, []):
        if e.get("prefill"):
            continue
        for row in e["tasks"]:
            key = (int(row[0]), int(row[1]))
            start.setdefault(key, float(row[-1]))
    end: dict[int, dict[int, float]] = {}
    for e in ev.get(TASKS_COMPLETED, []):
        for j, t, _m, at in e["tasks"]:
            if j >= 0:
                end.setdefault(int(j), {})[int(t)] = float(at)
    delays: dict[bool, list[float]] = {False: [], True: []}
    for (j, _t), s in start.items():
        if j in submitted and j in long:
            delays[long[j]].append(max(0.0, s - submitted[j]))
    response: dict[bool, list[float]] = {False: [], True: []}
    for j, ends in end.items():
        if j in submitted and j in long and len(ends) >= ntasks.get(j, 1 << 30):
            response[long[j]].append(max(ends.values()) - submitted[j])
    placed = ev.get(SPARROW_PLACED, [])
    tasks = sum(e["tasks"] for e in placed)
    probes = sum(e["probes"] for e in placed)
    mons = ev.get(SPARROW_NODEMON, [])
    gets = sum(e["get_task"] for e in mons)
    messages = sum(e["messages"] for e in placed) + 2 * gets
    steal_messages = sum(e["steal_messages"] for e in mons)
    return {
        **info.extra.get("sparrow", {}),
        "jobs": {"short": sum(1 for v in long.values() if not v), "long": sum(1 for v in long.values() if v)},
        "queueing_delay_s": {"short": percentiles(delays[False]), "long": percentiles(delays[True])},
        "response_time_s": {"short": percentiles(response[False]), "long": percentiles(response[True])},
        "tasks_placed": tasks,
        "probes_per_task": round(probes / tasks, 4) if tasks else None,
        "messages_per_task": round(messages / tasks, 4) if tasks else None,
        "steal_messages_per_task": round(steal_messages / tasks, 4) if tasks else None,
        "get_task": gets,
        "cancels": sum(e["cancels"] for e in mons),
        "get_task_retries": sum(e["retries"] for e in mons),
        "steals": sum(e["steals"] for e in mons),
        "stolen_entries": sum(e["stolen"] for e in mons),
    }


def _rows(summary: dict) -> list[tuple[str, str]]:
    s = summary["sparrow"]
    q, r = s["queueing_delay_s"], s["response_time_s"]
    return [
        ("sparrow", f"{s['policy']} d={s['d']}, {s['schedulers']} schedulers, {s['slots']} slots"
                    + (", hybrid" if s.get("hybrid") else "")),
        ("queueing delay", f"short p50 {q['short']['p50']}s p99 {q['short']['p99']}s; "
                           f"long p50 {q['long']['p50']}s p99 {q['long']['p99']}s"),
        ("response time", f"short p50 {r['short']['p50']}s p99 {r['short']['p99']}s; "
                          f"long p50 {r['long']['p50']}s p99 {r['long']['p99']}s"),
        ("messages", f"{s['probes_per_task']} probes, {s['messages_per_task']} messages per task; "
                     f"{s['cancels']} cancels, {s['steals']} steals"),
    ]


ARCHITECTURE = Architecture(
    name="sparrow",
    build=build,
    summary=sparrow_summary,
    table_rows=_rows,
    refused_means="none: a node monitor queues whatever it is sent (late binding cancels are counted apart)",
)
