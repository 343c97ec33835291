"""Resources by name on every architecture: a cell with a third resource
(only some machines have it; one job class asks for it) runs on the sim
engine with every invariant holding (the overcommit check covers every
resource), tasks asking for it land only on machines that have it, and
the summary reports its utilization; or the architecture refuses the
scenario with one line before anything starts (its ArchSpec says why)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.actors.analysis.stats import by_event
from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers import arch as registry
from schedlab.schedulers.events.shared import JOB_SUBMITTED, TASKS_LAUNCHED
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.scenario.toml_table import ScenarioError
from tests.conformance.scenarios import device_data, further_resource_data

RESOURCE = "accel"


@pytest.mark.parametrize("arch", registry.names())
def test_a_further_resource_is_honoured_or_refused(arch: str, tmp_path: Path) -> None:
    data = further_resource_data(arch, RESOURCE) | {"engine": "sim", "duration": 300.0}
    spec = registry.spec_of(arch)
    if not spec.further_resources:
        with pytest.raises(ScenarioError, match=rf"cell\.resources: .*{arch}.*{RESOURCE}"):
            parse_scenario(data, f"<{arch}>")
        return
    sc = parse_scenario(data, f"<{arch}>")
    summary = run_scenario(sc, tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert summary["cell"]["resources"] == ["cpu", "mem", RESOURCE]
    assert summary["utilization"]["by_resource"][RESOURCE] > 0
    ev = by_event(read_events(tmp_path))
    train = {e["job_id"] for e in ev[JOB_SUBMITTED] if e["request"][2] > 0}
    has = {m for m, c in enumerate(np.repeat([0.0, 4.0], [8, 4])) if c > 0}
    # [job, task, machine, cpu, mem, accel, start]: what the launch itself asked for (an AM asks for none).
    placed = [(t[0], t[2]) for e in ev[TASKS_LAUNCHED] for t in e["tasks"] if t[5] > 0]
    assert {j for j, _ in placed} & train, "no task asking for the resource was placed"
    assert {m for _, m in placed} <= has, "a task asking for it ran on a machine without it"
    from schedlab.api.runs import load

    run = load(tmp_path)
    more = run.tasks().names.index("more")
    # The tasks table carries it (an ApplicationMaster, task -1, asks for none).
    assert {r[more][0] for r in run.tasks().rows if r[0] in train and r[1] >= 0} <= {1.0, 2.0}
    assert all(len(r[run.samples().names.index("more")]) == 1 for r in run.samples().rows)


@pytest.mark.ray
def test_a_further_resource_travels_live_through_ray(ray_session: None, tmp_path: Path) -> None:
    """What only live shows: the vectors of three resources and four device
    columns in the byte blobs (deltas, claims, releases carry their width)
    and the samples, between real Ray actors, with a fault in the middle;
    shares of one device committed by real concurrent schedulers."""
    data = device_data("omega", RESOURCE, shares=True) | {"engine": "ray", "duration": 150.0}
    data["faults"] = [{"at": 60.0, "action": "kill", "target": "machine-host-2", "restart_after": 10.0}]
    summary = run_scenario(parse_scenario(data, "<live>"), tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert summary["utilization"]["by_resource"][RESOURCE] > 0 and summary["jobs"]["scheduled"] > 0
    ev = by_event(read_events(tmp_path))
    assert any(t[5] > 0 for e in ev[TASKS_LAUNCHED] for t in e["tasks"] if not e["prefill"])
    assert any(0 < t[5] < 1 for e in ev[TASKS_LAUNCHED] for t in e["tasks"]), "no share of a device was placed"
    assert summary["devices"]["allocated_mean"] > 0
