"""YARN's shared cluster state (schedulers.archs.yarn.scheduler) and the
FIFO scheduler (schedulers.archs.yarn.fifo)."""
from __future__ import annotations

import numpy as np
import pytest
from schedlab.schedulers.archs.yarn.capacity import CapacityScheduler
from schedlab.schedulers.archs.yarn.fair import FairScheduler
from schedlab.schedulers.archs.yarn.fifo import FifoConfig, FifoScheduler
from schedlab.schedulers.archs.yarn.locality import NODE_LOCAL, OFF_SWITCH
from schedlab.schedulers.archs.yarn.queues import QueueError, QueueSpec, QueueTree
from schedlab.schedulers.archs.yarn.requests import TaskAsk
from schedlab.schedulers.archs.yarn.scheduler import ClusterState, YarnScheduler


def v(cpu: float, mem: float) -> np.ndarray:
    return np.array([cpu, mem], dtype=np.float64)


def fifo(nodes: int = 2, **config: object) -> tuple[ClusterState, FifoScheduler]:
    state = ClusterState(np.array([[4.0, 8.0]] * nodes), np.zeros(nodes, dtype=int), QueueTree.single())
    return state, FifoScheduler(state, FifoConfig(**config))  # type: ignore[arg-type]


def test_applications_strictly_in_submission_order() -> None:
    state, s = fifo()
    for app in (7, 3, 5):  # ids do not matter, submission does
        state.submit(app, "default", "u")
        state.add_tasks(app, [TaskAsk(i, v(1, 2)) for i in range(3)])
    got = [c.app_id for c in s.allocate_on_node(0, 0.0) + s.allocate_on_node(1, 1.0)]
    assert got == [7, 7, 7, 3, 3, 3, 5, 5]


def test_later_applications_backfill_what_the_head_cannot_use() -> None:
    state, s = fifo(nodes=1)
    state.submit(1, "default", "u")
    state.add_tasks(1, [TaskAsk(0, v(3, 2)), TaskAsk(1, v(3, 2))])
    state.submit(2, "default", "u")
    state.add_tasks(2, [TaskAsk(0, v(1, 1))])
    got = [(c.app_id, c.task_id) for c in s.allocate_on_node(0, 0.0)]
    assert got == [(1, 0), (2, 0)]  # app 1's second task does not fit; app 2's does


def test_fifo_global_and_protocol() -> None:
    state, s = fifo(nodes=3)
    state.submit(1, "default", "u")
    state.add_tasks(1, [TaskAsk(0, v(1, 1), preferred=(2,)), TaskAsk(1, v(1, 1))])
    got = s.allocate_global(0.0)
    assert [(c.node, c.locality) for c in got] == [(2, NODE_LOCAL), (0, OFF_SWITCH)]
    assert s.preemption(0.0) == []
    schedulers: list[YarnScheduler] = [s, FairScheduler(state)]
    cap_state = ClusterState(np.array([[1.0, 1.0]]), np.array([0]), QueueTree.single())
    schedulers.append(CapacityScheduler(cap_state))
    assert all(callable(x.allocate_on_node) and callable(x.allocate_global) and callable(x.preemption) for x in schedulers)


def test_accounting_along_the_queue_path() -> None:
    tree = QueueTree.build([QueueSpec("root.p", capacity=100), QueueSpec("root.p.x", capacity=100)], check_capacity=True)
    state = ClusterState(np.array([[4.0, 8.0]]), np.array([0]), tree)
    state.submit(1, "x", "alice")
    state.add_tasks(1, [TaskAsk(0, v(1, 2)), TaskAsk(1, v(2, 1))])
    for q in ("root", "root.p", "root.p.x"):
        np.testing.assert_array_equal(state.queue_pending[q], v(3, 3))
    c = state.allocate(1, 0, 0, 5.0, OFF_SWITCH)
    for q in ("root", "root.p", "root.p.x"):
        np.testing.assert_array_equal(state.queue_used[q], v(1, 2))
        np.testing.assert_array_equal(state.queue_pending[q], v(2, 1))
    np.testing.assert_array_equal(state.user_used[("root.p.x", "alice")], v(1, 2))
    np.testing.assert_array_equal(state.free[0], v(3, 6))
    assert state.release(c.container_id) is c and state.release(c.container_id) is None
    np.testing.assert_array_equal(state.queue_used["root"], v(0, 0))
    np.testing.assert_array_equal(state.free[0], v(4, 8))
    state.allocate(1, 1, 0, 6.0, OFF_SWITCH)
    gone = state.finish(1)
    assert [g.task_id for g in gone] == [1] and not state.containers and 1 not in state.apps
    np.testing.assert_array_equal(state.free[0], v(4, 8))


def test_state_refuses_bad_input() -> None:
    state, _ = fifo(nodes=1)
    state.submit(1, "default", "u")
    with pytest.raises(ValueError):
        state.submit(1, "default", "u")
    with pytest.raises(QueueError):
        state.submit(2, "nope", "u")
    state.add_tasks(1, [TaskAsk(0, v(5, 1))])
    with pytest.raises(ValueError, match="does not fit"):
        state.allocate(1, 0, 0, 0.0, OFF_SWITCH)
    with pytest.raises(ValueError):
        ClusterState(np.array([[1.0, 1.0]]), np.array([0, 1]), QueueTree.single())
