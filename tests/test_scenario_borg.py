"""The [borg] section: defaults and errors that name file, key and problem."""
from __future__ import annotations

import pytest

from schedlab.schedulers.archs.borg.spec import BorgSpec
from schedlab.schedulers.scenario.parse import ScenarioError, parse_scenario
from tests.conftest import small_scenario_data


def borg_data(**borg) -> dict:  # type: ignore[no-untyped-def]
    data = small_scenario_data()
    del data["omega"]
    data["architecture"] = "borg"
    data["borg"] = dict(borg)
    return data


def test_defaults_and_five_replicas() -> None:
    sc = parse_scenario(borg_data(), "b.toml")
    assert sc.architecture == "borg" and isinstance(sc.section, BorgSpec)
    assert sc.coordinator.replicas == 5
    b = sc.section
    assert (b.scoring, b.sample, b.preemption, b.multi_path, b.missed_polls) == ("best_fit", 0, True, False, 3)


def test_quota_and_requires_are_read() -> None:
    sc = parse_scenario(borg_data(quota=[{"user": "batch", "band": "batch", "cpu": 10.0, "mem": 40.0}],
                                  requires={"service": ["big", "a"]}), "b.toml")
    assert isinstance(sc.section, BorgSpec)
    (q,) = sc.section.quota
    assert (q.user, q.band, q.limit) == ("batch", "batch", (10.0, 40.0))
    assert sc.section.requires == (("service", ("big", "a")),)


@pytest.mark.parametrize("borg,top,problem", [
    ({"scoring": "random"}, {}, "borg.scoring: must be one of best_fit, worst_fit, hybrid"),
    ({"quota": [{"user": "nobody", "band": "batch", "cpu": 1.0, "mem": 1.0}]}, {}, "borg.quota[0].user: must be one of batch, service"),
    ({"quota": [{"user": "batch", "band": "gold", "cpu": 1.0, "mem": 1.0}]}, {}, "borg.quota[0].band: must be one of"),
    ({"requires": {"nosuch": ["big"]}}, {}, "borg.requires.nosuch: is not a job class"),
    ({"requires": {"batch": ["ssd"]}}, {}, "borg.requires.batch: unknown machine class or label 'ssd'"),
    ({"missed_polls": 0}, {}, "borg.missed_polls: must be > 0"),
    ({}, {"coordinator": {"replicas": 1}}, "coordinator.replicas: architecture 'borg' needs 3 or more replicas"),
    ({}, {"omega": {"schedulers": []}}, "omega: is for architecture = 'omega'; this scenario is 'borg'"),
])
def test_bad_borg_sections(borg: dict, top: dict, problem: str) -> None:
    data = borg_data(**borg)
    data.update(top)
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, "bad.toml")
    assert str(e.value).startswith("bad.toml: ") and problem in str(e.value)
