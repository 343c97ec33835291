"""Every registered architecture on every registered engine (a real local
Ray, and the sim engine's virtual clock; live, those the CI soak does not
already run), end to end: the small
conformance scenario runs with a kill of every restartable role and of
every leader, and the suite checks what every architecture owes its users:

* the actors it started are exactly the roster faults are checked against;
* every key of the common summary schema is there and agrees with
  events.jsonl (jobs, faults, schedulers), and ``schedlab check`` recomputes
  the same invariants from the saved files;
* the invariants hold (no overcommit, double placement, lost job or commit,
  split brain, collateral damage);
* each killed actor came back (its restart started a new incarnation) and
  the system kept scheduling after every fault;
* each leader kill is a failover with a new leader.
"""
from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Callable

import pytest

from schedlab.actors import engines
from schedlab.actors.analysis.saved_run import check_saved
from schedlab.actors.analysis.summary import SUMMARY_KEYS
from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers import arch as registry
from schedlab.schedulers.events.shared import ACTOR_STARTED, FAULT, JOB_SCHEDULED, JOB_SUBMITTED, TXN
from schedlab.schedulers.scenario.parse import parse_scenario, roster_for
from tests.conformance.scenarios import with_faults
from tests.conftest import assert_events_declared

pytestmark = pytest.mark.ray


ROOT = Path(__file__).resolve().parents[2]
# Live, an architecture the CI soak runs (tests/test_soak.py: the same
# scenario machinery, a real Ray, a chaos monkey killing, pausing and
# cutting off its roles, every invariant checked) is not run here again:
# the suite's pace is the sum of its timed live tests, and this run is the
# costliest of them. The sim engine runs every architecture here, with a
# kill of every role and leader, and checks the same contracts.
SOAKED = frozenset(tomllib.loads((ROOT / "scenarios/soak.toml").read_text())["architectures"])


def _cases() -> list[tuple[str, str]]:
    return [(a, e) for e in engines.names() for a in registry.names() if not (e == "ray" and a in SOAKED)]


@pytest.fixture(scope="module", params=_cases(), ids=lambda p: f"{p[0]}-{p[1]}")
def conformance_run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple:
    name, engine = request.param
    if engine == "ray":
        request.getfixturevalue("ray_session")
    data, faults = with_faults(name)
    data["engine"] = engine
    sc = parse_scenario(data, f"conformance-{name}.toml")
    out = tmp_path_factory.mktemp(f"conformance-{name}-{engine}")
    summary = run_scenario(sc, out)
    return name, sc, faults, summary, read_events(out / "events.jsonl"), out


def test_invariants_hold_and_check_recomputes_them(conformance_run: tuple, invariants_hold: Callable) -> None:
    _name, _sc, _faults, summary, _events, out = conformance_run
    invariants_hold(summary["invariants"], out)
    assert check_saved(out) == summary["invariants"]


def test_every_event_is_declared_with_its_fields(conformance_run: tuple) -> None:
    name, _sc, _faults, _summary, events, out = conformance_run
    assert_events_declared(events, str(out))


def test_the_actors_started_are_the_roster(conformance_run: tuple) -> None:
    _name, sc, _faults, summary, events, _out = conformance_run
    roster = roster_for(sc)
    assert summary["actors"] == {r: names for r, names in roster.members.items() if names}
    speakers = {e["actor"] for e in events}
    instruments = {"submitter", "metrics", "driver", "chaos-inbox", *registry.spec_of(sc.architecture).instruments}
    assert speakers - instruments <= set(roster.names()), speakers - instruments - set(roster.names())


def test_summary_schema_is_complete_and_agrees_with_events(conformance_run: tuple) -> None:
    name, _sc, faults, summary, events, out = conformance_run
    on_disk = json.loads((out / "summary.json").read_text())
    assert on_disk == json.loads(json.dumps(summary))
    for key in SUMMARY_KEYS:
        assert key in on_disk, key
    assert on_disk["architecture"] == name
    assert {"machines", "machines_per_actor"} <= set(on_disk["cell"])
    j = on_disk["jobs"]
    assert {"submitted", "scheduled", "completed", "abandoned", "pending", "failed"} <= set(j)
    assert j["submitted"] == sum(1 for e in events if e["event"] == JOB_SUBMITTED) > 20
    assert j["submitted"] == j["scheduled"] + j["abandoned"] + j["pending"] + j.get("rejected", 0)
    assert j["scheduled"] > 0 and j["completed"] > 0
    for key in ("first_attempt", "fully_scheduled"):
        assert set(on_disk["wait_time_s"][key]) == {"p50", "p90", "p99"}
        assert on_disk["wait_time_s"][key]["p50"] is not None
    for s in on_disk["schedulers"]:
        assert {"name", "busyness", "conflict_fraction", "transactions"} <= set(s)
        txns = [e for e in events if e["event"] == TXN and e["scheduler"] == s["name"]]
        assert s["transactions"]["committed"] == sum(1 for t in txns if t["committed"] > 0)
    assert {"cpu_mean", "mem_mean"} <= set(on_disk["utilization"]) and on_disk["utilization"]["cpu_mean"] > 0
    assert {"rtt_wall_ms_p50", "rtt_emulated_s_p50"} <= set(on_disk["substrate"])
    injected = [e for e in events if e["event"] == FAULT]
    assert len(on_disk["faults"]) == len(injected) == 2 * len(faults)  # each kill and its restart
    assert not [f for f in on_disk["faults"] if f.get("skipped")], on_disk["faults"]
    for f in on_disk["failovers"]:
        assert {"role", "killed_at_s", "downtime_wall_s", "downtime_emulated_s"} <= set(f)


def test_every_role_can_be_killed_and_recovers(conformance_run: tuple) -> None:
    _name, _sc, faults, summary, events, _out = conformance_run
    restarts = [f for f in summary["faults"] if f["kind"] == "restart"]
    started = [(e["t"], e["actor"]) for e in events if e["event"] == ACTOR_STARTED]
    scheduled = sorted(e["t"] for e in events if e["event"] == JOB_SCHEDULED)
    for r in restarts:
        assert any(t >= r["at_s"] - 1e-6 and a == r["target"] for t, a in started), f"{r['target']} never came back"
    # The system kept scheduling after each fault.
    for f in summary["faults"]:
        assert any(t > f["at_s"] for t in scheduled), f"nothing scheduled after {f}"
    kills = [f for f in summary["faults"] if f["kind"] != "restart"]
    assert [f["kind"] for f in kills] == [f["action"] for f in faults]
    for f in kills:
        if f["kind"] != "kill":  # a leader kill: a failover with a new leader
            assert f.get("was_leader"), f
            rec = [r for r in summary["failovers"] if r["target"] == f["target"] and r["killed_at_s"] == f["at_s"]]
            assert rec and rec[0].get("new_leader") not in (None, f["target"]), (f, summary["failovers"])
