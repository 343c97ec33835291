"""A scenario's ``include`` (schedulers/scenario/include.py, read by
api/scenario_files.load_data): a fragment only adds; a clash, a
fragment that includes, a missing file are one-line errors."""
from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.schedulers.scenario.include import included, merge
from schedlab.schedulers.scenario.toml_table import ScenarioError
from schedlab.api.scenario_files import load_data, load_scenario


def test_a_fragment_adds_tables_and_values() -> None:
    data = {"include": ["f.toml"], "time_scale": 50, "substrate": {"batch_interval": 0.05}}
    got = merge(data, {"time_scale": 50.0, "substrate": {"latency": 0.1}}, "s.toml", "f.toml")
    assert got == {"time_scale": 50, "substrate": {"batch_interval": 0.05, "latency": 0.1}}
    assert data["include"] == ["f.toml"] and "latency" not in data["substrate"]  # inputs unchanged


@pytest.mark.parametrize("fragment, says", [
    ({"time_scale": 20.0}, "s.toml: time_scale: 50 here but 20.0 in the included f.toml"),
    ({"substrate": {"batch_interval": 0.1}}, "s.toml: substrate.batch_interval: 0.05 here but 0.1 in the included"),
    ({"substrate": 0.1}, "s.toml: substrate: {'batch_interval': 0.05} here"),
    ({"include": ["g.toml"]}, "f.toml: include: an included file cannot include others"),
])
def test_a_clash_is_refused(fragment: dict, says: str) -> None:
    with pytest.raises(ScenarioError) as e:
        merge({"time_scale": 50, "substrate": {"batch_interval": 0.05}}, fragment, "s.toml", "f.toml")
    assert str(e.value).startswith(says)


@pytest.mark.parametrize("raw, names", [(None, []), ("a.toml", ["a.toml"]), (["a.toml", "b.toml"], ["a.toml", "b.toml"])])
def test_include_names_a_file_or_several(raw: object, names: list[str]) -> None:
    assert included({} if raw is None else {"include": raw}, "s.toml") == names


@pytest.mark.parametrize("raw", [[], [""], 3, [1]])
def test_include_must_name_files(raw: object) -> None:
    with pytest.raises(ScenarioError, match="s.toml: include: must be a file name or a list"):
        included({"include": raw}, "s.toml")


def test_a_scenario_reads_its_include_relative_to_itself_and_set_wins(tmp_path: Path) -> None:
    shipped = Path(__file__).resolve().parents[1] / "scenarios" / "quickstart.toml"
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "latency.toml").write_text(
        'time_scale = 50\n[substrate]\nlatency = { dist = "empirical", values = [0.1, 0.2], weights = [3, 1] }\n')
    scenario = tmp_path / "s.toml"
    scenario.write_text('include = ["sub/latency.toml"]\n' + shipped.read_text())
    sc = load_scenario(scenario)
    assert sc.substrate.latency.values == (0.1, 0.2) and sc.time_scale == 50
    assert "include" not in load_data(scenario, None)
    assert load_scenario(scenario, ["time_scale=20"]).time_scale == 20  # --set overrides after the merge
    (tmp_path / "sub" / "latency.toml").write_text("time_scale = 20\n")
    with pytest.raises(ScenarioError, match="time_scale: 50.0 here but 20 in the included"):
        load_scenario(scenario)
    scenario.write_text('include = "nowhere.toml"\n' + shipped.read_text())
    with pytest.raises(ScenarioError, match="nowhere.toml: cannot read included file"):
        load_scenario(scenario)
