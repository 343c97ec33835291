"""``scenarios/paper/css_example.toml`` (CSS's default experiment) shrunk to
300 machines and 5 emulated minutes on the sim engine, and the pure parts
of ``experiments/paper/css_compare.py``. Seconds of wall time; no Ray."""
from __future__ import annotations

from pathlib import Path

import pytest

import schedlab
from schedlab.actors.analysis.kept_runs import violated
from schedlab.experiments.paper import css_compare

# The default batch interval: fewer exchanges to run (the file's 0.1 emulated
# s sharpens waits to first attempt, which these tests do not measure).
SMALL = {"cell.machine_classes.0.count": 300, "substrate.batch_interval": 0.05}


def _run(tmp_path: Path, architecture: str, **overrides: object) -> schedlab.Run:
    return schedlab.run("paper/css_example", engine="sim", architecture=architecture, duration=300,
                        out=tmp_path / architecture, overrides={**SMALL, **overrides})


@pytest.mark.parametrize("architecture", ["borg", "mesos", "omega"])
def test_the_shrunk_css_experiment_runs_and_holds_its_invariants(tmp_path: Path, architecture: str) -> None:
    s = _run(tmp_path, architecture).summary
    assert not violated(s["invariants"])
    assert s["cell"]["machines"] == 300
    assert s["jobs"]["prefill_tasks"] == 1002  # the init-state file's three jobs: 1 + 1 + 1,000 tasks
    assert s["jobs"]["submitted"] > 100 and s["jobs"]["scheduled"] >= s["jobs"]["submitted"] - 5
    assert set(s["wait_time_s"]["by_class"]) <= {"batch", "service"}


def test_a_slow_single_path_saturates_and_a_multi_path_does_not(tmp_path: Path) -> None:
    """The Omega paper's Fig. 5/6 in small: at t_job 10 s every job waits for
    the one path (busy all the time, most jobs left), while the multi-path
    monolith's batch path is untouched by the slow service path."""
    single = _run(tmp_path / "single", "borg", **{"borg.t_job": 10.0, "borg.multi_path": False}).summary
    multi = _run(tmp_path / "multi", "borg", **{"borg.t_job": 10.0, "borg.multi_path": True}).summary
    busy = {s["name"]: s["busyness"] for s in single["schedulers"]}
    assert busy["borgmaster-all"] > 0.9
    assert single["jobs"]["submitted"] - single["jobs"]["scheduled"] > single["jobs"]["submitted"] / 2
    assert multi["jobs"]["submitted"] - multi["jobs"]["scheduled"] <= 2
    p90 = {name: s["wait_time_s"]["by_class"]["batch"]["first_attempt"]["p90"] for name, s in (("single", single), ("multi", multi))}
    assert p90["multi"] < 5.0 and p90["single"] > 20 * p90["multi"]  # the batch interval (2.5 emulated s here) bounds multi


def _summary(schedulers: list[dict], submitted: int = 10, scheduled: int = 8) -> dict:
    return {"schedulers": schedulers, "jobs": {"submitted": submitted, "scheduled": scheduled},
            "wait_time_s": {"by_class": {"batch": {"first_attempt": {"p90": 4.0}}}}}


def test_run_metrics_reads_the_swept_scheduler_and_the_busiest_other() -> None:
    s = _summary([{"name": "a", "busyness": 0.5, "conflict_fraction": 0.1},
                  {"name": "b", "busyness": 0.2, "conflict_fraction": None},
                  {"name": "c", "busyness": 0.3, "conflict_fraction": 0.4}])
    m = css_compare.run_metrics(s, {"batch": [1.0, 2.0, 6.0], "service": []}, "b")
    assert (m["busyness"], m["busyness_other"]) == (0.2, 0.5)
    assert (m["conflict_fraction"], m["conflict_fraction_other"]) == (None, 0.4)
    assert (m["batch_wait_mean"], m["batch_wait_p90"]) == (3.0, 4.0)
    assert (m["service_wait_mean"], m["service_wait_p90"]) == (None, None)
    assert (m["unscheduled"], m["submitted"]) == (2, 10)
    with pytest.raises(KeyError, match="no scheduler 'z'"):
        css_compare.run_metrics(s, {}, "z")


def test_the_table_has_a_row_per_setup_and_t_job_with_medians_over_seeds() -> None:
    runs = [css_compare.run_metrics(_summary([{"name": "x", "busyness": b, "conflict_fraction": 0.0}], scheduled=k),
                                    {"batch": [w]}, "x") for b, k, w in ((0.1, 8, 1.0), (0.3, 6, 3.0), (0.2, 7, 2.0))]
    m = css_compare.median_of(runs)
    assert (m["busyness"], m["unscheduled"], m["batch_wait_mean"], m["busyness_other"]) == (0.2, 3, 2.0, None)
    text = css_compare.markdown([{"label": "Omega", "swept": "x", "t_job": "10", "metrics": m}])
    head, rule, row = text.splitlines()
    assert head.count("|") == rule.count("|") == row.count("|") == 9
    assert row.startswith("| Omega | x | 10 | 0.2 / - | 2 / 4 | - / - | 0 / - | 3 / 10 |")


def test_each_setup_sweeps_its_own_scheduler_over_cssexample_t_job() -> None:
    got = {s.name: s.overrides(css_compare.T_JOB, 500, 0.5) for s in css_compare.SETUPS}
    assert got["omega"][1:3] == ["omega.schedulers.0.t_job=0.1,1,10", "omega.schedulers.0.t_task=0.005"]
    assert "mesos.frameworks.1.t_job=0.1,1,10" in got["mesos"]
    assert "borg.multi_path=false" in got["mono_single"] and "borg.multi_path=true" in got["mono_multi"]
    assert all("cell.machine_classes.0.count=500" in o and "duration=1800" in o for o in got.values())
