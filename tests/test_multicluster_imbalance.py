"""Multi-cluster metrics on hand inputs: per-site submitted work per unit
capacity, max/min and max/mean imbalance, sliding windows, goodput,
completed jobs, waits per site and transfers."""
from __future__ import annotations

import math

import pytest

from schedlab.schedulers.federation.imbalance import (Accepted, Imbalance, imbalance, loads, outcome, overall,
                                                              wait_per_site, window_stats, windows)
from schedlab.schedulers.federation.site import Job, Run

CAPS = [2.0, 4.0, 10.0]
RECS = [Accepted(0.0, 0, 4.0), Accepted(1.0, 1, 4.0), Accepted(2.0, 2, 10.0),  # window [0, 10): 2, 1, 1
        Accepted(10.0, 0, 2.0), Accepted(15.0, 2, 30.0)]                        # window [10, 20): 1, 0, 3


def test_loads_are_work_per_capacity_in_half_open_windows() -> None:
    assert loads(RECS, CAPS) == [3.0, 1.0, 4.0]
    assert loads(RECS, CAPS, 0.0, 10.0) == [2.0, 1.0, 1.0]
    assert loads(RECS, CAPS, 10.0, 20.0) == [1.0, 0.0, 3.0]  # the record at 10 is in this window only
    with pytest.raises(ValueError, match="capacities must be positive"):
        loads(RECS, [2.0, 0.0, 1.0])


def test_imbalance_max_over_min_and_over_mean() -> None:
    assert imbalance([3.0, 1.0, 4.0]) == Imbalance(4.0, 4.0 / (8 / 3))
    assert overall(RECS, CAPS) == Imbalance(4.0, 1.5)
    assert imbalance([2.0, 2.0]) == Imbalance(1.0, 1.0)
    assert imbalance([1.0, 0.0, 3.0]) == Imbalance(math.inf, 2.25)  # one site got nothing
    nothing = imbalance([0.0, 0.0])
    assert math.isnan(nothing.max_min) and math.isnan(nothing.max_mean)
    assert imbalance([0.0, 0.0, 6.0]).max_mean == 3.0  # all on one of n: n


def test_sliding_windows_and_their_summary() -> None:
    ws = windows(RECS, CAPS, window=10.0, step=5.0, start=0.0, end=25.0)
    assert [(w.start, w.end) for w in ws] == [(0.0, 10.0), (5.0, 15.0), (10.0, 20.0), (15.0, 25.0)]
    assert [w.loads for w in ws] == [(2.0, 1.0, 1.0), (1.0, 0.0, 0.0), (1.0, 0.0, 3.0), (0.0, 0.0, 3.0)]
    st = window_stats(ws)
    assert (st.n, st.median_max_min, st.worst_max_min) == (4, math.inf, math.inf)
    assert st.mean_max_mean == pytest.approx((1.5 + 3.0 + 2.25 + 3.0) / 4)
    assert window_stats(ws[:1]).median_max_min == 2.0
    empty = windows(RECS, CAPS, window=5.0, step=5.0, start=20.0, end=30.0)
    assert len(empty) == 2 and window_stats(empty).n == 0  # windows with no load are skipped
    with pytest.raises(ValueError, match="window and step must be > 0"):
        windows(RECS, CAPS, window=0.0, step=1.0, start=0.0, end=1.0)


def run(jid: int, site: int, work: float, submitted: float, start: float | None, finish: float | None,
        transfers: int = 0) -> Run:
    return Run(Job(jid, work, home=0, submitted=submitted, transfers=transfers), site, submitted, start, finish)


RUNS = [run(0, 0, 10.0, 0.0, 0.0, 10.0), run(1, 0, 20.0, 0.0, 4.0, 24.0, transfers=2),
        run(2, 1, 30.0, 5.0, 15.0, 45.0, transfers=1), run(3, 1, 5.0, 5.0, 45.0, 50.0),
        run(4, 2, 8.0, 6.0, None, None, transfers=1)]


def test_goodput_counts_only_work_finished_by_the_horizon() -> None:
    o = outcome(RUNS, CAPS, horizon=40.0)
    assert (o.completed, o.goodput, o.utilization) == (2, 30.0 / 40.0, 0.75 / 16.0)
    assert (o.jobs_transferred, o.transfers) == (3, 4)  # over every run, finished or not
    assert outcome(RUNS, CAPS, horizon=50.0).completed == 4
    with pytest.raises(ValueError, match="horizon must be > 0"):
        outcome(RUNS, CAPS, horizon=0.0)


def test_wait_per_site_counts_from_first_submission() -> None:
    w = wait_per_site(RUNS, 3)
    assert w[0] == (2, 2.0, 2.0) and w[1] == (2, 25.0, 25.0)
    assert w[2][0] == 0 and math.isnan(w[2][1])
