"""A user's own placement policy runs inside the scheduler actors."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from actors.metrics import read_events
from actors.run import run_scenario
from schedulers.placement import PLACEMENT_POLICIES, register_policy, slots
from schedulers.scenario import parse_scenario
from tests.conftest import small_scenario_data

pytestmark = pytest.mark.ray


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
    placed = [t[2] for e in read_events(tmp_path / "events.jsonl") if e["event"] == "tasks_launched" and not e["prefill"] for t in e["tasks"]]
    assert placed, "the run placed nothing"
    assert all(m % 2 == 0 for m in placed)
    assert not any(summary["invariants"].values())
