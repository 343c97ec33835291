"""``schedlab compare``: one scenario file, every architecture, one table."""
from __future__ import annotations

import copy
import json
import re
import tomllib
from pathlib import Path

import pytest

from schedlab.schedulers.scenario.parse import ScenarioError, parse_comparison, parse_scenario
from schedlab.api.compare import compare_row
from tests.conftest import small_scenario_data
from tests.test_cli import schedlab


def three_way() -> dict:
    data = small_scenario_data(duration=120.0)
    data.pop("architecture")
    data["architectures"] = ["borg", "mesos", "omega"]
    data["mesos"] = {"frameworks": [{"name": "batch", "classes": ["batch"], "t_job": 0.5},
                                    {"name": "service", "classes": ["service"], "t_job": 5.0}]}
    data["borg"] = {"t_job": 0.5}
    return data


def test_parse_comparison_gives_one_scenario_per_architecture() -> None:
    scs = parse_comparison(three_way(), "cmp.toml")
    assert [s.architecture for s in scs] == ["borg", "mesos", "omega"]
    assert all(s.cell == scs[0].cell and s.workload == scs[0].workload and s.seed == scs[0].seed for s in scs)
    assert scs[0].architecture == "borg" and scs[0].coordinator.replicas == 5
    assert scs[1].architecture == "mesos" and scs[2].architecture == "omega" and scs[2].coordinator.replicas == 1
    # Without the list: every architecture that has a section.
    data = three_way()
    del data["architectures"]
    assert [s.architecture for s in parse_comparison(data, "cmp.toml")] == ["omega", "mesos", "borg"]


@pytest.mark.parametrize("archs,problem", [
    ([], "architectures: must be a non-empty list"),
    (["omega", "omega"], "architectures: must be a non-empty list of distinct names"),
    (["lsf"], "architectures: 'lsf' is not one of omega, mesos, borg"),
])
def test_bad_architecture_lists(archs: list, problem: str) -> None:
    data = three_way()
    data["architectures"] = archs
    with pytest.raises(ScenarioError) as e:
        parse_comparison(data, "cmp.toml")
    assert problem in str(e.value)


def test_a_comparison_file_is_not_a_run() -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario(three_way(), "cmp.toml")
    assert "run it with `schedlab compare`" in str(e.value)


def test_shipped_flagship_parses() -> None:
    path = Path(__file__).parent.parent / "scenarios" / "architectures.toml"
    scs = parse_comparison(tomllib.loads(path.read_text()), str(path))
    assert {s.architecture for s in scs} == {"omega", "mesos", "borg", "yarn", "kubernetes", "slurm", "htcondor"}


def test_compare_row_reads_each_architecture() -> None:
    base = {"jobs": {"submitted": 10, "scheduled": 8, "abandoned": 1, "pending": 1, "rejected": 0},
            "wait_time_s": {"first_attempt": {"p50": 1.0, "p90": 2.0}, "fully_scheduled": {"p50": 3.0, "p90": None}},
            "schedulers": [{"busyness": 0.2, "attempts": 10, "transactions": {"conflicted": 3}},
                           {"busyness": 0.5, "attempts": 5, "transactions": {"conflicted": 0}}],
            "utilization": {"cpu_mean": 0.5}, "failovers": [{"downtime_wall_s": 0.25}, {"downtime_wall_s": None}],
            "invariants": {"overcommit": 0, "lost_jobs": 2}, "wall_seconds": 12.0}
    omega = dict(copy.deepcopy(base), architecture="omega")
    row = compare_row(omega)
    assert row["conflicts"] == "3 / 15 txns" and row["busyness"] == "0.500" and row["wait_full"] == "3 / -"
    assert row["downtime"] == "0.25 (1 failovers)" and row["invariants"] == "VIOLATED lost_jobs=2"
    mesos = dict(copy.deepcopy(base), architecture="mesos", mesos={"offers": {"made": 20, "declined": 4, "rescinded": 1}})
    assert compare_row(mesos)["conflicts"] == "5 / 20 offers"


def test_compare_command_runs_the_flagship(tmp_path: Path) -> None:
    """The README's command on the sim engine: a run per architecture, one
    table, a summary each. (The conformance suite runs every architecture live.)"""
    r = schedlab("compare", "scenarios/architectures.toml", "--engine", "sim", "--set", "duration=400",
                 "--out", str(tmp_path), timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    archs = ("borg", "mesos", "omega", "yarn", "kubernetes", "slurm", "htcondor")
    for arch in archs:
        s = json.loads((tmp_path / arch / "summary.json").read_text())
        assert s["architecture"] == arch and s["seed"] == 42 and s["jobs"]["submitted"] > 0
        assert not any(s["invariants"].values())
        assert arch in r.stdout
    table = r.stdout[r.stdout.index("same cell"):]
    assert "invariants" in table and table.count("all hold") == len(archs)


def test_compare_bad_input_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    data = (Path(__file__).parent.parent / "scenarios" / "architectures.toml").read_text()
    bad.write_text(re.sub(r"(?m)^architectures = .*$", 'architectures = ["borg", "lsf"]', data, count=1))
    assert 'architectures = ["borg", "lsf"]' in bad.read_text()
    r = schedlab("compare", str(bad))
    assert r.returncode == 2
    assert r.stderr.strip().count("\n") == 0 and "'lsf' is not one of" in r.stderr


def test_a_comparison_runs_an_architecture_without_a_group_unreplicated() -> None:
    data = small_scenario_data(coordinator={"replicas": 3})
    data["architectures"] = ["omega", "dispatcher"]
    omega, dispatcher = parse_comparison(data, "cmp.toml")
    assert omega.coordinator.replicas == 3 and dispatcher.coordinator.replicas == 1
