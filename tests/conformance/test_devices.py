"""Devices on every architecture: in a cell whose further resource is held
as devices ([cell] devices), tasks asking for whole devices run on every
architecture that schedules further resources, with every invariant
holding; an architecture that places devices also runs shares of one
device restricted to a model, device-exact (each share on one device,
each whole ask on as many, no device over 1 at any moment); one that
counts them refuses shares and models with one line."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from schedlab.actors.analysis.stats import by_event
from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers import arch as registry
from schedlab.schedulers.events.shared import JOB_SUBMITTED, TASKS_COMPLETED, TASKS_KILLED, TASKS_LAUNCHED
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.scenario.toml_table import ScenarioError
from tests.conformance.scenarios import device_data

RESOURCE = "accel"
SCHEDULING = [a for a in registry.names() if registry.spec_of(a).further_resources]
PLACING = [a for a in registry.names() if registry.spec_of(a).devices]


def test_some_architecture_places_devices() -> None:
    assert PLACING


@pytest.mark.parametrize("arch", SCHEDULING)
def test_whole_devices_run_on_every_architecture(arch: str, tmp_path: Path) -> None:
    sc = parse_scenario(device_data(arch, RESOURCE) | {"engine": "sim", "duration": 240.0}, f"<{arch}>")
    summary = run_scenario(sc, tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert summary["cell"]["resources"] == ["cpu", "mem", RESOURCE]
    assert summary["utilization"]["by_resource"][RESOURCE] > 0


@pytest.mark.parametrize("arch", sorted(set(SCHEDULING) - set(PLACING)))
def test_a_share_of_one_device_is_refused_where_devices_are_counted(arch: str) -> None:
    with pytest.raises(ScenarioError, match=rf"workload\.classes\[3\]\.{RESOURCE}: .*{arch}.* counts {RESOURCE}"):
        parse_scenario(device_data(arch, RESOURCE, shares=True), f"<{arch}>")


def _device_ledger(ev: dict, declared: int, slots: int, big: set[int]) -> tuple[list, float]:
    """Replay launches and ends per machine and device column: the device
    columns each task took, and the most any device ever held."""
    timeline = [(e["t"], 1, t) for e in ev[TASKS_LAUNCHED] for t in e["tasks"]]
    timeline += [(e["t"], 0, t) for kind in (TASKS_COMPLETED, TASKS_KILLED) for e in ev.get(kind, []) for t in e["tasks"]]
    held: dict[tuple[int, int], np.ndarray] = {}
    used: dict[int, np.ndarray] = {}
    took, most = [], 0.0
    for _t, launch, task in sorted(timeline, key=lambda x: (x[0], x[1])):
        key, m = (int(task[0]), int(task[1])), int(task[2])
        if launch:
            dev = np.asarray(task[3 + declared:3 + declared + slots], dtype=np.float64)
            held[key] = dev
            used[m] = used.get(m, np.zeros(slots)) + dev
            most = max(most, float(used[m].max()))
            took.append((key[0], m, float(task[3 + declared - 1]), dev))
        elif key in held:
            used[m] -= held.pop(key)
    return took, most


@pytest.mark.parametrize("arch", PLACING)
def test_shares_and_models_are_placed_device_exact(arch: str, tmp_path: Path) -> None:
    sc = parse_scenario(device_data(arch, RESOURCE, shares=True) | {"engine": "sim", "duration": 300.0}, f"<{arch}>")
    summary = run_scenario(sc, tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    ev = by_event(read_events(tmp_path))
    asked = {e["job_id"]: e["request"][2] for e in ev[JOB_SUBMITTED]}
    big = set(range(8, 12))  # class b: the 4-device M4 machines
    took, most = _device_ledger(ev, 3, 4, big)
    assert most <= 1 + 1e-9, "a device held more than itself"
    with_devices = [(j, m, amount, dev) for j, m, amount, dev in took if asked.get(j, 0) > 0]
    assert any(0 < a < 1 for _, _, a, _ in with_devices), "no share of a device was placed"
    for _j, m, amount, dev in with_devices:
        assert m in big, "a task asking for devices ran on a machine without them"
        if amount < 1:
            assert np.count_nonzero(dev) == 1 and abs(dev.sum() - amount) < 1e-9, "a share must sit on one device"
        else:
            assert np.count_nonzero(dev) == round(amount) and np.all(dev[dev > 0] == 1.0), "whole devices, each whole"


@pytest.mark.parametrize("arch", registry.names())
def test_every_architectures_readme_says_how_it_treats_gpus(arch: str) -> None:
    """The Done-when of the accelerators work: each architecture's README says
    whether it places devices, counts them (whole only) or refuses further
    resources, as its ArchSpec does."""
    text = (Path(__file__).resolve().parents[2] / "actors" / "archs" / arch / "README.md").read_text()
    assert "**GPUs and further resources" in text
    spec = registry.spec_of(arch)
    if spec.devices:
        assert "are placed" in text
    elif spec.further_resources:
        assert "whole" in text and "a share of one GPU" in text and "in one line" in text
    else:
        assert "Refused" in text and "cell.resources" in text
