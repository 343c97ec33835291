"""End-to-end Mesos runs on the sim engine: offers, rescinds, gangs,
revocation, failover. Live failovers are in test_leader_faults, test_chaos
and the conformance suite."""
from __future__ import annotations

import collections
import copy
from pathlib import Path
from typing import Any

import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.analysis.summary import summarize
from schedlab.schedulers.archs.mesos.events import OFFERS_CLOSED, OFFERS_MADE, TASKS_PLACED
from schedlab.schedulers.archs.mesos.master_state import spanned_machines
from schedlab.schedulers.events.shared import JOB_SCHEDULED, JOB_SUBMITTED, TASKS_KILLED, TASKS_LAUNCHED, TASKS_LOST
from schedlab.schedulers.model.cluster import build_cell
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conftest import assert_invariants_hold, small_scenario_data

def mesos_data(**mesos: Any) -> dict:
    data = small_scenario_data()
    del data["omega"]
    data["architecture"] = "mesos"
    data["mesos"] = {
        "granularity": "cell",
        "frameworks": [
            {"name": "batch", "classes": ["batch"], "t_job": 0.5, "t_task": 0.01},
            {"name": "service", "classes": ["service"], "t_job": 5.0, "t_task": 0.1, "mode": "rigid"},
        ],
    }
    data["mesos"].update(copy.deepcopy(mesos))
    return data


def _run(out: Path, data: dict) -> tuple[dict, list[dict], Any]:
    sc = parse_scenario(data | {"engine": "sim"}, "test.toml")
    summary = run_scenario(sc, out)
    assert_invariants_hold(summary["invariants"], out, out.name)  # a bad run is kept, whichever test runs it
    return summary, read_events(out / "events.jsonl"), sc


def _offers(events: list[dict]) -> tuple[dict[int, list], dict[int, list[list]]]:
    made = {o[0]: o for e in events if e["event"] == OFFERS_MADE for o in e["offers"]}
    closed: dict[int, list[list]] = collections.defaultdict(list)
    for e in events:
        if e["event"] == OFFERS_CLOSED:
            for o in e["offers"]:
                closed[o[0]].append([e["t"], *o])
    return made, closed


@pytest.fixture(scope="module")
def cell_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list[dict], Any]:
    return _run(tmp_path_factory.mktemp("mesos_cell"), mesos_data())


def test_every_job_accounted_for_and_no_machine_overcommitted(cell_run) -> None:
    summary, _events, _sc = cell_run
    j = summary["jobs"]
    assert j["submitted"] > 50
    assert j["scheduled"] + j["abandoned"] + j["pending"] == j["submitted"]
    assert j["scheduled"] > 0.8 * j["submitted"]
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]
    assert summary["architecture"] == "mesos" and summary["utilization"]["samples"] > 10


def test_offers_are_closed_once_and_only_by_their_framework(cell_run) -> None:
    summary, events, _sc = cell_run
    made, closed = _offers(events)
    assert summary["mesos"]["offers"]["made"] == len(made) > 10
    for oid, closes in closed.items():
        assert len(closes) == 1, f"offer {oid} closed twice: {closes}"
        assert closes[0][2] == made[oid][1], "an offer was answered by a framework it was not made to"
        assert closes[0][0] >= 0
    # cell granularity: a framework never has two offers outstanding at once
    made_at = {o[0]: e["t"] for e in events if e["event"] == OFFERS_MADE for o in e["offers"]}
    spans = collections.defaultdict(list)
    for oid, o in made.items():
        end = closed[oid][0][0] if oid in closed else float("inf")
        assert end >= made_at[oid]
        spans[o[1]].append((made_at[oid], end))
    for fw, s in spans.items():
        s.sort()
        assert all(b[0] >= a[1] - 1e-6 for a, b in zip(s, s[1:])), f"{fw} held two offers at once"


def test_declined_resources_are_offered_again(cell_run) -> None:
    _summary, events, _sc = cell_run
    made, closed = _offers(events)
    declined = [(c[0][0], set(spanned_machines(made[oid][2]))) for oid, c in closed.items() if c[0][3] == "declined"]
    assert declined, "the idle framework should decline offers"
    later = [(e["t"], set(spanned_machines(o[2]))) for e in events if e["event"] == OFFERS_MADE for o in e["offers"]]
    # A decline in the run's last minute may legitimately see no new offer
    # before the end (its filter, then an offer cycle); a loaded machine
    # makes fewer offers, so the first twenty declines can reach that far.
    end = max(e["t"] for e in events)
    early = [d for d in declined if d[0] < end - 60.0]
    assert early, "no decline before the run's last minute"
    for t, machines in early[:20]:
        assert any(t2 > t and machines & m2 for t2, m2 in later), "declined machines were never offered again"


def test_rigid_gangs_launch_whole(cell_run) -> None:
    _summary, events, _sc = cell_run
    tasks = {e["job_id"]: e["tasks"] for e in events if e["event"] == JOB_SUBMITTED and e["job_class"] == "service"}
    placed = [e for e in events if e["event"] == TASKS_PLACED and e["scheduler"] == "framework-service"]
    assert placed, "the rigid framework placed nothing"
    for e in placed:
        jobs = collections.Counter(t[0] for t in e["tasks"])
        for job, n in jobs.items():
            assert n == tasks[job], f"gang of job {job} launched {n} of {tasks[job]} tasks at once"


def test_summary_is_a_function_of_the_events(cell_run) -> None:
    summary, events, sc = cell_run
    info = RunInfo.of_summary(summary, extra={"frameworks": [s["name"] for s in summary["schedulers"]]})
    again = summarize(events, info, build_cell(sc.cell.machine_classes, sc.cell.resources))
    assert again["mesos"] == summary["mesos"] and again["jobs"] == summary["jobs"]


def test_rescinded_offers_cannot_be_used(tmp_path: Path) -> None:
    """A framework thinking longer than the offer timeout has every offer
    rescinded under it: none of its launches may run."""
    data = mesos_data(offer_timeout=2.0)
    data["mesos"]["frameworks"][1].update(t_job=10.0, mode="elastic")
    data["duration"] = 200.0
    summary, events, _sc = _run(tmp_path, data)
    made, closed = _offers(events)
    service = {oid for oid, o in made.items() if o[1] == "framework-service"}
    outcomes = collections.Counter(closed[oid][0][3] for oid in service if oid in closed)
    assert outcomes["rescinded"] > 0 and outcomes["accepted"] == 0, outcomes
    svc = next(s for s in summary["schedulers"] if s["name"] == "framework-service")
    assert svc["claims"]["committed"] == 0 and svc["claims"]["conflicted"] > 0
    service_jobs = {e["job_id"] for e in events if e["event"] == JOB_SUBMITTED and e["job_class"] == "service"}
    launched = {t[0] for e in events if e["event"] == TASKS_LAUNCHED and not e.get("prefill") for t in e["tasks"]}
    assert not service_jobs & launched
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]


def test_no_task_lost_across_a_master_failover(tmp_path: Path) -> None:
    data = mesos_data(masters=3, granularity="agent")
    data["coordinator"] = {"replicas": 3}
    data["faults"] = [{"at": 120.0, "action": "kill_master"}]
    summary, events, _sc = _run(tmp_path, data)
    (f,) = [f for f in summary["failovers"] if f["role"] == "master"]
    assert f["new_leader"] and f["new_leader"] != f["target"]
    assert f["downtime_emulated_s"] is not None and f["downtime_emulated_s"] > 0, f
    j = summary["jobs"]
    assert j["scheduled"] + j["abandoned"] + j["pending"] == j["submitted"]
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]
    # Every launch the old master accepted either ran or was reported lost and re-queued.
    committed = collections.Counter()
    for e in events:
        if e["event"] == TASKS_PLACED:
            committed.update((t[0], t[1]) for t in e["tasks"])
    ran = {(t[0], t[1]) for e in events if e["event"] == TASKS_LAUNCHED for t in e["tasks"]}
    requeued = {(t[0], t[1]) for e in events if e["event"] == TASKS_LOST for t in e["tasks"]}
    assert set(committed) <= ran | requeued
    assert all(n == 1 for k, n in committed.items() if k not in requeued), "a task was placed twice without being lost"


def test_revocation_gives_a_starved_framework_its_guarantee(tmp_path: Path) -> None:
    """A framework that fills the cell with long tasks, and one with a
    guaranteed share arriving later: with revocation on, the master kills
    the hog's newest tasks, the hog re-queues them, the starved framework
    runs, and nothing is lost or over-committed."""
    data = mesos_data(revocation=True, starvation_timeout=5.0, granularity="agent")
    data["duration"] = 300.0
    data["workload"]["prefill_utilization"] = 0.0
    data["workload"]["classes"] = [
        {"name": "hog", "kind": "batch", "interarrival": 2.0, "tasks": 16.0, "duration": 1000.0, "cpu": 1.0, "mem": 1.0},
        {"name": "late", "kind": "batch", "interarrival": 20.0, "tasks": 4.0, "duration": 30.0, "cpu": 1.0, "mem": 1.0},
    ]
    data["mesos"]["frameworks"] = [
        {"name": "hog", "classes": ["hog"], "t_job": 0.2, "t_task": 0.01},
        {"name": "late", "classes": ["late"], "t_job": 0.2, "t_task": 0.01, "guarantee": 0.3},
    ]
    summary, events, _sc = _run(tmp_path, data)
    assert summary["mesos"]["revocations"] > 0
    killed = {(t[0], t[1]) for e in events if e["event"] == TASKS_KILLED for t in e["tasks"]}
    requeued = {(t[0], t[1]) for e in events if e["event"] == TASKS_LOST and e["reason"] == "revoked" for t in e["tasks"]}
    # Revoked tasks not yet on their agent are withdrawn, not killed: re-queued all the same.
    assert killed and killed <= requeued
    late = {e["job_id"] for e in events if e["event"] == JOB_SUBMITTED and e["job_class"] == "late"}
    assert late & {e["job_id"] for e in events if e["event"] == JOB_SCHEDULED}
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]
