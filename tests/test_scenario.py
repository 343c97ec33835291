"""Scenario validation: every malformed input names file, key and problem."""
from __future__ import annotations

from pathlib import Path

import pytest

from schedlab.schedulers.shared_state.commit import ConflictMode, TxnMode
from schedlab.schedulers.scenario.parse import ScenarioError, parse_comparison, parse_scenario
from schedlab.actors.engines.limits import limits_for, local_limits
from schedlab.schedulers.scenario.limits import CLUSTER, Limits, memory_limits
from tests.conftest import scenario_error as _err
from tests.conftest import small_scenario_data

ROOT = Path(__file__).resolve().parent.parent



def test_small_scenario_parses_with_defaults() -> None:
    sc = parse_scenario(small_scenario_data(), "ok.toml")
    assert sc.cell.machines == 12
    assert sc.section.conflict_mode is ConflictMode.RESOURCE
    assert sc.section.txn_mode is TxnMode.INCREMENTAL
    assert sc.section.max_attempts == 1000
    assert [s.count for s in sc.section.schedulers] == [2, 1]


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.toml")))
def test_shipped_scenarios_are_valid_and_documented(path: Path) -> None:
    text = path.read_text()
    assert text.startswith("#"), "a scenario starts with a comment header"
    assert "What it shows" in text and "What to look at" in text
    # A comparison file (several architectures) is parsed once per architecture;
    # one that includes another is read with it, as the commands read it.
    from schedlab.api.scenario_files import load_data

    data = load_data(path, [])
    if "sites" in data:  # a federation: every site a scenario of its own
        from schedlab.schedulers.federation.spec import parse_federation

        assert len(parse_federation(data, str(path)).sites) >= 2
        return
    assert parse_comparison(data, str(path))


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


# --- Sizes that cannot be built are refused from the numbers alone -----------

SMALL = Limits(20, "in this test")


def test_size_refusals_build_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Structural: parse refuses a huge cell before anything sized by it
    exists (not the cell arrays, not the roster of host actors, not a job)."""
    def built(*_a: object, **_k: object) -> None:
        raise AssertionError("built something before refusing")

    for where, name in (("schedlab.schedulers.scenario.parse", "roster_for"), ("schedlab.schedulers.model.cluster", "build_cell"),
                        ("schedlab.schedulers.model.workload", "generate_jobs"), ("schedlab.schedulers.model.workload", "prefill")):
        monkeypatch.setattr(f"{where}.{name}", built)
    data = small_scenario_data()
    data["cell"]["machine_classes"][0]["count"] = 100_000_000
    assert "cell.machine_classes: 100,000,004 machines in all; a cell can have at most 100,000" in _err(data)
    data = small_scenario_data()
    data["workload"]["classes"][0]["tasks"] = {"dist": "lognormal", "mean": 1e12, "sigma": 0.8}
    assert "workload.classes[0].tasks: lognormal with a mean of 1,000,000,000,000 tasks per job" in _err(data)


def test_the_sim_engine_is_not_held_to_rays_actor_bound_but_a_switch_to_ray_is() -> None:
    """Sim actors are objects in one process: a cell of one host actor per
    machine far past Ray's bound parses for sim; ``--engine ray`` on it is
    refused in one line, as a file that says ray would be."""
    import argparse

    from schedlab.api.scenario_files import override

    data = small_scenario_data(engine="sim")
    data["cell"]["machines_per_actor"] = 1
    data["cell"]["machine_classes"][0]["count"] = 12_000
    sc = parse_scenario(data, "big.toml", SMALL)
    assert sc.cell.machines > CLUSTER.actors
    with pytest.raises(ScenarioError) as e:
        override(sc, argparse.Namespace(seed=None, time_scale=None, engine="ray", address=None))
    assert str(e.value).startswith("big.toml: cell.machines_per_actor: ") and "raise machines_per_actor" in str(e.value)
    with pytest.raises(ScenarioError):
        parse_scenario(data | {"engine": "ray"}, "big.toml", SMALL)


def test_host_actors_over_the_limit_name_the_knob_that_lowers_them() -> None:
    data = small_scenario_data()
    data["cell"]["machines_per_actor"] = 1  # 12 host actors + 7 others (3 schedulers, cellstate, 3 core) = 19
    assert parse_scenario(data, "ok.toml", SMALL).cell.machines == 12
    data["cell"]["machine_classes"][0]["count"] = 9  # 13 + 7 = 20
    assert parse_scenario(data, "ok.toml", SMALL)
    data["cell"]["machine_classes"][0]["count"] = 10
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, "bad.toml", SMALL)
    assert str(e.value) == ("bad.toml: cell.machines_per_actor: 14 machines at 1 per host actor are 14 host actors "
                            "(+7 others); at most 20 actors in this test: raise machines_per_actor to at least 2")


def test_scheduler_count_over_the_actor_limit() -> None:
    data = small_scenario_data()
    data["omega"]["schedulers"][1]["count"] = 1_000_000
    msg = _err(data)
    assert "omega.schedulers[1].count: 1,000,006 actors besides the machine hosts; at most" in msg


def test_the_cluster_limit_is_rays_envelope_and_the_local_one_this_machines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert limits_for("10.0.0.1:6379") == CLUSTER and CLUSTER.actors == 10_000
    local = limits_for(None)
    assert local == local_limits() and 0 < local.actors <= 10_000 and "on this machine" in local.why
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # runtime.connect joins it: so do the limits
    assert limits_for(None) == CLUSTER


def test_memory_limits_are_arithmetic_on_the_memory_given() -> None:
    """The pure half: 80% of the memory at 55 MB per actor, capped by Ray's
    envelope; the parser, given no limits, never looks at the machine."""
    assert memory_limits(24 << 30).actors == int(0.8 * (24 << 30) / (55 << 20)) == 357
    assert "24 GiB" in memory_limits(24 << 30).why
    assert memory_limits(10 << 40) == Limits(10_000, memory_limits(10 << 40).why)
    data = small_scenario_data()
    data["omega"]["schedulers"][1]["count"] = 2_000  # over any laptop's memory, under Ray's envelope
    assert parse_scenario(data, "ok.toml").section.schedulers[1].count == 2_000
    with pytest.raises(ScenarioError, match="at most 357 actors on this machine"):
        parse_scenario(data, "ok.toml", memory_limits(24 << 30))


@pytest.mark.parametrize("tasks, problem", [
    ({"dist": "empirical", "values": [1, 1e9], "weights": [1e9, 1]}, "tasks: up to 1,000,000,000 tasks per job"),
    ({"dist": "uniform", "low": 1, "high": 2e5}, "tasks: up to 200,000 tasks per job"),
    (150_000.0, "tasks: up to 150,000 tasks per job"),
    ({"dist": "exponential", "mean": 5e4}, "tasks: ~100,000,267 tasks in the run (2,000 jobs of ~50,000 tasks"),
])
def test_tasks_per_job_and_per_run_are_bounded(tasks: object, problem: str) -> None:
    data = small_scenario_data(duration=4000.0)
    data["workload"]["classes"][0]["tasks"] = tasks
    msg = _err(data)
    assert f"workload.classes[0].{problem}" in msg and "at most" in msg


def test_jobs_per_run_are_bounded_by_duration_over_interarrival() -> None:
    data = small_scenario_data(duration=1e9)
    assert "workload.classes[0].interarrival: ~533,333,333 jobs in the run" in _err(data)
    data = small_scenario_data()
    data["workload"]["classes"][1]["interarrival"] = 1e-4
    data["workload"]["classes"][1]["start"] = 290.0  # only the last 10 s: 100,001 jobs, under the limit
    assert parse_scenario(data, "ok.toml")
    data["workload"]["classes"][1]["start"] = 0.0
    assert "workload.classes[1].interarrival: ~3,000,151 jobs in the run" in _err(data)


def test_mesos_data_replicas_are_bounded_by_what_a_framework_holds() -> None:
    data = small_scenario_data(architecture="mesos", duration=3e5)
    del data["omega"]
    data["workload"]["classes"][0]["interarrival"] = 0.5  # 600,000 jobs x 3 tasks
    data["mesos"] = {"frameworks": [{"name": "f", "classes": ["batch", "service"], "data_replicas": 3}]}
    assert parse_scenario(data, "ok.toml").section.frameworks[0].data_replicas == 3
    data["mesos"]["frameworks"][0]["data_replicas"] = 10
    assert "mesos.frameworks[0].data_replicas: ~" in _err(data)
