"""The terminal table and progress line render every summary field."""
from __future__ import annotations

import io

from rich.console import Console

from schedlab.cli.display import FAULTS_LISTED, RunProgress, faults_cell, summary_table


def _summary(**over: object) -> dict:
    s = {
        "scenario": "demo", "architecture": "omega", "seed": 1, "time_scale": 50.0,
        "emulated_seconds": 100.0, "wall_seconds": 2.0,
        "cell": {"machines": 10, "machines_per_actor": 5, "host_actors": 2},
        "jobs": {"submitted": 9, "scheduled": 7, "completed": 5, "abandoned": 1, "pending": 1, "failed": 0},
        "wait_time_s": {"first_attempt": {"p50": 0.5, "p90": 1.0, "p99": 2.0}, "fully_scheduled": {"p50": None, "p90": None, "p99": None}},
        "schedulers": [{"name": "scheduler-b-0", "busyness": 0.25, "conflict_fraction": 0.125, "transactions": {"committed": 8, "conflicted": 1}}],
        "utilization": {"cpu_mean": 0.5, "mem_mean": 0.25},
        "substrate": {"rtt_wall_ms_p50": 1.5, "rtt_emulated_s_p50": 0.075},
        "invariants": {"overcommit": 0, "double_placement": 0, "lost_jobs": 0, "split_brain": 0, "lost_commits": 0},
        "warnings": ["think time too short"],
    }
    s.update(over)
    return s


def _render(s: dict) -> str:
    buf = io.StringIO()
    Console(file=buf, width=200).print(summary_table(s))
    return buf.getvalue()


def test_table_shows_the_numbers_that_matter() -> None:
    out = _render(_summary())
    for text in ("submitted 9", "scheduled 7", "abandoned 1", "0.5 / 1 / 2", "busyness 0.250",
                 "conflict fraction 0.125", "committed 8 conflicted 1", "cpu 50.0%", "1.50 ms wall",
                 "all hold", "think time too short"):
        assert text in out, text


def test_table_shows_failovers_and_faults() -> None:
    fo = {"role": "coordinator", "target": "coordinator-1", "killed_at_s": 200.0, "elected_at_s": 210.0,
          "new_leader": "coordinator-0", "first_commit_at_s": 212.0, "downtime_emulated_s": 12.0,
          "downtime_wall_s": 0.6, "election_wall_s": 0.5}
    out = _render(_summary(failovers=[fo], faults=[{"at_s": 200.0, "kind": "kill_leader", "target": "coordinator-1"}]))
    assert "failover coordinator-1" in out and "coordinator-0 elected after 0.50s wall" in out
    assert "first write after 0.60s wall = 12s emulated" in out and "kill_leader coordinator-1 @200s" in out


def test_fault_cell_marks_skipped_and_joins_sides() -> None:
    faults = [{"at_s": 10.0, "kind": "slow", "target": "coordinator-0", "skipped": "coordinator-0 is not running"},
              {"at_s": 20.0, "kind": "partition", "target": ["scheduler-batch-0"], "peer": ["coordinator-0", "coordinator-1"]}]
    out = faults_cell(faults)
    assert "slow coordinator-0 @10s (skipped)" in out
    assert "partition scheduler-batch-0 | coordinator-0+coordinator-1 @20s" in out


def test_many_faults_are_counted_by_kind() -> None:
    faults = [{"at_s": float(i), "kind": "kill" if i % 3 else "pause", "target": f"machine-host-{i}"}
              for i in range(FAULTS_LISTED + 3)]
    faults.append({"at_s": 99.0, "kind": "slow", "target": "x", "skipped": "x is not running"})
    out = faults_cell(faults)
    kills = sum(1 for f in faults if f["kind"] == "kill")
    assert out.startswith(f"{len(faults) - 1}: ") and f"kill {kills}" in out
    assert f"pause {len(faults) - 1 - kills}" in out and "1 skipped" in out and "machine-host" not in out


def test_table_flags_violated_invariants() -> None:
    inv = {"overcommit": 2, "double_placement": 0, "lost_jobs": 1, "split_brain": 0, "lost_commits": 0}
    out = _render(_summary(invariants=inv))
    assert "VIOLATED" in out and "overcommit=2" in out and "lost_jobs=1" in out
    assert "collateral damage" not in out  # an old summary, from before it was counted
    out = _render(_summary(invariants={**inv, "collateral": 7}))
    assert "collateral damage" in out and "7 tasks killed on machines no fault touched" in out and "collateral=7" in out


def test_progress_line_counts() -> None:
    buf = io.StringIO()
    with RunProgress(100.0, Console(file=buf, width=200, force_terminal=True)) as p:
        p.update(50.0, {"job_submitted": 12, "job_scheduled": 10, "txn": 11, "conflicted_txns": 3})
    out = buf.getvalue()
    assert "submitted 12" in out and "attempts 11" in out and "conflicted 3" in out
