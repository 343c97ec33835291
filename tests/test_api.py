"""The Python API (schedlab.run, schedlab.load, Run and its tables) on the
sim engine: the per-job and per-task rows agree with summary.json and with
the events they come from, runs repeat exactly, bad input fails in one line."""
from __future__ import annotations

import collections
import gc
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import schedlab
from schedlab.actors.analysis.stats import percentiles
from schedlab.actors.common.event_files import read_events
from tests.conftest import small_scenario_data
from schedlab.schedulers.events.shared import PREEMPTED, TASKS_COMPLETED, TASKS_LAUNCHED, TASKS_LOST, TXN

REPO = Path(__file__).resolve().parents[1]

# (label, scenario, settings): every architecture, and the scenarios whose
# jobs end otherwise (rejected, preempted, abandoned, pending).
CASES = {
    "omega": ("architectures", {"architecture": "omega", "duration": 300}),
    "mesos": ("architectures", {"architecture": "mesos", "duration": 300}),
    "borg": ("architectures", {"architecture": "borg", "duration": 300}),
    "dispatcher": ("dispatcher", {"duration": 300}),
    "borg_priorities": ("borg_priorities", {"duration": 600}),
    "mesos_offers": ("mesos_offers", {"duration": 300}),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, schedlab.Run]:
    base = tmp_path_factory.mktemp("api")
    return {label: schedlab.run(sc, engine="sim", out=base / label, **settings) for label, (sc, settings) in CASES.items()}


def mesos_revocation_data() -> dict:
    """A hog framework fills the cell; a late one with a guarantee gets it by revocation."""
    data = small_scenario_data(engine="sim", duration=300.0)
    del data["omega"]
    data["architecture"] = "mesos"
    data["workload"]["prefill_utilization"] = 0.0
    data["workload"]["classes"] = [
        {"name": "hog", "kind": "batch", "interarrival": 2.0, "tasks": 16.0, "duration": 1000.0, "cpu": 1.0, "mem": 1.0},
        {"name": "late", "kind": "batch", "interarrival": 20.0, "tasks": 4.0, "duration": 30.0, "cpu": 1.0, "mem": 1.0},
    ]
    data["mesos"] = {"granularity": "agent", "revocation": True, "starvation_timeout": 5.0, "frameworks": [
        {"name": "hog", "classes": ["hog"], "t_job": 0.2, "t_task": 0.01},
        {"name": "late", "classes": ["late"], "t_job": 0.2, "t_task": 0.01, "guarantee": 0.3},
    ]}
    return data


def test_importing_schedlab_imports_neither_ray_nor_the_api() -> None:
    code = ("import sys, schedlab; assert 'ray' not in sys.modules and 'schedlab.api' not in sys.modules; "
            "from schedlab import api; assert 'ray' not in sys.modules; assert schedlab.run is api.run and schedlab.Run is api.Run; "
            "assert 'run' in dir(schedlab); print('ok')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        schedlab.nope  # noqa: B018


@pytest.mark.parametrize("label", list(CASES))
def test_a_row_per_job_that_agrees_with_the_summary(runs: dict[str, schedlab.Run], label: str) -> None:
    run = runs[label]
    s = run.summary
    rows = list(run.jobs())
    assert len(rows) == s["jobs"]["submitted"] > 0
    assert len({r["job_id"] for r in rows}) == len(rows)
    status = collections.Counter(r["status"] for r in rows)
    for key in ("scheduled", "abandoned", "pending"):
        assert status[key] == s["jobs"][key], key
    assert status["unreported"] == s["invariants"]["lost_jobs"] == 0
    assert sum(r["completed_s"] is not None for r in rows) == s["jobs"]["completed"]
    # Wait times recomputed from the rows are the summary's, to the digit.
    first = [r["first_attempt_s"] - r["submit_s"] for r in rows if r["first_attempt_s"] is not None]
    full = [r["scheduled_s"] - r["submit_s"] for r in rows if r["scheduled_s"] is not None]
    assert percentiles(first) == s["wait_time_s"]["first_attempt"]
    assert percentiles(full) == s["wait_time_s"]["fully_scheduled"]
    for cls, waits in s["wait_time_s"]["by_class"].items():
        mine = [r for r in rows if r["job_class"] == cls]
        assert percentiles(r["first_attempt_s"] - r["submit_s"] for r in mine if r["first_attempt_s"] is not None) == waits["first_attempt"]
    # Per-job attempts and conflicts add up to each scheduler's.
    by_sched = {x["name"]: x for x in s["schedulers"]}
    txns = [e for e in read_events(run.path / "events.jsonl") if e["event"] == TXN]
    assert sum(r["attempts"] for r in rows) == len(txns) == sum(x["attempts"] for x in by_sched.values())
    assert sum(r["conflicts"] for r in rows) == sum(x["claims"]["conflicted"] for x in by_sched.values())
    assert sum(r["claims"] for r in rows) == sum(x["claims"]["committed"] + x["claims"]["conflicted"] for x in by_sched.values())
    for r in rows:
        assert r["submit_s"] <= (r["first_attempt_s"] if r["first_attempt_s"] is not None else np.inf)
        if r["scheduled_s"] is not None:
            assert r["first_attempt_s"] is not None and r["first_attempt_s"] <= r["scheduled_s"]
        if r["completed_s"] is not None:
            assert r["kind"] == "batch" and r["status"] == "scheduled"


def test_rejected_and_preempted_jobs(runs: dict[str, schedlab.Run]) -> None:
    run = runs["borg_priorities"]
    rows = list(run.jobs())
    assert sum(r["status"] == "rejected" for r in rows) == run.summary["jobs"]["rejected"] > 0
    events = read_events(run.path / "events.jsonl")
    victims = [v for e in events if e["event"] == PREEMPTED for v in e["victims"]]
    assert sum(r["preemptions"] for r in rows) == sum(1 for v in victims if v[0] >= 0) > 0
    assert len(victims) == run.summary["borg"]["preemptions"]["total"]
    # A victim that was running is killed on its machine, and its task row says so.
    killed = {(t["job_id"], t["task"]) for t in run.tasks() if t["outcome"] == "killed"}
    assert killed and killed <= {(v[0], v[1]) for v in victims}


def test_revoked_tasks_count_as_preemptions(tmp_path: Path) -> None:
    run = schedlab.run(mesos_revocation_data(), out=tmp_path)
    assert run.summary["mesos"]["revocations"] > 0
    events = read_events(tmp_path / "events.jsonl")
    revoked = [t for e in events if e["event"] == TASKS_LOST and e["reason"] == "revoked" for t in e["tasks"]]
    jobs = {r["job_id"]: r for r in run.jobs()}
    assert sum(r["preemptions"] for r in jobs.values()) == len(revoked) > 0
    assert {jobs[t[0]]["job_class"] for t in revoked} == {"hog"}


@pytest.mark.parametrize("label", ["omega", "borg_priorities"])
def test_a_row_per_launch_ended_as_the_events_say(runs: dict[str, schedlab.Run], label: str) -> None:
    run = runs[label]
    events = read_events(run.path / "events.jsonl")
    rows = list(run.tasks())
    launched = [t for e in events if e["event"] == TASKS_LAUNCHED for t in e["tasks"]]
    assert sorted((r["job_id"], r["task"], r["machine"]) for r in rows) == sorted((t[0], t[1], t[2]) for t in launched)
    assert [r["launched_s"] for r in rows] == sorted(r["launched_s"] for r in rows)
    assert sum(r["prefill"] for r in rows) == run.summary["jobs"]["prefill_tasks"]
    ends = {(t[0], t[1], t[2], t[3]) for e in events if e["event"] == TASKS_COMPLETED for t in e["tasks"]}
    done = [r for r in rows if r["outcome"] == "completed"]
    assert done and {(r["job_id"], r["task"], r["machine"], r["end_s"]) for r in done} == ends
    for r in rows:
        assert (r["end_s"] is None) == (r["outcome"] == "running")
        assert r["end_s"] is None or r["end_s"] >= r["start_s"]
    # A completed batch job's completion is its last task's end.
    last: dict[int, float] = {}
    for r in done:
        last[r["job_id"]] = max(r["end_s"], last.get(r["job_id"], r["end_s"]))
    for j in run.jobs():
        if j["completed_s"] is not None:
            assert j["completed_s"] == last[j["job_id"]]


def test_tasks_on_a_killed_host_are_lost_when_it_dies(tmp_path: Path) -> None:
    data = small_scenario_data(engine="sim", duration=200.0)
    data["faults"] = [{"at": 100.0, "action": "kill", "target": "machine-host-1"}]
    run = schedlab.run(data, out=tmp_path)
    killed_at = next(f["at_s"] for f in run.summary["faults"] if f["kind"] == "kill")
    lost = [r for r in run.tasks() if r["outcome"] == "lost"]
    assert lost and all(r["host"] == 1 for r in lost)
    assert {r["end_s"] for r in lost} == {killed_at}
    assert not [r for r in run.tasks() if r["host"] == 1 and r["outcome"] == "running"]


def test_samples_are_the_utilization_the_summary_averages(runs: dict[str, schedlab.Run]) -> None:
    for run in runs.values():
        s = run.samples()
        assert len(s) == run.summary["utilization"]["samples"] > 0
        assert round(float(np.mean(s["cpu"])), 6) == run.summary["utilization"]["cpu_mean"]
        assert all(0 <= t <= run.summary["emulated_seconds"] + 1e-6 for t in s["t"])


def test_events_are_the_file_in_order(runs: dict[str, schedlab.Run]) -> None:
    run = runs["omega"]
    events = read_events(run.path / "events.jsonl")
    table = run.events()
    assert len(table) == len(events) == run.summary["events"]
    assert [{"t": r["t"], "event": r["event"], "actor": r["actor"], **r["fields"]} for r in table] == events


def test_same_scenario_and_seed_give_the_same_tables() -> None:
    a, b = (schedlab.run("quickstart", engine="sim", seed=5, duration=200) for _ in range(2))
    c = schedlab.run("quickstart", engine="sim", seed=6, duration=200)
    for name in ("jobs", "tasks", "samples", "events"):
        assert a.table(name).rows == b.table(name).rows, name
    assert a.jobs().rows != c.jobs().rows


def test_settings_and_overrides_reach_the_scenario() -> None:
    from schedlab.api.runs import build_scenario

    sc = build_scenario("quickstart", engine="sim", seed=3, duration=600,
                        overrides={"omega.schedulers.0.t_job": 2, "workload.prefill_utilization": 0.5})
    assert (sc.engine, sc.seed, sc.duration, sc.section.schedulers[0].t_job, sc.workload.prefill_utilization) == ("sim", 3, 600.0, 2.0, 0.5)
    data = small_scenario_data()
    before = json.dumps(data, sort_keys=True)
    sc = build_scenario(data, overrides={"omega.schedulers.1.t_job": 9.0})
    assert sc.section.schedulers[-1].t_job == 9.0 and json.dumps(data, sort_keys=True) == before  # the caller's dict is left alone
    assert build_scenario("architectures", architecture="mesos").architecture == "mesos"
    # numpy values (a sweep over np.linspace) are taken as the numbers they are.
    sc = build_scenario("quickstart", duration=np.float64(100), overrides={"omega.schedulers.0.count": np.int64(2)})
    assert (sc.duration, sc.section.schedulers[0].count) == (100.0, 2)


@pytest.mark.parametrize("kwargs, words", [
    ({"scenario": "no_such_scenario"}, ["no_such_scenario", "no such file"]),
    ({"scenario": 42}, ["scenario", "int"]),
    ({"overrides": {"omega.schedulers.9.t_job": 1}}, ["omega.schedulers.9.t_job", "no such key"]),
    ({"overrides": {"omega.schedulers.0.t_jbo": 1}}, ["t_jbo", "unknown key"]),
    ({"overrides": {"omega..x": 1}}, ["omega..x", "dotted key"]),
    ({"overrides": [("duration", 3)]}, ["overrides", "dict"]),
    ({"duration": -5}, ["duration", "> 0"]),
    ({"duration": 100, "overrides": {"duration": 200}}, ["duration", "both"]),
    ({"engine": "warp"}, ["engine", "warp"]),
    ({"seed": -1}, ["seed", ">= 0"]),
    ({"scenario": "architectures"}, ["architectures", "architecture="]),
    ({"scenario": "architectures", "architecture": "lsf"}, ["architecture", "lsf"]),
])
def test_bad_input_is_one_line_naming_the_key(kwargs: dict[str, Any], words: list[str]) -> None:
    from schedlab.api.runs import build_scenario

    kwargs = {"scenario": "quickstart", **kwargs}
    with pytest.raises(schedlab.ScenarioError) as e:
        build_scenario(kwargs.pop("scenario"), **kwargs)
    msg = str(e.value)
    assert "\n" not in msg and all(w in msg for w in words), msg


def test_bad_input_fails_before_anything_runs(tmp_path: Path) -> None:
    with pytest.raises(schedlab.ScenarioError, match="t_jbo"):
        schedlab.run("quickstart", engine="sim", out=tmp_path / "out", overrides={"omega.schedulers.0.t_jbo": 1})
    assert not (tmp_path / "out").exists()


def test_without_out_the_run_lives_as_long_as_the_run_object() -> None:
    run = schedlab.run("quickstart", engine="sim", duration=60)
    path = run.path
    assert (path / "summary.json").is_file() and len(run.jobs()) == run.summary["jobs"]["submitted"]
    del run
    gc.collect()
    assert not path.exists()


def test_load_opens_a_saved_run_and_refuses_what_is_not_one(runs: dict[str, schedlab.Run], tmp_path: Path) -> None:
    saved = schedlab.load(runs["omega"].path)
    assert saved.summary == runs["omega"].summary and saved.jobs().rows == runs["omega"].jobs().rows
    assert "omega" in repr(saved)
    with pytest.raises(schedlab.NotARun, match="not a schedlab run directory"):
        schedlab.load(tmp_path)
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "events.jsonl").write_text("{not json\n")
    broken = schedlab.load(tmp_path)
    with pytest.raises(schedlab.NotARun, match="events.jsonl"):
        broken.jobs()
    with pytest.raises(schedlab.NotARun, match="did not finish"):
        broken.summary  # noqa: B018
    assert "unfinished" in repr(broken)


def test_a_table_reads_by_row_and_by_column(runs: dict[str, schedlab.Run]) -> None:
    jobs = runs["omega"].jobs()
    first = next(iter(jobs))
    assert list(first) == jobs.names and jobs["job_id"][0] == first["job_id"]
    assert "conflicts (int)" in jobs.describe()
    with pytest.raises(ValueError):
        jobs["no_such_column"]
    with pytest.raises(ValueError, match="no table"):
        runs["omega"].table("nope")


def test_to_pandas(runs: dict[str, schedlab.Run]) -> None:
    pytest.importorskip("pandas")
    run = runs["mesos_offers"]
    df = run.jobs().to_pandas()
    assert list(df.columns) == run.jobs().names and len(df) == run.summary["jobs"]["submitted"]
    assert str(df["job_id"].dtype) == "int64" and str(df["scheduled_s"].dtype) == "float64"
    assert df["scheduled_s"].isna().sum() == run.summary["jobs"]["submitted"] - run.summary["jobs"]["scheduled"]
    assert df.groupby("status").size().to_dict() == collections.Counter(run.jobs()["status"])
    tasks = run.tasks().to_pandas()
    assert str(tasks["prefill"].dtype) == "bool" and len(tasks) == len(run.tasks())


def test_to_pandas_without_pandas_says_how_to_install(runs: dict[str, schedlab.Run], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now fails
    with pytest.raises(ImportError, match=r"pip install 'schedlab\[analysis\]'"):
        runs["omega"].jobs().to_pandas()


def test_the_python_sweep_script_runs_and_plots(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    p = subprocess.run([sys.executable, "-m", "schedlab.scenarios.python_sweep", "--out", "out", "--seeds", "1",
                        "--values", "5,30", "--duration", "300"], capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    rows = [line.split() for line in p.stdout.splitlines() if line.strip() and line.split()[0] in ("5", "30")]
    assert [r[0] for r in rows] == ["5", "30"] and all(float(r[1]) >= 0 and float(r[2]) >= 0 for r in rows)
    png = tmp_path / "out" / "python_sweep.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
