"""Gang jobs of a run, from its events: whether they started whole, how
far apart their tasks started, and what partial gangs held and let go.

A gang (a job class with ``gang = true``) must start all its tasks
together. What shows whether an architecture kept that promise, and what
it cost, whatever the architecture: the spread between the first and the
last of a gang's first launches (0 up to the hosts' poll delay for one
that started whole; a gang started piece by piece shows its wait here);
gangs still waiting at the end (starved, or dead-locked against each other:
two partial gangs holding the room neither can finish without); and the
``gang_released`` events of architectures that hold part of a gang while
they gather the rest (ArchSpec.gang says which), each a part that let go
after its timeout or a member's failure (a livelock when it repeats).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from schedlab.schedulers.events.shared import GANG_RELEASED, TASKS_LAUNCHED

if TYPE_CHECKING:
    from schedlab.actors.analysis.summary import JobFates


def gang_summary(ev: dict[str, list[dict]], fates: JobFates) -> dict[str, Any] | None:
    """summary.json's ``gangs`` (None: the workload has no gang job)."""
    gangs = {j: e for j, e in fates.submitted.items() if e.get("gang_timeout") is not None}
    if not gangs:
        return None
    first: dict[int, dict[int, float]] = {}
    for e in ev.get(TASKS_LAUNCHED, []):
        for t in e["tasks"]:
            if int(t[0]) in gangs:
                first.setdefault(int(t[0]), {}).setdefault(int(t[1]), float(t[-1]))
    spreads = [max(s.values()) - min(s.values()) for j, s in first.items() if len(s) >= int(gangs[j]["tasks"])]
    released = [e for e in ev.get(GANG_RELEASED, []) if e["job_id"] in gangs]
    scheduled = sum(1 for j in gangs if j in fates.scheduled or j in fates.final_placed)
    return {
        "jobs": len(gangs),
        "scheduled": scheduled,
        "pending": sum(1 for j in gangs if j in fates.pending),
        "start_spread_s": {"p50": round(float(np.percentile(spreads, 50)), 6) if spreads else None,
                           "max": round(float(max(spreads)), 6) if spreads else None},
        "releases": len(released),
        "released_tasks": sum(int(e["tasks"]) for e in released),
        "released_jobs": len({e["job_id"] for e in released}),
    }
