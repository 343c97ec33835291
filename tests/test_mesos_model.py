"""The Mesos paper's Table 2 model and the trial measurement (pure)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from schedlab.schedulers.archs.mesos import analytic_model as mm


def test_paper_formulas_match_table_2() -> None:
    k, b = 20, 2.0
    assert mm.paper("elastic", "constant", k, b) == {"ramp_up": 1.0, "completion": 2.5, "utilization": 1.0}
    assert mm.paper("rigid", "constant", k, b) == {"ramp_up": 1.0, "completion": 3.0, "utilization": pytest.approx(0.8)}
    exp = mm.paper("rigid", "exponential", k, b)
    assert exp["ramp_up"] == pytest.approx(math.log(20))
    assert exp["utilization"] == pytest.approx(2.0 / (math.log(20) + 1.0))


@pytest.mark.parametrize("mode", mm.MODES)
@pytest.mark.parametrize("dist", mm.DISTS)
def test_exact_model_agrees_with_monte_carlo(mode: str, dist: str) -> None:
    """The finite-k expectations against 20,000 simulated trials of the same model."""
    k, beta, n = 20, 2.0, 20000
    rng = np.random.default_rng(1)
    r = rng.uniform(0, 1, (n, k)) if dist == "constant" else rng.exponential(1.0, (n, k))
    want = mm.exact(mode, dist, k, beta)
    ramp = r.max(axis=1)
    if mode == "rigid":
        completion = ramp + beta
        util = beta * k * n / (completion[:, None] - r).sum()
    else:
        completion = np.array([mm._ideal_completion("elastic", row, beta * k, 0.0) for row in r[:2000]])
        util = 1.0
    assert ramp.mean() == pytest.approx(want["ramp_up"], rel=0.02)
    assert completion.mean() == pytest.approx(want["completion"], rel=0.02)
    assert util == pytest.approx(want["utilization"], rel=0.02)


def test_large_k_approaches_the_paper() -> None:
    for mode in mm.MODES:
        for dist in mm.DISTS:
            e, p = mm.exact(mode, dist, 10**6, 50.0), mm.paper(mode, dist, 10**6, 50.0)
            # H_k - ln k -> 0.577 (Euler's constant): the paper's ln k is the leading term.
            assert e["ramp_up"] - p["ramp_up"] == pytest.approx(0.0 if dist == "constant" else 0.5772, abs=1e-3)
            assert e["utilization"] == pytest.approx(p["utilization"], rel=0.02)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0.0, 10.0), min_size=1, max_size=30), st.floats(0.01, 100.0))
def test_elastic_ideal_completion_does_exactly_the_work(release: list[float], work: float) -> None:
    r = np.asarray(release)
    c = mm._ideal_completion("elastic", r, work, 0.0)
    assert np.clip(c - r, 0.0, None).sum() == pytest.approx(work, rel=1e-9, abs=1e-9)
    assert c >= r.min()


def _run(bg_ends: list[float], test_starts: list[tuple[int, float, float]], arrival: float = 1.0,
         bg_start: float = 0.0) -> dict[str, list[dict]]:
    """Events of one trial on len(bg_ends) machines: background job 0 starts
    everywhere at ``bg_start``; test job 1 arrives at ``arrival`` with (machine, start, end) tasks."""
    launched = [[0, m, m, 1.0, 1.0, bg_start] for m in range(len(bg_ends))]
    launched += [[1, i, m, 1.0, 1.0, s] for i, (m, s, _e) in enumerate(test_starts)]
    done = [[0, m, m, e] for m, e in enumerate(bg_ends)] + [[1, i, m, e] for i, (m, _s, e) in enumerate(test_starts)]
    return {"job_submitted": [{"t": 0.0, "job_id": 0, "job_class": "bg", "tasks": len(bg_ends)},
                              {"t": arrival, "job_id": 1, "job_class": "test", "tasks": len(test_starts)}],
            "tasks_launched": [{"t": 0.0, "tasks": launched}], "tasks_completed": [{"t": 99.0, "tasks": done}]}


def test_rigid_trial_is_measured_from_arrival() -> None:
    # Slots free at 3 and 5; the gang starts at 5.5 for 4 s.
    ev = _run([3.0, 5.0], [(0, 5.5, 9.5), (1, 5.5, 9.5)])
    (t,), skipped = mm.trials(ev, "bg", "test", "rigid")
    assert skipped == 0
    assert t.ramp_up == pytest.approx(4.5) and t.ideal_ramp_up == pytest.approx(4.0)
    assert t.completion == pytest.approx(8.5) and t.ideal_completion == pytest.approx(8.0)
    assert t.utilization == pytest.approx(8.0 / ((8.5 - 2.0) + (8.5 - 4.0)))


def test_elastic_trial_and_unqualified_trials() -> None:
    ev = _run([2.0, 4.0], [(0, 2.0, 4.0), (1, 4.0, 6.0), (0, 4.0, 6.0)])
    (t,), _ = mm.trials(ev, "bg", "test", "elastic")
    assert t.ramp_up == pytest.approx(3.0)  # slot 1 first used at 4, arrival 1
    assert t.utilization == pytest.approx(6.0 / ((5.0 - 1.0) + (5.0 - 3.0)))
    assert mm.utilization([t, t]) == pytest.approx(t.utilization)
    # A test job that got a slot before its background job filled the cell does not count.
    assert mm.trials(_run([2.0, 4.0], [(0, 0.5, 4.0), (1, 4.0, 6.0)], arrival=0.2, bg_start=1.0), "bg", "test", "elastic") == ([], 1)


def test_origin_is_the_full_cell_and_late_slots_count_at_their_release() -> None:
    # The test job waits from 1.0; the background tasks start at 2.0 (origin).
    # It ends at 5.0, before slot 1 comes free at 7.0: that slot was never needed.
    ev = _run([3.0, 7.0], [(0, 3.0, 5.0), (0, 5.0, 5.0)], arrival=1.0, bg_start=2.0)
    (t,), skipped = mm.trials(ev, "bg", "test", "elastic")
    assert skipped == 0 and t.origin == 2.0
    assert t.ramp_up == pytest.approx(5.0) and t.completion == pytest.approx(3.0)
    assert t.held == pytest.approx(2.0)  # slot 0 from 1.0 to 3.0; slot 1 nothing


def test_judge_widens_by_standard_error() -> None:
    assert mm.judge(1.09, 1.0, 0.0, 10, 0.1)
    assert not mm.judge(1.2, 1.0, 0.0, 10, 0.1)
    assert mm.judge(1.2, 1.0, 0.2, 4, 0.1)  # 0.1 + 2 * 0.1


def test_elastic_tasks_approach_the_continuous_model_and_cost_utilization_when_coarse() -> None:
    for dist in mm.DISTS:
        fine = mm.elastic_tasks(dist, 20, 1.0, 0.01, draws=300)
        cont = mm.exact("elastic", dist, 20, 1.0)
        assert fine["completion"] == pytest.approx(cont["completion"], rel=0.01)
        assert fine["utilization"] == pytest.approx(1.0, abs=0.01)
        coarse = mm.exact("elastic", dist, 20, 1.0, task=0.2)
        assert coarse["completion"] > fine["completion"] and coarse["utilization"] < fine["utilization"]
