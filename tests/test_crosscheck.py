"""experiments/crosscheck.py: the metrics it compares, the verdict against its
stated tolerances and the table (experiments/crosscheck_table.py), on synthetic
summaries; bad arguments; and one CI-sized run on both engines."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from schedlab.schedulers import arch as registry
from schedlab.experiments import crosscheck
from schedlab.experiments.crosscheck_table import (
    TOLERANCES, Row, Tolerance, compare, metrics, pair, render, spread, tolerance,
)


def summary(scheduled: int = 100, p50: float | None = 0.2, p90: float | None = 1.0, busy: float = 0.1,
            conflicts: float = 0.0, cpu: float = 0.5, downtimes: tuple[float, ...] = (), seed: int = 1,
            collateral: int = 0, commit_ms: float = 0.0) -> dict:
    return {
        "seed": seed,
        "invariants": {"overcommit": 0, "collateral": collateral},
        "jobs": {"scheduled": scheduled},
        "wait_time_s": {"first_attempt": {"p50": p50, "p90": p90, "p99": None}},
        "schedulers": [{"name": "batch", "busyness": busy, "conflict_fraction": conflicts, "commit_rtt_wall_ms_p50": commit_ms}],
        "utilization": {"cpu_mean": cpu},
        "failovers": [{"downtime_emulated_s": d} for d in downtimes] + [{"downtime_emulated_s": None}],
    }


def test_the_metrics_of_a_summary() -> None:
    m = metrics(summary(downtimes=(2.0, 4.0)))
    assert m == {"jobs scheduled": 100.0, "wait p50 (s)": 0.2, "wait p90 (s)": 1.0, "busyness [batch]": 0.1,
                 "conflict fraction [batch]": 0.0, "utilization (cpu)": 0.5, "failover downtime (s)": 3.0}
    assert metrics(summary(commit_ms=3.5))["commit round trip (wall ms) [batch]"] == 3.5
    # No failover (or none that recovered), no wait measured, commits not timed: no such metric.
    assert set(metrics(summary(p50=None, p90=None))) == {"jobs scheduled", "busyness [batch]", "conflict fraction [batch]",
                                                         "utilization (cpu)"}


def test_a_tolerance_is_absolute_plus_relative_to_live() -> None:
    t = Tolerance(0.25, 0.1)
    assert t.allows(1.0, 1.35) and t.allows(1.0, 0.65) and not t.allows(1.0, 1.36) and not t.allows(1.0, 0.64)
    assert t.allows(0.0, 0.1) and not t.allows(0.0, 0.11)
    assert t.text() == "±25% + 0.1"
    assert tolerance("busyness [scheduler-batch-0]") is TOLERANCES["busyness"]
    assert tolerance("wait p90 (s)") is TOLERANCES["wait p90 (s)"]


def test_verdicts_compare_medians_over_seeds() -> None:
    live = [summary(p50=0.2), summary(p50=0.3), summary(p50=5.0)]  # one wild seed: the median holds
    sim = [summary(p50=0.25), summary(p50=0.3), summary(p50=0.35, scheduled=80)]
    rows = {r.metric: r for r in compare("s", live, sim)}
    assert rows["wait p50 (s)"].live == (0.2, 0.3, 5.0) and rows["wait p50 (s)"].verdict == "agree"
    assert rows["jobs scheduled"].verdict == "agree"  # medians 100 and 100
    far = {r.metric: r for r in compare("s", live, [summary(cpu=0.6, busy=0.2)] * 3)}
    assert far["utilization (cpu)"].verdict == "DIFFER"  # 10 points, tolerance 3
    assert far["busyness [batch]"].verdict == "DIFFER"  # 0.2 against 0.1 +- (0.03 + 0.02)
    assert far["wait p50 (s)"].verdict == "agree"


def test_a_metric_only_one_engine_has_is_not_judged() -> None:
    rows = {r.metric: r for r in compare("f", [summary(downtimes=(3.0,))], [summary()])}
    assert rows["failover downtime (s)"].live == (3.0,) and rows["failover downtime (s)"].sim == ()
    assert rows["failover downtime (s)"].verdict == "n/a"


def test_runs_are_paired_by_seed_and_a_broken_one_leaves_its_seed_out_on_both() -> None:
    live = [summary(seed=1), summary(seed=2, collateral=36), summary(seed=3, p50=9.0)]
    sim = [summary(seed=3, p50=8.0), summary(seed=1), summary(seed=2)]  # another order
    p = pair([1, 2, 3, 4], live, sim)
    assert [s["seed"] for s in p.live] == [s["seed"] for s in p.sim] == [1, 3]
    assert p.left_out == {2: "broke collateral (36) on live", 4: "failed on live; failed on sim"}
    rows = {r.metric: r for r in compare("s", p.live, p.sim)}
    assert rows["wait p50 (s)"].live == (0.2, 9.0) and rows["wait p50 (s)"].sim == (0.2, 8.0)


def test_the_table() -> None:
    rows = [Row("quickstart", "wait p50 (s)", (0.1, 0.2, 0.15), (0.9,)),
            Row("quickstart", "jobs scheduled", (1234.0,), (1200.0,)),
            Row("dispatcher", "utilization (cpu)", (), (0.5, 0.5))]
    lines = render(rows).splitlines()
    assert lines[0] == "| scenario | metric | live | sim (calibrated) | tolerance | verdict |"
    assert lines[2] == "| quickstart | wait p50 (s) | 0.15 [0.1–0.2] | 0.9 | ±25% + 0.25 | DIFFER |"
    assert lines[3] == "|  | jobs scheduled | 1234 | 1200 | ±5% + 2 | agree |"
    assert lines[4] == "| dispatcher | utilization (cpu) | - | 0.5 [0.5–0.5] | ±0% + 0.03 | n/a |"
    assert spread(()) == "-"


def test_the_default_scenarios_run_every_registered_architecture() -> None:
    def plans(scenarios: tuple[str, ...]) -> dict:
        return crosscheck.plan(argparse.Namespace(scenarios=scenarios, set=[], seeds=1, seed=None), "sim")

    assert crosscheck.uncovered(plans(crosscheck.default_scenarios())) == []
    one = plans(("quickstart",))
    ran = {sc.architecture for s in one.values() for p in s.points for sc in p.scenarios}
    assert len(ran) == 1 and crosscheck.uncovered(one) == [n for n in registry.names() if n not in ran]


@pytest.mark.parametrize("argv, says", [
    (["--seeds", "0"], "--seeds: must be >= 1"),
    (["--messages", "0"], "--messages: must be between 1 and"),
    (["--scenarios", "no_such_scenario"], "no_such_scenario: no such file"),
    (["--set", "duration=-1"], "duration: must be > 0"),
    (["--scenarios", ","], "--scenarios: name at least one"),
])
def test_bad_arguments_exit_2_before_anything_runs(argv: list[str], says: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert crosscheck.main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: ") and says in err
    assert not (tmp_path / "out").exists()


@pytest.mark.ray
def test_a_quick_crosscheck_runs_both_engines(ray_session: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cc"
    code = crosscheck.main(["--quick", "--set", "duration=100", "--messages", "40", "--out", str(out), "-q"])
    assert code in (0, 1), capsys.readouterr().err  # 1: a metric differs (this machine's load), not a broken run
    got = json.loads((out / "crosscheck.json").read_text())
    assert got["calibration_wall_ms"]["one_way"]["n"] == 40 and got["calibration_wall_ms"]["one_way"]["p50"] > 0
    rows = {r["metric"]: r for r in got["rows"]}
    assert len(rows["jobs scheduled"]["live"]) == len(rows["jobs scheduled"]["sim"]) == 1
    assert rows["jobs scheduled"]["verdict"] in ("agree", "DIFFER")
    sim = json.loads(next((out / "quickstart" / "sim").rglob("summary.json")).read_text())
    assert sim["engine"] == "sim" and (out / "crosscheck.md").read_text().startswith("| scenario |")
