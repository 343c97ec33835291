"""Sparrow end to end on the sim engine: late binding beats random
placement at ~85% load, Hawk keeps short jobs off long queues, no task
runs twice, and the invariants hold."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from schedlab.actors.common.metrics import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.scenario.parse import parse_scenario

BASE = {
    "name": "sparrow-test", "architecture": "sparrow", "engine": "sim", "seed": 7, "time_scale": 10.0,
    "duration": 250.0,
    "cell": {"machines_per_actor": 5,
             "machine_classes": [{"name": "w", "count": 20, "cpu": 2.0, "mem": 8.0, "racks": 2}]},
    "workload": {"classes": [{"name": "j", "kind": "batch", "interarrival": 0.294, "tasks": 2.0,
                              "duration": {"dist": "exponential", "mean": 5.0}, "cpu": 1.0, "mem": 1.0}]},
    "sparrow": {"schedulers": 2, "policy": "late_binding", "d": 2},
}

MIX = copy.deepcopy(BASE)
MIX["duration"] = 300.0
MIX["workload"]["classes"] = [
    {"name": "short", "kind": "batch", "interarrival": 0.5, "tasks": 4.0,
     "duration": {"dist": "exponential", "mean": 2.0}, "cpu": 1.0, "mem": 1.0},
    {"name": "long", "kind": "batch", "interarrival": 12.0, "tasks": 4.0,
     "duration": {"dist": "lognormal", "mean": 100.0, "sigma": 0.5}, "cpu": 1.0, "mem": 1.0},
]
MIX["sparrow"] = {"schedulers": 2, "policy": "late_binding", "d": 2,
                  "hybrid": {"cutoff": 20.0, "short_fraction": 0.2, "steal": True}}


def _run(data: dict, out: Path) -> tuple[dict, dict]:
    s = run_scenario(parse_scenario(copy.deepcopy(data), "t.toml"), out)
    ev: dict[str, list] = {}
    for e in read_events(out / "events.jsonl"):
        ev.setdefault(e["event"], []).append(e)
    return s, ev


def _no_task_twice(ev: dict) -> None:
    seen = set()
    for e in ev.get("tasks_launched", []):
        for row in e["tasks"]:
            key = (row[0], row[1])
            assert key not in seen, f"task {key} launched twice"
            seen.add(key)
    placed = [(e["job_id"], t) for e in ev.get("txn", []) for t, _m in e["placed"]]
    assert len(placed) == len(set(placed)), "a task placed twice"


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> dict:
    out = {}
    for policy in ("random", "late_binding"):
        data = copy.deepcopy(BASE)
        data["sparrow"]["policy"] = policy
        out[policy] = _run(data, tmp_path_factory.mktemp(policy))
    return out


def test_late_binding_beats_random_at_85_percent_load(policies: dict) -> None:
    rnd, lb = policies["random"][0]["sparrow"], policies["late_binding"][0]["sparrow"]
    assert lb["response_time_s"]["short"]["p50"] < 0.8 * rnd["response_time_s"]["short"]["p50"], (lb, rnd)
    assert lb["queueing_delay_s"]["short"]["p90"] < 0.5 * rnd["queueing_delay_s"]["short"]["p90"]
    assert lb["probes_per_task"] == pytest.approx(2.0, abs=0.05) and rnd["probes_per_task"] == 0.0
    assert 0.7 < policies["late_binding"][0]["utilization"]["cpu_mean"] < 1.0


def test_invariants_hold_and_no_task_runs_twice(policies: dict) -> None:
    for s, ev in policies.values():
        assert all(v == 0 for v in s["invariants"].values()), s["invariants"]
        _no_task_twice(ev)
        assert s["jobs"]["submitted"] == s["jobs"]["scheduled"] + s["jobs"]["pending"]


def test_hybrid_keeps_short_jobs_off_long_queues(tmp_path: Path) -> None:
    alone = copy.deepcopy(MIX)
    alone["sparrow"]["hybrid"]["enabled"] = False
    s0, ev0 = _run(alone, tmp_path / "alone")
    s1, ev1 = _run(MIX, tmp_path / "hawk")
    for s, ev in ((s0, ev0), (s1, ev1)):
        assert all(v == 0 for v in s["invariants"].values()), s["invariants"]
        _no_task_twice(ev)
    a, h = s0["sparrow"], s1["sparrow"]
    assert a["jobs"] == h["jobs"] and h["jobs"]["long"] > 5
    assert h["queueing_delay_s"]["short"]["p99"] < a["queueing_delay_s"]["short"]["p99"], (h, a)
    assert h["response_time_s"]["short"]["p90"] <= a["response_time_s"]["short"]["p90"]
    # Long tasks never ran on the short-only partition (the last 20% of the workers).
    long_jobs = {e["job_id"] for e in ev1["sparrow_job"] if e["long"]}
    machines = {row[2] for e in ev1["tasks_launched"] for row in e["tasks"] if row[0] in long_jobs}
    assert machines and max(machines) < 16
    assert h["steals"] > 0
