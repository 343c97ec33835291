"""The pure parts of the replicated coordinator: the cell state machine, the
failover records and the nothing-lost checker, on hand-made inputs."""
from __future__ import annotations

import numpy as np
import pytest

from schedlab.schedulers.archs.omega.cell_machine import CellStateMachine
from schedlab.actors.analysis.invariants import check_coordinator
from schedlab.actors.analysis.summary import failovers
from schedlab.schedulers.events.shared import JOB_PENDING, JOB_SCHEDULED, JOB_SUBMITTED
from schedlab.schedulers.model.wire import pack_claims, pack_tasks, unpack_delta
from schedlab.schedulers.shared_state.commit import Claims
from schedlab.schedulers.scenario.parse import ScenarioError, parse_scenario
from tests.conftest import small_scenario_data


def _commit(machines: list[int], job: int = 1, now: float = 5.0) -> tuple:
    m = np.asarray(machines)
    return ("commit", pack_claims(Claims(m, np.ones((m.size, 2)), np.zeros(m.size, dtype=np.int64))), 0, job,
            pack_tasks(np.arange(m.size), np.full(m.size, 10.0)), now)


def test_cell_machine_is_deterministic_and_snapshots_round_trip() -> None:
    cap = np.full((4, 2), 2.0)
    a, b = (CellStateMachine(cap, cap.copy(), "resource", "incremental", 2) for _ in range(2))
    cmds = [_commit([0, 1, 3], 1), _commit([0, 0, 2], 2), ("exchange", 0, b"")]
    ra = [a.apply(c) for c in cmds]
    rb = [b.apply(c) for c in cmds]
    assert ra == rb  # same log, same results on every replica
    # Machine 0 had room for two 1-cpu tasks: job 2's second claim on it conflicts.
    assert np.frombuffer(ra[1][0], dtype=bool).tolist() == [True, False, True]
    assert [x[:3] for x in ra[2]] == [[1, 0, 0], [1, 1, 1], [2, 0, 0]]  # host 0 = machines 0-1, each once
    assert a.apply(("exchange", 0, b"")) == []
    c = CellStateMachine(cap, cap.copy(), "resource", "incremental", 2)
    c.restore(a.snapshot())
    np.testing.assert_array_equal(c.cell.free, a.cell.free)
    assert unpack_delta(c.query(("snapshot",))).version == a.cell.version
    assert c.to_launch == a.to_launch and c.query(("pending", 1)) is True


def test_failover_record_uses_first_write_after_the_kill() -> None:
    ev = {
        "fault": [{"t": 100.0, "kind": "kill_leader", "target": "coordinator-2", "was_leader": True}],
        "failover": [{"t": 108.0, "old_leader": "coordinator-2", "new_leader": "coordinator-0"}],
        "coord_ack": [{"t": 99.0, "kind": "commit"}, {"t": 110.0, "kind": "exchange"}, {"t": 112.0, "kind": "commit"}],
    }
    [rec] = failovers(ev, scale=20.0)
    assert rec["elected_at_s"] == 108.0 and rec["first_commit_at_s"] == 110.0 and rec["first_txn_at_s"] == 112.0
    assert rec["downtime_emulated_s"] == 10.0 and rec["downtime_wall_s"] == 0.5 and rec["election_wall_s"] == 0.4


def test_failover_record_ignores_the_killed_leaders_last_answers() -> None:
    # ray.kill is asynchronous: the dying leader's answers logged just after
    # the kill (a commit, a Borg placement) do not end the blackout.
    ev = {
        "fault": [{"t": 100.0, "kind": "kill_leader", "target": "coordinator-2", "was_leader": True}],
        "failover": [{"t": 108.0, "old_leader": "coordinator-2", "new_leader": "coordinator-0"}],
        "coord_ack": [{"t": 100.2, "kind": "commit", "replica": 2}, {"t": 110.0, "kind": "commit", "replica": 0}],
        "txn": [{"t": 100.1, "actor": "coordinator-2", "committed": 3}, {"t": 111.0, "actor": "coordinator-0", "committed": 1}],
    }
    [rec] = failovers(ev, scale=20.0)
    assert rec["first_commit_at_s"] == 110.0 and rec["first_txn_at_s"] == 110.0 and rec["first_placement_at_s"] == 111.0


def test_checker_counts_lost_duplicated_and_split_brain() -> None:
    ev = {
        "coord_ack": [{"client": "s", "request_id": 1}, {"client": "s", "request_id": 2}, {"client": "h", "request_id": 1}],
        "raft_role": [{"role": "leader", "term": 3, "replica": 0}, {"role": "leader", "term": 3, "replica": 1},
                      {"role": "leader", "term": 4, "replica": 1}],
    }
    good = [(1, 1, "s", 1, False), (2, 1, "s", 2, False), (3, 1, "h", 1, False), (2, 1, "s", 2, False)]  # replay after restart
    assert check_coordinator(ev, {0: good}) == {"split_brain": 1, "lost_acked": 0, "applied_twice": 0}
    missing = [(1, 1, "s", 1, False), (3, 1, "h", 1, False)]
    twice = good + [(5, 2, "h", 1, False)]
    dup_ok = good + [(6, 2, "h", 1, True)]  # a retry answered from the dedup table is not a second apply
    assert check_coordinator(ev, {0: missing, 1: twice, 2: dup_ok}) == {"split_brain": 1, "lost_acked": 1, "applied_twice": 1}
    # A replica that caught up by InstallSnapshot holds what the snapshot covers.
    caught_up = [(3, 1, None, None, "snapshot")]
    assert check_coordinator(ev, {0: good, 1: caught_up})["lost_acked"] == 0
    # A replica merely behind (restarted late, still catching up at the end)
    # holds a prefix of the log: nothing lost. One that applied past an
    # acknowledged write without it lost it; so did every log that lacks it.
    behind = [(2, 1, None, None, "snapshot")]
    assert check_coordinator(ev, {0: good, 1: behind})["lost_acked"] == 0
    diverged = [(1, 1, "s", 1, False), (2, 1, "s", 2, False), (3, 2, "x", 9, False), (4, 2, "x", 10, False)]
    assert check_coordinator(ev, {0: good, 1: diverged})["lost_acked"] == 1
    assert check_coordinator(ev, {1: behind})["lost_acked"] == 3  # no surviving log holds any of them


@pytest.mark.parametrize("coordinator,faults,problem", [
    ({"replicas": 2}, [], "coordinator.replicas: must be 1 (no replication) or 3 to 9"),
    ({"replicas": 3, "election_ms": [500, 200]}, [], "coordinator.election_ms: must be a number or [low, high]"),
    ({"replicas": 3, "heartbeat_ms": 7500}, [], "coordinator.heartbeat_ms: must be below election_ms (7500)"),
    ({"replicas": 3, "election_ms": [150, 300], "heartbeat_ms": 150}, [], "coordinator.heartbeat_ms: must be below election_ms (150)"),
    ({"replicas": 3, "tick_ms": 15.0}, [], "coordinator.tick_ms: replaced by heartbeat_ms and election_ms"),
    ({"replicas": 3, "election_ticks": [10, 20]}, [], "coordinator.election_ticks: replaced by heartbeat_ms and election_ms"),
    ({}, [{"at": 10.0, "action": "kill_leader"}], "faults[0]: kill_leader needs [coordinator] replicas >= 3"),
    ({"replicas": 3}, [{"at": 10.0, "action": "kill", "target": "coordinator-7"}], "faults[0]: unknown target 'coordinator-7'"),
    ({"replicas": 3}, [{"at": 900.0, "action": "kill_leader"}], "faults[0].at: must be inside the run"),
    ({"replicas": 3}, [{"at": 10.0, "action": "explode"}],
     "faults[0].action: must be one of kill, restart, kill_node, pause, slow, partition, kill_leader, kill_master"),
])
def test_bad_coordinator_and_fault_settings(coordinator: dict, faults: list, problem: str) -> None:
    data = small_scenario_data(coordinator=coordinator, faults=faults) if faults else small_scenario_data(coordinator=coordinator)
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, "bad.toml")
    assert problem in str(e.value)


def test_a_standing_task_pending_at_the_end_counts_no_job() -> None:
    """A preempted prefill task not yet confirmed killed is reported pending
    under its negative job id; the job counts stay a partition of the submitted."""
    import numpy as np

    from schedlab.actors.analysis.run_info import RunInfo
    from schedlab.actors.analysis.summary import summarize
    from schedlab.schedulers.model.cluster import Cell

    events = [
        {"event": JOB_SUBMITTED, "t": 1.0, "actor": "submitter", "job_id": 1, "job_class": "b", "kind": "batch", "tasks": 1},
        {"event": JOB_SUBMITTED, "t": 2.0, "actor": "submitter", "job_id": 2, "job_class": "b", "kind": "batch", "tasks": 1},
        {"event": JOB_SCHEDULED, "t": 3.0, "actor": "x", "job_id": 1},
        {"event": JOB_PENDING, "t": 9.0, "actor": "x", "job_id": 2, "unplaced": 1},
        {"event": JOB_PENDING, "t": 9.0, "actor": "x", "job_id": -3, "unplaced": 1, "evicting": 1},
    ]
    cell = Cell(capacity=np.ones((2, 2)), rack=np.zeros(2, dtype=np.int64), machine_class=np.zeros(2, dtype=np.int64), classes=())
    info = RunInfo(scenario="s", architecture="omega", engine="sim", seed=0, time_scale=1.0, emulated_seconds=10.0,
                   wall_seconds=10.0, machines_per_actor=1, substrate={})
    j = summarize(events, info, cell)["jobs"]
    assert (j["submitted"], j["scheduled"], j["pending"]) == (2, 1, 1)


def test_failover_election_time_is_the_winners_role_change_not_the_watchers_poll() -> None:
    # The driver's watcher polls: under load it saw the new leader (136.357)
    # after a client's first commit to it (136.268), as a CI run did. The
    # winner's own raft_role event says when it was elected; an older term's
    # leader event and the victim's own do not count.
    ev = {
        "fault": [{"t": 120.0, "kind": "kill_leader", "target": "coordinator-1", "was_leader": True, "term": 2}],
        "failover": [{"t": 136.357, "old_leader": "coordinator-1", "new_leader": "coordinator-2"}],
        "raft_role": [{"t": 50.0, "replica": 1, "term": 2, "role": "leader"},
                      {"t": 121.0, "replica": 1, "term": 2, "role": "leader"},
                      {"t": 135.9, "replica": 2, "term": 3, "role": "leader"}],
        "coord_ack": [{"t": 136.268, "kind": "commit", "replica": 2}],
    }
    [rec] = failovers(ev, scale=20.0)
    assert rec["elected_at_s"] == 135.9 <= rec["first_commit_at_s"] == 136.268
    assert rec["new_leader"] == "coordinator-2" and rec["election_wall_s"] == round(15.9 / 20, 4)
    unwatched = {k: v for k, v in ev.items() if k != "failover"}  # the driver saw no successor
    assert failovers(unwatched, scale=20.0)[0]["new_leader"] == "coordinator-2"
