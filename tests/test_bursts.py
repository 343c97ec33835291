"""Bursty (on/off) arrivals of a job class: `bursts = { on, off }`."""
from __future__ import annotations

import numpy as np
import pytest

from schedlab.schedulers.model.workload import Dist, on_off_times
from schedlab.schedulers.scenario.parse import ScenarioError, parse_scenario
from tests.conftest import small_scenario_data


def test_arrivals_come_only_in_on_periods_at_the_on_rate() -> None:
    """Rebuild the periods from the same draws: every arrival lies in an on
    period, and the long-run rate is on/(on+off) of the on rate."""
    horizon = 200_000.0
    got = on_off_times(np.random.default_rng(5), Dist("exponential", mean=2.0), 30.0, 90.0, horizon)
    assert got == sorted(got) and all(0 <= t < horizon for t in got)
    rate = len(got) / horizon
    assert rate == pytest.approx(0.5 * 30 / 120, rel=0.05)
    # Burstiness: counts per 30 s window vary far more than a Poisson stream's (variance = mean).
    counts = np.bincount((np.asarray(got) // 30).astype(int), minlength=int(horizon // 30))
    assert counts.var() > 3 * counts.mean()


def test_an_off_rate_fills_the_gaps() -> None:
    got = on_off_times(np.random.default_rng(1), Dist("exponential", mean=1.0), 10.0, 10.0, 50_000.0,
                       off_gap=Dist("exponential", mean=4.0))
    assert len(got) / 50_000.0 == pytest.approx((1.0 + 0.25) / 2, rel=0.05)


def test_a_job_class_with_bursts_generates_bursty_jobs_and_bad_input_is_refused() -> None:
    data = small_scenario_data()
    cls = data["workload"]["classes"][0]
    cls["bursts"] = {"on": 20.0, "off": 60.0}
    sc = parse_scenario(data, "ok.toml")
    assert sc.workload.classes[0].bursts == (20.0, 60.0)
    for bad, key in (({"on": 0.0, "off": 5.0}, "bursts.on"), ({"on": 5.0}, "bursts.off"),
                     ({"on": 5.0, "off": 5.0, "of": 1.0}, "bursts")):
        data = small_scenario_data()
        data["workload"]["classes"][0]["bursts"] = bad
        with pytest.raises(ScenarioError, match=key):
            parse_scenario(data, "bad.toml")
    data = small_scenario_data()
    data["workload"]["classes"][0].update(bursts={"on": 5.0, "off": 5.0}, interarrival_mode="fixed")
    with pytest.raises(ScenarioError, match="bursts need interarrival_mode"):
        parse_scenario(data, "bad.toml")
