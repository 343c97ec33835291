"""Web-farm aggregation: nearest-rank percentiles, utilization,
imbalance, drop and loss counts."""
from __future__ import annotations

import math

import pytest

from schedlab.schedulers.archs.webfarm.metrics import (imbalance, latency, per_policy, percentile, summarize,
                                                       utilization)
from schedlab.schedulers.archs.webfarm.server import Server


def test_percentiles_are_nearest_rank_observed_values() -> None:
    xs = list(range(1, 101))  # 1..100, shuffled order must not matter
    xs = xs[50:] + xs[:50]
    assert percentile(xs, 50) == 50 and percentile(xs, 99) == 99 and percentile(xs, 99.9) == 100
    assert percentile([3.0, 1.0], 50) == 1.0 and percentile([7.0], 99.9) == 7.0
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError, match=r"percentile must be in \(0, 100\]"):
        percentile(xs, 0)


def test_latency_summary_and_per_policy() -> None:
    s = Server(0, workers=1)
    recs = [s.arrive(i, 1.0, 0.0) for i in range(4)]  # latencies 1, 2, 3, 4
    s.complete(math.inf)
    lat = latency([r.latency for r in recs])
    assert (lat.n, lat.mean, lat.p50, lat.p99, lat.p999, lat.max) == (4, 2.5, 2.0, 4.0, 4.0, 4.0)
    out = per_policy({"rr": recs, "none": []})
    assert list(out) == ["rr", "none"] and out["rr"] == lat and out["none"].n == 0


def test_utilization_and_imbalance() -> None:
    assert utilization([50.0, 100.0], [1, 2], 100.0) == [0.5, 0.5]
    assert imbalance([1.0, 1.0, 1.0]) == 1.0
    assert imbalance([3.0, 0.0, 0.0]) == 3.0
    assert imbalance([0.0, 0.0]) == 1.0
    with pytest.raises(ValueError, match="2 busy times for 1 servers"):
        utilization([1.0, 2.0], [1], 10.0)
    with pytest.raises(ValueError, match="horizon must be positive"):
        utilization([1.0], [1], 0.0)


def test_summary_counts_drops_losses_and_refusals_apart_from_latency() -> None:
    a, b = Server(0, 1, max_queue=0), Server(1, 1)
    recs = [a.arrive(0, 2.0, 0.0), a.arrive(1, 1.0, 0.0), b.arrive(2, 5.0, 0.0)]  # second dropped
    assert b.crash(1.0) == [recs[2]]  # the running one is lost (the same record, counted once)
    a.complete(math.inf)
    summ = summarize("x", recs, [a.busy_time, b.busy_time], [1, 1], 10.0, sessions_lost=3, refused=2)
    assert summ.latency.n == 1 and summ.latency.p50 == 2.0
    assert summ.dropped == 3 and summ.lost == 1 and summ.sessions_lost == 3
    assert summ.utilization == (0.2, 0.1) and summ.imbalance == pytest.approx(2.0 / 1.5)
