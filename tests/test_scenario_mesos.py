"""The [mesos] scenario section: defaults, full specs, and errors naming file, key and problem."""
from __future__ import annotations

from typing import Any, Callable

import pytest
from hypothesis import given, settings, strategies as st

from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.archs.mesos.spec import FrameworkSpec, MesosSpec
from tests.conftest import scenario_error as _err
from tests.conftest import small_scenario_data


def mesos_data(**mesos: Any) -> dict:
    data = small_scenario_data(architecture="mesos")
    del data["omega"]
    data["mesos"] = {"frameworks": [{"name": "hadoop", "classes": ["batch"]},
                                    {"name": "mpi", "classes": ["service"], "mode": "rigid"}], **mesos}
    return data



def test_minimal_mesos_scenario_has_defaults() -> None:
    sc = parse_scenario(mesos_data(), "m.toml")
    assert sc.architecture == "mesos" and isinstance(sc.section, MesosSpec)
    m = sc.section
    assert (m.allocator, m.granularity, m.allocation_interval, m.offer_timeout) == ("drf", "cell", 1.0, 30.0)
    assert (m.max_attempts, m.masters, m.master_lease_ms, m.revocation, m.starvation_timeout) == (1000, 1, 1000.0, False, 30.0)
    hadoop, mpi = m.frameworks
    assert hadoop == FrameworkSpec("hadoop", ("batch",))
    assert hadoop.min_offer == (0.0, 0.0) and hadoop.preferred == () and hadoop.policy == "random_first_fit"
    assert mpi.mode == "rigid" and mpi.classes == ("service",)


def test_omega_scenario_has_no_mesos() -> None:
    sc = parse_scenario(small_scenario_data(), "o.toml")
    assert sc.architecture == "omega"


def test_full_mesos_spec() -> None:
    data = mesos_data(allocator="weighted", granularity="agent", allocation_interval=0.5, offer_timeout=10,
                      max_attempts=7, masters=3, master_lease_ms=250, revocation=True, starvation_timeout=12.0)
    data["coordinator"] = {"replicas": 3}
    data["mesos"]["frameworks"][0].update(
        t_job=0.2, t_task=0.01, policy="best_fit", weight=2, priority=3, guarantee=0.6, min_offer={"cpu": 2, "mem": 4.5},
        preferred=["a", "big"], delay=5.0, data_replicas=3, refuse_seconds=0)
    data["mesos"]["frameworks"][1]["guarantee"] = 0.4
    data["faults"] = [{"at": 50.0, "action": "kill_master"}, {"at": 20.0, "action": "kill", "target": "master-2", "restart_after": 5.0}]
    sc = parse_scenario(data, "full.toml")
    m = sc.section
    assert (m.allocator, m.granularity, m.allocation_interval, m.offer_timeout, m.max_attempts) == ("weighted", "agent", 0.5, 10.0, 7)
    assert (m.masters, m.master_lease_ms, m.revocation, m.starvation_timeout) == (3, 250.0, True, 12.0)
    f = m.frameworks[0]
    assert (f.t_job, f.t_task, f.policy, f.weight, f.priority, f.guarantee) == (0.2, 0.01, "best_fit", 2.0, 3, 0.6)
    assert f.min_offer == (2.0, 4.5) and f.preferred == ("a", "big")
    assert (f.delay, f.data_replicas, f.refuse_seconds) == (5.0, 3, 0.0)
    assert [(x.at, x.action, x.target) for x in sc.faults] == [(20.0, "kill", "master-2"), (50.0, "kill_master", "")]


def test_single_master_kill_with_restart_is_fine() -> None:
    data = mesos_data()
    data["faults"] = [{"at": 10.0, "action": "kill_master", "restart_after": 3.0}]
    (f,) = parse_scenario(data, "ok.toml").faults
    assert f.action == "kill_master" and f.restart_after == 3.0


def _fw(i: int, **kw: Any) -> Callable[[dict], None]:
    return lambda d: d["mesos"]["frameworks"][i].update(kw)


def _ms(**kw: Any) -> Callable[[dict], None]:
    return lambda d: d["mesos"].update(kw)


def _faults(*fs: dict) -> Callable[[dict], None]:
    return lambda d: d.__setitem__("faults", list(fs))


BAD: list[tuple[str, Callable[[dict], None], str]] = [
    ("unknown class", _fw(0, classes=["nope"]), "mesos.frameworks[0].classes: unknown job class 'nope'"),
    ("no classes", _fw(0, classes=[]), "mesos.frameworks[0].classes: must name at least one job class"),
    ("delay without data", _fw(0, delay=3.0), "mesos.frameworks[0].delay: delay scheduling needs data_replicas > 0"),
    ("standby masters need raft", _ms(masters=2), "mesos.masters: standby masters elect their leader through the "
                                                  "coordinator: set [coordinator] replicas >= 3"),
    ("too many masters", _ms(masters=10), "mesos.masters: must be 1 to 9 (got 10)"),
    ("omega table", lambda d: d.__setitem__("omega", {"schedulers": []}),
     "omega: is for architecture = 'omega'; this scenario is 'mesos'"),
    ("guarantees > 1", lambda d: (_fw(0, guarantee=0.6)(d), _fw(1, guarantee=0.5)(d)),
     "mesos.frameworks: guarantees add up to more than the whole cell"),
    ("guarantee range", _fw(1, guarantee=1.5), "mesos.frameworks[1].guarantee: must be in [0, 1] (got 1.5)"),
    ("duplicate names", _fw(1, name="hadoop"), "mesos.frameworks: framework names must be unique"),
    ("unserved class", lambda d: d["mesos"]["frameworks"].pop(), "mesos.frameworks: no framework serves job class 'service'"),
    ("mode", _fw(1, mode="gang"), "mesos.frameworks[1].mode: must be one of elastic, rigid"),
    ("policy", _fw(0, policy="magic"), "mesos.frameworks[0].policy: must be one of"),
    ("allocator", _ms(allocator="fifo"), "mesos.allocator: must be one of drf, weighted, priority"),
    ("granularity", _ms(granularity="rack"), "mesos.granularity: must be one of cell, agent"),
    ("preferred", _fw(0, preferred=["gpu"]), "mesos.frameworks[0].preferred: 'gpu' is not a machine class name or label"),
    ("min_offer key", _fw(0, min_offer={"disk": 1.0}), "mesos.frameworks[0].min_offer.disk: unknown key"),
    ("min_offer value", _fw(0, min_offer={"cpu": -1.0}), "mesos.frameworks[0].min_offer.cpu: must be >= 0"),
    ("framework key", _fw(0, colour="red"), "mesos.frameworks[0].colour: unknown key"),
    ("framework name", lambda d: d["mesos"]["frameworks"][0].pop("name"), "mesos.frameworks[0].name: is required"),
    ("mesos key", _ms(colour="red"), "mesos.colour: unknown key"),
    ("no mesos", lambda d: d.pop("mesos"), "mesos: is required"),
    ("no frameworks", _ms(frameworks=[]), "mesos.frameworks: must not be empty"),
    ("framework not table", _ms(frameworks=["hadoop"]), "mesos.frameworks[0]: must be a table, got str"),
    ("lease", _ms(master_lease_ms=10.0), "mesos.master_lease_ms: must be >= 50"),
    ("weight", _fw(0, weight=0), "mesos.frameworks[0].weight: must be > 0"),
    ("replicas", _fw(0, data_replicas=-1), "mesos.frameworks[0].data_replicas: must be >= 0"),
    ("delay", _fw(0, delay=-1.0, data_replicas=1), "mesos.frameworks[0].delay: must be >= 0"),
    ("attempts", _ms(max_attempts=0), "mesos.max_attempts: must be > 0"),
    ("timeout", _ms(offer_timeout=0), "mesos.offer_timeout: must be > 0"),
    ("interval", _ms(allocation_interval=-1), "mesos.allocation_interval: must be > 0"),
    ("starvation", _ms(starvation_timeout=0), "mesos.starvation_timeout: must be > 0"),
    ("revocation type", _ms(revocation="yes"), "mesos.revocation: expected bool, got str"),
    ("priority type", _fw(0, priority=1.5), "mesos.frameworks[0].priority: expected int, got float"),
    ("single master kill", _faults({"at": 10.0, "action": "kill_master"}),
     "faults[0]: with a single master, kill_master needs restart_after"),
    ("kill_master target", _faults({"at": 10.0, "action": "kill_master", "target": "master-0", "restart_after": 1.0}),
     "faults[0]: kill_master picks its own target"),
    ("unknown master", _faults({"at": 10.0, "action": "kill", "target": "master-1"}),
     "faults[0]: unknown target 'master-1': not an actor of this run nor a role"),
    ("kill_leader without raft", _faults({"at": 10.0, "action": "kill_leader"}),
     "faults[0]: kill_leader needs [coordinator] replicas >= 3"),
]


@pytest.mark.parametrize("mutate,expected", [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_mesos_scenarios_name_file_key_and_problem(mutate: Callable[[dict], None], expected: str) -> None:
    data = mesos_data()
    mutate(data)
    assert expected in _err(data)


def test_mesos_table_in_omega_scenario() -> None:
    data = small_scenario_data(mesos={"frameworks": []})
    assert "bad.toml: mesos: is for architecture = 'mesos'; this scenario is 'omega'" == _err(data)


def test_kill_master_without_mesos() -> None:
    data = small_scenario_data(faults=[{"at": 10.0, "action": "kill_master", "restart_after": 1.0}])
    assert "bad.toml: faults[0]: kill_master needs architecture \"mesos\"" == _err(data)


def test_unknown_architecture() -> None:
    data = mesos_data()
    data["architecture"] = "lsf"
    from schedlab.schedulers import arch as registry

    assert f"bad.toml: architecture: must be one of {', '.join(registry.names())} (got 'lsf')" == _err(data)


@pytest.mark.parametrize("key,value", [("classes", [["batch"]]), ("preferred", [["a"]])])
def test_unhashable_list_items_are_scenario_errors(key: str, value: list) -> None:
    data = mesos_data()
    data["mesos"]["frameworks"][0][key] = value
    assert f"mesos.frameworks[0].{key}" in _err(data)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.5, 0.75, 1.0]), min_size=2, max_size=4))
def test_guarantees_accepted_iff_they_fit_the_cell(gs: list[float]) -> None:
    data = mesos_data()
    data["mesos"]["frameworks"] = [{"name": f"f{i}", "classes": ["batch", "service"], "guarantee": g} for i, g in enumerate(gs)]
    if sum(gs) <= 1 + 1e-9:
        assert [f.guarantee for f in parse_scenario(data, "ok.toml").section.frameworks] == gs
    else:
        assert "mesos.frameworks: guarantees add up to more than the whole cell" in _err(data)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.sampled_from([1, 3, 5]))
def test_standby_masters_need_replicated_coordinator(masters: int, replicas: int) -> None:
    data = mesos_data(masters=masters)
    data["coordinator"] = {"replicas": replicas}
    if masters == 1 or replicas >= 3:
        assert parse_scenario(data, "ok.toml").section.masters == masters
    else:
        assert "mesos.masters: standby masters" in _err(data)
