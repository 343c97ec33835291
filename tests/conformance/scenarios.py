"""The scenario the conformance suite runs for an architecture: a small cell
and workload, three coordinator replicas, and the architecture's own
``ArchSpec.example`` section. ``with_faults`` adds one kill (with restart)
per restartable role it has, and a leader kill per leader role."""
from __future__ import annotations

import copy
from typing import Any

from schedlab.schedulers import arch as registry
from schedlab.schedulers.scenario.parse import parse_scenario, roster_for

DURATION = 400.0
SHORT = 240.0  # an architecture without leader kills
SCALE = 25.0
FIRST_FAULT = 60.0
FAULT_GAP = 35.0
BACK_AFTER = 15.0

BASE: dict[str, Any] = {
    "seed": 11,
    "time_scale": SCALE,
    "duration": DURATION,
    "cell": {
        "machines_per_actor": 4,
        "machine_classes": [
            {"name": "a", "count": 8, "cpu": 4.0, "mem": 16.0, "racks": 2},
            {"name": "b", "count": 4, "cpu": 8.0, "mem": 32.0, "labels": ["big"]},
        ],
    },
    "workload": {
        "prefill_utilization": 0.2,
        "classes": [
            {"name": "batch", "kind": "batch", "interarrival": 3.0, "tasks": {"dist": "exponential", "mean": 3.0},
             "duration": {"dist": "exponential", "mean": 30.0}, "cpu": 0.5, "mem": 1.0},
            {"name": "service", "kind": "service", "interarrival": 40.0, "tasks": 2.0, "cpu": 1.0, "mem": 2.0},
        ],
    },
    "coordinator": {"replicas": 3},
    "metrics": {"sample_interval": 5.0},
}


def conformance_data(name: str, base: dict[str, Any] | None = None) -> dict[str, Any]:
    data = copy.deepcopy(BASE if base is None else base)
    data["name"] = f"conformance-{name}"
    data["architecture"] = name
    classes = tuple(c["name"] for c in data["workload"]["classes"])
    spec = registry.spec_of(name)
    data[name] = spec.example(classes)
    data["coordinator"]["replicas"] = min(3, spec.max_replicas)
    return data


def _further_resource_base(resource: str) -> dict[str, Any]:
    base = copy.deepcopy(BASE)
    base["cell"]["resources"] = ["cpu", "mem", resource]
    base["cell"]["machine_classes"][1][resource] = 4.0
    base["workload"]["classes"].append(
        {"name": "train", "kind": "batch", "interarrival": 12.0, "tasks": 2.0,
         "duration": {"dist": "exponential", "mean": 40.0}, "cpu": 1.0, "mem": 2.0,
         resource: {"dist": "empirical", "values": [1.0, 2.0], "weights": [1, 1]}})
    return base


def further_resource_data(name: str, resource: str = "accel") -> dict[str, Any]:
    """The conformance scenario in a cell with a third resource (named
    ``resource``: generic code must not care which): only the big machines
    have it (4 each), and a third job class asks for 1 or 2 of it per task."""
    return conformance_data(name, _further_resource_base(resource))


def device_data(name: str, resource: str = "accel", shares: bool = False) -> dict[str, Any]:
    """``further_resource_data`` with the resource held as devices: the big
    machines have 4 devices of model M4 each; with ``shares``, a fourth job
    class asks for a share of one device, on M4 only."""
    base = _further_resource_base(resource)
    base["cell"]["devices"] = resource
    base["cell"]["machine_classes"][1]["model"] = "M4"
    if shares:
        base["workload"]["classes"].append(
            {"name": "infer", "kind": "batch", "interarrival": 6.0, "tasks": 2.0,
             "duration": {"dist": "exponential", "mean": 40.0}, "cpu": 0.5, "mem": 1.0,
             resource: {"dist": "empirical", "values": [0.25, 0.5, 0.7]}, "models": ["M4"]})
    return conformance_data(name, base)


GANG_CLASS = {"name": "gang", "kind": "batch", "interarrival": 10.0, "tasks": 6.0, "duration": 40.0, "cpu": 3.0,
              "mem": 2.0, "gang": True, "gang_timeout": 20.0}


def gang_data(name: str) -> dict[str, Any]:
    """The conformance scenario with a class of gangs: 6 tasks of 3 cpu that
    must start together (one per 4-cpu machine at most), every 10 s: more
    than the cell holds, so gangs wait for room and compete for it."""
    base = copy.deepcopy(BASE)
    base["workload"]["classes"].append(copy.deepcopy(GANG_CLASS))
    return conformance_data(name, base)


def everything_data(name: str) -> dict[str, Any]:
    """The conformance scenario with whatever the architecture can run
    beyond it: a third resource held as devices, and a class of gangs."""
    spec = registry.spec_of(name)
    base = _further_resource_base("accel") if spec.further_resources else copy.deepcopy(BASE)
    if spec.further_resources:
        base["cell"]["devices"] = "accel"
    if spec.gang:
        base["workload"]["classes"].append(copy.deepcopy(GANG_CLASS))
    return conformance_data(name, base)


def with_faults(name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The scenario with a kill of one member of every restartable role
    (back after BACK_AFTER) and a kill of every leader role's leader, spaced
    FAULT_GAP apart; and those faults."""
    data = conformance_data(name)
    roster = roster_for(parse_scenario(copy.deepcopy(data), f"{name}.toml"))
    faults: list[dict[str, Any]] = []
    at = FIRST_FAULT
    for role, names in roster.members.items():
        if names and role in roster.restartable:
            faults.append({"at": at, "action": "kill", "target": names[-1], "restart_after": BACK_AFTER})
            at += FAULT_GAP
    for action in roster.kill_leader:
        faults.append({"at": at, "action": action, "restart_after": BACK_AFTER})
        at += FAULT_GAP
    # The run ends at DURATION, at least a minute after the last restart:
    # time to recover and show it. Not sooner even when it could: a fault
    # aimed at a leader waits for one to be elected, and on a loaded machine
    # that wait plus the failover can take the minute, so a run ending a
    # minute after the plan would end before the system recovered.
    # Without a leader kill nothing waits for an election: the run ends a
    # minute and a half after the last restart (at least SHORT), which keeps
    # the serial live tests' sum (the suite's pace) within its budget.
    data["duration"] = DURATION if roster.kill_leader else max(SHORT, at + BACK_AFTER + 90.0)
    assert at + BACK_AFTER + 60.0 <= data["duration"], "the faults must leave time to recover before the end"
    data["faults"] = faults
    return data, faults
