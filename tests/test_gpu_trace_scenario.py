"""A GPU trace as a scenario's cell and workload ([cell] nodes, a job class
with gpu_trace): machine classes from a node list, one job per pod with its
own request, models and recorded run time; the one-line refusals; and the
replay on the sim engine, device-exact, on an architecture that places
devices, refused where shares cannot be counted."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from schedlab.actors.run import run_scenario
from schedlab.schedulers.model.alibaba_gpu import openb_tasks
from schedlab.schedulers.model.workload import generate_jobs
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conftest import cli_run_refused
from tests.conftest import scenario_error as _err

ROOT = Path(__file__).resolve().parent.parent
W = ROOT / "scenarios" / "workloads"


def _data(**over: object) -> dict:
    data = {
        "architecture": "omega", "engine": "sim", "duration": 1800.0,
        "cell": {"resources": ["cpu", "mem", "gpu"], "devices": "gpu",
                 "nodes": {"format": "openb", "file": "workloads/openb_node_list_sample.csv"}},
        "workload": {"classes": [{"name": "pods", "gpu_trace": "workloads/openb_pod_list_sample.csv", "format": "openb",
                                  "speedup": 30.0}]},
        "omega": {"schedulers": [{"name": "pods", "classes": ["pods"], "device_policy": "fgd"}]},
    }
    for path, value in over.items():
        node, *keys = path.split("__")
        where = data[node]
        for k in keys[:-1]:
            where = where[int(k)] if k.isdigit() else where[k]
        last = keys[-1]
        where[int(last) if last.isdigit() else last] = value
    return data


def test_a_node_list_is_machine_classes_of_alike_nodes_named_by_model() -> None:
    sc = parse_scenario(_data(), "ok.toml")
    classes = sc.cell.machine_classes
    assert sum(mc.count for mc in classes) == 64 == sc.cell.machines
    assert {mc.model for mc in classes} == {"", "V100M32", "V100M16", "T4", "A10"}
    assert all(mc.name.startswith(mc.model or "cpu") for mc in classes)
    assert {mc.capacity[2] for mc in classes} == {0.0, 4.0, 8.0}
    cpu_only = [mc for mc in classes if not mc.model]
    assert cpu_only[0].capacity == (96.0, 384.0, 0.0) and cpu_only[0].count == 8


def test_each_pod_is_a_job_with_its_own_request_models_and_run_time() -> None:
    sc = parse_scenario(_data(), "ok.toml")
    pods = list(openb_tasks(W / "openb_pod_list_sample.csv"))
    jobs = generate_jobs(sc.workload.classes, math.inf, sc.seed)
    assert len(jobs) == len(pods) == 1200 and all(j.tasks == 1 for j in jobs)
    by_time = sorted(pods, key=lambda p: p.submit)
    t0 = by_time[0].submit
    for job, pod in zip(jobs, by_time):
        assert job.submit_time == pytest.approx((pod.submit - t0) / 30.0)
        assert job.request == (pod.cpu, pod.mem, pod.devices)
        assert job.models == (pod.models if pod.devices else ())
        began = pod.start if pod.start is not None else pod.submit
        assert job.durations[0] == (max(pod.end - began, 1e-3) if pod.end is not None else math.inf)


def test_the_openb_sample_replays_device_exact_and_fgd_fragments_less(tmp_path: Path) -> None:
    out = {}
    for policy in ("fgd", "random_fit"):
        sc = parse_scenario(_data(**{"omega__schedulers__0__device_policy": policy}), "ok.toml")
        summary = run_scenario(sc, tmp_path / policy)
        assert not any(summary["invariants"].values()), summary["invariants"]
        assert summary["jobs"]["scheduled"] > 500
        out[policy] = summary["devices"]
    assert out["fgd"]["devices"] == 412 and set(out["fgd"]["by_model"]) == {"A10", "T4", "V100M16", "V100M32"}
    assert out["fgd"]["fragmented_mean"] < out["random_fit"]["fragmented_mean"]


def test_pai_tables_are_a_cell_and_workload_too() -> None:
    data = _data(**{"cell__nodes": {"format": "pai", "file": "workloads/pai_machine_spec_sample.csv"},
                    "workload__classes__0": {"name": "pods", "format": "pai", "gpu_trace": "workloads/pai_task_table_sample.csv",
                                             "jobs": "workloads/pai_job_table_sample.csv"}})
    sc = parse_scenario(data, "ok.toml")
    assert sum(mc.count for mc in sc.cell.machine_classes) == 16
    jobs = generate_jobs(sc.workload.classes, math.inf, sc.seed)
    assert jobs and any(0 < j.request[2] < 1 for j in jobs) and jobs[0].submit_time == 0.0


@pytest.mark.parametrize(("over", "problem"), [
    ({"cell__nodes__file": "nowhere.csv"}, "cell.nodes.file: no file 'nowhere.csv'"),
    ({"cell__nodes__format": "google"}, "cell.nodes.format: must be one of"),
    ({"workload__classes__0__jobs": "workloads/pai_job_table_sample.csv"},
     "workloads/pai_job_table_sample.csv: an openb pod list has its own submission times"),
    ({"workload__classes__0__speedup": 0.0}, "workload.classes[0].speedup: must be > 0"),
    ({"cell__devices": None}, "cell.nodes.file: "),
])
def test_a_bad_trace_scenario_is_one_line_naming_the_key(over: dict, problem: str, tmp_path: Path) -> None:
    data = _data(**over)
    if "cell__devices" in over:
        del data["cell"]["devices"]
    msg = _err(data, str(tmp_path / "bad.toml"))
    assert problem in msg, msg
    if "cell__devices" in over:
        assert "has GPUs: name the resource that holds them in [cell] devices" in msg


def _garbled(tmp_path: Path, row: int, column: str, value: str) -> Path:
    lines = (W / "openb_pod_list_sample.csv").read_text().splitlines()
    head = lines[0].split(",")
    cells = lines[row].split(",")
    cells[head.index(column)] = value
    lines[row] = ",".join(cells)
    p = tmp_path / "pods.csv"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_a_garbled_pod_row_names_the_file_line_and_column(tmp_path: Path) -> None:
    pods = _garbled(tmp_path, 7, "cpu_milli", "lots")
    msg = _err(_data(**{"workload__classes__0__gpu_trace": str(pods)}), str(tmp_path / "bad.toml"))
    assert msg.startswith(f"{tmp_path / 'bad.toml'}: workload.classes[0].gpu_trace: {pods}:8: cpu_milli: ")  # line 8: row 7


def test_a_pod_no_machine_can_hold_is_refused_by_name(tmp_path: Path) -> None:
    pods = _garbled(tmp_path, 3, "cpu_milli", "500000")
    msg = _err(_data(**{"workload__classes__0__gpu_trace": str(pods)}), str(tmp_path / "bad.toml"))
    assert "openb-pod-0002 (cpu=500, " in msg and msg.endswith("fits no machine")


def test_the_shipped_scenario_is_refused_where_shares_are_counted_by_the_cli(tmp_path: Path) -> None:
    text = (ROOT / "scenarios/openb_replay.toml").read_text()
    line = cli_run_refused(text.replace('architecture = "omega"', 'architecture = "borg"', 1)
                           .replace("workloads/", str(W) + "/"), tmp_path)
    assert "workload.classes[0].gpu_trace: architecture 'borg' counts gpu" in line
