"""Open-loop web workload: Poisson and on/off session arrivals, skewed
session lengths, think times, demands; deterministic per seed."""
from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.schedulers.archs.webfarm.workload import Arrivals, Dist, Request, Workload, session_lengths

WL = Workload(Arrivals("poisson", rate=2.0), Dist("lognormal", 4.0, 1.0), Dist("exp", 0.5), Dist("pareto", 0.1, 2.5))


def test_the_same_seed_gives_the_same_requests_and_another_seed_others() -> None:
    a = WL.generate(200.0, np.random.default_rng(7))
    assert a == WL.generate(200.0, np.random.default_rng(7))
    assert a != WL.generate(200.0, np.random.default_rng(8))
    assert all(isinstance(r, Request) for r in a)


def test_requests_are_sorted_and_sessions_are_consistent() -> None:
    reqs = WL.generate(200.0, np.random.default_rng(1))
    assert reqs == sorted(reqs) and [r.time for r in reqs] == sorted(r.time for r in reqs)
    assert all(0 <= r.time < 200.0 and r.demand > 0 for r in reqs)
    by_session: dict[int, list[Request]] = {}
    for r in reqs:
        by_session.setdefault(r.session, []).append(r)
    assert sorted(by_session) == list(range(len(by_session)))  # ids in start order, none skipped
    for rs in by_session.values():
        assert [r.index for r in rs] == list(range(len(rs)))  # 0, 1, 2...: in time order
    starts = [rs[0].time for _, rs in sorted(by_session.items())]
    assert starts == sorted(starts)


def test_think_time_separates_a_sessions_requests() -> None:
    wl = Workload(Arrivals("poisson", 1.0), Dist("const", 5.0), Dist("const", 0.75), Dist("const", 0.2))
    reqs = wl.generate(100.0, np.random.default_rng(0))
    by_session: dict[int, list[float]] = {}
    for r in reqs:
        by_session.setdefault(r.session, []).append(r.time)
    full = [ts for ts in by_session.values() if ts[0] < 96.0]  # started early enough to send all 5
    assert full and all(len(ts) == 5 for ts in full)
    assert all(np.allclose(np.diff(ts), 0.75) for ts in by_session.values())
    assert {r.demand for r in reqs} == {0.2}


def test_poisson_arrivals_have_their_rate_and_no_burstiness() -> None:
    times = np.array(Arrivals("poisson", rate=5.0).times(2000.0, np.random.default_rng(2)))
    assert abs(times.size - 10_000) < 5 * math.sqrt(10_000)
    counts = np.bincount(times.astype(int))  # arrivals per second
    assert 0.8 < counts.var() / counts.mean() < 1.2  # Poisson: dispersion index 1


def test_on_off_arrivals_are_bursty_with_the_right_mean_rate() -> None:
    arr = Arrivals("onoff", rate=9.0, off_rate=1.0, mean_on=5.0, mean_off=15.0)
    assert arr.mean_rate() == 3.0
    times = np.array(arr.times(4000.0, np.random.default_rng(3)))
    assert times.size == pytest.approx(12_000, rel=0.15)
    assert (np.diff(times) > 0).all()
    counts = np.bincount(times.astype(int))
    assert counts.var() / counts.mean() > 3  # bursts: far more variable than Poisson


def test_on_off_with_silent_off_periods_has_gaps() -> None:
    times = np.array(Arrivals("onoff", rate=20.0, mean_on=1.0, mean_off=10.0).times(500.0, np.random.default_rng(4)))
    assert np.diff(times).max() > 10.0  # a 20/s stream never pauses 10 s while on


@pytest.mark.parametrize(("dist", "tol"), [
    (Dist("const", 2.0), 0.0), (Dist("exp", 2.0), 0.02), (Dist("lognormal", 2.0, 0.8), 0.03),
    (Dist("pareto", 2.0, 3.0), 0.03),
])
def test_distributions_have_their_mean(dist: Dist, tol: float) -> None:
    x = dist.sample(np.random.default_rng(5), 200_000)
    assert (x > 0).all() and x.mean() == pytest.approx(2.0, rel=tol, abs=1e-12)


def test_pareto_is_skewed_and_bounded_below() -> None:
    x = Dist("pareto", 3.0, 1.5).sample(np.random.default_rng(6), 100_000)
    assert x.min() >= 1.0 - 1e-12  # minimum = mean * (shape - 1) / shape
    assert x.max() > 50 * np.median(x)  # a heavy tail


def test_session_lengths_are_positive_integers_and_can_be_capped() -> None:
    rng = np.random.default_rng(9)
    lengths = session_lengths(Dist("lognormal", 5.0, 1.5), 50_000, rng)
    assert lengths.dtype == np.int64 and lengths.min() >= 1
    assert lengths.max() > 20 * np.median(lengths)  # skewed: a few very long sessions
    capped = session_lengths(Dist("pareto", 5.0, 1.2), 50_000, rng, cap=40)
    assert capped.min() >= 1 and capped.max() == 40
    assert (session_lengths(Dist("const", 0.3), 5, rng) == 1).all()  # rounded up, never 0


def test_a_degenerate_length_distribution_is_refused() -> None:
    class Zero:
        def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
            return np.zeros(n)

    with pytest.raises(ValueError, match="session lengths must be positive"):
        session_lengths(Zero(), 3, np.random.default_rng(0))  # type: ignore[arg-type]


@pytest.mark.parametrize(("make", "msg"), [
    (lambda: Dist("const", 0.0), "mean must be positive"),
    (lambda: Dist("exp", -1.0), "mean must be positive"),
    (lambda: Dist("zipf", 1.0), "distribution kind must be one of"),
    (lambda: Dist("pareto", 1.0, 1.0), "pareto shape .* must be > 1"),
    (lambda: Dist("lognormal", 1.0, 0.0), "lognormal shape .* must be positive"),
    (lambda: Arrivals("poisson", rate=0.0), "arrival rate must be positive"),
    (lambda: Arrivals("onoff", rate=1.0, mean_off=0.0), "on/off mean durations must be positive"),
    (lambda: Arrivals("onoff", rate=1.0, off_rate=-1.0), "off-period rate must be >= 0"),
    (lambda: Arrivals("hawkes"), "arrivals kind must be"),
    (lambda: Workload(max_length=0), "max session length must be >= 1"),
    (lambda: Workload().generate(0.0, np.random.default_rng(0)), "horizon must be positive"),
])
def test_bad_workload_specs_are_refused(make: object, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        make()  # type: ignore[operator]


def test_mean_request_rate_matches_what_is_generated() -> None:
    wl = Workload(Arrivals("poisson", 4.0), Dist("const", 3.0), Dist("exp", 0.1), Dist("exp", 1.0))
    assert wl.mean_request_rate() == 12.0
    n = len(wl.generate(1000.0, np.random.default_rng(11)))
    assert n == pytest.approx(12_000, rel=0.05)
