"""Borg placement: scoring, feasibility, the fast path and its naive baseline."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.borg.placement import PlacementParams, feasible, place_job, place_job_naive, score

CAP = 10.0


def cell(*frees: tuple[float, float]) -> tuple[np.ndarray, np.ndarray]:
    free = np.array(frees, dtype=np.float64)
    return free, np.full_like(free, CAP)


def place(free, cap, req, n, policy="best_fit", seed=0, **kw):
    params = PlacementParams(policy=policy, sample=kw.pop("sample", None), spread=kw.pop("spread", False))
    return place_job(free, cap, np.asarray(req, dtype=np.float64), n, params, np.random.default_rng(seed), **kw)


def test_score_values() -> None:
    left = np.array([[5.0, 1.0], [0.0, 0.0]])
    cap = np.array([[10.0, 10.0], [0.0, 4.0]])  # zero capacity must not divide by zero
    np.testing.assert_allclose(score(left, cap, "best_fit"), [-0.3, 0.0])
    np.testing.assert_allclose(score(left, cap, "worst_fit"), [0.3, 0.0])
    np.testing.assert_allclose(score(left, cap, "hybrid"), [-0.4 - 0.3 / 4, 0.0])
    with pytest.raises(ValueError, match="unknown scoring policy"):
        score(left, cap, "first_fit")


def test_unknown_policy_raises_in_place_job() -> None:
    free, cap = cell((5.0, 5.0))
    with pytest.raises(ValueError):
        place(free, cap, [1.0, 1.0], 1, policy="random")


def test_feasible_mask() -> None:
    free, _ = cell((2.0, 2.0), (1.0, 5.0), (2.0 - 1e-10, 2.0), (3.0, 3.0))
    req = np.array([2.0, 2.0])
    assert feasible(free, req).tolist() == [True, False, True, True]
    assert feasible(free, req, np.array([True, True, True, False])).tolist() == [True, False, True, False]


@pytest.mark.parametrize(("policy", "expected"), [("best_fit", 0), ("worst_fit", 2), ("hybrid", 1)])
def test_policies_pick_hand_worked_machine(policy: str, expected: int) -> None:
    # leftovers / 10 after a [1, 1] task: m0 (0.4, 0.0), m1 (0.3, 0.3), m2 (0.9, 0.9); m3 does not fit
    free, cap = cell((5.0, 1.0), (4.0, 4.0), (10.0, 10.0), (0.5, 10.0))
    out = place(free, cap, [1.0, 1.0], 1, policy)
    assert out.tolist() == [expected]
    assert free[expected].tolist() == ([4.0, 0.0], [3.0, 3.0], [9.0, 9.0])[expected]


def test_best_fit_packs_worst_fit_spreads() -> None:
    free, cap = cell((8.0, 8.0), (3.0, 3.0), (1.0, 1.0))
    assert place(free, cap, [2.0, 2.0], 3, "best_fit").tolist() == [1, 0, 0]
    np.testing.assert_array_equal(free, [[4.0, 4.0], [1.0, 1.0], [1.0, 1.0]])
    free, cap = cell((8.0, 8.0), (6.0, 6.0), (1.0, 1.0))
    assert place(free, cap, [2.0, 2.0], 3, "worst_fit").tolist() == [0, 0, 1]


def test_unplaceable_tasks_are_minus_one() -> None:
    free, cap = cell((3.0, 3.0), (2.5, 9.0))
    assert place(free, cap, [2.0, 2.0], 4).tolist() == [0, 1, -1, -1]
    free, cap = cell((1.0, 1.0))
    assert place(free, cap, [2.0, 2.0], 2).tolist() == [-1, -1]
    assert place(free, cap, [0.5, 0.5], 0).tolist() == []
    np.testing.assert_array_equal(free, [[1.0, 1.0]])


def test_ineligible_machine_not_used() -> None:
    free, cap = cell((3.0, 3.0), (9.0, 9.0))
    out = place(free, cap, [1.0, 1.0], 5, eligible=np.array([False, True]))
    assert out.tolist() == [1] * 5
    assert free[0].tolist() == [3.0, 3.0]


def test_spread_caps_tasks_per_rack() -> None:
    free, cap = cell(*[(10.0, 10.0)] * 4)
    racks = np.array([0, 0, 1, 1])
    assert place(free.copy(), cap, [1.0, 1.0], 4, racks=racks).tolist() == [0, 0, 0, 0]
    out = place(free, cap, [1.0, 1.0], 4, spread=True, racks=racks)
    assert np.bincount(racks[out], minlength=2).tolist() == [2, 2]
    out = place(*cell(*[(10.0, 10.0)] * 4), [1.0, 1.0], 5, spread=True, racks=np.array([0, 1, 1, 1]))
    assert out.tolist() == [0, 0, 0, 1, 1]  # ceil(5 / 2) = 3 per rack
    free, cap = cell((10.0, 10.0), (10.0, 10.0), (10.0, 10.0), (1.0, 1.0))
    out = place(free, cap, [1.0, 1.0], 4, spread=True, racks=np.array([0, 0, 0, 1]))
    assert out.tolist() == [3, 0, 0, -1]  # rack 0 full at 2, rack 1 has room for one


# ---- properties ----------------------------------------------------------

@st.composite
def cells(draw):
    m = draw(st.integers(1, 8))
    cap = np.array([[draw(st.sampled_from([4.0, 8.0, 10.0])), draw(st.sampled_from([4.0, 16.0]))] for _ in range(m)])
    free = np.array([[draw(st.integers(0, int(c) * 2)) * 0.5 for c in row] for row in cap])
    req = np.array([draw(st.integers(0, 6)) * 0.5, draw(st.integers(0, 6)) * 0.5])
    n = draw(st.integers(0, 12))
    eligible = np.array(draw(st.lists(st.booleans(), min_size=m, max_size=m))) if draw(st.booleans()) else None
    racks = np.array(draw(st.lists(st.integers(0, 2), min_size=m, max_size=m)))
    policy = draw(st.sampled_from(["best_fit", "worst_fit", "hybrid"]))
    return free, cap, req, n, eligible, racks, policy


def check_common(free0, free, cap, req, out, eligible) -> None:
    placed = out[out >= 0]
    assert np.all(free >= -1e-9)
    ok0 = feasible(free0, req, eligible)
    assert np.all(ok0[placed]), "used a machine that was ineligible or infeasible"
    if np.any(out < 0):  # tasks fill a prefix; the rest are unplaced
        assert np.all(out[np.argmax(out < 0):] < 0)
    counts = np.bincount(placed, minlength=len(free))
    np.testing.assert_allclose(free, free0 - counts[:, None] * req, atol=1e-12)


@given(cells(), st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_place_job_matches_naive_when_exhaustive(c, seed) -> None:
    free0, cap, req, n, eligible, _, policy = c
    free, free_naive = free0.copy(), free0.copy()
    out = place_job(free, cap, req, n, PlacementParams(policy), np.random.default_rng(seed), eligible)
    naive = place_job_naive(free_naive, cap, req, n, policy, eligible)
    check_common(free0, free, cap, req, out, eligible)
    assert (out >= 0).sum() == (naive >= 0).sum()
    np.testing.assert_array_equal(out, naive)


@given(cells(), st.integers(1, 4), st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_sampled_placement_uses_one_sample(c, s, seed) -> None:
    free0, cap, req, n, eligible, _, policy = c
    free = free0.copy()
    out = place_job(free, cap, req, n, PlacementParams(policy, sample=s), np.random.default_rng(seed), eligible)
    check_common(free0, free, cap, req, out, eligible)
    used = set(out[out >= 0].tolist())
    assert len(used) <= s
    cand = np.flatnonzero(feasible(free0, req, eligible))
    if cand.size > s:  # the same draw the scheduler made from the same seed
        drawn = set(np.random.default_rng(seed).choice(cand, size=s, replace=False).tolist())
        assert used <= drawn
    else:
        assert (out >= 0).sum() == (place_job_naive(free0.copy(), cap, req, n, policy, eligible) >= 0).sum()


@given(cells(), st.sampled_from([None, 2, 5]), st.integers(0, 2**32 - 1))
@settings(max_examples=150, deadline=None)
def test_spread_caps_per_rack(c, s, seed) -> None:
    free0, cap, req, n, eligible, racks, policy = c
    free = free0.copy()
    out = place_job(free, cap, req, n, PlacementParams(policy, s, True), np.random.default_rng(seed), eligible, racks)
    check_common(free0, free, cap, req, out, eligible)
    per_rack = np.bincount(racks[out[out >= 0]], minlength=3)
    assert per_rack.max(initial=0) <= math.ceil(n / len(np.unique(racks)))
