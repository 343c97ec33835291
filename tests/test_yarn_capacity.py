"""YARN's CapacityScheduler core (schedulers.archs.yarn.capacity): queue
order, maximum capacities, user limits, heartbeat limits, global
scheduling, and proportional preemption with a manual clock."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schedlab.schedulers.archs.yarn.capacity import (
    CapacityConfig,
    CapacityPreemption,
    CapacityScheduler,
)
from schedlab.schedulers.archs.yarn.locality import (
    NODE_LOCAL,
    OFF_SWITCH,
    LocalityDelay,
)
from schedlab.schedulers.archs.yarn.queues import QueueSpec, QueueTree
from schedlab.schedulers.archs.yarn.requests import TaskAsk
from schedlab.schedulers.archs.yarn.scheduler import ClusterState, share

NO_DELAY = LocalityDelay(0, 0)


def v(cpu: float, mem: float) -> np.ndarray:
    return np.array([cpu, mem], dtype=np.float64)


def cluster(specs: list[QueueSpec], nodes: int = 4, node: tuple[float, float] = (4.0, 8.0),
            **config: object) -> tuple[ClusterState, CapacityScheduler]:
    tree = QueueTree.build(specs, check_capacity=True)
    state = ClusterState(np.array([node] * nodes), np.arange(nodes) // 2, tree)
    config.setdefault("locality", NO_DELAY)
    config.setdefault("max_off_switch_per_heartbeat", 0)
    return state, CapacityScheduler(state, CapacityConfig(**config))  # type: ignore[arg-type]


def submit(state: ClusterState, app: int, queue: str, user: str, n: int, size: tuple[float, float] = (1.0, 2.0),
           **task: object) -> None:
    state.submit(app, queue, user)
    state.add_tasks(app, [TaskAsk(i, v(*size), **task) for i in range(n)])  # type: ignore[arg-type]


def heartbeats(state: ClusterState, s: CapacityScheduler, now: float) -> int:
    return sum(len(s.allocate_on_node(n, now)) for n in range(state.n_nodes))


def two_queues(**a: object) -> list[QueueSpec]:
    return [QueueSpec("root.a", capacity=50, **a), QueueSpec("root.b", capacity=50)]  # type: ignore[arg-type]


# ------------------------------------------------------------ limits and order

def test_needs_a_capacity_checked_tree() -> None:
    tree = QueueTree.build([QueueSpec("root.a")], check_capacity=False)
    with pytest.raises(ValueError, match="check_capacity"):
        CapacityScheduler(ClusterState(np.array([[1.0, 1.0]]), np.array([0]), tree))


def test_lone_user_stops_at_the_guarantee_unless_the_factor_lets_it_grow() -> None:
    state, s = cluster(two_queues())
    submit(state, 1, "a", "u", 40)
    heartbeats(state, s, 0.0)
    np.testing.assert_allclose(state.queue_used["root.a"], v(8, 16))  # user-limit-factor 1: the guarantee
    state, s = cluster(two_queues(user_limit_factor=2.0, max_capacity=75))
    submit(state, 1, "a", "u", 40)
    heartbeats(state, s, 0.0)
    np.testing.assert_allclose(state.queue_used["root.a"], v(12, 24))  # elastic up to max capacity


def test_a_lone_user_just_below_the_guarantee_still_grows_past_it() -> None:
    """Queue a's guarantee is (8, 16); the user holds (7, 15) through an
    odd-sized AM container, and its next task (1, 2) would take it to
    (8, 17), past the guarantee in memory. With user-limit-factor 2 the
    limit must count the container (YARN compares the usage before it):
    the queue grows towards its maximum instead of stalling at 15 of 16."""
    state, s = cluster(two_queues(user_limit_factor=2.0, max_capacity=75))
    state.submit(1, "a", "u")
    state.add_tasks(1, [TaskAsk(100, v(1, 3), priority=0)])  # the AM's odd size
    state.add_tasks(1, [TaskAsk(i, v(1, 2)) for i in range(30)])
    s.allocate_on_node(0, 0.0)
    for node in range(1, 4):
        s.allocate_on_node(node, 0.0)
    used = state.queue_used["root.a"]
    assert used[1] > 16.0, used  # past the guarantee
    assert used[1] <= 24.0 + 1e-9 and used[0] <= 12.0 + 1e-9, used  # within the maximum (75%)


def test_user_limit_formula_hand_worked() -> None:
    """Cluster (40 cpu, 100 mem); queue a: 50%, guarantee (20, 50)."""
    tree = QueueTree.build([QueueSpec("root.a", capacity=50, minimum_user_limit_percent=25, user_limit_factor=2),
                            QueueSpec("root.b", capacity=50)], check_capacity=True)
    state = ClusterState(np.array([[4.0, 10.0]] * 10), np.zeros(10, dtype=int), tree)
    s = CapacityScheduler(state)
    submit(state, 1, "a", "u1", 1)
    req = v(1, 10)
    np.testing.assert_allclose(s.user_limit("root.a", req), v(20, 50))  # alone, queue empty: its guarantee
    submit(state, 2, "a", "u2", 1)
    np.testing.assert_allclose(s.user_limit("root.a", req), v(10, 25))  # two active users: half each
    state.queue_used["root.a"] = v(30, 60)  # above guarantee: current = used + required = (31, 70)
    np.testing.assert_allclose(s.user_limit("root.a", req), v(15.5, 35))
    state.queue_used["root.a"] = v(39, 90)  # (40, 100) / 2 = (20, 50), under the cap 2 x (20, 50)
    np.testing.assert_allclose(s.user_limit("root.a", req), v(20, 50))


def test_two_users_share_the_queue_by_the_user_limit() -> None:
    state, s = cluster(two_queues(user_limit_factor=2.0, minimum_user_limit_percent=50))
    submit(state, 1, "a", "u1", 40)
    submit(state, 2, "a", "u2", 40)
    heartbeats(state, s, 0.0)
    u1, u2 = state.user_used[("root.a", "u1")], state.user_used[("root.a", "u2")]
    # u1 is served first (FIFO) but may only take half of what the queue grows to.
    assert u1[1] <= state.queue_used["root.a"][1] / 2 + 2 + 1e-9
    assert u2[1] > 0


def test_children_most_under_served_first() -> None:
    """Order by used / guaranteed: a (70%) holding 10 sorts before b (30%)
    holding 5 (10/70 < 5/30); at 40 vs 10 it is b's turn (40/70 > 10/30)."""
    state, s = cluster([QueueSpec("root.a", capacity=70), QueueSpec("root.b", capacity=30)], nodes=1, node=(100.0, 100.0))
    submit(state, 1, "a", "u", 60, size=(1.0, 1.0))
    submit(state, 2, "b", "u", 60, size=(1.0, 1.0))
    for i in range(10):
        state.allocate(1, i, 0, 0.0, OFF_SWITCH)
    for i in range(5):
        state.allocate(2, i, 0, 0.0, OFF_SWITCH)
    assert s.ordered_children("root") == ["root.a", "root.b"]
    for i in range(10, 40):
        state.allocate(1, i, 0, 0.0, OFF_SWITCH)
    for i in range(5, 10):
        state.allocate(2, i, 0, 0.0, OFF_SWITCH)
    assert s.used_capacity("root.a") == pytest.approx(40 / 70) and s.used_capacity("root.b") == pytest.approx(10 / 30)
    assert s.ordered_children("root") == ["root.b", "root.a"]
    state.cancel_tasks(2, range(60))
    assert s.ordered_children("root") == ["root.a"]  # only queues with outstanding asks are walked


def test_a_heartbeat_serves_the_most_under_served_queue_first() -> None:
    state, s = cluster([QueueSpec("root.a", capacity=70, user_limit_factor=2), QueueSpec("root.b", capacity=30)],
                       nodes=1, node=(10.0, 10.0), assign_multiple=False)
    submit(state, 1, "a", "u", 20, size=(1.0, 1.0))
    submit(state, 2, "b", "u", 20, size=(1.0, 1.0))
    got = [s.allocate_on_node(0, float(t))[0].app_id for t in range(10)]
    # a: 0/7, b: 0/3 -> a (name); then b (0 < 1/7); then alternating by used/guarantee.
    used = {1: 0, 2: 0}
    want = []
    for _ in range(10):
        nxt = 1 if (used[1] / 7, "a") < (used[2] / 3, "b") else 2
        used[nxt] += 1
        want.append(nxt)
    assert got == want and want.count(1) == 7


def test_off_switch_assignments_per_heartbeat_are_limited() -> None:
    state, s = cluster(two_queues(), max_off_switch_per_heartbeat=1)
    submit(state, 1, "a", "u", 10)
    assert len(s.allocate_on_node(0, 0.0)) == 1  # YARN's offswitch-per-heartbeat-limit default
    state, s = cluster(two_queues(), max_off_switch_per_heartbeat=1)
    submit(state, 1, "a", "u", 10, preferred=(0,))
    assert len(s.allocate_on_node(0, 0.0)) == 4  # node-local ones are not limited: 4 fill the node
    state, s = cluster(two_queues(), max_assign=3)
    submit(state, 1, "a", "u", 10, size=(1.0, 1.0))
    assert len(s.allocate_on_node(0, 0.0)) == 3
    state, s = cluster(two_queues(), assign_multiple=False)
    submit(state, 1, "a", "u", 10)
    assert len(s.allocate_on_node(0, 0.0)) == 1


def test_global_scheduling_prefers_data_then_emptier_nodes_and_keeps_limits() -> None:
    state, s = cluster(two_queues(user_limit_factor=2.0, max_capacity=75))
    submit(state, 1, "a", "u", 2, preferred=(3,))
    submit(state, 2, "a", "u", 30)
    got = s.allocate_global(0.0)
    assert [c.node for c in got[:2]] == [3, 3] and all(c.locality == NODE_LOCAL for c in got[:2])
    assert got[2].node == 0 and got[3].node == 1  # then the emptiest nodes, lowest index on ties
    np.testing.assert_allclose(state.queue_used["root.a"], v(12, 24))


# ------------------------------------------------------------ properties

@st.composite
def scenarios(draw: st.DrawFn) -> dict:
    caps = draw(st.sampled_from([[50.0, 50.0], [20.0, 80.0], [20.0, 30.0, 50.0], [40.0, 40.0, 20.0]]))
    n_q = len(caps)
    specs = [QueueSpec(f"root.q{i}", capacity=c, max_capacity=draw(st.floats(c, 100.0)),
                       user_limit_factor=draw(st.sampled_from([1.0, 1.5, 3.0])),
                       minimum_user_limit_percent=draw(st.sampled_from([25.0, 100.0])))
             for i, c in enumerate(caps)]
    apps = draw(st.lists(st.tuples(st.integers(0, n_q - 1), st.sampled_from(["u1", "u2"]),
                                   st.sampled_from([(1.0, 1.0), (2.0, 3.0), (0.5, 4.0), (3.0, 1.0)]),
                                   st.integers(1, 12), st.lists(st.integers(0, 5), max_size=2)),
                         min_size=1, max_size=5))
    beats = draw(st.lists(st.integers(0, 5), min_size=1, max_size=25))
    return {"specs": specs, "apps": apps, "beats": beats, "calc": draw(st.sampled_from(["memory", "dominant"]))}


def check_limits(state: ClusterState, s: CapacityScheduler, largest: float = 0.0) -> None:
    """Nodes within capacity, queues within maximum capacity, and no user
    above user-limit-factor x its queue's guarantee (or one container of
    ``largest`` share, the least YARN lets a user have)."""
    assert np.all(state.free >= -1e-9), "a node is over its capacity"
    for q in state.tree:
        assert np.all(state.queue_used[q] <= state.tree[q].abs_max_capacity * state.total + 1e-9), q
    for (leaf, user), used in state.user_used.items():
        q = state.tree[leaf]
        ceiling = q.user_limit_factor * max(share(q.abs_capacity * state.total, state.total, s.calc), largest)
        assert share(used, state.total, s.calc) <= ceiling + 1e-9, (leaf, user)


@settings(max_examples=30, deadline=None)
@given(scenarios(), st.booleans())
def test_never_over_max_capacity_nor_node_capacity(sc: dict, global_mode: bool) -> None:
    tree = QueueTree.build(sc["specs"], check_capacity=True)
    state = ClusterState(np.array([[4.0, 8.0]] * 6), np.arange(6) // 3, tree)
    s = CapacityScheduler(state, CapacityConfig(locality=LocalityDelay(1, 1), resource_calculator=sc["calc"]))
    for i, (q, user, size, n, pref) in enumerate(sc["apps"]):
        submit(state, i, f"root.q{q}", user, n, size=size, preferred=tuple(pref))
    largest = max(share(v(*size), state.total, s.calc) for _, _, size, _, _ in sc["apps"])
    granted = 0
    for t, node in enumerate(sc["beats"]):
        if global_mode:
            granted += len(s.allocate_global(float(t)))
        else:
            granted += len(s.allocate_on_node(node, float(t)))
        check_limits(state, s, largest)
        if t % 5 == 4 and state.containers:  # some containers end
            state.release(min(state.containers))
    for t in range(3):  # every node beats: delays run out, something must be granted
        granted += sum(len(s.allocate_on_node(n, 100.0 + t)) for n in range(state.n_nodes))
        check_limits(state, s, largest)
    assert granted > 0  # the smallest maximum (20% of 24 cpu, 48 mem) holds every task size
    held = sum((c.resources for c in state.containers.values()), np.zeros(2))
    np.testing.assert_allclose(state.queue_used["root"], held, atol=1e-9)


# ------------------------------------------------------------ preemption

def test_ideal_assignment_hand_worked() -> None:
    """Cluster 100 x 100. Demands: a 80 (guarantee 50), b 10 (30), c 100 (20).
    b gets its demand; a and c split the other 90 as 50:20."""
    specs = [QueueSpec("root.a", capacity=50), QueueSpec("root.b", capacity=30), QueueSpec("root.c", capacity=20)]
    state, s = cluster(specs, nodes=1, node=(100.0, 100.0))
    submit(state, 1, "a", "u", 8, size=(10.0, 10.0))
    submit(state, 2, "b", "u", 1, size=(10.0, 10.0))
    submit(state, 3, "c", "u", 10, size=(10.0, 10.0))
    ideal = s.ideal_assignment()
    np.testing.assert_allclose(ideal["root.b"], v(10, 10))
    np.testing.assert_allclose(ideal["root.a"], v(90 * 50 / 70, 90 * 50 / 70))
    np.testing.assert_allclose(ideal["root.c"], v(90 * 20 / 70, 90 * 20 / 70))
    specs[2] = QueueSpec("root.c", capacity=20, max_capacity=25)
    state, s = cluster(specs, nodes=1, node=(100.0, 100.0))
    submit(state, 1, "a", "u", 8, size=(10.0, 10.0))
    submit(state, 3, "c", "u", 10, size=(10.0, 10.0))
    ideal = s.ideal_assignment()  # c capped at 25, a at its demand 80
    np.testing.assert_allclose(ideal["root.c"], v(25, 25))
    np.testing.assert_allclose(ideal["root.a"], v(75, 75))


def preempting(per_round: float = 0.25, factor: float = 1.0, wait: float = 5.0) -> tuple[ClusterState, CapacityScheduler]:
    state, s = cluster(two_queues(user_limit_factor=2.0),
                       preemption=CapacityPreemption(enabled=True, max_wait_before_kill=wait,
                                                     total_preemption_per_round=per_round,
                                                     natural_termination_factor=factor))
    submit(state, 1, "a", "u", 40)
    heartbeats(state, s, 0.0)
    np.testing.assert_allclose(state.queue_used["root.a"], state.total)  # a took the idle cluster
    submit(state, 2, "b", "v", 20)
    return state, s


def run_monitor(state: ClusterState, s: CapacityScheduler, until: float, step: float = 1.0) -> list[tuple[float, list[int]]]:
    """Every ``step`` s: the preemption monitor, the kills, then a round of heartbeats."""
    log = []
    t = 0.0
    while t <= until + 1e-9:
        taken = s.preemption(t)
        freed = sum((state.containers[c].resources for c in taken), np.zeros(2))
        assert np.all(freed <= s.config.preemption.total_preemption_per_round * state.total + 1e-9)
        for c in taken:
            state.release(c)
        heartbeats(state, s, t)
        check_limits(state, s)
        log.append((t, taken))
        t += step
    return log


def test_preemption_restores_a_starved_guarantee_within_the_wait() -> None:
    state, s = preempting(per_round=0.25, wait=5.0)
    log = run_monitor(state, s, until=7.0)
    assert all(not taken for t, taken in log if t < 5.0)  # nothing before the wait
    assert log[5][1]  # at t = 5 the wait is over
    np.testing.assert_allclose(state.queue_used["root.b"], v(8, 16))  # the guarantee, two rounds of 25%
    np.testing.assert_allclose(state.queue_used["root.a"], v(8, 16))
    assert not s.preemption(8.0)  # balanced: nothing more to take


def test_preemption_with_yarns_defaults_converges_in_bounded_rounds() -> None:
    state, s = preempting(per_round=0.1, factor=0.2, wait=15.0)
    log = run_monitor(state, s, until=30.0)
    assert all(not taken for t, taken in log if t < 15.0)
    np.testing.assert_allclose(state.queue_used["root.b"], v(8, 16))
    assert all(len(taken) <= 1 for _, taken in log)  # 10% of 16 cpu: one (1, 2) container a round


def test_victims_newest_first_and_am_last() -> None:
    state, s = cluster(two_queues(user_limit_factor=2.0),
                       preemption=CapacityPreemption(enabled=True, max_wait_before_kill=0.0,
                                                     total_preemption_per_round=1.0, natural_termination_factor=1.0))
    state.submit(1, "a", "u")
    state.add_tasks(1, [TaskAsk(0, v(1, 2), is_am=True), *(TaskAsk(i, v(1, 2)) for i in range(1, 16))])
    for t in range(4):
        s.allocate_on_node(t, float(t))
    assert len(state.containers) == 16
    submit(state, 2, "b", "v", 20)
    taken = s.preemption(10.0)
    cs = [state.containers[c] for c in taken]
    assert len(cs) == 8 and not any(c.is_am for c in cs)
    starts = [c.start for c in cs]
    assert starts == sorted(starts, reverse=True)  # newest first
    assert s.preemption(10.0) == []  # chosen ones are not chosen twice


def test_starvation_mark_is_forgotten_when_the_queue_stops_asking() -> None:
    state, s = preempting(per_round=1.0, wait=5.0)
    assert s.preemption(0.0) == [] and s.preemption(3.0) == []
    state.cancel_tasks(2, range(20))
    assert s.preemption(4.0) == []  # not starved any more: the mark goes
    state.add_tasks(2, [TaskAsk(100 + i, v(1, 2)) for i in range(8)])
    assert s.preemption(6.0) == []  # starved again since 6
    assert s.preemption(10.9) == []
    assert len(s.preemption(11.0)) == 8


def test_disabled_preemption_takes_nothing() -> None:
    state, s = cluster(two_queues(user_limit_factor=2.0))
    submit(state, 1, "a", "u", 40)
    heartbeats(state, s, 0.0)
    submit(state, 2, "b", "v", 20)
    assert s.preemption(1e6) == []
