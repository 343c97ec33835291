"""The Kubernetes scheduling queue (pure): ordering, backoff, the
unschedulable pool, cluster events, nominated pods."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.kubernetes.objects import Pod
from schedlab.schedulers.archs.kubernetes.queue import QueueConfig, SchedulingQueue, backoff_duration


def pod(task: int, priority: int = 0, created: float = 0.0, job: int = 1) -> Pod:
    return Pod(key=(job, task), requests=(1.0, 1.0), priority=priority, created=created)


def drain(q: SchedulingQueue, now: float = 0.0) -> list[tuple[int, int]]:
    out = []
    while (p := q.pop(now)) is not None:
        out.append(p.key)
    return out


# --- ordering ---------------------------------------------------------------

def test_pop_highest_priority_then_earliest_created_then_key() -> None:
    q = SchedulingQueue()
    q.add(pod(1, priority=0, created=1.0), now=5.0)
    q.add(pod(2, priority=10, created=3.0), now=5.0)
    q.add(pod(3, priority=10, created=2.0), now=5.0)
    q.add(pod(4, priority=0, created=1.0, job=0), now=5.0)  # same created as (1, 1): key breaks it
    q.add(pod(5, priority=-5, created=0.0), now=5.0)
    assert drain(q) == [(1, 3), (1, 2), (0, 4), (1, 1), (1, 5)]
    assert q.pop(6.0) is None


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-3, 3), st.integers(0, 5)), min_size=1, max_size=30))
def test_pop_order_is_sorted_by_priority_created_key(specs) -> None:
    q = SchedulingQueue()
    pods = [pod(i, priority=pr, created=float(c)) for i, (pr, c) in enumerate(specs)]
    for p in reversed(pods):  # insertion order must not matter
        q.add(p, now=0.0)
    expected = [p.key for p in sorted(pods, key=lambda p: (-p.priority, p.created, p.key))]
    assert drain(q) == expected


def test_add_twice_is_an_error() -> None:
    q = SchedulingQueue()
    q.add(pod(1), 0.0)
    with pytest.raises(ValueError, match="already"):
        q.add(pod(1), 1.0)


# --- backoff ----------------------------------------------------------------

def test_backoff_duration_doubles_to_the_cap() -> None:
    assert [backoff_duration(n) for n in range(1, 8)] == [1, 2, 4, 8, 10, 10, 10]
    cfg = QueueConfig(initial_backoff_s=0.5, max_backoff_s=3.0)
    assert [backoff_duration(n, cfg) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]


def test_backoff_queue_releases_after_1_2_4_8_10_10_seconds() -> None:
    q = SchedulingQueue()
    q.add(pod(1), 0.0)
    now = 0.0
    waits = []
    for _ in range(6):
        p = q.pop(now)
        assert p is not None
        assert q.backoff(p, now) == "backoff"
        expiry = q.info(p.key).backoff_expiry
        assert q.next_flush_at() == expiry
        assert q.flush(expiry - 1e-6) == 0 and q.pop(expiry - 1e-6) is None  # not yet
        assert q.flush(expiry) == 1
        waits.append(expiry - now)
        now = expiry
    assert waits == [1, 2, 4, 8, 10, 10]
    assert q.info((1, 1)).attempts == 6


def test_backoff_queue_releases_in_expiry_order() -> None:
    q = SchedulingQueue()
    q.add(pod(1, priority=5), 0.0)
    q.add(pod(2, priority=1), 0.0)
    a = q.pop(0.0)
    assert q.backoff(a, 0.0) == "backoff"   # attempt 1: expires at 1
    b = q.pop(0.0)
    q.backoff(b, 0.0)                       # expires at 1 too
    q.add(pod(3, priority=9), 0.5)
    assert q.lengths().backoff == 2 and q.lengths().active == 1
    assert q.flush(1.0) == 2
    assert drain(q, 1.0) == [(1, 3), (1, 1), (1, 2)]


def test_failing_a_pod_not_in_flight_is_an_error_and_deleted_in_flight_is_dropped() -> None:
    q = SchedulingQueue()
    q.add(pod(1), 0.0)
    with pytest.raises(ValueError, match="not in flight"):
        q.backoff(pod(1), 0.0)
    p = q.pop(0.0)
    assert q.delete(p.key)
    assert q.unschedulable(p, 1.0, ["NodeResourcesFit"]) is None
    assert len(q) == 0 and not q.delete(p.key)


# --- the unschedulable pool ---------------------------------------------------

def test_unschedulable_waits_for_an_event() -> None:
    q = SchedulingQueue()
    q.add(pod(1), 0.0)
    p = q.pop(0.0)
    assert q.unschedulable(p, 0.0, ["NodeResourcesFit"]) == "unschedulable"
    assert q.info(p.key).reasons == frozenset({"NodeResourcesFit"})
    assert q.flush(100.0) == 0 and q.pop(100.0) is None  # no backoff release for parked pods
    assert q.on_event("AssignedPodDelete", 100.0) == 1
    assert q.info(p.key).state == "active"
    assert q.pop(100.0) == p


def test_event_during_backoff_moves_to_backoff_queue() -> None:
    q = SchedulingQueue()
    q.add(pod(1), 0.0)
    p = q.pop(0.0)
    q.unschedulable(p, 10.0, ["NodeAffinity"])
    assert q.on_event("NodeLabelChange", 10.5) == 1  # backoff (1 s) runs to 11
    assert q.lengths().backoff == 1 and q.pop(10.5) is None
    assert q.flush(11.0) == 1
    assert q.pop(11.0) == p


def test_unschedulable_timeout_after_five_minutes() -> None:
    q = SchedulingQueue()
    q.add(pod(1), 0.0)
    p = q.pop(0.0)
    q.unschedulable(p, 20.0)
    assert q.next_flush_at() == 320.0
    assert q.flush(319.9) == 0 and q.lengths().unschedulable == 1
    assert q.flush(320.0) == 1
    assert q.lengths().active == 1 and q.pop(320.0) == p


def test_event_while_in_flight_sends_the_failure_to_backoff() -> None:
    """A node freed while the pod was being scheduled may be exactly what it
    needed: it is not parked waiting for an event that already happened."""
    q = SchedulingQueue()
    q.add(pod(1), 0.0)
    q.add(pod(2), 0.0)
    p = q.pop(0.0)
    q.on_event("NodeAdd", 0.1)
    assert q.unschedulable(p, 0.2, ["NodeResourcesFit"]) == "backoff"
    p2 = q.pop(0.3)  # a later cycle: the event is in its past
    assert q.unschedulable(p2, 0.4) == "unschedulable"


def test_hint_moves_only_pods_the_event_may_help() -> None:
    q = SchedulingQueue()
    for i in (1, 2):
        q.add(pod(i), 0.0)
    q.unschedulable(q.pop(0.0), 0.0, ["NodeResourcesFit"])
    q.unschedulable(q.pop(0.0), 0.0, ["TaintToleration"])
    moved = q.on_event("NodeTaintChange", 5.0, hint=lambda p, reasons: "TaintToleration" in reasons)
    assert moved == 1
    assert q.info((1, 2)).state == "active" and q.info((1, 1)).state == "unschedulable"


def test_unknown_event_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown cluster event"):
        SchedulingQueue().on_event("NodeExplode", 0.0)


def test_lengths_count_every_sub_queue() -> None:
    q = SchedulingQueue()
    for i in range(5):
        q.add(pod(i), 0.0)
    q.unschedulable(q.pop(0.0), 0.0)
    q.backoff(q.pop(0.0), 0.0)
    q.pop(0.0)
    ln = q.lengths()
    assert (ln.active, ln.backoff, ln.unschedulable, ln.in_flight) == (2, 1, 1, 1)
    assert len(q) == 5


# --- nominated pods -----------------------------------------------------------

def test_nominated_pods_per_node() -> None:
    q = SchedulingQueue()
    low, high = pod(1, priority=1), pod(2, priority=9)
    q.add(low, 0.0)
    q.add(high, 0.0)
    q.nominate(low.key, 3)
    q.nominate(high.key, 3)
    assert q.nominated_on(3) == (high, low)
    assert q.nominated_node(low.key) == 3 and q.info(low.key).nominated_node == 3
    q.nominate(low.key, 4)  # renominated elsewhere
    assert q.nominated_on(3) == (high,) and q.nominated_on(4) == (low,)
    q.nominate(high.key, None)
    assert q.nominated_on(3) == ()
    assert q.delete(low.key)
    assert q.nominated_on(4) == () and q.nominated_node(low.key) is None


def test_nomination_survives_the_failed_cycle_that_made_it() -> None:
    """Preemption nominates the pod in flight; it then waits, unschedulable,
    for its victims to go, and the nomination is what keeps the room."""
    q = SchedulingQueue()
    q.add(pod(1, priority=5), 0.0)
    p = q.pop(0.0)
    q.nominate(p.key, 7)
    q.unschedulable(p, 0.0, ["NodeResourcesFit"])
    assert q.nominated_on(7) == (p,)
    q.on_event("AssignedPodDelete", 2.0)
    assert q.pop(2.0) == p and q.nominated_node(p.key) == 7


def test_nominating_an_unknown_pod_is_an_error() -> None:
    with pytest.raises(KeyError):
        SchedulingQueue().nominate((9, 9), 0)


def test_config_is_validated() -> None:
    with pytest.raises(ValueError):
        QueueConfig(initial_backoff_s=20.0, max_backoff_s=10.0)
    with pytest.raises(ValueError):
        QueueConfig(max_unschedulable_s=0.0)
