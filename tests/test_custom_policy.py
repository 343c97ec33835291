"""A user's own placement policy runs inside the scheduler actors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.mesos.events import OFFERS_MADE
from schedlab.schedulers.events.shared import TASKS_LAUNCHED
from schedlab.schedulers.placement.policies import PLACEMENT_POLICIES, register_policy, slots
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conftest import small_scenario_data

pytestmark = [pytest.mark.ray, pytest.mark.untimed]


def even_machines_only(free: np.ndarray, request: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    out = np.full(n_tasks, -1, dtype=np.int64)
    for t in range(n_tasks):
        s = slots(free, request)
        s[1::2] = 0
        ok = np.flatnonzero(s)
        if ok.size == 0:
            break
        free[ok[0]] -= request
        out[t] = ok[0]
    return out


def test_registered_policy_places_every_task(ray_session: None, tmp_path: Path) -> None:
    register_policy("even_machines_only", even_machines_only)
    try:
        data = small_scenario_data(duration=120.0)
        for s in data["omega"]["schedulers"]:
            s["policy"] = "even_machines_only"
        summary = run_scenario(parse_scenario(data, "custom.toml"), tmp_path)
    finally:
        PLACEMENT_POLICIES.pop("even_machines_only", None)
    placed = [t[2] for e in read_events(tmp_path / "events.jsonl") if e["event"] == TASKS_LAUNCHED and not e["prefill"] for t in e["tasks"]]
    assert placed, "the run placed nothing"
    assert all(m % 2 == 0 for m in placed)
    assert not any(summary["invariants"].values())


def heaviest_first(allocated: np.ndarray, total: np.ndarray, weights: np.ndarray, priorities: np.ndarray) -> np.ndarray:
    """A user's allocation order: the framework with the largest weight first, always."""
    return np.argsort(-weights, kind="stable")


def test_registered_allocation_policy_orders_mesos_offers(ray_session: None, tmp_path: Path) -> None:
    """A user's allocation order runs inside the Mesos master. With per-agent
    offers and no refuse filters, every agent goes to the heaviest framework
    whenever it wants offers: in a round where it got any, the other got
    none (under DRF they would share the agents)."""
    from schedlab.schedulers.archs.mesos.order_policies import ALLOCATION_POLICIES, register_allocation_policy

    register_allocation_policy("heaviest_first", heaviest_first)
    try:
        # Time scale 20 (7.5 wall s): at the default 50 the run lasts 3 wall
        # s, and under a full suite's load its offer rounds can all go by
        # before the batch framework has registered.
        data = small_scenario_data(duration=150.0, time_scale=20.0)
        del data["omega"]
        data["architecture"] = "mesos"
        data["mesos"] = {"allocator": "heaviest_first", "granularity": "agent", "frameworks": [
            {"name": "batch", "classes": ["batch"], "t_job": 0.5, "t_task": 0.01, "refuse_seconds": 0.0},
            {"name": "service", "classes": ["service"], "t_job": 0.5, "t_task": 0.01, "weight": 5.0, "refuse_seconds": 0.0},
        ]}
        summary = run_scenario(parse_scenario(data, "custom.toml"), tmp_path)
    finally:
        ALLOCATION_POLICIES.pop("heaviest_first", None)
    rounds = [{o[1] for o in e["offers"]} for e in read_events(tmp_path / "events.jsonl") if e["event"] == OFFERS_MADE]
    with_service = [r for r in rounds if "framework-service" in r]
    assert with_service and any("framework-batch" in r for r in rounds)
    assert all(r == {"framework-service"} for r in with_service)
    assert not any(summary["invariants"].values())


class EvenNodesOnly:
    """A user's Kubernetes Filter plugin: pods go to even-numbered nodes only."""

    name = "EvenNodesOnly"

    def filter(self, state, pod, view, node):  # type: ignore[no-untyped-def]
        from schedlab.schedulers.archs.kubernetes.status import SUCCESS, unschedulable

        return SUCCESS if node % 2 == 0 else unschedulable("odd node", plugin=self.name)


@pytest.mark.parametrize("engine", ["sim", "ray"])
def test_a_kubernetes_plugin_registered_by_name_runs_in_the_scheduler(ray_session: None, tmp_path: Path,
                                                                      engine: str) -> None:
    """A scenario script registers its plugin by name and a profile uses it;
    on Ray the scheduler runs in another process, where the plugin arrives
    with its configuration."""
    from schedlab.schedulers.archs.kubernetes.registry import register_plugin, unregister_plugin

    register_plugin("EvenNodesOnly", EvenNodesOnly, replace=True)
    try:
        # Live at time scale 20 (6 wall s): at the default 50 the run lasts
        # 2.4 wall s, and on a loaded machine the coordinator group's first
        # election alone can take most of them (a split vote), leaving no
        # time to place anything.
        data = {**small_scenario_data(duration=120.0), "architecture": "kubernetes", "engine": engine,
                "time_scale": 20.0 if engine == "ray" else 50.0,
                "coordinator": {"replicas": 3},
                "kubernetes": {"profiles": [{"name": "default-scheduler", "disabled": [],
                                             "plugins": ["NodeResourcesFit", "EvenNodesOnly", "DefaultBinder"]}]}}
        data.pop("omega", None)
        summary = run_scenario(parse_scenario(data, "custom.toml"), tmp_path)
    finally:
        unregister_plugin("EvenNodesOnly")
    placed = [t[2] for e in read_events(tmp_path / "events.jsonl") if e["event"] == TASKS_LAUNCHED and not e["prefill"]
              for t in e["tasks"]]
    assert placed, "the run placed nothing"
    assert all(m % 2 == 0 for m in placed)
    assert not any(summary["invariants"].values())
