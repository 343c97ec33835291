"""Sweep grid expansion, point naming and the per-point aggregation (pure)."""
from __future__ import annotations

import csv
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlab.schedulers.scenario.parse import ScenarioError
from schedlab.cli.sweep import plan_sweep
from schedlab.cli.sweep_grid import aggregate, expand, flatten, median_mad, parse_sets, point_name, split_values, write_csv

ROOT = Path(__file__).resolve().parents[1]


def test_values_split_on_top_level_commas_only() -> None:
    assert split_values('5, 10,[1,2],"a,b"') == ["5", "10", "[1,2]", '"a,b"']
    assert split_values("best_fit") == ["best_fit"]


def test_sets_split_into_fixed_and_swept_in_order() -> None:
    fixed, swept = parse_sets(["a.t_job=5,10,20", "seed=7", "b.policy=best_fit,worst_fit"])
    assert fixed == ["seed=7"]
    assert list(swept) == ["a.t_job", "b.policy"] and swept["a.t_job"] == ["5", "10", "20"]
    for bad, why in [("x", "expected KEY"), ("x=1,,2", "empty value"), ("x=1,1", "repeated")]:
        with pytest.raises(ScenarioError, match=why):
            parse_sets([bad])
    with pytest.raises(ScenarioError, match="given twice"):
        parse_sets(["x=1,2", "x=3"])


@given(st.dictionaries(st.sampled_from(list("abcd")), st.lists(st.integers(0, 99), min_size=1, max_size=4, unique=True),
                       max_size=4))
def test_grid_is_the_full_product_first_key_slowest(values: dict[str, list[int]]) -> None:
    swept = {k: [str(v) for v in vs] for k, vs in values.items()}
    grid = expand(swept)
    assert len(grid) == math.prod(len(v) for v in swept.values())
    assert len({tuple(sorted(p.items())) for p in grid}) == len(grid)
    if swept:
        first = next(iter(swept))
        assert [p[first] for p in grid] == sorted((p[first] for p in grid), key=swept[first].index)
    names = [point_name(i, p) for i, p in enumerate(grid)]
    assert names == sorted(names) and len(set(names)) == len(names)


def test_point_names_are_readable_and_safe() -> None:
    assert point_name(3, {"omega.schedulers.1.t_job": "30", "x.policy": '"best fit"'}) == "p003_t_job=30_policy=bestfit"
    assert point_name(0, {}) == "p000"
    assert point_name(1, {"coordinator.election_ticks": "[30, 60]"}) == "p001_election_ticks=30-60"


def test_flatten_keys_schedulers_by_name_and_drops_series() -> None:
    s = {"seed": 3, "jobs": {"submitted": 10, "pending": None}, "ok": True,
         "schedulers": [{"name": "batch-0", "busyness": 0.5, "transactions": {"conflicted": 2}}],
         "failovers": [{"role": "coordinator", "downtime_wall_s": 1.5}],
         "mesos": {"frameworks": {"fw": {"dominant_share": [[1.0, 0.5], [2.0, 0.25]], "dominant_share_mean": 0.4}}}}
    f = flatten(s)
    assert f["jobs.submitted"] == 10 and "jobs.pending" not in f and f["ok"] == 1.0
    assert f["schedulers.batch-0.busyness"] == 0.5 and f["schedulers.batch-0.transactions.conflicted"] == 2
    assert f["schedulers.count"] == 1 and f["failovers.0.downtime_wall_s"] == 1.5
    assert f["mesos.frameworks.fw.dominant_share_mean"] == 0.4 and f["mesos.frameworks.fw.dominant_share.count"] == 2
    assert "seed" not in f and not any("dominant_share.0" in k for k in f)


@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=15), st.floats(-1e3, 1e3))
def test_median_and_mad_are_robust_statistics(xs: list[float], shift: float) -> None:
    med, mad = median_mad(xs)  # type: ignore[misc]
    assert mad >= 0
    assert min(xs) <= med <= max(xs)
    med2, mad2 = median_mad(x + shift for x in xs)  # type: ignore[misc]
    assert med2 == pytest.approx(med + shift, abs=1e-6) and mad2 == pytest.approx(mad, abs=1e-6)
    assert median_mad([]) is None


def test_aggregate_and_csv_rows(tmp_path: Path) -> None:
    runs = [{"jobs": {"scheduled": n}, "schedulers": [{"name": "b", "busyness": b}]} for n, b in [(10, 0.1), (12, 0.3), (30, 0.2)]]
    agg = aggregate(runs)
    assert agg["jobs.scheduled"] == (12.0, 2.0)  # median 12, |10-12|,|12-12|,|30-12| -> MAD 2
    assert agg["schedulers.b.busyness"] == pytest.approx((0.2, 0.1))
    rows = [{"point": "p000_x=1", "architecture": "omega", "seeds": 3, "ok_runs": 3, "violations": 0, "set": {"a.x": "1"}, "metrics": agg},
            {"point": "p001_x=2", "architecture": "omega", "seeds": 3, "ok_runs": 0, "violations": 0, "set": {"a.x": "2"}, "metrics": {}}]
    write_csv(tmp_path / "s.csv", ["a.x"], rows)
    got = list(csv.DictReader((tmp_path / "s.csv").open()))
    assert got[0]["a.x"] == "1" and got[0]["jobs.scheduled.median"] == "12" and got[0]["jobs.scheduled.mad"] == "2"
    assert got[1]["jobs.scheduled.median"] == ""


def test_plan_checks_every_point_before_running() -> None:
    sweep = plan_sweep(str(ROOT / "scenarios/quickstart.toml"), ["duration=100,200", "time_scale=20"], seeds=2, seed=5, time_scale=None)
    assert [p.name for p in sweep.points] == ["p000_duration=100", "p001_duration=200"]
    assert sweep.seeds == [5, 6] and [p.scenarios[0].duration for p in sweep.points] == [100.0, 200.0]
    assert all(p.scenarios[0].time_scale == 20.0 for p in sweep.points) and len(sweep.jobs()) == 4
    with pytest.raises(ScenarioError, match="duration"):
        plan_sweep(str(ROOT / "scenarios/quickstart.toml"), ["duration=100,-5"], seeds=1, seed=None, time_scale=None)
    with pytest.raises(ScenarioError, match="seeds"):
        plan_sweep(str(ROOT / "scenarios/quickstart.toml"), [], seeds=0, seed=None, time_scale=None)


def test_keep_finished_runs_only_what_has_no_summary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``reproduce.py --resume``: a run directory with its summary.json is
    kept; the others (missing, or failed with error.txt only) run again."""
    import schedlab.actors.run
    from schedlab.cli.sweep import run_inline

    plan = plan_sweep(str(ROOT / "scenarios/quickstart.toml"), ["duration=10,20,30"], seeds=1, seed=None, time_scale=None)
    rels = [r for p in plan.points for r in plan.runs(p, p.scenarios[0].architecture)]
    (tmp_path / rels[0]).mkdir(parents=True)
    (tmp_path / rels[0] / "summary.json").write_text("{}")
    (tmp_path / rels[1]).mkdir(parents=True)
    (tmp_path / rels[1] / "error.txt").write_text("RuntimeError: boom\n")
    ran: list[Path] = []
    monkeypatch.setattr(schedlab.actors.run, "run_scenario", lambda sc, out, address=None: ran.append(out))
    advanced: list[str] = []
    run_inline(plan, tmp_path, None, advanced.append, keep_finished=True)
    assert ran == [tmp_path / rels[1], tmp_path / rels[2]]
    assert advanced == rels
    ran.clear()
    run_inline(plan, tmp_path, None, advanced.append)  # without it, everything runs
    assert len(ran) == 3
