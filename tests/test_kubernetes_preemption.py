"""Kubernetes DefaultPreemption (pure): victims per node, the node choice,
budgets, the dry run's candidate limit; hand-worked, then properties."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.kubernetes.objects import Pod
from schedlab.schedulers.archs.kubernetes.preemption import (
    DefaultPreemption, Fits, PreemptionConfig, lower_priority_nominated, num_candidates, preempt, preference,
    select_victims,
)

Caps = dict[int, tuple[int, ...]]
Nodes = dict[int, list[Pod]]


def pod(node: int, i: int, priority: int, cpu: int, mem: int | None = None, *, owner: str = "",
        created: float = 0.0, policy: str = "PreemptLowerPriority") -> Pod:
    return Pod(key=(node, i), requests=(float(cpu), float(cpu if mem is None else mem)), priority=priority,
               created=created, owner=owner, preemption_policy=policy)  # type: ignore[arg-type]


def preemptor(priority: int, cpu: int, mem: int | None = None, policy: str = "PreemptLowerPriority") -> Pod:
    return pod(99, 0, priority, cpu, mem, policy=policy)


def resource_fits(caps: Caps, nodes: Nodes) -> Fits:
    """NodeResourcesFit alone: the requests left after ``removed`` plus the
    pod's stay within the node's capacity."""
    def fits(node: int, p: Pod, removed: frozenset) -> bool:
        used = np.sum([q.requests for q in nodes[node] if q.key not in removed] or [[0.0, 0.0]], axis=0)
        return bool(np.all(used + np.asarray(p.requests) <= np.asarray(caps[node], dtype=float) + 1e-9))
    return fits


def keys(pods) -> list:
    return [p.key for p in pods]


def run(caps: Caps, nodes: Nodes, who: Pod, **kw):
    return preempt(who, nodes, resource_fits(caps, nodes), **kw)


# --- victims on one node ------------------------------------------------------

def test_reprieve_keeps_the_most_important_pods_that_still_leave_room() -> None:
    nodes = {0: [pod(0, 1, 1, 4), pod(0, 2, 2, 4), pod(0, 3, 3, 2)]}
    c = select_victims(preemptor(10, 4), 0, nodes[0], resource_fits({0: (10, 10)}, nodes))
    # all removed: room 10. Give back p3 (2): 6 used of 10; p2 (4): 10; p1 (4): 14 > 10 -> victim.
    assert c is not None and keys(c.victims) == [(0, 1)] and c.pdb_violations == 0


def test_equal_or_higher_priority_is_never_a_victim() -> None:
    nodes = {0: [pod(0, 1, 5, 4), pod(0, 2, 7, 4)]}
    assert select_victims(preemptor(5, 2), 0, nodes[0], resource_fits({0: (8, 8)}, nodes)) is None
    r = run({0: (8, 8)}, nodes, preemptor(6, 2))
    assert r.node == 0 and keys(r.victims) == [(0, 1)]


def test_no_candidate_when_evicting_everything_lower_is_not_enough_or_not_needed() -> None:
    nodes = {0: [pod(0, 1, 1, 2), pod(0, 2, 9, 4)], 1: [pod(1, 1, 1, 2)]}
    caps = {0: (6, 6), 1: (6, 6)}
    fits = resource_fits(caps, nodes)
    assert select_victims(preemptor(5, 3), 0, nodes[0], fits) is None  # 4 stays, 4 + 3 > 6
    assert select_victims(preemptor(5, 3), 1, nodes[1], fits) is None  # fits already: not a preemption
    assert run({0: (6, 6)}, {0: nodes[0]}, preemptor(5, 3)).node is None


def test_fits_sees_only_lower_priority_pods_removed() -> None:
    seen: list[frozenset] = []
    nodes = {0: [pod(0, 1, 1, 1), pod(0, 2, 5, 1), pod(0, 3, 9, 1)]}
    base = resource_fits({0: (3, 3)}, nodes)

    def spy(node: int, p: Pod, removed: frozenset) -> bool:
        seen.append(removed)
        return base(node, p, removed)

    select_victims(preemptor(5, 1), 0, nodes[0], spy)
    assert seen[0] == frozenset({(0, 1)}) and all(s <= {(0, 1)} for s in seen)


# --- budgets ------------------------------------------------------------------

def test_budget_violating_pods_are_reprieved_first() -> None:
    # a (db, prio 1) and b (prio 2), 4 each on a full node of 8; the preemptor needs 4.
    nodes = {0: [pod(0, 1, 1, 4, owner="db"), pod(0, 2, 2, 4)]}
    fits = resource_fits({0: (8, 8)}, nodes)
    no_budget = select_victims(preemptor(9, 4), 0, nodes[0], fits)
    assert keys(no_budget.victims) == [(0, 1)]  # b (more important) reprieved first
    guarded = select_victims(preemptor(9, 4), 0, nodes[0], fits, {"db": 0})
    assert keys(guarded.victims) == [(0, 2)] and guarded.pdb_violations == 0


def test_budget_is_spent_most_important_first() -> None:
    nodes = {0: [pod(0, 1, 3, 4, owner="web"), pod(0, 2, 2, 4, owner="web")]}
    c = select_victims(preemptor(9, 8), 0, nodes[0], resource_fits({0: (8, 8)}, nodes), {"web": 1})
    assert keys(c.victims) == [(0, 1), (0, 2)] and c.pdb_violations == 1


def test_budget_count_is_upstreams_classification_not_the_final_evictions() -> None:
    """Pinned upstream behaviour: web allows 1; d1 (more important) takes the
    allowance, so d2 counts as violating though it ends the only web victim."""
    nodes = {0: [pod(0, 1, 3, 1, owner="web"), pod(0, 2, 2, 3, owner="web")]}
    c = select_victims(preemptor(9, 3), 0, nodes[0], resource_fits({0: (4, 4)}, nodes), {"web": 1})
    assert keys(c.victims) == [(0, 2)] and c.pdb_violations == 1


def test_node_without_violations_wins_over_lower_priorities() -> None:
    nodes = {0: [pod(0, 1, 1, 4, owner="db")], 1: [pod(1, 1, 5, 4)]}
    r = run({0: (4, 4), 1: (4, 4)}, nodes, preemptor(9, 4), pdb_allowed={"db": 0})
    assert r.node == 1 and r.pdb_violations == 0 and r.candidates == 2
    r = run({0: (4, 4), 1: (4, 4)}, nodes, preemptor(9, 4))
    assert r.node == 0


# --- the node choice, criterion by criterion ----------------------------------

def two_nodes(a: list[Pod], b: list[Pod], need: int = 4, **kw):
    nodes = {0: a, 1: b}
    return run({0: (4, 4), 1: (4, 4)}, nodes, preemptor(10, need), **kw)


def test_lowest_highest_victim_priority() -> None:
    assert two_nodes([pod(0, 1, 5, 4)], [pod(1, 1, 3, 2), pod(1, 2, 1, 2)]).node == 1


def test_smallest_sum_of_priorities() -> None:
    assert two_nodes([pod(0, 1, 3, 2), pod(0, 2, 2, 2)], [pod(1, 1, 3, 2), pod(1, 2, 1, 2)]).node == 1


def test_sum_is_shifted_so_negative_priorities_do_not_reward_more_victims() -> None:
    # raw sums: -10 on node 0 (two victims) < -5 on node 1 (one); shifted, node 1 wins
    assert two_nodes([pod(0, 1, -5, 2), pod(0, 2, -5, 2)], [pod(1, 1, -5, 4)]).node == 1


def test_latest_start_of_the_highest_priority_victims() -> None:
    r = two_nodes([pod(0, 1, 3, 4, created=20.0)], [pod(1, 1, 3, 4, created=10.0)])
    assert r.node == 0
    starts = {(0, 1): 5.0, (1, 1): 50.0}
    r = two_nodes([pod(0, 1, 3, 4)], [pod(1, 1, 3, 4)], start_time=lambda p: starts[p.key])
    assert r.node == 1


def test_full_tie_takes_the_first_node_visited() -> None:
    assert two_nodes([pod(0, 1, 3, 4)], [pod(1, 1, 3, 4)]).node == 0


# --- eligibility --------------------------------------------------------------

def test_policy_never_preempts_nothing() -> None:
    r = two_nodes([pod(0, 1, 0, 4)], [pod(1, 1, 0, 4)])
    assert r.node == 0
    r = preempt(preemptor(10, 4, policy="Never"), {0: [pod(0, 1, 0, 4)]}, lambda *a: True)
    assert r.node is None and r.victims == () and "Never" in r.reason


def test_waits_while_its_earlier_victims_terminate() -> None:
    nodes = {0: [pod(0, 1, 1, 4)]}
    victim = pod(5, 1, 1, 4)
    r = run({0: (4, 4)}, nodes, preemptor(9, 4), nominated_pods=[victim], terminating={victim.key})
    assert r.node is None and "terminating" in r.reason
    assert run({0: (4, 4)}, nodes, preemptor(9, 4), nominated_pods=[victim]).node == 0


def test_lower_priority_nominated() -> None:
    ps = [pod(1, 1, 3, 1), pod(1, 2, 9, 1), pod(1, 3, 5, 1)]
    assert keys(lower_priority_nominated(preemptor(5, 1), ps)) == [(1, 1)]


# --- the dry run's candidate limit --------------------------------------------

def test_num_candidates() -> None:
    assert [num_candidates(n) for n in (5, 50, 500, 2000, 5000)] == [5, 50, 100, 200, 500]
    assert num_candidates(50, PreemptionConfig(min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=1)) == 5
    with pytest.raises(ValueError):
        PreemptionConfig(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=0)
    with pytest.raises(ValueError):
        PreemptionConfig(min_candidate_nodes_percentage=101)


def test_dry_run_stops_at_the_limit_from_a_seeded_offset() -> None:
    one = PreemptionConfig(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=1)
    # node i's only pod has priority 5 - i: the best node is the last, but the
    # dry run stops at the first workable one.
    nodes = {i: [pod(i, 1, 5 - i, 4)] for i in range(5)}
    caps = {i: (4, 4) for i in range(5)}
    assert run(caps, nodes, preemptor(9, 4), config=one).node == 0
    assert run(caps, nodes, preemptor(9, 4)).node == 4  # default: all 5 visited
    offset = int(np.random.default_rng(7).integers(5))
    assert run(caps, nodes, preemptor(9, 4), config=one, rng=np.random.default_rng(7)).node == offset


def test_dry_run_goes_on_until_a_candidate_without_violations() -> None:
    one = PreemptionConfig(min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=1)
    nodes = {0: [pod(0, 1, 1, 4, owner="db")], 1: [pod(1, 1, 1, 4, owner="db")], 2: [pod(2, 1, 4, 4)]}
    r = run({i: (4, 4) for i in range(3)}, nodes, preemptor(9, 4), config=one, pdb_allowed={"db": 0})
    assert r.node == 2 and r.pdb_violations == 0 and r.candidates == 3


def test_plugin_class_delegates() -> None:
    nodes = {0: [pod(0, 1, 1, 4)]}
    plugin = DefaultPreemption(rng=np.random.default_rng(0))
    assert plugin.name == "DefaultPreemption"
    r = plugin.choose(preemptor(9, 4), nodes, resource_fits({0: (4, 4)}, nodes))
    assert r.node == 0 and keys(r.victims) == [(0, 1)]


# --- properties ---------------------------------------------------------------

@st.composite
def clusters(draw):
    """Up to five nodes, each filled with pods that fit it."""
    caps: Caps = {}
    nodes: Nodes = {}
    for n in range(draw(st.integers(1, 5))):
        cap = (draw(st.integers(2, 8)), draw(st.integers(2, 8)))
        free = list(cap)
        pods: list[Pod] = []
        for i in range(draw(st.integers(0, 6))):
            cpu, mem = draw(st.integers(1, 3)), draw(st.integers(1, 3))
            if cpu > free[0] or mem > free[1]:
                break
            free = [free[0] - cpu, free[1] - mem]
            pods.append(pod(n, i, draw(st.integers(-2, 4)), cpu, mem, owner=draw(st.sampled_from(["", "a", "b"])),
                            created=float(draw(st.integers(0, 9)))))
        caps[n], nodes[n] = cap, pods
    who = preemptor(draw(st.integers(-1, 5)), draw(st.integers(1, 6)), draw(st.integers(1, 6)),
                    policy=draw(st.sampled_from(["PreemptLowerPriority", "PreemptLowerPriority", "Never"])))
    budgets = draw(st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 2)))
    limit = draw(st.sampled_from([None, 1, 2]))
    config = PreemptionConfig() if limit is None else PreemptionConfig(
        min_candidate_nodes_percentage=0, min_candidate_nodes_absolute=limit)
    seed = draw(st.integers(0, 2**16))
    return caps, nodes, who, budgets, config, seed


def _preempt(case):
    caps, nodes, who, budgets, config, seed = case
    return preempt(who, nodes, resource_fits(caps, nodes), pdb_allowed=budgets, config=config,
                   rng=np.random.default_rng(seed))


@settings(max_examples=200, deadline=None)
@given(clusters())
def test_victims_are_lower_priority_sufficient_and_minimal(case) -> None:
    caps, nodes, who = case[:3]
    r = _preempt(case)
    if who.preemption_policy == "Never":
        assert r.node is None and r.victims == ()
        return
    if r.node is None:
        assert r.victims == ()
        return
    assert r.victims, "a preemption evicts something"
    assert all(v.priority < who.priority for v in r.victims)
    assert set(keys(r.victims)) <= set(keys(nodes[r.node]))
    fits = resource_fits(caps, nodes)
    removed = frozenset(keys(r.victims))
    assert fits(r.node, who, removed)
    for v in r.victims:  # sparing any single victim leaves no room
        assert not fits(r.node, who, removed - {v.key})


@settings(max_examples=200, deadline=None)
@given(clusters())
def test_no_budget_violation_when_a_candidate_without_one_exists(case) -> None:
    caps, nodes, who, budgets, _, _ = case
    fits = resource_fits(caps, nodes)
    per_node = [select_victims(who, n, nodes[n], fits, budgets) for n in nodes]
    if who.preemption_policy == "Never" or not any(c is not None and c.pdb_violations == 0 for c in per_node):
        return
    r = _preempt(case)
    assert r.node is not None and r.pdb_violations == 0


@settings(max_examples=150, deadline=None)
@given(clusters())
def test_without_a_limit_the_chosen_node_is_the_most_preferred(case) -> None:
    caps, nodes, who, budgets, _, seed = case
    r = _preempt((caps, nodes, who, budgets, PreemptionConfig(), seed))
    fits = resource_fits(caps, nodes)
    found = [c for n in nodes if (c := select_victims(who, n, nodes[n], fits, budgets)) is not None]
    if who.preemption_policy == "Never" or not found:
        assert r.node is None
        return
    best = min(preference(c) for c in found)
    chosen = next(c for c in found if c.node == r.node)
    assert preference(chosen) == best and keys(chosen.victims) == keys(r.victims)
