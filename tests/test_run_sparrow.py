"""Sparrow end to end on the sim engine: late binding beats random
placement at ~85% load, Hawk beats Sparrow alone for short jobs on the
shipped scenarios/hybrid.toml, no task runs twice, and the invariants
hold."""
from __future__ import annotations

import copy
import tomllib
from pathlib import Path

import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.sparrow.events import SPARROW_STEAL
from schedlab.schedulers.events.shared import TASKS_LAUNCHED, TXN
from schedlab.schedulers.scenario.parse import parse_scenario

HYBRID = Path(__file__).resolve().parents[1] / "scenarios" / "hybrid.toml"

BASE = {
    "name": "sparrow-test", "architecture": "sparrow", "engine": "sim", "seed": 7, "time_scale": 10.0,
    "duration": 250.0,
    "cell": {"machines_per_actor": 5,
             "machine_classes": [{"name": "w", "count": 20, "cpu": 2.0, "mem": 8.0, "racks": 2}]},
    "workload": {"classes": [{"name": "j", "kind": "batch", "interarrival": 0.294, "tasks": 2.0,
                              "duration": {"dist": "exponential", "mean": 5.0}, "cpu": 1.0, "mem": 1.0}]},
    "sparrow": {"schedulers": 2, "policy": "late_binding", "d": 2},
}

def _run(data: dict, out: Path) -> tuple[dict, dict]:
    s = run_scenario(parse_scenario(copy.deepcopy(data), "t.toml"), out)
    ev: dict[str, list] = {}
    for e in read_events(out / "events.jsonl"):
        ev.setdefault(e["event"], []).append(e)
    return s, ev


def _no_task_twice(ev: dict) -> None:
    seen = set()
    for e in ev.get(TASKS_LAUNCHED, []):
        for row in e["tasks"]:
            key = (row[0], row[1])
            assert key not in seen, f"task {key} launched twice"
            seen.add(key)
    placed = [(e["job_id"], t) for e in ev.get(TXN, []) for t, _m in e["placed"]]
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


def test_the_shipped_hybrid_scenario_shows_hawks_short_job_gain(tmp_path: Path) -> None:
    """scenarios/hybrid.toml as shipped, Sparrow alone against Hawk: long
    jobs hold most one-slot workers, so Sparrow's short jobs queue behind
    them; Hawk's short-only partition and stealing cut the short jobs'
    response and queueing delay several times at the median and the tail."""
    data = tomllib.loads(HYBRID.read_text())
    data["engine"] = "sim"
    alone = copy.deepcopy(data)
    alone["sparrow"]["hybrid"]["enabled"] = False
    s0, ev0 = _run(alone, tmp_path / "alone")
    s1, ev1 = _run(data, tmp_path / "hawk")
    for s, ev in ((s0, ev0), (s1, ev1)):
        assert all(v == 0 for v in s["invariants"].values()), s["invariants"]
        _no_task_twice(ev)
    a, h = s0["sparrow"], s1["sparrow"]
    assert a["jobs"] == h["jobs"] and h["jobs"]["long"] > 20 and h["jobs"]["short"] > 10 * h["jobs"]["long"]
    for p in ("p50", "p90", "p99"):
        assert h["response_time_s"]["short"][p] < a["response_time_s"]["short"][p] / 3, (p, h, a)
    for p in ("p90", "p99"):
        assert h["queueing_delay_s"]["short"][p] < a["queueing_delay_s"]["short"][p] / 3, (p, h, a)
    assert h["response_time_s"]["long"]["p50"] <= 1.1 * a["response_time_s"]["long"]["p50"]  # long jobs do not pay
    assert h["steals"] > 100 and a["steals"] == 0
    # Long tasks never ran on the short-only partition (the last workers);
    # every steal took from the general partition.
    n = sum(mc["count"] for mc in data["cell"]["machine_classes"])
    general = n - round(data["sparrow"]["hybrid"]["short_fraction"] * n)
    long_jobs = {e["job_id"] for e in ev1["sparrow_job"] if e["long"]}
    machines = {row[2] for e in ev1["tasks_launched"] for row in e["tasks"] if row[0] in long_jobs}
    assert machines and max(machines) < general
    assert all(e["victim"] < general for e in ev1["sparrow_steal"])


def test_a_worker_steals_when_it_goes_idle_not_only_on_its_retry_timer(tmp_path: Path) -> None:
    """Hawk's worker tries to steal the moment it goes idle (its task ended,
    its GetTask was cancelled). With a retry interval longer than the run,
    every steal comes from that moment (a timer-only thief would try once,
    at the start, when nothing is blocked yet)."""
    data = copy.deepcopy(BASE)
    data["duration"] = 150.0
    data["cell"]["machine_classes"] = [{"name": "w", "count": 20, "cpu": 1.0, "mem": 4.0, "racks": 2}]
    data["workload"]["classes"] = [
        {"name": "short", "kind": "batch", "interarrival": 1.0, "tasks": 4.0,
         "duration": {"dist": "exponential", "mean": 1.0}, "cpu": 1.0, "mem": 1.0},
        {"name": "long", "kind": "batch", "interarrival": 8.0, "tasks": 4.0,
         "duration": {"dist": "lognormal", "mean": 60.0, "sigma": 0.5}, "cpu": 1.0, "mem": 1.0},
    ]
    data["sparrow"] = {"schedulers": 2, "policy": "late_binding", "d": 2, "steal_interval": 1e6,
                       "hybrid": {"cutoff": 10.0, "short_fraction": 0.2, "steal": True}}
    s, ev = _run(data, tmp_path)
    assert all(v == 0 for v in s["invariants"].values()), s["invariants"]
    _no_task_twice(ev)
    steals = ev.get(SPARROW_STEAL, [])
    assert s["sparrow"]["steals"] == len(steals) > 20
    assert len({e["thief"] for e in steals}) > 3 and all(e["victim"] < 16 for e in steals)
