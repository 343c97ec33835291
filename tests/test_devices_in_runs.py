"""Devices in runs ([cell] devices): the declaration and its one-line
refusals, the cell's device columns, and that the commit rule and the
invariants' replay are device-exact through them (two shares that fit a
machine's sum but no single device are a conflict, and an overcommit).
Every architecture running a device cell is tests/conformance/test_devices.py."""
from __future__ import annotations

import copy
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from schedlab.actors.analysis.invariants import check_machines
from schedlab.actors.run import plan_run
from schedlab.schedulers.events.shared import TASKS_LAUNCHED
from schedlab.schedulers.model.cluster import build_cell, with_devices
from schedlab.schedulers.model.cluster import MachineClass
from schedlab.schedulers.placement.device_claims import device_view, place
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.shared_state.commit import Claims, ConflictMode, TxnMode, commit
from tests.conftest import cli_run_refused
from tests.conftest import scenario_error as _err
from tests.conformance.scenarios import device_data

RES = ("cpu", "mem", "gpu")


def _cell():
    classes = (MachineClass("two", 2, (8.0, 32.0, 2.0), model="T4"), MachineClass("none", 1, (8.0, 32.0, 0.0)))
    return with_devices(build_cell(classes, RES, "gpu"))


def test_a_cell_with_devices_has_a_column_per_device_slot_after_the_declared_ones() -> None:
    cell = _cell()
    assert cell.resources == ("cpu", "mem", "gpu", "gpu#0", "gpu#1") and cell.declared == 3 and cell.device_slots == 2
    assert cell.capacity[:, 3:].tolist() == [[1, 1], [1, 1], [0, 0]]
    assert cell.model.tolist() == [0, 0, -1] and cell.models == ("T4",)
    assert with_devices(cell) is cell  # widening twice is once


def _claim(machine: int, device: int, share: float) -> np.ndarray:
    row = np.array([1.0, 1.0, share, 0.0, 0.0])
    row[3 + device] = share
    return row


def test_two_shares_that_fit_the_sum_but_not_one_device_conflict_at_commit() -> None:
    cell = _cell()
    free, seq = cell.capacity.copy(), np.zeros(cell.size, dtype=np.int64)
    same = Claims(np.array([0, 0]), np.vstack([_claim(0, 0, 0.6), _claim(0, 0, 0.6)]), seq[[0, 0]])
    got = commit(free, seq, same, ConflictMode.RESOURCE, TxnMode.INCREMENTAL)
    assert got.accepted.tolist() == [True, False]  # 1.2 of 2 GPUs fits the sum; not device 0
    apart = Claims(np.array([0, 0]), np.vstack([_claim(0, 0, 0.6), _claim(0, 1, 0.6)]), seq[[0, 0]])
    assert commit(free, seq, apart, ConflictMode.RESOURCE, TxnMode.INCREMENTAL).accepted.all()


@pytest.mark.parametrize(("devices", "over"), [((0, 0), 1), ((0, 1), 0)])
def test_the_invariants_replay_counts_an_overcommitted_device(devices: tuple[int, int], over: int) -> None:
    cell = _cell()
    tasks = [[1, i, 0, *_claim(0, d, 0.6).tolist(), 0.0] for i, d in enumerate(devices)]
    overcommit, double = check_machines({TASKS_LAUNCHED: [{"t": 1.0, "host": 0, "tasks": tasks}]}, cell)
    assert (overcommit, double) == (over, 0)


def test_placement_fills_the_device_columns_and_respects_models() -> None:
    sc = parse_scenario(device_data("omega", "gpu", shares=True) | {"engine": "sim"}, "ok.toml")
    plan = plan_run(sc)
    cell = plan.cell
    assert cell.device_slots == 4 and all(len(j["request"]) == 7 for j in plan.jobs)
    # The prefill takes no device: which one a standing task holds is the architecture's placement.
    assert all(j.request[2] == 0 and len(j.request) == 7 for j in plan.prefill.jobs)
    assert np.array_equal(plan.prefill.free[:, 3:], cell.capacity[:, 3:])
    view = device_view(cell, sc.workload.classes, "fgd")
    assert view is not None and view.workload and abs(sum(p for _, p in view.workload) - 1) < 1e-9
    work = cell.capacity.copy()
    request = np.array([0.5, 1.0, 0.5, 0, 0, 0, 0])
    machines, rows = place(view, work, request, ["M4"], 9, np.random.default_rng(0))
    assert set(machines[machines >= 0].tolist()) <= set(range(8, 12))
    assert all(np.count_nonzero(r[3:]) == 1 and r[3:].sum() == 0.5 for r in rows)
    assert np.all(work[:, 3:] >= -1e-9) and np.allclose(work[:, 2], work[:, 3:].sum(axis=1))


def _devices_data(**change: object) -> dict:
    data = device_data("omega", "gpu", shares=True)
    for path, value in change.items():
        where, key = path.rsplit("__", 1)
        node = data
        for part in where.split("__"):
            node = node[int(part)] if part.isdigit() else node[part]
        node[key] = value
    return data


@pytest.mark.parametrize(("change", "problem"), [
    ({"workload__classes__3__gpu": 1.5}, "workload.classes[3].gpu: 1.5: a share of one device is below 1"),
    ({"workload__classes__3__gpu": 0.0001}, "workload.classes[3].gpu: 0.0001: a share of one device is at least 0.001"),
    ({"workload__classes__3__gpu": {"dist": "uniform", "low": 0.1, "high": 0.5}},
     "workload.classes[3].gpu: a device ask is a number or an empirical distribution"),
    ({"workload__classes__3__models": ["A100"]}, "workload.classes[3].models: no machine class has model 'A100'"),
    ({"workload__classes__2__gpu": 8.0}, "workload.classes[2]: a task of job class 'train'"),
    ({"cell__machine_classes__1__gpu": 2.5}, "cell.machine_classes[1].gpu: 2.5 is not a whole number of devices"),
    ({"cell__devices": "mem"}, "cell.devices: 'mem' is not one of the further resources"),
])
def test_a_bad_device_scenario_is_one_line_naming_the_key(change: dict, problem: str) -> None:
    assert _err(_devices_data(**change)).startswith(f"bad.toml: {problem}")


def test_models_without_devices_are_refused() -> None:
    data = _devices_data()
    del data["cell"]["devices"]
    assert _err(data).startswith("bad.toml: cell.machine_classes[1].model: names device models, but [cell] devices")


def test_the_cli_refuses_a_share_where_devices_are_counted_in_one_line(tmp_path: Path) -> None:
    text = (Path(__file__).resolve().parent.parent / "scenarios/gpu_devices.toml").read_text()
    line = cli_run_refused(text.replace('architecture = "omega"', 'architecture = "borg"', 1), tmp_path)
    assert "workload.classes[0].gpu: architecture 'borg' counts gpu as a number per machine" in line


def test_kubernetes_device_share_places_shares_device_exact_and_binds_with_them() -> None:
    from schedlab.actors.archs.kubernetes.scheduler import make_profile
    from schedlab.schedulers.archs.kubernetes.api_machine import KubeAPIMachine
    from schedlab.schedulers.archs.kubernetes.objects import HOSTNAME, Node, Pod, labels
    from schedlab.schedulers.archs.kubernetes.scheduler_core import KubeSchedulerCore
    from schedlab.schedulers.archs.kubernetes.section import ProfileSpec

    cell = _cell()  # two machines of 2 T4 devices, one with none: [cpu, mem, gpu, gpu#0, gpu#1]
    view = device_view(cell, (), "best_fit")
    assert view is not None
    nodes = [Node(i, f"node-{i}", tuple(cell.capacity[i]), labels({HOSTNAME: f"node-{i}"})) for i in range(cell.size)]

    def pod_of(value: dict) -> Pod:
        return Pod((value["j"], value["t"]), tuple(value["req"]), created=value["created"], scheduler_name="a",
                   models=tuple(value.get("m", ())))

    core = KubeSchedulerCore(make_profile(ProfileSpec(name="a"), devices=view), nodes, pod_of, seed=1, resources=cell.resources)
    m = KubeAPIMachine(cell.capacity, machines_per_host=1)
    m.apply(("create", [[1, t, "a", [1.0, 1.0, 0.6, 0.0, 0.0], 100.0, 0, 0.0, 5, "job", {"m": ["T4"]}] for t in range(5)]))
    core.watched(m.query(("watch", ["pods", "nodes"], 0, None))["events"], 0.0)
    cycles = [c for c in iter(lambda: core.next_cycle(1.0), None)]
    placed = [c for c in cycles if c.node is not None]
    # 0.6 of a GPU fits one device alone: four devices hold four such pods; the fifth fits none (1.2 left in sums).
    assert len(placed) == 4 and {c.node for c in placed} == {0, 1}
    for c in placed:
        dev = np.asarray(c.pod.requests[3:])
        assert np.count_nonzero(dev) == 1 and dev.sum() == pytest.approx(0.6)
    assert len({(c.node, int(np.flatnonzero(c.pod.requests[3:])[0])) for c in placed}) == 4  # one per device
    answers = m.apply(("bind", [[*c.pod.key, c.node, c.version, list(c.pod.requests)] for c in placed], 1.0))
    assert [a[0] for a in answers] == ["ok"] * 4
    launches = [x for ls in m.to_launch.values() for x in ls]  # [job, task, node, request, duration, at]
    assert len(launches) == 4 and all(np.count_nonzero(np.asarray(x[3][3:])) == 1 for x in launches)


def test_the_dispatchers_omniscient_view_frees_each_tasks_devices_at_its_end(tmp_path: Path) -> None:
    from schedlab.actors.run import run_scenario

    data = device_data("dispatcher", "gpu", shares=True) | {"engine": "sim", "duration": 300.0}
    data["dispatcher"] = {"view": "omniscient", "device_policy": "fgd"}
    summary = run_scenario(parse_scenario(data, "ok.toml"), tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert summary["devices"]["allocated_mean"] > 0


def test_a_counting_architecture_scores_whole_devices_as_the_device_policy_would() -> None:
    from schedlab.schedulers.model.devices import layout
    from schedlab.schedulers.placement import device_policies as dp
    from schedlab.schedulers.placement.device_claims import counted_view, place_counted
    from schedlab.schedulers.placement.fragmentation import DeviceCell, Shape

    cell = build_cell((MachineClass("eight", 3, (32.0, 64.0, 8.0), model="V100"),), RES, "gpu")
    free = cell.capacity.copy()
    free[0, 2], free[1, 2] = 3.0, 6.0  # what standing whole-GPU tasks left
    spec = counted_view(cell, (), "fgd")
    assert spec is not None and spec.declared == 3
    spec = dataclasses.replace(spec, workload=[(Shape((1.0, 1.0, 4.0)), 0.5), (Shape((1.0, 1.0, 1.0)), 0.5)])
    got = place_counted(spec, free.copy(), np.array([1.0, 1.0, 1.0]), 2, np.random.default_rng(3))
    devices = layout([3, 6, 8])
    expect, _ = dp.fgd(DeviceCell(free.copy(), cell.capacity, devices, cell.model, 2), Shape((1.0, 1.0, 1.0)), 2,
                       np.random.default_rng(3), spec.workload)
    assert got.tolist() == expect.tolist() and got[0] == 0  # the machine whose 3 free GPUs a 4-GPU task could not use


def test_borg_runs_whole_devices_with_a_device_scoring_mode(tmp_path: Path) -> None:
    from schedlab.actors.run import run_scenario

    data = device_data("borg", "gpu") | {"engine": "sim", "duration": 240.0}
    data["borg"] = dict(data["borg"], device_scoring="fgd")
    summary = run_scenario(parse_scenario(data, "ok.toml"), tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert summary["devices"]["allocated_mean"] > 0


def test_yarn_global_scheduling_ranks_nodes_for_gpu_containers_by_a_device_policy(tmp_path: Path) -> None:
    from schedlab.actors.run import run_scenario

    data = device_data("yarn", "gpu") | {"engine": "sim", "duration": 240.0}
    data["yarn"] = dict(data["yarn"], device_policy="fgd")
    assert _err(copy.deepcopy(data)).startswith("bad.toml: yarn.device_policy: ranks nodes for global scheduling")
    data["yarn"]["global_scheduling"] = True
    summary = run_scenario(parse_scenario(data, "ok.toml"), tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert summary["devices"]["allocated_mean"] > 0


def test_yarn_best_node_for_a_gpu_container_is_the_device_policys() -> None:
    from schedlab.schedulers.archs.yarn.requests import TaskAsk
    from schedlab.schedulers.archs.yarn.scheduler import OFF_SWITCH, best_node
    from schedlab.schedulers.placement.device_claims import counted_view
    from schedlab.schedulers.placement.fragmentation import Shape

    class State:  # what best_node reads of a ClusterState
        pass

    cell = build_cell((MachineClass("eight", 3, (32.0, 64.0, 8.0), model="V100"),), RES, "gpu")
    st = State()
    st.capacity = cell.capacity.copy()
    st.free = cell.capacity.copy()
    st.free[0, 2], st.free[1, 2] = 3.0, 6.0
    st.rack_of = np.zeros(3, dtype=np.int64)
    st.rng = np.random.default_rng(0)
    view = counted_view(cell, (), "fgd")
    assert view is not None
    st.devices = dataclasses.replace(view, workload=[(Shape((1.0, 1.0, 4.0)), 0.5), (Shape((1.0, 1.0, 1.0)), 0.5)])
    ask = TaskAsk(0, np.array([1.0, 1.0, 1.0]))
    assert best_node(st, ask) == (0, OFF_SWITCH)  # FGD: the node whose 3 free GPUs a 4-GPU container could not use
    st.devices = None
    assert best_node(st, ask)[0] == 2  # otherwise the least loaded node
