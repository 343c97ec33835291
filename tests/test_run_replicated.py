"""Omega on a Raft-replicated cell state, with the leader killed mid-run."""
from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.events.shared import COORD_ACK, RAFT_ROLE
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conftest import assert_invariants_hold, small_scenario_data

pytestmark = pytest.mark.ray


def test_leader_kill_is_a_measured_failover_and_nothing_is_lost(ray_session: None, tmp_path: Path) -> None:
    data = small_scenario_data(time_scale=20.0, duration=300.0)
    data["omega"]["schedulers"][0].update(count=1, t_job=2.0, t_task=0.05)
    data["workload"]["classes"][0]["interarrival"] = 6.0
    data["coordinator"] = {"replicas": 3}
    data["substrate"] = {"batch_interval": 0.1}
    data["faults"] = [{"at": 120.0, "action": "kill_leader", "restart_after": 60.0}]
    summary = run_scenario(parse_scenario(data, "replicated.toml"), tmp_path)
    events = read_events(tmp_path / "events.jsonl")

    assert_invariants_hold(summary["invariants"], tmp_path, tmp_path.name)
    assert [f["kind"] for f in summary["faults"]] == ["kill_leader", "restart"]
    [fo] = summary["failovers"]
    assert fo["new_leader"] is not None and fo["new_leader"] != fo["target"]
    assert fo["killed_at_s"] < fo["elected_at_s"] <= fo["first_commit_at_s"]
    assert 0 < fo["downtime_wall_s"] < 10
    assert fo["downtime_emulated_s"] == pytest.approx(fo["downtime_wall_s"] * 20.0, rel=1e-3)
    # Commits happened before and after the failover, all acknowledged by the group.
    commit_acks = [e["t"] for e in events if e["event"] == COORD_ACK and e["kind"] == "commit"]
    assert any(t < fo["killed_at_s"] for t in commit_acks) and any(t > fo["first_commit_at_s"] for t in commit_acks)
    victim = int(fo["target"][-1])  # its last answers, logged as it died, end no blackout
    acks_after = [e["t"] for e in events if e["event"] == COORD_ACK and e["t"] > fo["killed_at_s"] and e["replica"] != victim]
    assert min(acks_after) == pytest.approx(fo["first_commit_at_s"], abs=1e-3)
    assert summary["jobs"]["scheduled"] > 0
    j = summary["jobs"]
    assert j["submitted"] == j["scheduled"] + j["abandoned"] + j["pending"]
    # Only replicated state: no plain cellstate actor took part.
    assert not any(e["actor"] == "cellstate" for e in events)
    assert {e["replica"] for e in events if e["event"] == RAFT_ROLE and e["role"] == "leader"} >= {int(fo["target"][-1])}
    # The saved run checks out the same way offline, from its files alone.
    from schedlab.actors.analysis.saved_run import check_saved

    assert check_saved(tmp_path) == summary["invariants"]
