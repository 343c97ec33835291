"""HTCondor user priorities: RUP decay with the half-life, EUP, pie slices."""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from schedlab.schedulers.archs.htcondor.userprio import MIN_RUP, UserPrio

H = 1000.0


def test_new_user_has_the_floor_priority():
    p = UserPrio(half_life=H)
    assert p.real("alice") == 0.5 == MIN_RUP
    assert p.eup("alice") == 0.5


def test_rup_moves_halfway_to_usage_per_half_life():
    p = UserPrio(half_life=H)
    p.update(0.0, {"alice": 10})  # first update: no interval elapsed
    assert p.real("alice") == 0.5
    p.update(H, {"alice": 10})
    assert p.real("alice") == pytest.approx(0.5 * 0.5 + 0.5 * 10)  # 5.25
    p.update(3 * H, {"alice": 10})  # two more half-lives: a quarter of the distance left
    assert p.real("alice") == pytest.approx(10 - (10 - 5.25) * 0.25)


def test_rup_decays_back_to_the_floor_when_usage_stops():
    p = UserPrio(half_life=H, rup={"bob": 16.0})
    p.update(0.0, {})
    p.update(H, {})
    assert p.real("bob") == pytest.approx(8.0)
    p.update(2 * H, {"bob": 0})
    assert p.real("bob") == pytest.approx(4.0)
    p.update(100 * H, {})
    assert p.real("bob") == 0.5  # never below HTCondor's minimum


def test_time_going_backwards_decays_nothing():
    p = UserPrio(half_life=H, rup={"a": 4.0})
    p.update(10.0, {"a": 0})
    p.update(5.0, {"a": 0})
    assert p.real("a") == 4.0


@given(rup=st.floats(0.5, 100), u=st.floats(0.5, 100), t1=st.floats(0, 5000), t2=st.floats(0, 5000))
def test_two_steps_at_constant_usage_equal_one(rup, u, t1, t2):
    """b(t1) * b(t2) = b(t1 + t2): the decay is a true half-life, however often it is sampled."""
    one = UserPrio(half_life=H, rup={"a": rup})
    two = UserPrio(half_life=H, rup={"a": rup})
    one.update(0.0, {"a": u})
    two.update(0.0, {"a": u})
    one.update(t1 + t2, {"a": u})
    two.update(t1, {"a": u})
    two.update(t1 + t2, {"a": u})
    assert two.real("a") == pytest.approx(one.real("a"), rel=1e-9)
    lo, hi = min(rup, u), max(rup, u)
    assert lo - 1e-9 <= one.real("a") <= hi + 1e-9  # between where it was and the usage


def test_eup_is_rup_times_factor_and_usage_is_recorded():
    p = UserPrio(half_life=H, rup={"a": 3.0, "b": 3.0}, factors={"b": 10.0})
    assert p.eup("a") == 3.0
    assert p.eup("b") == 30.0
    assert p.order(["b", "a", "c"]) == ["c", "a", "b"]  # c is new: 0.5
    p.update(0.0, {"a": 2, "b": 0})
    assert p.in_use("a") == 2.0 and p.in_use("b") == 0.0


def test_shares_inversely_proportional_to_eup():
    p = UserPrio(half_life=H, rup={"a": 1.0, "b": 2.0, "c": 4.0})
    # weights 1, 1/2, 1/4 of 1.75: 70 slots -> 40, 20, 10
    assert p.shares(["a", "b", "c"], 70) == {"a": 40, "b": 20, "c": 10}
    assert p.shares(["b", "c"], 30) == {"b": 20, "c": 10}
    assert p.shares([], 30) == {}


def test_priority_factor_halves_a_share():
    p = UserPrio(half_life=H, factors={"b": 2.0})
    assert p.shares(["a", "b"], 9) == {"a": 6, "b": 3}


def test_leftover_slot_goes_to_the_larger_remainder_then_better_eup():
    p = UserPrio(half_life=H, rup={"a": 1.0, "b": 1.0, "c": 1.0})
    assert p.shares(["c", "b", "a"], 10) == {"a": 4, "b": 3, "c": 3}  # equal: by name
    q = UserPrio(half_life=H, rup={"a": 2.0, "b": 1.0})
    assert q.shares(["a", "b"], 1) == {"a": 0, "b": 1}


@given(rups=st.lists(st.floats(0.5, 50), min_size=1, max_size=8), total=st.integers(0, 500))
def test_quotas_sum_to_the_pie_and_stay_within_one_of_exact(rups, total):
    users = [f"u{i}" for i in range(len(rups))]
    p = UserPrio(half_life=H, rup=dict(zip(users, rups)))
    q = p.shares(users, total)
    assert sum(q.values()) == total
    inv = {u: 1 / r for u, r in zip(users, rups)}
    for u in users:
        exact = total * inv[u] / sum(inv.values())
        assert exact - 1 < q[u] < exact + 1
    for a in users:
        for b in users:
            if p.eup(a) < p.eup(b):
                assert q[a] >= q[b]


def test_bad_configuration_refused():
    with pytest.raises(ValueError):
        UserPrio(half_life=0)
    with pytest.raises(ValueError):
        UserPrio(factors={"a": 0.0})
    with pytest.raises(ValueError):
        UserPrio().shares(["a"], -1)
    with pytest.raises(ValueError):
        UserPrio().update(0.0, {"a": -1})
