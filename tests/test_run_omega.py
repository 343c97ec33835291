"""End-to-end Omega runs on the sim engine (the same actors on a virtual
clock): invariants and accounting. The live engine runs the same scenario
shape in the conformance suite."""
from __future__ import annotations

import collections
import json
from pathlib import Path

import numpy as np
import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.analysis.summary import SUMMARY_KEYS, summarize
from schedlab.schedulers.events.shared import (
    JOB_ABANDONED, JOB_PENDING, JOB_SCHEDULED, JOB_SUBMITTED, TASKS_COMPLETED, TASKS_LAUNCHED, TXN,
)
from schedlab.schedulers.model.cluster import build_cell
from schedlab.schedulers.scenario.parse import parse_scenario
from tests.conftest import assert_invariants_hold, small_scenario_data

def _run(tmp_path: Path, data: dict) -> tuple[dict, list[dict], object]:
    sc = parse_scenario(data | {"engine": "sim"}, "test.toml")
    summary = run_scenario(sc, tmp_path)
    assert_invariants_hold(summary["invariants"], tmp_path, tmp_path.name)  # a bad run is kept, whichever test runs it
    return summary, read_events(tmp_path / "events.jsonl"), sc


def independent_overcommit(events: list[dict], capacity: np.ndarray) -> int:
    """A second, simpler replay than the summary's: per host, in the host's own
    emission order (which Ray preserves per caller), usage must stay within
    capacity at every launch."""
    used = np.zeros_like(capacity)
    running: dict[tuple[int, int], tuple[int, np.ndarray]] = {}
    bad = 0
    for e in events:
        if e["event"] == TASKS_COMPLETED:
            for job, task, *_rest in e["tasks"]:
                m, req = running.pop((job, task))
                used[m] -= req
        elif e["event"] == TASKS_LAUNCHED:
            for job, task, m, cpu, mem, _start in e["tasks"]:
                req = np.array([cpu, mem])
                running[(job, task)] = (m, req)
                used[m] += req
                bad += int(np.any(used[m] > capacity[m] + 1e-6))
    return bad


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, list[dict], object, Path]:
    out = tmp_path_factory.mktemp("small")
    summary, events, sc = _run(out, small_scenario_data())
    return summary, events, sc, out


def test_summary_has_every_stable_key(small_run) -> None:
    summary, _events, _sc, out = small_run
    on_disk = json.loads((out / "summary.json").read_text())
    for key in SUMMARY_KEYS:
        assert key in on_disk
    for key in ("submitted", "scheduled", "completed", "abandoned", "pending", "failed"):
        assert key in on_disk["jobs"]
    for key in ("first_attempt", "fully_scheduled"):
        assert set(on_disk["wait_time_s"][key]) == {"p50", "p90", "p99"}
    assert {"rtt_wall_ms_p50", "rtt_emulated_s_p50"} <= set(on_disk["substrate"])
    assert {"overcommit", "double_placement", "lost_jobs", "split_brain", "lost_commits"} <= set(on_disk["invariants"])
    names = {s["name"] for s in on_disk["schedulers"]}
    assert names == {"scheduler-batch-0", "scheduler-batch-1", "scheduler-service-0"}


def test_work_happened_and_invariants_hold(small_run) -> None:
    summary, events, sc, _out = small_run
    assert summary["jobs"]["submitted"] > 50
    assert summary["jobs"]["scheduled"] > 0.3 * summary["jobs"]["submitted"]
    assert summary["jobs"]["completed"] > 0
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]
    cell = build_cell(sc.cell.machine_classes, sc.cell.resources)
    assert independent_overcommit(events, cell.capacity) == 0


def test_every_submitted_job_is_accounted_for(small_run) -> None:
    summary, events, _sc, _out = small_run
    submitted = {e["job_id"] for e in events if e["event"] == JOB_SUBMITTED}
    scheduled = {e["job_id"] for e in events if e["event"] == JOB_SCHEDULED}
    abandoned = {e["job_id"] for e in events if e["event"] == JOB_ABANDONED}
    pending = {e["job_id"] for e in events if e["event"] == JOB_PENDING}
    assert submitted == scheduled | abandoned | pending
    assert not (scheduled & pending) and not (scheduled & abandoned)
    j = summary["jobs"]
    assert j["submitted"] == len(submitted) == j["scheduled"] + j["abandoned"] + j["pending"]
    assert j["completed"] <= j["scheduled"]


def test_summary_agrees_with_events(small_run) -> None:
    summary, events, sc, _out = small_run
    counts = collections.Counter(e["event"] for e in events)
    assert summary["jobs"]["submitted"] == counts[JOB_SUBMITTED]
    assert summary["events"] == len(events)
    txns = [e for e in events if e["event"] == TXN]
    committed = sum(s["transactions"]["committed"] for s in summary["schedulers"])
    assert committed == sum(1 for t in txns if t["committed"] > 0)
    # Committed claims were all launched: the commit path loses nothing.
    launched = sum(len(e["tasks"]) for e in events if e["event"] == TASKS_LAUNCHED and not e["prefill"])
    assert launched == sum(t["committed"] for t in txns)
    # Re-summarising the saved events gives the same numbers.
    info = RunInfo.of_summary(summary)
    again = summarize(events, info, build_cell(sc.cell.machine_classes, sc.cell.resources))
    for key in ("jobs", "wait_time_s", "schedulers", "utilization", "invariants"):
        assert again[key] == summary[key], key
    busy = sum(t["think"] for t in txns if t["scheduler"] == "scheduler-service-0") / sc.duration
    assert summary["schedulers"][2]["busyness"] == pytest.approx(busy, abs=1e-5)
    assert 0 < summary["utilization"]["cpu_mean"] <= 1


def test_wait_times_are_ordered(small_run) -> None:
    summary, _events, _sc, _out = small_run
    w = summary["wait_time_s"]
    assert 0 <= w["first_attempt"]["p50"] <= w["first_attempt"]["p90"] <= w["first_attempt"]["p99"]
    assert w["first_attempt"]["p50"] <= w["fully_scheduled"]["p50"]


def test_one_machine_per_actor_behaves_the_same(tmp_path: Path, small_run) -> None:
    """K=1 (each machine its own actor) differs from K=4 only in packing: same
    job list, same host count arithmetic, invariants hold, similar outcome."""
    base, _e, _sc, _out = small_run
    data = small_scenario_data(duration=150.0)
    data["cell"]["machines_per_actor"] = 1
    summary, events, sc = _run(tmp_path, data)
    assert summary["cell"]["host_actors"] == 12
    assert {e["actor"] for e in events if e["event"] == TASKS_LAUNCHED} <= {f"machine-host-{i}" for i in range(12)}
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]
    assert summary["jobs"]["scheduled"] > 0.3 * summary["jobs"]["submitted"]
    # Same seed, same workload: the first 150 s of jobs are the same jobs.
    assert summary["jobs"]["submitted"] <= base["jobs"]["submitted"]


@pytest.mark.parametrize("conflict_mode,txn_mode", [("sequence", "all_or_nothing"), ("sequence", "incremental"), ("resource", "all_or_nothing")])
def test_other_commit_modes_run_clean(tmp_path: Path, conflict_mode: str, txn_mode: str) -> None:
    data = small_scenario_data(duration=150.0)
    data["omega"]["conflict_mode"] = conflict_mode
    data["omega"]["transaction_mode"] = txn_mode
    summary, events, _sc = _run(tmp_path, data)
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]
    assert summary["jobs"]["scheduled"] > 0
    if txn_mode == "all_or_nothing":
        # Gang semantics: a transaction commits all of its claims or none.
        assert all(t["committed"] in (0, t["claims"]) for t in events if t["event"] == TXN)
