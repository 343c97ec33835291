"""Scenario validation: every malformed input names file, key and problem."""
from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from schedulers.omega import ConflictMode, TxnMode
from schedulers.scenario import ScenarioError, parse_comparison, parse_scenario
from tests.conftest import small_scenario_data

ROOT = Path(__file__).resolve().parent.parent


def _err(data: dict) -> str:
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, "bad.toml")
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("bad.toml: ")
    return msg


def test_small_scenario_parses_with_defaults() -> None:
    sc = parse_scenario(small_scenario_data(), "ok.toml")
    assert sc.cell.machines == 12
    assert sc.omega.conflict_mode is ConflictMode.RESOURCE
    assert sc.omega.txn_mode is TxnMode.INCREMENTAL
    assert sc.omega.max_attempts == 1000
    assert [s.count for s in sc.omega.schedulers] == [2, 1]


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.toml")))
def test_shipped_scenarios_are_valid_and_documented(path: Path) -> None:
    text = path.read_text()
    assert text.startswith("#"), "a scenario starts with a comment header"
    assert "What it shows" in text and "What to look at" in text
    # A comparison file (several architectures) is parsed once per architecture.
    assert parse_comparison(tomllib.loads(text), str(path))


def test_unknown_top_level_key() -> None:
    assert "bad.toml: colour: unknown key" == _err(small_scenario_data(colour="blue"))


def test_unknown_nested_key_names_its_path() -> None:
    data = small_scenario_data()
    data["omega"]["schedulers"][1]["thinking"] = 3
    assert "omega.schedulers[1].thinking: unknown key" in _err(data)


def test_wrong_type() -> None:
    msg = _err(small_scenario_data(time_scale="fast"))
    assert "time_scale: expected number, got str" in msg


def test_bool_is_not_a_number() -> None:
    assert "seed: expected int, got bool" in _err(small_scenario_data(seed=True))


@pytest.mark.parametrize("value", [0.0, -5.0])
def test_non_positive_duration(value: float) -> None:
    assert "duration: must be > 0" in _err(small_scenario_data(duration=value))


def test_negative_task_duration() -> None:
    data = small_scenario_data()
    data["workload"]["classes"][0]["duration"] = {"dist": "exponential", "mean": -1.0}
    assert "workload.classes[0].duration.mean: must be > 0" in _err(data)


def test_zero_machines() -> None:
    data = small_scenario_data()
    data["cell"]["machine_classes"][0]["count"] = 0
    assert "cell.machine_classes[0].count: must be > 0" in _err(data)


def test_no_machine_classes() -> None:
    data = small_scenario_data()
    data["cell"]["machine_classes"] = []
    assert "cell.machine_classes: must not be empty" in _err(data)


def test_task_that_fits_no_machine() -> None:
    data = small_scenario_data()
    data["workload"]["classes"][1]["mem"] = 64.0
    msg = _err(data)
    assert "workload.classes[1]" in msg and "fits no machine class" in msg and "mem=64" in msg


def test_unbounded_request_rejected() -> None:
    data = small_scenario_data()
    data["workload"]["classes"][0]["cpu"] = {"dist": "exponential", "mean": 1.0}
    assert "workload.classes[0].cpu: exponential is unbounded" in _err(data)


def test_unknown_policy_and_class() -> None:
    data = small_scenario_data()
    data["omega"]["schedulers"][0]["policy"] = "magic"
    assert "omega.schedulers[0].policy: must be one of" in _err(data)
    data = small_scenario_data()
    data["omega"]["schedulers"][0]["classes"] = ["nope"]
    assert "unknown job class 'nope'" in _err(data)


def test_unserved_job_class() -> None:
    data = small_scenario_data()
    data["omega"]["schedulers"] = data["omega"]["schedulers"][:1]
    assert "no scheduler serves job class 'service'" in _err(data)


def test_bad_modes() -> None:
    data = small_scenario_data()
    data["omega"]["conflict_mode"] = "optimistic"
    assert "omega.conflict_mode: must be one of resource, sequence" in _err(data)


def test_missing_required() -> None:
    data = small_scenario_data()
    del data["duration"]
    assert "duration: is required" in _err(data)


def test_empirical_weights_must_match() -> None:
    data = small_scenario_data()
    data["workload"]["classes"][0]["tasks"] = {"dist": "empirical", "values": [1, 2], "weights": [1]}
    assert "workload.classes[0].tasks.weights" in _err(data)


def test_class_start_is_read_and_checked() -> None:
    data = small_scenario_data()
    data["workload"]["classes"][0]["start"] = 30
    assert parse_scenario(data, "ok.toml").workload.classes[0].start == 30.0
    data["workload"]["classes"][0]["start"] = -1.0
    assert "workload.classes[0].start" in _err(data)
