"""YARN delay scheduling (schedulers.archs.yarn.locality) and the asks it
picks from (schedulers.archs.yarn.requests)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schedlab.schedulers.archs.yarn.fifo import FifoConfig, FifoScheduler
from schedlab.schedulers.archs.yarn.locality import (
    NODE_LOCAL,
    OFF_SWITCH,
    RACK_LOCAL,
    Level,
    LocalityCounters,
    LocalityDelay,
    may_place,
    placement_level,
)
from schedlab.schedulers.archs.yarn.queues import QueueTree
from schedlab.schedulers.archs.yarn.requests import ANY, Asks, ResourceRequest, TaskAsk
from schedlab.schedulers.archs.yarn.scheduler import ClusterState

RACKS = np.array([0, 0, 1, 1])  # nodes 0, 1 on rack 0; 2, 3 on rack 1


def v(cpu: float, mem: float) -> np.ndarray:
    return np.array([cpu, mem], dtype=np.float64)


# ------------------------------------------------------------ LocalityDelay

def test_allowed_level_thresholds() -> None:
    d = LocalityDelay(node=3, rack=2)
    assert [d.allowed_level(m) for m in range(7)] == [NODE_LOCAL] * 3 + [RACK_LOCAL] * 2 + [OFF_SWITCH] * 2
    assert LocalityDelay().allowed_level(0) == OFF_SWITCH


def test_from_fractions_and_caps() -> None:
    assert LocalityDelay.from_fractions(0.5, 0.25, 10) == LocalityDelay(5, 2)
    assert LocalityDelay.from_fractions(0.55, 0.3, 10) == LocalityDelay(5, 3)
    assert LocalityDelay.from_fractions(-1.0, -1.0, 10) == LocalityDelay(0, 0)  # Hadoop's default: no delay
    with pytest.raises(ValueError):
        LocalityDelay.from_fractions(1.5, 0.0, 10)
    assert LocalityDelay(40, 10).capped(25) == LocalityDelay(25, 0)
    assert LocalityDelay(4, 10).capped(8) == LocalityDelay(4, 4)
    for bad in (-1, 1.5, True):
        with pytest.raises(ValueError):
            LocalityDelay(node=bad)  # type: ignore[arg-type]


def test_placement_level_and_may_place() -> None:
    assert placement_level((0,), 0, RACKS) == NODE_LOCAL
    assert placement_level((0,), 1, RACKS) == RACK_LOCAL
    assert placement_level((0, 2), 3, RACKS) == RACK_LOCAL
    assert placement_level((0,), 3, RACKS) == OFF_SWITCH
    assert may_place((), True, 3, RACKS, NODE_LOCAL)  # no preference: anywhere at once
    assert not may_place((0,), True, 1, RACKS, NODE_LOCAL)
    assert may_place((0,), True, 1, RACKS, RACK_LOCAL)
    assert not may_place((0,), True, 3, RACKS, RACK_LOCAL)
    assert may_place((0,), True, 3, RACKS, OFF_SWITCH)
    assert not may_place((0,), False, 1, RACKS, OFF_SWITCH)  # pinned forever
    assert may_place((0,), False, 0, RACKS, NODE_LOCAL)


def test_counters_count_and_reset() -> None:
    c = LocalityCounters()
    assert c.miss(1, 5) == 1 and c.miss(1, 5) == 2 and c.miss(1, 6) == 1
    c.allocated(1, 5, OFF_SWITCH)
    assert c.missed(1, 5) == 0 and c.missed(1, 6) == 1
    cs = LocalityCounters(reset_on_off_switch=False)  # CapacityScheduler's rule
    cs.miss(1, 5)
    cs.allocated(1, 5, OFF_SWITCH)
    assert cs.missed(1, 5) == 1
    cs.allocated(1, 5, RACK_LOCAL)
    assert cs.missed(1, 5) == 0
    cs.miss(2, 1)
    cs.forget(2)
    assert cs.missed(2, 1) == 0


# ------------------------------------------------------------ relaxation on heartbeats

def one_app(delay: LocalityDelay, tasks: list[TaskAsk]) -> tuple[ClusterState, FifoScheduler]:
    state = ClusterState(np.array([[4.0, 8.0]] * 4), RACKS, QueueTree.single())
    state.submit(1, "default", "u")
    state.add_tasks(1, tasks)
    return state, FifoScheduler(state, FifoConfig(locality=delay))


def test_relaxation_order_node_then_rack_then_off_switch() -> None:
    """Delay node=2, rack=2: a task preferring node 0 declines off-node
    heartbeats until 2 are missed (then rack-local is allowed) and off-rack
    ones until 4 are missed."""
    _, s = one_app(LocalityDelay(2, 2), [TaskAsk(0, v(1, 1), preferred=(0,))])
    got = [len(s.allocate_on_node(3, float(t))) for t in range(4)]  # off-rack node
    assert got == [0, 0, 0, 0] and s.counters.missed(1, 1) == 4
    [c] = s.allocate_on_node(3, 4.0)
    assert c.locality == OFF_SWITCH and c.node == 3

    _, s = one_app(LocalityDelay(2, 2), [TaskAsk(0, v(1, 1), preferred=(0,))])
    assert s.allocate_on_node(1, 0.0) == [] and s.allocate_on_node(1, 1.0) == []  # same rack, waiting
    [c] = s.allocate_on_node(1, 2.0)
    assert c.locality == RACK_LOCAL

    _, s = one_app(LocalityDelay(2, 2), [TaskAsk(0, v(1, 1), preferred=(0,))])
    [c] = s.allocate_on_node(0, 0.0)
    assert c.locality == NODE_LOCAL


def test_rack_local_not_allowed_off_rack_after_node_delay_only() -> None:
    _, s = one_app(LocalityDelay(1, 3), [TaskAsk(0, v(1, 1), preferred=(0,))])
    for t in range(3):
        assert s.allocate_on_node(2, float(t)) == []  # rack-local now allowed, but node 2 is off-rack
    assert s.counters.missed(1, 1) == 3
    [c] = s.allocate_on_node(1, 3.0)  # a rack-0 node comes by
    assert c.locality == RACK_LOCAL


def test_counter_resets_on_allocation_so_the_next_task_waits_again() -> None:
    tasks = [TaskAsk(i, v(1, 1), preferred=(0,)) for i in range(2)]
    state, s = one_app(LocalityDelay(2, 0), tasks)
    assert s.allocate_on_node(1, 0.0) == [] and s.allocate_on_node(1, 1.0) == []
    # The third offer grants one task rack-local and resets the counter, so
    # the second task, re-offered the node in the same heartbeat, waits again.
    [c] = s.allocate_on_node(1, 2.0)
    assert c.locality == RACK_LOCAL and s.counters.missed(1, 1) == 1
    assert s.allocate_on_node(1, 3.0) == []
    [c] = s.allocate_on_node(1, 4.0)
    assert c.locality == RACK_LOCAL and c.task_id == 1 and not len(state.apps[1].asks)


def test_one_missed_opportunity_per_heartbeat() -> None:
    tasks = [TaskAsk(0, v(1, 1)), TaskAsk(1, v(1, 1), preferred=(0,))]
    _, s = one_app(LocalityDelay(5, 0), tasks)
    s.allocate_on_node(2, 0.0)  # grants task 0, then declines task 1 once
    assert s.counters.missed(1, 1) == 1


def test_no_preference_is_placed_at_once_and_pinned_never_relaxes() -> None:
    _, s = one_app(LocalityDelay(50, 50), [TaskAsk(0, v(1, 1)), TaskAsk(1, v(1, 1), preferred=(0,), relax_locality=False)])
    [c] = s.allocate_on_node(3, 0.0)
    assert c.task_id == 0 and c.locality == OFF_SWITCH
    _, s = one_app(LocalityDelay(0, 0), [TaskAsk(1, v(1, 1), preferred=(0,), relax_locality=False)])
    for t in range(5):
        assert s.allocate_on_node(1, float(t)) == [] and s.allocate_on_node(3, float(t)) == []
    assert s.counters.missed(1, 1) == 0  # nothing to decline for: it can never go there
    [c] = s.allocate_on_node(0, 9.0)
    assert c.locality == NODE_LOCAL


# ------------------------------------------------------------ asks: YARN's view and picking

def test_counts_view_decrements_at_node_rack_and_any() -> None:
    a = Asks(RACKS)
    a.add(TaskAsk(0, v(1, 2), priority=1, preferred=(0, 2)))
    a.add(TaskAsk(1, v(1, 2), priority=1, preferred=(0,)))
    a.add(TaskAsk(2, v(1, 2), priority=3))
    assert a.counts() == {(1, "host0"): 2, (1, "host2"): 1, (1, "/rack0"): 2, (1, "/rack1"): 1, (1, ANY): 2, (3, ANY): 1}
    np.testing.assert_array_equal(a.pending, v(3, 6))
    a.remove(1)  # allocated on node 0
    assert a.counts() == {(1, "host0"): 1, (1, "host2"): 1, (1, "/rack0"): 1, (1, "/rack1"): 1, (1, ANY): 1, (3, ANY): 1}
    np.testing.assert_array_equal(a.pending, v(2, 4))
    assert a.resource_requests()[:3] == [
        ResourceRequest(1, "host0", (1.0, 2.0), 1), ResourceRequest(1, "host2", (1.0, 2.0), 1),
        ResourceRequest(1, "/rack0", (1.0, 2.0), 1),
    ]
    assert a.resource_requests()[-1] == ResourceRequest(3, ANY, (1.0, 2.0), 1)


def test_asks_reject_bad_tasks() -> None:
    a = Asks(RACKS)
    a.add(TaskAsk(0, v(1, 1)))
    for bad in [TaskAsk(0, v(1, 1)), TaskAsk(1, v(-1, 1)), TaskAsk(2, v(1, 1), preferred=(9,)),
                TaskAsk(3, v(1, 1), relax_locality=False), TaskAsk(4, np.array([1.0]))]:
        with pytest.raises(ValueError):
            a.add(bad)
    assert len(a) == 1


def test_pick_order_priority_then_locality_then_age() -> None:
    a = Asks(RACKS)
    a.add(TaskAsk(0, v(1, 1), priority=2, preferred=(0,)))
    a.add(TaskAsk(1, v(1, 1), priority=1, preferred=(3,)))  # higher priority, off-switch on node 0
    a.add(TaskAsk(2, v(1, 1), priority=1, preferred=(1,)))  # rack-local on node 0
    a.add(TaskAsk(3, v(1, 1), priority=1, preferred=(1,)))
    everything = a.pick(0, lambda p: OFF_SWITCH, lambda cap: True)
    assert everything.task is not None and everything.task.task_id == 2 and everything.level == RACK_LOCAL
    # Priority 1 may not relax yet: it declines, and priority 2 does not jump ahead.
    waiting = a.pick(0, lambda p: NODE_LOCAL if p == 1 else OFF_SWITCH, lambda cap: True)
    assert waiting.task is None and waiting.declined == 1
    # Nothing at priority 1 fits: it is skipped (not declined) and priority 2 goes.
    small = a.pick(0, lambda p: NODE_LOCAL, lambda cap: False)
    assert small.task is None and small.declined is None


def reference_pick(tasks: list[TaskAsk], node: int, allowed: dict[int, Level], fit: set[int]) -> tuple[int | None, int | None]:
    """Brute force of the documented rule: per priority, the placeable
    fitting tasks by (level, age); else a decline if some relaxable task
    fits at a level not yet allowed; else the next priority."""
    for p in sorted({t.priority for t in tasks}):
        mine = [t for t in tasks if t.priority == p and t.task_id in fit]
        ok = [t for t in mine if may_place(t.preferred, t.relax_locality, node, RACKS, allowed[p])]
        if ok:
            best = min(ok, key=lambda t: (placement_level(t.preferred, node, RACKS), t.seq))
            return best.task_id, None
        if any(t.relax_locality and t.preferred for t in mine):
            return None, p
    return None, None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.lists(st.integers(0, 3), max_size=2), st.booleans(), st.booleans()),
                min_size=1, max_size=8),
       st.integers(0, 3), st.lists(st.sampled_from(list(Level)), min_size=3, max_size=3))
def test_pick_matches_reference(specs: list, node: int, levels: list[Level]) -> None:
    a = Asks(RACKS)
    tasks = []
    for i, (prio, pref, relax, fits_) in enumerate(specs):
        t = TaskAsk(i, v(1, 1 + i if fits_ else 100 + i), priority=prio, preferred=tuple(pref), relax_locality=relax or not pref)
        a.add(t)
        tasks.append(t)
    fit = {t.task_id for t in tasks if t.capability[1] < 100}
    allowed = dict(enumerate(levels))
    got = a.pick(node, lambda p: allowed[p], lambda cap: cap[1] < 100)
    want = reference_pick(tasks, node, allowed, fit)
    assert ((got.task.task_id if got.task else None), got.declined) == want
    if got.task is not None:
        assert got.level == placement_level(got.task.preferred, node, RACKS)
