"""[workload.trace]: a converted trace as a scenario's cell and workload, on
every architecture (sim), and refused in one line where it cannot be."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from schedlab.actors.run import plan_run, run_scenario
from schedlab.schedulers import arch as registry
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conformance.scenarios import conformance_data
from tests.conftest import scenario_error
from tests.traces.small import MACHINES, small_trace


@pytest.fixture(scope="module")
def trace_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("trace") / "small.npz"
    small_trace().save(path)
    return path


def _data(arch: str, path: Path, **trace: object) -> dict:
    data = conformance_data(arch) | {"engine": "sim", "duration": 300.0}
    data["cell"] = {"machines_per_actor": 1}
    data["workload"] = {"trace": {"file": str(path), "classes": {"production": "service", "batch": "batch"}, **trace}}
    return data


def test_the_cell_is_the_traces_machines_at_the_window_start(trace_file: Path) -> None:
    sc = parse_scenario(_data("omega", trace_file), "<t>")
    classes = sc.cell.machine_classes
    assert [(c.count, c.capacity) for c in classes] == [(8, (1.0, 1.0)), (4, (0.5, 0.5))]  # largest first
    assert sc.cell.machines == MACHINES


def test_jobs_arrive_as_recorded_each_task_running_its_last_attempt(trace_file: Path) -> None:
    t = small_trace()
    sc = parse_scenario(_data("omega", trace_file), "<t>")
    kinds = {c.name: c.kind.value for c in sc.workload.classes}
    assert kinds == {"service": "service", "batch": "batch"}
    plan = plan_run(sc)
    run = t.run_times()
    ran_jobs = np.unique(t.task_job[~np.isnan(run)])
    arriving = ran_jobs[(t.job_submit[ran_jobs] >= 0) & (t.job_submit[ran_jobs] < sc.duration)]  # the run's span
    assert len(plan.jobs) == arriving.size
    submits = sorted(j["submit_time"] for j in plan.jobs)
    assert submits == sorted(t.job_submit[arriving].tolist())
    # A job's durations are its tasks' recorded run times (inf -> -1 on the wire).
    first = int(arriving[np.argmin(t.job_submit[arriving])])
    want = [-1.0 if math.isinf(x) else x for x in run[t.task_job == first] if not math.isnan(x)]
    got = next(j for j in plan.jobs if j["submit_time"] == t.job_submit[first])
    assert got["durations"] == pytest.approx(want)


def test_standing_tasks_start_on_the_machines_the_trace_recorded(trace_file: Path) -> None:
    t = small_trace()
    sc = parse_scenario(_data("omega", trace_file), "<t>")
    plan = plan_run(sc)
    on = sorted(m for machines in plan.prefill.machines for m in machines.tolist())
    recorded = t.task_machine[np.isin(t.task_job, np.flatnonzero(t.job_submit < 0))]
    # The cell lays out the 8 large machines first, then the 4 small: trace ids 1000..1007, then 1008..1011.
    assert on == sorted(int(np.flatnonzero(np.sort(t.machine_source) == t.machine_source[m])[0]) for m in recorded)


def test_compress_divides_every_time(trace_file: Path) -> None:
    plain = plan_run(parse_scenario(_data("omega", trace_file) | {"duration": 1000.0}, "<t>")).jobs
    fast = plan_run(parse_scenario(_data("omega", trace_file, compress=10.0) | {"duration": 1000.0}, "<t>")).jobs
    assert len(fast) == len(plain) > 0
    for a, b in zip(plain, fast):
        assert b["submit_time"] == pytest.approx(a["submit_time"] / 10)
        assert b["durations"] == pytest.approx([d / 10 if d > 0 else d for d in a["durations"]])


def test_tiers_and_a_window_select_the_jobs(trace_file: Path) -> None:
    data = _data("omega", trace_file, tiers=["batch"], window=[100.0, 300.0])
    data["omega"] = registry.spec_of("omega").example(("batch",))
    sc = parse_scenario(data, "<t>")
    assert [c.name for c in sc.workload.classes] == ["batch"]
    assert all(0 <= j.submit < 200.0 for j in sc.workload.classes[0].trace)
    assert sc.workload.standing  # jobs running at 100 s


def test_a_class_no_scheduler_takes_is_the_architectures_refusal(trace_file: Path) -> None:
    data = _data("omega", trace_file, classes={"production": "prod", "batch": "batch"})
    assert "unknown job class" in scenario_error(data) or "prod" in scenario_error(data)


@pytest.mark.parametrize("trace, message", [
    ({"tiers": ["gold"]}, "workload.trace.tiers: 'gold' is not a tier of the trace (production, batch)"),
    ({"classes": {"gold": "x"}}, "workload.trace.classes: 'gold' is not a tier of the trace (production, batch)"),
    ({"window": [900.0, 1000.0]}, "workload.trace.window: starts at 900 s, after the trace's end (600 s)"),
    ({"window": [10.0, 5.0]}, "workload.trace.window: must be [start, end] with 0 <= start < end (got [10.0, 5.0])"),
    ({"units": {"gpu": 2.0}}, "workload.trace.units: 'gpu' is not one of the trace's resources (cpu, mem)"),
    ({"compress": 0.0}, "workload.trace.compress: must be > 0 (got 0.0)"),
])
def test_a_bad_trace_table_is_refused_in_one_line(trace_file: Path, trace: dict, message: str) -> None:
    data = _data("omega", trace_file)
    data["workload"]["trace"] |= trace
    assert scenario_error(data) == f"bad.toml: {message}"


def test_a_missing_or_foreign_file_is_refused_in_one_line(trace_file: Path, tmp_path: Path) -> None:
    data = _data("omega", tmp_path / "none.npz")
    assert "workload.trace.file: no file" in scenario_error(data)
    (tmp_path / "x.npz").write_text("hello")
    assert "not a converted trace" in scenario_error(_data("omega", tmp_path / "x.npz"))
    data = _data("omega", trace_file)
    data["workload"]["classes"] = [{"name": "b", "kind": "batch", "interarrival": 1.0, "cpu": 0.1, "mem": 0.1}]
    assert scenario_error(data) == "bad.toml: workload.classes: give one workload: [workload.trace] makes the job classes"


@pytest.mark.parametrize("arch", registry.names())
def test_every_architecture_replays_a_trace_as_its_machines_come_and_go(arch: str, trace_file: Path, tmp_path: Path) -> None:
    """The small trace removes a machine half way: its host is killed then,
    the architecture writes its tasks off and places them again; every
    invariant holds (the removal is a fault, not collateral damage)."""
    sc = parse_scenario(_data(arch, trace_file, units={"cpu": 8.0, "mem": 32.0}) | {"duration": 400.0}, f"<{arch}>")
    assert [(f.action, f.at) for f in sc.faults] == [("kill", 300.0)]
    summary = run_scenario(sc, tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    assert summary["jobs"]["submitted"] == len(plan_run(sc).jobs) > 0
    assert summary["jobs"]["scheduled"] > 0
    assert [(f["kind"], f["target"]) for f in summary["faults"]] == [("kill", sc.faults[0].target)]


def test_the_summary_sets_the_traces_own_waits_and_machines_beside_the_replays(trace_file: Path, tmp_path: Path) -> None:
    sc = parse_scenario(_data("omega", trace_file, compress=4.0), "<t>")
    summary = run_scenario(sc, tmp_path)
    tr = summary["trace"]
    assert set(tr["by_class"]) == {"batch", "service"}
    for cls, b in tr["by_class"].items():
        assert b["recorded_s"]["p50"] == pytest.approx(1.0 / 4.0)  # every task started 1 s after its submission
        assert b["jobs"] == sum(1 for j in plan_run(sc).jobs if j["job_class"] == cls)
        assert b["replayed_s"]["p50"] == summary["wait_time_s"]["by_class"][cls]["fully_scheduled"]["p50"]
    assert tr["tasks_compared"] > 0 and 0.0 <= tr["same_machine"] <= 1.0
    from schedlab.actors.analysis.summary_schema import SUMMARY
    from tests.test_reference import _generalize, _paths
    written = {_generalize(p) for p in _paths({"trace": tr})} | {"trace"}
    assert written == {k.path for k in SUMMARY if k.path == "trace" or k.path.startswith("trace.")}
    from schedlab.api.report import write_report
    text = write_report(tmp_path).read_text()
    assert "The trace's own scheduling beside this run's" in text
    assert f"| batch | {tr['by_class']['batch']['jobs']} | 0.25 / " in text


def test_a_trace_without_recorded_starts_has_no_reference(tmp_path: Path) -> None:
    from schedlab.schedulers.traces.readers import ReadOptions, convert
    path = tmp_path / "css.npz"
    convert(Path(__file__).resolve().parents[2] / "scenarios" / "paper" / "css-example", "css",
            options=ReadOptions(horizon=100.0, machines=20)).save(path)
    data = _data("omega", path, tiers=["batch"])
    data["workload"]["trace"]["classes"] = {}
    data["omega"] = registry.spec_of("omega").example(("batch",))
    sc = parse_scenario(data, "<t>")
    assert plan_run(sc).reference is None
