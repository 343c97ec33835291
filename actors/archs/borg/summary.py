"""The Borg part of summary.json, from events alone.

* ``rejected``: jobs refused at admission (over quota), with reasons;
* ``preemptions``: victims per priority band of the victim;
* ``machines_down``: Borglets marked down after missed polls, tasks lost;
* ``scheduling_blackout``: per Borgmaster leader kill, the time from the kill
  to the first placement a new leader committed.
"""
from __future__ import annotations

import collections
from typing import Any
from schedlab.schedulers.archs.borg.events import BORGMASTER_ELECTED
from schedlab.schedulers.events.shared import JOB_REJECTED, MACHINES_DOWN, PREEMPTED


def borg_section(ev: dict[str, list[dict]], coordinator_failovers: list[dict], scale: float) -> dict[str, Any]:
    rejected = ev.get(JOB_REJECTED, [])
    reasons = collections.Counter(e["reason"].split(":")[0] for e in rejected)
    bands: collections.Counter[str] = collections.Counter()
    for e in ev.get(PREEMPTED, []):
        for _j, _t, _prio, band in e["victims"]:
            bands[band] += 1
    down = ev.get(MACHINES_DOWN, [])
    blackouts = []
    for f in coordinator_failovers:  # the Borgmaster is the coordinator group
        first, killed = f["first_placement_at_s"], f["killed_at_s"]
        blackouts.append({
            "target": f["target"], "killed_at_s": killed, "first_placement_at_s": first,
            "blackout_emulated_s": round(first - killed, 3) if first is not None else None,
            "blackout_wall_s": round((first - killed) / scale, 4) if first is not None else None,
        })
    return {
        "rejected": {"jobs": len(rejected), "reasons": dict(reasons)},
        "preemptions": {"total": sum(bands.values()), "by_victim_band": dict(bands)},
        "machines_down": {"events": len(down), "hosts": sorted({h for e in down for h in e["hosts"]}),
                          "tasks_lost": sum(e["tasks_lost"] for e in down)},
        "leaders": len(ev.get(BORGMASTER_ELECTED, [])),
        "scheduling_blackout": blackouts,
    }
