"""A restarted scheduler says a job scheduled again (``job_scheduled``,
``recovered``) only where its predecessor's saying may have died with it:
once per job, not once per restart. Every recovery is handed every job ever
routed to the scheduler; before, each re-said every placed one, and a long
soak's events (and the summary's memory) grew with restarts x jobs (2-hour
sim soaks: Omega 25,676 re-reports for 2,480 jobs, Sparrow 40,227,
HTCondor 23,935). The protocol: the recovery answers with the jobs it said
(``ActorShell.vouch``, its events shipped first), and the submitter marks
them ``scheduled_said`` in later hand-backs (``said_before``)."""
from __future__ import annotations

import collections
import copy
import tomllib
from pathlib import Path

import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.events.shared import JOB_SCHEDULED, SCHEDULER_RECOVERED
from schedlab.schedulers.scenario.parse import parse_comparison

SOAK = Path(__file__).resolve().parents[1] / "scenarios" / "soak.toml"
KILLS = (200.0, 400.0, 600.0, 800.0, 1000.0)
# Architecture -> the routed scheduler killed and restarted.
VICTIMS = {"omega": "scheduler-batch-0", "mesos": "framework-batch", "dispatcher": "dispatcher",
           "htcondor": "schedd-0", "sparrow": "sparrow-0"}


@pytest.mark.parametrize("arch", sorted(VICTIMS))
def test_a_scheduler_restarted_five_times_re_says_each_job_at_most_once(arch: str, tmp_path: Path) -> None:
    victim = VICTIMS[arch]
    data = tomllib.loads(SOAK.read_text()) | {"architectures": [arch], "engine": "sim", "duration": 1100.0}
    data["faults"] = [{"at": t, "action": "kill", "target": victim, "restart_after": 10.0} for t in KILLS]
    sc = parse_comparison(copy.deepcopy(data), str(SOAK))[0]
    summary = run_scenario(sc, tmp_path)
    events = read_events(tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    recoveries = [e for e in events if e["event"] == SCHEDULER_RECOVERED and e["actor"] == victim]
    assert len(recoveries) >= len(KILLS) - 1  # every job is handed back each time
    resaid = collections.Counter(e["job_id"] for e in events
                                 if e["event"] == JOB_SCHEDULED and e.get("recovered") and e["actor"] == victim)
    assert resaid, "no job was found placed by a recovery: the test shows nothing"
    assert max(resaid.values()) == 1, resaid.most_common(3)
