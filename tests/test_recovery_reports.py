"""A restarted Omega scheduler says a job scheduled again (``job_scheduled``,
``recovered``) only where its predecessor's saying may have died with it:
once per job, not once per restart. Every recovery is handed every job ever
routed to the scheduler; before, each re-said every placed one, and a long
soak's events (and the summary's memory) grew with restarts x jobs (a 2-hour
sim soak: 25,676 re-reports for 2,480 jobs; now ~2,000)."""
from __future__ import annotations

import collections
import copy
import tomllib
from pathlib import Path

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.events.shared import JOB_SCHEDULED, SCHEDULER_RECOVERED
from schedlab.schedulers.scenario.parse import parse_scenario

SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "quickstart.toml"
KILLS = (200.0, 400.0, 600.0, 800.0, 1000.0)


def test_a_scheduler_restarted_five_times_re_says_each_job_at_most_once(tmp_path: Path) -> None:
    data = tomllib.loads(SCENARIO.read_text()) | {"engine": "sim", "duration": 1100.0}
    data["faults"] = [{"at": t, "action": "kill", "target": "scheduler-batch-0", "restart_after": 10.0} for t in KILLS]
    summary = run_scenario(parse_scenario(copy.deepcopy(data), str(SCENARIO)), tmp_path)
    events = read_events(tmp_path / "events.jsonl")
    assert not any(summary["invariants"].values()), summary["invariants"]
    recoveries = [e for e in events if e["event"] == SCHEDULER_RECOVERED and e["actor"] == "scheduler-batch-0"]
    assert len(recoveries) == len(KILLS) and recoveries[-1]["already_placed"] > 50  # every job is handed back each time
    resaid = collections.Counter(e["job_id"] for e in events
                                 if e["event"] == JOB_SCHEDULED and e.get("recovered") and e["actor"] == "scheduler-batch-0")
    assert resaid and max(resaid.values()) == 1, resaid.most_common(3)
