"""scripts/bench_k8s.py: its scenario is SchedulingBasic's shape (the
initial pods are the prefill, the measured ones one job at t = 0), the
window and rate arithmetic, and ``--quick`` end to end on the sim engine.
No timing assertions: speed targets belong to the bench's own output, not
to tests on a shared machine."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.schedulers.model.workload import generate_jobs
from schedlab.scripts import bench_k8s


def test_the_upstream_cases_have_their_initial_pods_and_thresholds() -> None:
    assert bench_k8s.upstream(5000, 10000) == (1000, 680, "SchedulingBasic/5000Nodes_10000Pods")
    assert bench_k8s.upstream(5000, 50000) == (5000, 810, "SchedulingBasic/5000Nodes_50000Pods")
    assert bench_k8s.upstream(100, 1000) == (100, None, None)


def test_the_scenario_submits_one_job_of_the_measured_pods_at_the_start() -> None:
    sc = bench_k8s.parse_bench(5000, 50000, 5000, "sim", 10.0)
    assert sc.architecture == "kubernetes" and sc.time_scale == 1.0
    assert sum(mc.count for mc in sc.cell.machine_classes) == 5000 and sc.cell.machines_per_actor == 250
    jobs = generate_jobs(sc.workload.classes, sc.duration, sc.seed)
    assert [(j.job_class, j.submit_time, j.tasks) for j in jobs] == [("measured", 0.0, 50000)]
    assert jobs[0].request == bench_k8s.POD


def test_the_window_ends_at_the_first_sample_after_the_last_bind() -> None:
    samples = [(0.5, 10.0, 1.0), (1.0, 11.0, 2.0), (1.5, 12.0, 3.0)]
    assert bench_k8s.window_end(samples, 0.7) == (11.0, 2.0)
    assert bench_k8s.window_end(samples, 1.0) == (11.0, 2.0)
    assert bench_k8s.window_end(samples, 9.0) == (12.0, 3.0)  # the run ended first


def _m(engine: str, **over: object) -> bench_k8s.Measured:
    base: dict = {"engine": engine, "nodes": 5000, "pods": 10000, "init_pods": 1000, "per_actor": 250,
                  "duration": 10.0, "bound": 10000, "prefill": 1000, "created_at": 0.5, "first_bind_at": 1.0,
                  "last_bind_at": 20.5, "wall_s": 30.0, "cpu_s": 40.0, "setup_wall_s": 3.0, "total_wall_s": 40.0,
                  "invariants_ok": True, "threshold": 680}
    return bench_k8s.Measured(**{**base, **over})


def test_sim_compares_cpu_pods_per_second_and_live_wall_pods_per_second() -> None:
    sim, live = _m("sim"), _m("ray")
    assert sim.emulated_rate == pytest.approx(500.0) and sim.cpu_rate == pytest.approx(250.0)
    assert sim.compared == pytest.approx(250.0)
    assert live.compared == pytest.approx(500.0)
    assert not _m("ray", bound=9000).complete
    assert bench_k8s.median_run([_m("sim", cpu_s=c) for c in (10.0, 40.0, 20.0)]).cpu_s == 20.0


def test_pods_and_engines_are_checked() -> None:
    assert bench_k8s._parse(["--pods", "10000,50_000"]).pods == [10000, 50000]
    for argv in (["--pods", "ten"], ["--pods", "0"], ["--engine", "k8s"], ["--repeat", "0"]):
        with pytest.raises(SystemExit) as e:
            bench_k8s._parse(argv)
        assert e.value.code == 2


def test_quick_bench_binds_every_pod_and_prints_the_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert bench_k8s.main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "CPU pods/s" in printed and "upstream threshold" in printed and "810 pods/s" in printed
    (row,) = json.loads(out.read_text())
    m = row["median"]
    assert m["engine"] == "sim" and m["bound"] == m["pods"] == bench_k8s.QUICK["pods"][0]
    assert m["prefill"] == 100 and m["invariants_ok"] and m["cpu_s"] > 0
    assert m["created_at"] <= m["first_bind_at"] <= m["last_bind_at"] < m["duration"]
