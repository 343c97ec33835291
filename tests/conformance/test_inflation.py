"""Workload inflation ([workload.inflate]) on every architecture: arrivals
drawn from the workload's classes, never leaving, until their demand for a
resource reaches a multiple of the cell's; each architecture places them
with its own scheduler, every invariant holds, and the summary's
inflation block measures what was allocated."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from schedlab.actors.run import plan_run, run_scenario
from schedlab.schedulers import arch as registry
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conformance.scenarios import conformance_data
from tests.conftest import scenario_error as _err


def _data(arch: str) -> dict:
    data = conformance_data(arch) | {"engine": "sim", "duration": 200.0}
    data["workload"]["prefill_utilization"] = 0.0
    data["workload"]["inflate"] = {"resource": "cpu", "until": 1.2, "gap": 1.0}
    return data


@pytest.mark.parametrize("arch", registry.names())
def test_inflation_runs_on_every_architecture(arch: str, tmp_path: Path) -> None:
    sc = parse_scenario(_data(arch), f"<{arch}>")
    plan = plan_run(sc)
    cpu = sum(j["request"][0] for j in plan.jobs)
    total = float(plan.cell.capacity[:, 0].sum())
    assert cpu >= 1.2 * total and cpu - max(j["request"][0] for j in plan.jobs) < 1.2 * total  # stops at 120%
    assert all(j["durations"] == [-1.0] and len(j["durations"]) == 1 for j in plan.jobs)  # one task, never leaving
    summary = run_scenario(sc, tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    inf = summary["inflation"]
    assert inf["resource"] == "cpu" and math.isclose(inf["arrived"], cpu / total, rel_tol=1e-6)
    # (not monotonic: a preemption frees what an arrival took, and the victim may not fit again)
    assert inf["unallocated_at_full"] is not None and 0.0 <= inf["unallocated_at_full"] < 1.0 and 0.0 <= inf["unallocated_at_end"] < 1.0


def test_an_inflation_of_an_unknown_resource_is_refused() -> None:
    data = _data("omega")
    data["workload"]["inflate"]["resource"] = "gpu"
    assert _err(data) == "bad.toml: workload.inflate.resource: 'gpu' is not one of [cell] resources (cpu, mem)"
