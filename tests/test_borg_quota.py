"""Borg admission quota (pure, no Ray)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.borg.quota import QuotaBook


def v(cpu: float, mem: float) -> np.ndarray:
    return np.array([cpu, mem], dtype=np.float64)


def book() -> QuotaBook:
    return QuotaBook(limits={("alice", "production"): v(10.0, 20.0), ("alice", "batch"): v(4.0, 4.0)})


def test_admit_within_quota_charges_tasks_times_request() -> None:
    b = book()
    ok, reason = b.admit("alice", 250, v(1.0, 2.0), 3)
    assert ok and reason == ""
    np.testing.assert_array_equal(b.used[("alice", "production")], v(3.0, 6.0))


def test_exactly_at_quota_is_admitted() -> None:
    b = book()
    assert b.admit("alice", 200, v(2.0, 4.0), 5) == (True, "")
    np.testing.assert_array_equal(b.used[("alice", "production")], v(10.0, 20.0))
    ok, _ = b.admit("alice", 300, v(0.0, 0.0), 7)  # zero request always fits
    assert ok


@pytest.mark.parametrize(("request_", "resource"), [((11.0, 1.0), "cpu"), ((1.0, 21.0), "mem"), ((11.0, 21.0), "cpu")])
def test_over_quota_rejected_with_reason(request_: tuple[float, float], resource: str) -> None:
    b = book()
    ok, reason = b.admit("alice", 250, v(*request_), 1)
    assert not ok
    assert "alice" in reason and "production" in reason and resource in reason
    assert ("alice", "production") not in b.used or not b.used[("alice", "production")].any()


def test_rejection_does_not_charge() -> None:
    b = book()
    assert b.admit("alice", 250, v(6.0, 1.0), 1)[0]
    ok, reason = b.admit("alice", 250, v(5.0, 1.0), 1)
    assert not ok and "cpu" in reason and "batch" not in reason
    np.testing.assert_array_equal(b.used[("alice", "production")], v(6.0, 1.0))


def test_bands_share_quota_within_band_but_not_across() -> None:
    b = book()
    assert b.admit("alice", 200, v(8.0, 1.0), 1)[0]
    assert not b.admit("alice", 359, v(3.0, 1.0), 1)[0]  # same band: production
    assert b.admit("alice", 150, v(4.0, 4.0), 1)[0]  # batch has its own quota
    ok, reason = b.admit("alice", 100, v(0.5, 0.0), 1)
    assert not ok and "batch" in reason


def test_unlimited_bands_and_users() -> None:
    b = book()
    assert b.admit("alice", 50, v(1e6, 1e6), 100)[0]  # best-effort: no quota configured
    assert b.admit("alice", 400, v(1e6, 1e6), 100)[0]  # monitoring: no quota configured
    assert b.admit("bob", 250, v(1e6, 1e6), 100)[0]  # bob has no quota at all
    assert b.admit("alice", 250, v(10.0, 20.0), 1)[0]  # alice's production untouched by the above


def test_refund_restores_room() -> None:
    b = book()
    assert b.admit("alice", 250, v(2.0, 4.0), 5)[0]
    assert not b.admit("alice", 250, v(1.0, 1.0), 1)[0]
    b.refund("alice", 250, v(2.0, 4.0), 2)
    np.testing.assert_allclose(b.used[("alice", "production")], v(6.0, 12.0))
    assert b.admit("alice", 250, v(2.0, 4.0), 2)[0]
    assert not b.admit("alice", 250, v(0.5, 0.0), 1)[0]


def test_refund_never_goes_negative_and_unknown_is_noop() -> None:
    b = book()
    b.refund("carol", 250, v(1.0, 1.0), 3)  # nothing charged: no-op
    assert ("carol", "production") not in b.used
    assert b.admit("alice", 150, v(1.0, 1.0), 1)[0]
    b.refund("alice", 150, v(5.0, 5.0), 1)
    np.testing.assert_array_equal(b.used[("alice", "batch")], v(0.0, 0.0))


LIMIT = v(6.0, 6.0)
OPS = st.lists(st.tuples(st.booleans(), st.sampled_from([120, 180, 250]), st.integers(0, 4), st.integers(0, 4),
                         st.integers(0, 3)), max_size=30)


@given(OPS)
@settings(max_examples=150, deadline=None)
def test_quota_never_exceeded_and_admission_exact(ops: list[tuple[bool, int, int, int, int]]) -> None:
    b = QuotaBook(limits={("u", "batch"): LIMIT.copy()})
    jobs: list[tuple[int, np.ndarray, int]] = []  # admitted, refundable
    used_batch = v(0.0, 0.0)
    for is_admit, prio, cpu, mem, tasks in ops:
        req = v(cpu * 0.5, mem * 0.5)
        if is_admit or not jobs:
            fits = bool(np.all(used_batch + req * tasks <= LIMIT + 1e-9))
            ok, reason = b.admit("u", prio, req, tasks)
            if prio >= 200:
                assert ok and reason == ""  # production band has no limit here
            else:
                assert ok == fits
                assert (reason == "") == ok
                if ok:
                    used_batch = used_batch + req * tasks
                else:
                    assert "'u'" in reason and "batch" in reason
            if ok:
                jobs.append((prio, req, tasks))
        else:
            prio, req, tasks = jobs.pop(cpu % len(jobs))
            b.refund("u", prio, req, tasks)
            if prio < 200:
                used_batch = used_batch - req * tasks
        got = b.used.get(("u", "batch"), v(0.0, 0.0))
        np.testing.assert_allclose(got, used_batch, atol=1e-9)
        assert np.all(got <= LIMIT + 1e-9) and np.all(got >= 0)
