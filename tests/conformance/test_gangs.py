"""Gang jobs on every architecture: where the architecture can start a
job's tasks together (ArchSpec.gang), a gang class runs on the sim engine
with every invariant holding, its gangs start whole (no task of a gang
starts before every one of them is placed: the spread of their starts is
the hosts' poll delay, not a wait for the rest), and the summary counts
them; elsewhere the scenario is refused in one line saying why."""
from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.actors.run import run_scenario
from schedlab.schedulers import arch as registry
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.scenario.toml_table import ScenarioError
from tests.conformance.scenarios import gang_data

GANG = [a for a in registry.names() if registry.spec_of(a).gang]
# A gang's tasks start on different hosts, each at its next poll of the
# control plane (rung when work is placed for it): a whole gang's starts
# lie within a few batch intervals, far below the 40 s its tasks run.
SPREAD_S = 5.0


def test_some_architectures_run_gangs_and_others_refuse_them() -> None:
    assert GANG and set(GANG) != set(registry.names())


@pytest.mark.parametrize("arch", registry.names())
def test_a_gang_class_runs_whole_or_is_refused(arch: str, tmp_path: Path) -> None:
    data = gang_data(arch) | {"engine": "sim", "duration": 300.0}
    spec = registry.spec_of(arch)
    if not spec.gang:
        with pytest.raises(ScenarioError, match=rf"workload\.classes\[2\]\.gang: architecture '{arch}' cannot start"):
            parse_scenario(data, f"<{arch}>")
        return
    summary = run_scenario(parse_scenario(data, f"<{arch}>"), tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    gangs = summary["gangs"]
    assert gangs["jobs"] > 0 and gangs["scheduled"] > 0, gangs
    assert gangs["start_spread_s"]["max"] <= SPREAD_S, gangs


@pytest.mark.parametrize("arch", registry.names())
def test_every_architectures_readme_says_how_it_treats_gangs(arch: str) -> None:
    text = (Path(__file__).resolve().parents[2] / "actors" / "archs" / arch / "README.md").read_text()
    spec = registry.spec_of(arch)
    assert "**Gangs**" in text and (spec.gang or spec.no_gang) in " ".join(text.split())
