"""The web farm end to end on the sim engine, on the shipped scenarios
(shortened): the policies rank as their headers say, stickiness pins load
and loses sessions where cookies do not, a standby balancer takes over in
a lease where a lone one is down until restarted, and every request of a
server that died is served or accounted for."""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.webfarm.events import WEBFARM_HTTPD
from schedlab.schedulers.events.shared import (
    FAULT, JOB_ABANDONED, JOB_PENDING, JOB_REJECTED, JOB_SCHEDULED, JOB_SUBMITTED, MACHINES_DOWN, TASKS_COMPLETED,
    TASKS_LAUNCHED, TASKS_LOST,
)
from schedlab.schedulers.model.workload import generate_jobs
from schedlab.schedulers.scenario.parse import ScenarioError, parse_scenario

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


def _data(name: str, **top: Any) -> dict:
    data = tomllib.loads((SCENARIOS / f"{name}.toml").read_text())
    data["engine"] = "sim"
    data.update(top)
    return data


def _run(data: dict, out: Path) -> dict:
    s = run_scenario(parse_scenario(data, "t.toml"), out)
    assert all(v == 0 for v in s["invariants"].values()), s["invariants"]
    return s


@pytest.fixture(scope="module")
def policies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict]:
    out = {}
    for label, policy, info in (("rr", "rr", "reported"), ("wrr", "wrr", "reported"), ("pod", "pod", "reported"),
                                ("least-reported", "least", "reported"), ("least-fresh", "least", "fresh")):
        data = _data("web_policies", duration=400.0)
        data["webfarm"].update(policy=policy, info=info)
        out[label] = _run(data, tmp_path_factory.mktemp(label))["webfarm"]
    return out


def test_weights_and_two_choices_beat_round_robin_on_a_heterogeneous_pool(policies: dict[str, dict]) -> None:
    p99 = {k: v["latency_s"]["p99"] for k, v in policies.items()}
    assert p99["wrr"] < 0.7 * p99["rr"], p99
    assert p99["pod"] < 0.7 * p99["rr"], p99
    # Round robin leaves the fast servers idle next to busy slow ones.
    rr = policies["rr"]["utilization"]["per_server"]
    assert max(rr[:4]) < min(rr[4:]), rr


def test_least_loaded_on_stale_reports_herds_and_fresh_loads_do_not(policies: dict[str, dict]) -> None:
    stale, fresh = policies["least-reported"]["latency_s"], policies["least-fresh"]["latency_s"]
    assert fresh["p99"] < 0.75 * stale["p99"], (fresh, stale)
    assert fresh["mean"] < stale["mean"]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, list]]:
    out = {}
    for mode in ("sticky", "cookie"):
        data = _data("web_sticky", duration=450.0)
        data["webfarm"]["sessions"] = mode
        d = tmp_path_factory.mktemp(mode)
        out[mode] = (_run(data, d), read_events(d / "events.jsonl"))
    return out


def test_sticky_sessions_pin_load_and_die_with_their_server_cookies_do_not(sessions: dict) -> None:
    sticky, cookie = sessions["sticky"][0]["webfarm"], sessions["cookie"][0]["webfarm"]
    assert sticky["utilization"]["imbalance"] > cookie["utilization"]["imbalance"] + 0.1
    assert sticky["latency_s"]["p99"] > cookie["latency_s"]["p99"]
    assert sticky["sessions_lost"] > 0 and cookie["sessions_lost"] == 0
    # Only cookie requests pay for carrying their state.
    transfers = {m: sum(s["transfers"] for e in ev if e["event"] == WEBFARM_HTTPD for s in e["servers"].values())
                 for m, (_s, ev) in sessions.items()}
    assert transfers["sticky"] == 0 and transfers["cookie"] > 1000


def test_every_request_of_the_dead_server_is_served_or_accounted_for(sessions: dict) -> None:
    """Machine host 1 (machines 4-7) dies at 300 s: each request started
    there either completed, or is counted lost with its machine, or ended
    after the host's last shipped event batch (its tasks_completed event
    died with the host: the httpd had its end, the event log did not); and
    every page is scheduled, refused or pending at the end (no lost job)."""
    summary, ev = sessions["sticky"]
    sc = parse_scenario(_data("web_sticky", duration=450.0), "t.toml")
    demand = {j.job_id: j.durations for j in generate_jobs(sc.workload.classes, sc.duration, sc.seed)}
    launched = {(r[0], r[1]): (r[2], r[-1]) for e in ev if e["event"] == TASKS_LAUNCHED for r in e["tasks"]}
    done = {(j, t) for e in ev if e["event"] == TASKS_COMPLETED for j, t, _m, _at in e["tasks"]}
    lost = {(j, t) for e in ev if e["event"] == MACHINES_DOWN for j, t in e["lost"]}
    lost |= {(j, t) for e in ev if e["event"] == TASKS_LOST for j, t in e["tasks"]}
    kill = next(e["t"] for e in ev if e["event"] == FAULT and e["kind"] == "kill")
    shipped = max(e["t"] for e in ev if e["event"] == TASKS_COMPLETED and e["actor"] == "machine-host-1" and e["t"] < kill)
    on_dead = {k: v for k, v in launched.items() if 4 <= v[0] <= 7}
    assert lost and lost <= set(on_dead) | (lost - set(launched))
    for k, (_m, start) in on_dead.items():
        if k in done or k in lost:
            continue
        end = start + demand[k[0]][k[1]]
        assert shipped <= end <= kill or start > kill, (k, start, end, shipped, kill)
    assert summary["invariants"]["lost_jobs"] == 0
    assert summary["webfarm"]["requests"]["lost"] == len(lost)


def test_a_standby_balancer_takes_over_in_a_lease_a_lone_one_is_down_until_restarted(tmp_path: Path) -> None:
    two = _run(_data("web_failover", duration=450.0), tmp_path / "two")
    data = _data("web_failover", duration=450.0)
    data["webfarm"]["lbs"] = 1
    data["faults"][0].update(action="kill", target="lb-0")
    one = _run(data, tmp_path / "one")
    (f2,) = [f for f in two["failovers"] if f["role"] == "lb"]
    (f1,) = [f for f in one["failovers"] if f["role"] == "lb"]
    assert f2["new_leader"] not in (None, f2["target"])
    lease = data["webfarm"]["lease_ms"] / 1e3 * two["time_scale"]
    assert f2["downtime_emulated_s"] <= lease + 2.0, f2
    assert f1["new_leader"] == "lb-0" and f1["downtime_emulated_s"] >= 30.0, f1
    assert f1["pages_refused_meanwhile"] > 2 * max(1, f2["pages_refused_meanwhile"])
    assert two["webfarm"]["pages_refused"].get("client_timeout", 0) == f2["pages_refused_meanwhile"]


def _fates(ev: list[dict]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {e["job_id"]: [] for e in ev if e["event"] == JOB_SUBMITTED}
    for e in ev:
        if e["event"] in (JOB_SCHEDULED, JOB_REJECTED, JOB_PENDING, JOB_ABANDONED) and e["job_id"] in out:
            out[e["job_id"]].append(e.get("reason") or e["event"])
    return out


@pytest.mark.parametrize("faults", [
    # The active balancer is killed at 200 s; its standby takes over at
    # ~210 s, takes in the pages sent meanwhile (refusing those its clients
    # gave up on) and is killed a second later, its log unshipped: those
    # pages' fates must come from the clients.
    [{"at": 200.0, "action": "kill_lb", "restart_after": 30.0}, {"at": 211.0, "action": "kill_lb", "restart_after": 30.0}],
    # The balancers are cut off from httpd-1 for 3 s: what they forward there
    # meanwhile never arrives, and its pages still need a fate.
    [{"at": 100.0, "action": "partition", "target": "httpd-1", "peer": "lb", "duration": 3.0}],
], ids=["kill-after-admitting", "cut-to-a-server"])
def test_a_page_a_balancer_took_and_lost_gets_its_clients_timeout(faults: list, tmp_path: Path) -> None:
    """Every page has exactly one fate, and the ones lost on the way are
    their clients' timeouts."""
    s = _run(_data("web_failover", duration=260.0, faults=faults), tmp_path)
    fates = _fates(read_events(tmp_path / "events.jsonl"))
    assert {p: f for p, f in fates.items() if len(f) != 1} == {}
    j = s["jobs"]
    assert j["submitted"] == j["scheduled"] + j["abandoned"] + j["pending"] + j["rejected"]
    assert s["webfarm"]["pages_refused"].get("client_timeout", 0) > 0


@pytest.mark.parametrize("change, key", [
    ({"d": 13}, "webfarm.d"),
    ({"servers": [{"class": "fast", "weight": 0.0}]}, "webfarm.servers[0].weight"),
    ({"servers": [{"class": "fast", "weight": -2.0}]}, "webfarm.servers[0].weight"),
    ({"servers": [{"class": "gpu"}]}, "webfarm.servers[0].class"),
    ({"session_length": 0.0}, "webfarm.session_length"),
    ({"session_length": {"dist": "exponential", "mean": -3.0}}, "webfarm.session_length.mean"),
    ({"policy": "fastest"}, "webfarm.policy"),
    ({"lbs": 2}, "webfarm.lbs"),
])
def test_bad_input_is_one_line_naming_the_key(change: dict, key: str) -> None:
    data = _data("web_policies")
    data["webfarm"].update(change)
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, "bad.toml")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith(f"bad.toml: {key}:"), msg
