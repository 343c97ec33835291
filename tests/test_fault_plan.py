"""The fault vocabulary (``schedulers.faults.plan``: check, parse_plan, Monkey,
wire forms) and an actor's link faults (``actors.engines.link_faults``). Pure: no Ray."""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.actors.engines.link_faults import LinkFaults
from schedlab.schedulers.faults.plan import FaultError, FaultSpec, Monkey, Roster, check, parse_plan
from schedlab.schedulers.scenario.toml_table import ScenarioError

# A roster like an Omega run with a replicated coordinator and a Mesos-ish
# master pair: every role the checks care about, two of them electing leaders.
KILLS = {"kill_leader": "coordinator", "kill_master": "master"}
PEERS = {"machine": ("cellstate", "coordinator", "master"), "scheduler": ("cellstate", "coordinator"),
         "framework": ("master",), "coordinator": ("coordinator",), "master": ("coordinator", "framework", "machine"),
         "cellstate": ("scheduler", "machine")}
ROSTER = Roster(
    members={"machine": ["machine-host-0", "machine-host-1"], "scheduler": ["sched-0"], "cellstate": ["cellstate"],
             "coordinator": ["coord-0", "coord-1", "coord-2"], "master": ["master-0"]},
    restartable=frozenset({"machine", "scheduler", "coordinator", "master"}),
    leader_roles=("coordinator", "master"),
    kill_leader=KILLS,
    peers=PEERS,
    no_restart={"cellstate": "the single cell state keeps the only copy"},
)
WITH_NODES = dataclasses.replace(ROSTER, nodes=("node-0", "node-1"))
NO_LEADERS = Roster(ROSTER.members, ROSTER.restartable, unavailable={"kill_leader": "[coordinator] replicas >= 3"})


def F(action: str, target: str = "", **kw: Any) -> FaultSpec:
    return FaultSpec(at=1.0, action=action, target=target, **kw)


# ------------------------------------------------------------------ check


@pytest.mark.parametrize("fault,roster,needle", [
    (F("explode", "machine"), ROSTER, "unknown action"),
    (F("pause", "machine"), ROSTER, "pause needs a duration"),
    (F("pause", "machine", duration=0.0), ROSTER, "pause needs a duration"),
    (F("slow", "machine", duration=-1.0, delay=0.1), ROSTER, "slow needs a duration"),
    (F("partition", "machine", peer="cellstate", duration=0.0), ROSTER, "partition needs a duration"),
    (F("slow", "machine", duration=2.0), ROSTER, "slow needs a delay"),
    (F("partition", "machine", duration=2.0), ROSTER, "partition needs a peer"),
    (F("pause", "machine", duration=2.0, restart_after=1.0), ROSTER, "restart_after"),
    (F("kill_leader", "coord-0"), ROSTER, "picks its own target"),
    (F("kill_leader"), NO_LEADERS, "kill_leader needs"),
    (F("kill_master"), ROSTER, "single master"),
    (F("kill_node", "node-0"), ROSTER, "head node"),
    (F("kill_node", "node-7"), WITH_NODES, "no node-7"),
    (F("kill", "nobody"), ROSTER, "unknown target 'nobody'"),
    (F("kill", "submitter"), ROSTER, "instrument"),
    (F("pause", "metrics", duration=1.0), ROSTER, "instrument"),
    (F("restart", "machine"), ROSTER, "restart needs an actor name"),
    (F("kill", "cellstate", restart_after=1.0), ROSTER, "cellstate cannot be restarted"),
    (F("partition", "coord-0", peer="coord-0", duration=1.0), ROSTER, "two different sides"),
])
def test_check_rejects_with_a_clear_reason(fault: FaultSpec, roster: Roster, needle: str) -> None:
    with pytest.raises(FaultError) as e:
        check(fault, roster)
    assert needle in str(e.value)


@pytest.mark.parametrize("fault,roster", [
    (F("kill", "machine"), ROSTER),  # a role: one of its members is picked
    (F("kill", "sched-0"), ROSTER),  # an actor name
    (F("kill", "cellstate"), ROSTER),  # a kill for good needs no restart
    (F("kill", "machine-host-1", restart_after=2.0), ROSTER),
    (F("restart", "sched-0"), ROSTER),
    (F("pause", "coordinator", duration=3.0), ROSTER),
    (F("slow", "sched-0", duration=3.0, delay=0.2), ROSTER),
    (F("partition", "machine", peer="cellstate", duration=3.0), ROSTER),
    (F("partition", "machine-host-0", peer="coordinator", duration=3.0), ROSTER),
    (F("partition", "coordinator", peer="coordinator", duration=3.0), ROSTER),  # replicas cut from each other
    (F("kill_leader"), ROSTER),
    (F("kill_master", restart_after=1.0), ROSTER),
    (F("kill_node", "node-1"), ROSTER),  # nodes unknown (embedded Ray): any worker is accepted
    (F("kill_node", "node-1"), WITH_NODES),
])
def test_check_accepts_valid_faults(fault: FaultSpec, roster: Roster) -> None:
    check(fault, roster)


# ------------------------------------------------------------------ parse_plan


def test_parse_plan_sorts_by_time() -> None:
    data = {"faults": [
        {"at": 9, "action": "kill", "target": "sched-0", "restart_after": 2},
        {"at": 1.5, "action": "partition", "target": "machine", "peer": "cellstate", "duration": 4},
        {"at": 4, "action": "slow", "target": "coord-1", "duration": 1, "delay": 0.25},
    ]}
    plan = parse_plan(data, "plan.toml", ROSTER)
    assert [f.at for f in plan] == [1.5, 4.0, 9.0]
    assert plan[0] == FaultSpec(1.5, "partition", "machine", peer="cellstate", duration=4.0)
    assert plan[1].delay == 0.25 and plan[2].restart_after == 2.0


GOOD = {"at": 1, "action": "pause", "target": "machine", "duration": 2}


@pytest.mark.parametrize("bad,needle", [
    ({**GOOD, "colour": "red"}, "colour: unknown key"),
    ({**GOOD, "action": "explode"}, "action: must be one of"),
    ({k: v for k, v in GOOD.items() if k != "at"}, "at: is required"),
    ({**GOOD, "duration": 0}, "duration: must be > 0"),
    ({"at": 1, "action": "pause", "target": "machine"}, "pause needs a duration"),  # from check()
    ({"at": 1, "action": "kill", "target": "metrics"}, "instrument"),
])
def test_parse_plan_errors_name_the_entry(bad: dict, needle: str) -> None:
    # The bad entry is the second one: the index in the message must be its own.
    with pytest.raises(ScenarioError) as e:
        parse_plan({"faults": [dict(GOOD), bad]}, "plan.toml", ROSTER)
    msg = str(e.value)
    assert msg.startswith("plan.toml: faults[1]"), msg
    assert needle in msg


@pytest.mark.parametrize("data", [{}, {"faults": []}])
def test_parse_plan_needs_faults(data: dict) -> None:
    with pytest.raises(ScenarioError, match=r"^plan\.toml: faults"):
        parse_plan(data, "plan.toml", ROSTER)


# ------------------------------------------------------------------ Monkey

MONKEY_ROLES = ("machine", "scheduler", "coordinator", "cellstate", "master", "framework")


@st.composite
def rosters(draw: st.DrawFn) -> Roster:
    present = draw(st.lists(st.sampled_from(MONKEY_ROLES), min_size=1, unique=True))
    members = {r: [f"{r}-{i}" for i in range(draw(st.integers(1, 5)))] for r in present}
    # A published roster may also list roles with nobody in them.
    for r in MONKEY_ROLES:
        if r not in present and draw(st.booleans()):
            members[r] = []
    leaders = tuple(r for r in ("coordinator", "master") if r in present and draw(st.booleans()))
    return Roster(members, frozenset(r for r in MONKEY_ROLES if r != "cellstate"), (), leaders,
                  {a: r for a, r in KILLS.items() if r in leaders}, PEERS)


@settings(max_examples=200, deadline=None)
@given(roster=rosters(), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_monkey_draws_only_valid_faults_on_chosen_roles(roster: Roster, data: st.DataObject, seed: int) -> None:
    present = [r for r, names in roster.members.items() if names]
    chosen = data.draw(st.lists(st.sampled_from(present), min_size=1, unique=True))
    absent = [r for r in MONKEY_ROLES if r not in present]
    extra = data.draw(st.lists(st.sampled_from(absent), unique=True)) if absent else []
    monkey = Monkey(roster, tuple(chosen + extra), np.random.default_rng(seed), known=MONKEY_ROLES)
    assert set(monkey.roles) == set(chosen)  # empty roles dropped, chosen ones kept
    for i in range(50):
        f = monkey.draw(float(i))
        check(f, roster)  # everything the monkey does is a fault a plan could name
        assert f.at == float(i)
        if f.action.startswith("kill"):
            # a soak must never drain the cell: every kill comes back
            assert f.restart_after is not None and f.restart_after > 0
        if f.action == "kill_leader":
            assert "coordinator" in chosen
        elif f.action == "kill_master":
            assert "master" in chosen
        elif f.target.endswith("-leader"):  # a leader, whoever it is then
            assert f.action in ("pause", "slow", "partition") and f.target[:-7] in roster.leader_roles and f.target[:-7] in chosen
        else:
            assert f.target in roster.names() and roster.role_of(f.target) in chosen
        if f.action == "partition":
            # the other side must hold someone besides the victim
            assert [n for n in roster.members[f.peer] if n != f.target]


def test_monkey_is_reproducible_from_its_seed() -> None:
    a = Monkey(ROSTER, ("machine", "coordinator", "master", "cellstate"), np.random.default_rng(42))
    b = Monkey(ROSTER, ("machine", "coordinator", "master", "cellstate"), np.random.default_rng(42))
    seq_a = [a.draw(float(t)) for t in range(40)]
    assert seq_a == [b.draw(float(t)) for t in range(40)]
    # and the draws are not degenerate (several kinds of action over 40 draws)
    assert len({f.action for f in seq_a}) > 1


def test_monkey_rejects_unknown_and_empty_roles() -> None:
    with pytest.raises(FaultError, match="unknown role 'gremlin'"):
        Monkey(ROSTER, ("machine", "gremlin"), np.random.default_rng(0))
    sparse = Roster({"machine": ["m-0"], "scheduler": [], "master": []}, frozenset({"machine"}))
    # Roles the run does not have (or has nobody in) are left out; unknown names are refused.
    assert Monkey(sparse, ("scheduler", "machine", "framework"), np.random.default_rng(0), known=MONKEY_ROLES).roles == ("machine",)
    with pytest.raises(FaultError, match="unknown role 'framework'"):
        Monkey(sparse, ("machine", "framework"), np.random.default_rng(0))  # known: the roster's own roles
    with pytest.raises(FaultError, match="none of the chosen roles"):
        Monkey(sparse, ("scheduler", "master"), np.random.default_rng(0))


# ------------------------------------------------------------------ wire forms


@pytest.mark.parametrize("f", [
    FaultSpec(0.0, "kill_leader", restart_after=5.0),
    FaultSpec(3.5, "partition", "machine-host-0", peer="cellstate", duration=2.0),
    FaultSpec(7.0, "slow", "sched-0", duration=1.0, delay=0.5),
    FaultSpec(2.0, "kill", "machine"),
])
def test_fault_spec_wire_round_trip(f: FaultSpec) -> None:
    wire = f.to_wire()
    assert "" not in wire.values() and None not in wire.values()  # defaults left out of the message
    assert FaultSpec.from_wire(wire) == f


def test_roster_wire_round_trip() -> None:
    for r in (ROSTER, WITH_NODES, Roster({})):
        back = Roster.from_wire(r.to_wire())
        assert back == r
        assert isinstance(back.restartable, frozenset) and isinstance(back.nodes, tuple)


# ------------------------------------------------------------------ LinkFaults
# Negative durations are faults that already expired: no sleeping needed.


def test_link_faults_start_inactive() -> None:
    lf = LinkFaults()
    assert not lf.active and lf.delay() == 0.0 and not lf.blocked("anyone")


def test_partition_blocks_only_the_named_peer() -> None:
    lf = LinkFaults()
    lf.partition(["cellstate"], seconds=100)
    assert lf.active and lf.blocked("cellstate") and not lf.blocked("sched-0")


def test_expired_partition_heals_and_is_forgotten() -> None:
    lf = LinkFaults()
    lf.partition(["cellstate"], seconds=-1)
    assert not lf.blocked("cellstate")
    assert "cellstate" not in lf.cut and not lf.active


def test_slow_and_its_expiry() -> None:
    lf = LinkFaults()
    lf.slow(0.3, 100)
    assert lf.active and lf.delay() == 0.3
    lf.slow(0.3, -1)
    assert lf.delay() == 0.0 and not lf.active


def test_heal_clears_everything() -> None:
    lf = LinkFaults()
    lf.partition(["a", "b"], seconds=100)
    lf.slow(0.3, 100)
    lf.heal()
    assert not lf.active and lf.delay() == 0.0 and not lf.blocked("a") and not lf.blocked("b")


def test_a_leader_is_named_by_its_role_and_found_when_the_fault_falls_due() -> None:
    check(FaultSpec(1.0, "pause", "coordinator-leader", duration=5.0), ROSTER)
    check(FaultSpec(1.0, "partition", "master-leader", peer="machine", duration=5.0), ROSTER)
    check(FaultSpec(1.0, "partition", "machine", peer="coordinator-leader", duration=5.0), ROSTER)
    with pytest.raises(FaultError, match="restart needs an actor name"):
        check(FaultSpec(1.0, "restart", "coordinator-leader"), ROSTER)
    no_leaders = Roster({"machine": ["machine-host-0"], "cellstate": ["cellstate"]})
    with pytest.raises(FaultError, match="unknown target 'coordinator-leader'"):
        check(FaultSpec(1.0, "pause", "coordinator-leader", duration=5.0), no_leaders)


def test_a_partition_begins_at_its_start_on_every_side_at_once() -> None:
    """Both sides are told the same start: a side that hears late (a busy
    actor) still cuts from that instant, not from when it heard."""
    t = [100.0]
    early, late = LinkFaults(clock=lambda: t[0]), LinkFaults(clock=lambda: t[0])
    early.partition(["b"], seconds=10, start_in=0.5)  # told at 100.0: begins at 100.5
    assert not early.blocked("b")
    t[0] = 100.4
    late.partition(["a"], seconds=10, start_in=0.1)  # told at 100.4: begins at 100.5 too
    assert not early.blocked("b") and not late.blocked("a")
    t[0] = 100.5
    assert early.blocked("b") and late.blocked("a")
    t[0] = 110.5
    assert not early.blocked("b") and not late.blocked("a") and not early.cut
