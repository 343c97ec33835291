"""End-to-end Borg runs on the sim engine: priorities, quota, machine
failure and Borgmaster failover. Live failovers are in test_leader_faults,
test_chaos and the conformance suite."""
from __future__ import annotations

import collections
import copy
from pathlib import Path
from typing import Any

import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.borg.priority import is_prod
from schedlab.schedulers.events.shared import (
    JOB_ATTEMPT, JOB_PENDING, JOB_REJECTED, JOB_SCHEDULED, JOB_SUBMITTED, MACHINES_DOWN, PREEMPTED, TASKS_KILLED, TASKS_LAUNCHED,
    TXN,
)
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conftest import assert_invariants_hold, small_scenario_data

def borg_data(**borg: Any) -> dict:
    data = small_scenario_data(duration=300.0)
    del data["omega"]
    data["architecture"] = "borg"
    data["coordinator"] = {"replicas": 3}
    data["workload"]["classes"] = [
        {"name": "prod", "kind": "service", "interarrival": 60.0, "tasks": 3.0, "cpu": 2.0, "mem": 4.0, "priority": 250},
        {"name": "batch", "kind": "batch", "interarrival": 6.0, "tasks": 4.0,
         "duration": {"dist": "exponential", "mean": 80.0}, "cpu": 1.0, "mem": 2.0, "priority": 120},
        {"name": "scavenger", "kind": "batch", "interarrival": 3.0, "tasks": 4.0,
         "duration": {"dist": "exponential", "mean": 200.0}, "cpu": 1.0, "mem": 2.0, "priority": 10},
    ]
    data["borg"] = {"t_job": 0.5, "t_task": 0.01, "quota": [{"user": "batch", "band": "batch", "cpu": 16.0, "mem": 64.0}]}
    data["borg"].update(copy.deepcopy(borg))
    return data


def _run(out: Path, data: dict) -> tuple[dict, list[dict]]:
    summary = run_scenario(parse_scenario(data | {"engine": "sim"}, "test.toml"), out)
    assert_invariants_hold(summary["invariants"], out, out.name)  # a bad run is kept, whichever test runs it
    return summary, read_events(out / "events.jsonl")


def _accounted(summary: dict) -> None:
    j = summary["jobs"]
    assert j["scheduled"] + j["abandoned"] + j["pending"] + j["rejected"] == j["submitted"]
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]


@pytest.fixture(scope="module")
def busy_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list[dict]]:
    return _run(tmp_path_factory.mktemp("borg_busy"), borg_data())


def test_busy_cell_accounts_for_every_job_and_runs_prod_first(busy_run) -> None:
    summary, events = busy_run
    _accounted(summary)
    # The scavenger class alone asks for several cells' worth; prod fits, and
    # with preemption every prod job gets scheduled.
    # (A prod job arriving in the run's last 30 s may still be waiting at the
    # end, reported pending.)
    prod = {e["job_id"] for e in events if e["event"] == JOB_SUBMITTED and e["job_class"] == "prod" and e["t"] <= 270.0}
    scheduled = {e["job_id"] for e in events if e["event"] == JOB_SCHEDULED}
    assert len(prod) >= 3 and prod <= scheduled


def test_preemption_evicts_lower_priorities_and_never_prod_by_prod(busy_run) -> None:
    summary, events = busy_run
    pre = [e for e in events if e["event"] == PREEMPTED]
    assert pre, "a full cell with prod arrivals should preempt"
    for e in pre:
        for _j, _t, prio, _band in e["victims"]:
            assert prio < e["priority"]
            assert not (is_prod(e["priority"]) and is_prod(prio))
    assert summary["borg"]["preemptions"]["total"] == sum(len(e["victims"]) for e in pre)
    # Evicted tasks go back to pending: each runs again, or its job is still
    # pending at the end (a full cell may not have room for it before then).
    launched = collections.Counter((t[0], t[1]) for e in events if e["event"] == TASKS_LAUNCHED for t in e["tasks"])
    killed = {(t[0], t[1]) for e in events if e["event"] == TASKS_KILLED for t in e["tasks"] if t[0] >= 0}
    pending = {e["job_id"] for e in events if e["event"] == JOB_PENDING}
    assert killed, "preemption of running tasks kills them"
    assert {k for k in killed if launched[k] > 1 or k[0] in pending} == killed


def test_job_over_quota_is_rejected_not_queued(busy_run) -> None:
    summary, events = busy_run
    rejected = {e["job_id"]: e["reason"] for e in events if e["event"] == JOB_REJECTED}
    assert rejected and all("over quota" in r and "'batch'" in r for r in rejected.values())
    attempted = {e["job_id"] for e in events if e["event"] in (JOB_ATTEMPT, JOB_PENDING)}
    assert not attempted & set(rejected)
    assert summary["jobs"]["rejected"] == len(rejected)


def test_tasks_of_a_dead_machine_are_rescheduled(tmp_path: Path) -> None:
    data = borg_data()
    del data["borg"]["quota"]
    data["workload"]["classes"] = data["workload"]["classes"][:2]
    data["faults"] = [{"at": 120.0, "action": "kill", "target": "machine-host-0"}]
    summary, events = _run(tmp_path, data)
    _accounted(summary)
    down = [e for e in events if e["event"] == MACHINES_DOWN]
    assert down and 0 in down[0]["hosts"]
    t_down = down[0]["t"]
    host0 = set(range(data["cell"]["machines_per_actor"]))
    stranded = {(j, t) for j, t in down[0]["lost"] if j >= 0}  # the standing load is not rescheduled
    assert stranded, "host 0 ran nothing when it died"
    later = {(t[0], t[1]): t[2] for e in events if e["event"] == TASKS_LAUNCHED and e["t"] > t_down for t in e["tasks"]}
    # Rescheduled elsewhere, or still queued at the end (the cell lost a third of its machines).
    pending = {e["job_id"] for e in events if e["event"] == JOB_PENDING}
    missing = {k for k in stranded - set(later) if k[0] not in pending}
    assert not missing, f"neither rescheduled nor pending: {sorted(missing)[:5]}"
    assert len(set(later) & stranded) >= len(stranded) // 2
    assert all(later[k] not in host0 for k in stranded & set(later))


def test_borgmaster_failover_loses_and_repeats_nothing(tmp_path: Path) -> None:
    data = borg_data(preemption=False, requires={"prod": ["big"]})
    del data["borg"]["quota"]
    data["workload"]["classes"] = data["workload"]["classes"][:2]
    data["faults"] = [{"at": 120.0, "action": "kill_leader"}]
    summary, events = _run(tmp_path, data)
    _accounted(summary)
    # Label constraint: prod tasks only on the machines labelled "big" (class b: machines 8-11).
    prod = {e["job_id"] for e in events if e["event"] == JOB_SUBMITTED and e["job_class"] == "prod"}
    prod_machines = {t[2] for e in events if e["event"] == TASKS_LAUNCHED and not e.get("prefill") for t in e["tasks"] if t[0] in prod}
    assert prod_machines and prod_machines <= {8, 9, 10, 11}
    (f,) = summary["failovers"]
    assert f["new_leader"] and f["new_leader"] != f["target"]
    (b,) = summary["borg"]["scheduling_blackout"]
    assert b["first_placement_at_s"] is not None and b["first_placement_at_s"] > b["killed_at_s"]
    launched = collections.Counter((t[0], t[1]) for e in events if e["event"] == TASKS_LAUNCHED for t in e["tasks"])
    assert max(launched.values()) == 1, "a task was started twice"
    # A killed leader's last events may die with it; what it logged never exceeds what ran.
    placed = sum(e["committed"] for e in events if e["event"] == TXN)
    assert 0 < placed <= sum(n for k, n in launched.items() if k[0] >= 0)
