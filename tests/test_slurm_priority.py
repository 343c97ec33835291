"""SLURM's multifactor priority: the fair-share factor 2^(-U/S), usage
decaying with its half-life, and the weighted sum."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlab.schedulers.archs.slurm.priority import DAY, FairShare, Weights, priority


def test_an_account_that_used_exactly_its_share_gets_one_half() -> None:
    fs = FairShare({"physics": 1.0, "biology": 1.0})
    assert fs.factor("physics", 0.0) == 1.0  # nothing used anywhere yet
    fs.charge("physics", 100.0, 0.0)
    fs.charge("biology", 100.0, 0.0)
    # Each used half of all use and holds half of the shares: 2^-(0.5/0.5).
    assert fs.factor("physics", 0.0) == pytest.approx(0.5)
    fs.charge("physics", 200.0, 0.0)  # physics now 300 of 400: 2^-(0.75/0.5)
    assert fs.factor("physics", 0.0) == pytest.approx(2 ** -1.5)
    assert fs.factor("biology", 0.0) == pytest.approx(2 ** -0.5)


def test_usage_halves_every_half_life() -> None:
    fs = FairShare({"a": 3.0, "b": 1.0}, half_life=2 * DAY)
    fs.charge("a", 1000.0, 0.0)
    fs.decay(2 * DAY)
    assert fs.usage["a"] == pytest.approx(500.0)
    fs.charge("b", 500.0, 4 * DAY)  # a decays to 250 first
    assert fs.usage == pytest.approx({"a": 250.0, "b": 500.0})
    # a: 1/3 of use, 3/4 of shares; b: 2/3 of use, 1/4 of shares.
    assert fs.factor("a", 4 * DAY) == pytest.approx(2 ** (-(1 / 3) / 0.75))
    assert fs.factor("b", 4 * DAY) == pytest.approx(2 ** (-(2 / 3) / 0.25))


def test_the_weighted_sum() -> None:
    w = Weights(age=1000, fairshare=10_000, job_size=1000, partition=1000, qos=0, max_age=10.0)
    # Age 5 of 10: 500; fair-share 0.5: 5000; 2 of 8 nodes: 250; partition 1: 1000.
    assert priority(w, submitted=0.0, now=5.0, nodes=2, total_nodes=8, fairshare=0.5,
                    partition_factor=1.0) == pytest.approx(6750.0)
    assert priority(w, submitted=0.0, now=50.0, nodes=2, total_nodes=8, fairshare=0.5) == pytest.approx(
        1000 + 5000 + 250)  # age saturates at max_age
    small = Weights(job_size=1000, age=0, fairshare=0, partition=0, favor_small=True)
    assert priority(small, submitted=0.0, now=0.0, nodes=2, total_nodes=8, fairshare=0.0) == pytest.approx(750.0)


def test_bad_fair_share_configurations_are_refused() -> None:
    with pytest.raises(ValueError):
        FairShare({"a": 0.0})
    with pytest.raises(ValueError):
        FairShare({"a": 1.0}, half_life=0.0)


@given(st.dictionaries(st.sampled_from("abcd"), st.floats(0.0, 1e6), min_size=1),
       st.floats(0.0, 30 * DAY))
def test_the_factor_is_a_fraction_and_more_use_never_raises_it(use: dict, dt: float) -> None:
    fs = FairShare({a: 1.0 for a in "abcd"})
    for a, u in use.items():
        fs.charge(a, u, 0.0)
    before = {a: fs.factor(a, dt) for a in "abcd"}
    assert all(0.0 < f <= 1.0 for f in before.values())
    fs.charge("a", 1000.0, dt)
    assert fs.factor("a", dt) <= before["a"] + 1e-12
    assert not math.isnan(fs.factor("b", dt))
