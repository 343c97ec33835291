"""YARN's FairScheduler core (schedulers.archs.yarn.fair, fair_share):
water-filled fair shares, the fair and DRF policies on heartbeats, max
shares, and min/fair share preemption with a manual clock."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schedlab.schedulers.allocation.fairness import drf
from schedlab.schedulers.archs.yarn.fair import (
    FairConfig,
    FairPreemption,
    FairScheduler,
)
from schedlab.schedulers.archs.yarn.fair_share import fair_shares, water_fill
from schedlab.schedulers.archs.yarn.queues import QueueSpec, QueueTree
from schedlab.schedulers.archs.yarn.requests import TaskAsk
from schedlab.schedulers.archs.yarn.scheduler import ClusterState

INF = np.inf


def v(cpu: float, mem: float) -> np.ndarray:
    return np.array([cpu, mem], dtype=np.float64)


def pools(specs: list[QueueSpec], nodes: list[tuple[float, float]], **config: object) -> tuple[ClusterState, FairScheduler]:
    tree = QueueTree.build(specs, check_capacity=False)
    state = ClusterState(np.array(nodes), np.zeros(len(nodes), dtype=int), tree)
    return state, FairScheduler(state, FairConfig(**config))  # type: ignore[arg-type]


def submit(state: ClusterState, app: int, queue: str, n: int, size: tuple[float, float]) -> None:
    state.submit(app, queue, f"user{app}")
    state.add_tasks(app, [TaskAsk(i, v(*size)) for i in range(n)])


# ------------------------------------------------------------ water-filling

@pytest.mark.parametrize(("cap", "caps", "floors", "weights", "want"), [
    (10, [INF, INF], [0, 0], [1, 1], [5, 5]),
    (10, [INF, INF], [0, 0], [2, 1], [20 / 3, 10 / 3]),
    (10, [2, INF], [0, 0], [1, 1], [2, 8]),
    (10, [INF, INF], [7, 0], [1, 1], [7, 3]),  # min share first
    (10, [INF, INF], [4, 0], [1, 1], [5, 5]),  # a floor below the water level does not bind
    (10, [3, 3], [0, 0], [1, 1], [3, 3]),  # demand less than the cluster: everyone capped
    (10, [INF, INF, INF], [8, 8, 0], [1, 1, 1], [5, 5, 0]),  # floors above capacity: scaled down
    (12, [INF, 2, INF], [6, 0, 0], [1, 1, 2], [6, 2, 4]),
])
def test_water_fill_hand_worked(cap: float, caps: list, floors: list, weights: list, want: list) -> None:
    np.testing.assert_allclose(water_fill(cap, np.array(caps, float), np.array(floors, float), np.array(weights, float)), want)


def test_hierarchical_steady_and_instantaneous_shares() -> None:
    tree = QueueTree.build([QueueSpec("root.a"), QueueSpec("root.b"), QueueSpec("root.a.x"),
                            QueueSpec("root.a.y", weight=3.0)], check_capacity=False)
    steady = fair_shares(tree, v(40, 100))
    np.testing.assert_allclose(steady["root.a"], v(20, 50))
    np.testing.assert_allclose(steady["root.a.x"], v(5, 12.5))
    np.testing.assert_allclose(steady["root.a.y"], v(15, 37.5))
    demand = {q: v(0, 0) for q in tree}
    demand.update({"root.a": v(4, 10), "root.a.x": v(4, 10), "root.b": v(100, 100)})
    inst = fair_shares(tree, v(40, 100), demand)
    np.testing.assert_allclose(inst["root.a"], v(4, 10))  # capped by its demand
    np.testing.assert_allclose(inst["root.b"], v(36, 90))  # the rest goes where it is wanted
    np.testing.assert_allclose(inst["root.a.y"], v(0, 0))  # inactive


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.1, 5), st.floats(0, 40), st.floats(0, 80), st.one_of(st.none(), st.floats(0, 60))),
                min_size=1, max_size=5),
       st.floats(1, 100))
def test_fair_shares_sum_respect_min_shares_and_weights(pools_: list, total_mem: float) -> None:
    specs = []
    for i, (w, lo, _dem, hi) in enumerate(pools_):
        hi = None if hi is None else max(hi, lo)
        specs.append(QueueSpec(f"root.p{i}", weight=w, min_share=(0.0, lo), max_share=None if hi is None else (INF, hi)))
    tree = QueueTree.build(specs, check_capacity=False)
    demand = {q: v(0, 0) for q in tree}
    for i, (_, _, dem, _) in enumerate(pools_):
        demand[f"root.p{i}"] = v(0, dem)
    shares = fair_shares(tree, v(0, total_mem), demand)
    names = [f"root.p{i}" for i in range(len(pools_))]
    got = np.array([shares[n][1] for n in names])
    caps = np.array([min(demand[n][1], tree[n].max_share[1]) for n in names])
    floors = np.minimum(np.array([tree[n].min_share[1] for n in names]), caps)
    w = np.array([tree[n].weight for n in names])
    assert got.sum() == pytest.approx(min(total_mem, caps.sum()), rel=1e-9, abs=1e-9)  # the cluster, or all demand
    assert np.all(got <= caps + 1e-9)
    if floors.sum() <= total_mem:
        assert np.all(got >= floors - 1e-9)  # min shares first
    between = (got > floors + 1e-7) & (got < caps - 1e-7)
    if between.any():
        level = got[between] / w[between]
        np.testing.assert_allclose(level, level[0], rtol=1e-7)  # shares in proportion to weights
        below = got < caps - 1e-7  # nobody short of its cap sits under the water level
        assert np.all(got[below] / w[below] >= level[0] - 1e-7) or floors.sum() > total_mem


# ------------------------------------------------------------ policies on heartbeats

def test_drf_paper_example_on_one_node() -> None:
    """Ghodsi et al.: 9 cpu, 18 GB; A's tasks <1 cpu, 4 GB>, B's <3 cpu, 1 GB>.
    One container per heartbeat, lowest dominant share first: A, B, A, B, A."""
    state, s = pools([QueueSpec("root.a"), QueueSpec("root.b")], [(9.0, 18.0)], policy="drf")
    submit(state, 1, "a", 10, (1.0, 4.0))
    submit(state, 2, "b", 10, (3.0, 1.0))
    order = [c.app_id for t in range(10) for c in s.allocate_on_node(0, float(t))]
    assert order == [1, 2, 1, 2, 1]
    want = drf(v(9, 18), np.array([[1.0, 4.0], [3.0, 1.0]]))
    assert [len(state.apps[a].containers) for a in (1, 2)] == want.tolist() == [3, 2]


def test_drf_on_a_node_sequence_hand_worked() -> None:
    """The same users over two nodes (4 cpu, 9 GB) and (5 cpu, 9 GB),
    heartbeats alternating, one container each. Fragmentation costs B its
    second task (3 cpu on one node), so A gets the rest."""
    state, s = pools([QueueSpec("root.a"), QueueSpec("root.b")], [(4.0, 9.0), (5.0, 9.0)], policy="drf")
    submit(state, 1, "a", 10, (1.0, 4.0))
    submit(state, 2, "b", 10, (3.0, 1.0))
    got = [(c.app_id, c.node) for t in range(8) for c in s.allocate_on_node(t % 2, float(t))]
    # t0 node0 (4,9): tie, A -> (3,5) left.  t1 node1 (5,9): B (0 < 2/9) -> (2,8).
    # t2 node0 (3,5): A 2/9 < B 1/3 -> A (2,1).  t3 node1 (2,8): B 1/3 < A 4/9, but B needs 3 cpu: A -> (1,4).
    # t4 node0 (2,1): nothing fits.  t5 node1 (1,4): A (1,4) fits, B first but does not: A -> (0,0).
    assert got == [(1, 0), (2, 1), (1, 0), (1, 1), (1, 1)]


def test_fair_policy_splits_memory_by_weight() -> None:
    state, s = pools([QueueSpec("root.a", weight=2.0), QueueSpec("root.b")], [(100.0, 30.0)], assign_multiple=True)
    submit(state, 1, "a", 40, (1.0, 1.0))
    submit(state, 2, "b", 40, (1.0, 1.0))
    s.allocate_on_node(0, 0.0)
    assert state.queue_used["root.a"][1] == 20 and state.queue_used["root.b"][1] == 10


def test_needy_pool_below_its_min_share_goes_first() -> None:
    specs = [QueueSpec("root.a"), QueueSpec("root.b", min_share=(0.0, 3.0))]
    state, s = pools(specs, [(100.0, 100.0)])
    submit(state, 1, "a", 10, (1.0, 1.0))
    submit(state, 2, "b", 10, (1.0, 1.0))
    order = [c.app_id for t in range(8) for c in s.allocate_on_node(0, float(t))]
    assert order == [2, 2, 2, 1, 1, 1, 1, 2]  # b to its min share 3 first, then usage / weight (ties by name)


def test_applications_in_a_pool_share_fairly() -> None:
    state, s = pools([QueueSpec("root.a")], [(100.0, 100.0)])
    submit(state, 1, "a", 10, (1.0, 2.0))
    submit(state, 2, "a", 10, (1.0, 1.0))
    order = [c.app_id for t in range(5) for c in s.allocate_on_node(0, float(t))]
    assert order == [1, 2, 2, 1, 2]  # memory used: app 1 2, 4; app 2 1, 2, 3


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.sampled_from([(1.0, 1.0), (2.0, 3.0), (1.0, 5.0)]), st.integers(1, 10)),
                min_size=1, max_size=5),
       st.sampled_from(["fair", "drf"]), st.booleans(), st.lists(st.integers(0, 3), min_size=1, max_size=20))
def test_never_over_max_share_nor_node_capacity(apps: list, policy: str, global_mode: bool, beats: list) -> None:
    specs = [QueueSpec("root.p0", max_share=(6.0, 10.0)), QueueSpec("root.p1", weight=2.0),
             QueueSpec("root.p2", min_share=(2.0, 4.0), max_share=(INF, 12.0))]
    state, s = pools(specs, [(4.0, 8.0)] * 4, policy=policy, assign_multiple=True)
    for i, (q, size, n) in enumerate(apps):
        submit(state, i, f"root.p{q}", n, size)
    for t, node in enumerate(beats):
        s.allocate_global(float(t)) if global_mode else s.allocate_on_node(node, float(t))
        assert np.all(state.free >= -1e-9)
        for q in state.tree:
            assert np.all(state.queue_used[q] <= state.tree[q].max_share + 1e-9), q
    assert state.containers


# ------------------------------------------------------------ preemption

def starved(**preemption: object) -> tuple[ClusterState, FairScheduler]:
    specs = [QueueSpec("root.a"), QueueSpec("root.b", min_share=(0.0, 6.0))]
    state, s = pools(specs, [(16.0, 16.0)], assign_multiple=True,
                     preemption=FairPreemption(enabled=True, **preemption))  # type: ignore[arg-type]
    submit(state, 1, "a", 16, (1.0, 1.0))
    s.allocate_on_node(0, 0.0)
    assert state.queue_used["root.a"][1] == 16
    submit(state, 2, "b", 16, (1.0, 1.0))
    return state, s


def run_monitor(state: ClusterState, s: FairScheduler, until: float) -> list[tuple[float, list[int]]]:
    log = []
    for t in range(int(until) + 1):
        taken = s.preemption(float(t))
        for c in taken:
            state.release(c)
        s.allocate_on_node(0, float(t))
        log.append((float(t), taken))
    return log


def test_min_share_preemption_after_its_timeout() -> None:
    state, s = starved(min_share_preemption_timeout=5.0)
    log = run_monitor(state, s, 8)
    assert [len(taken) for _, taken in log] == [0, 0, 0, 0, 0, 6, 0, 0, 0]
    assert state.queue_used["root.b"][1] == 6  # its min share, no more: no fair share timeout


def test_fair_share_preemption_up_to_the_fair_share_never_below_it() -> None:
    state, s = starved(fair_share_preemption_timeout=10.0, fair_share_preemption_threshold=0.5)
    log = run_monitor(state, s, 12)
    assert [len(taken) for _, taken in log] == [0] * 10 + [8, 0, 0]
    assert state.queue_used["root.a"][1] == 8 and state.queue_used["root.b"][1] == 8  # fair shares: 8 each


def test_no_preemption_when_above_the_threshold() -> None:
    state, s = starved(fair_share_preemption_timeout=1.0, fair_share_preemption_threshold=0.5)
    s.preemption(0.0)
    victims = [c for c in list(state.containers)[:5]]
    for c in victims:  # b gets 5 of its fair 8: above 0.5 x 8
        state.release(c)
    s.allocate_on_node(0, 0.5)
    assert state.queue_used["root.b"][1] == 5
    assert s.preemption(5.0) == []


def test_preemption_disabled_by_default() -> None:
    specs = [QueueSpec("root.a"), QueueSpec("root.b", min_share=(0.0, 6.0))]
    state, s = pools(specs, [(16.0, 16.0)], assign_multiple=True)
    submit(state, 1, "a", 16, (1.0, 1.0))
    s.allocate_on_node(0, 0.0)
    submit(state, 2, "b", 16, (1.0, 1.0))
    assert s.preemption(1e9) == []
