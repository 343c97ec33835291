"""``schedlab report``: run, comparison and sweep directories built by hand
from small summaries and events of the real shapes (pure: no Ray)."""
from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from schedlab.api.report import ReportError, write_report

DURATION = 100.0
COMMON_PLOTS = {"utilization", "wait_cdf", "schedulers"}
MESOS_PLOTS = {"offers", "dominant_share"}


# ---- building directories ----------------------------------------------------

def make_summary(arch: str, *, faults: bool = False) -> dict[str, Any]:
    pp = {"p50": 1.0, "p90": 4.0, "p99": 9.0}
    names = ["framework-batch", "framework-service"] if arch == "mesos" else ["scheduler-batch-0", "scheduler-service-0"]
    s: dict[str, Any] = {
        "scenario": "tiny", "architecture": arch, "seed": 7, "time_scale": 50.0,
        "emulated_seconds": DURATION, "wall_seconds": 2.0,
        "cell": {"machines": 4, "machines_per_actor": 2},
        "jobs": {"submitted": 10, "scheduled": 9, "completed": 6, "abandoned": 0, "pending": 1, "rejected": 0, "failed": 0},
        "wait_time_s": {"first_attempt": pp, "fully_scheduled": pp},
        "schedulers": [{"name": n, "busyness": 0.2 + 0.3 * i, "occupancy": 0.4 + 0.3 * i, "conflict_fraction": 0.5 * i,
                        "transactions": {"committed": 8, "conflicted": 4 * i}, "attempts": 8 + 4 * i}
                       for i, n in enumerate(names)],
        "utilization": {"cpu_mean": 0.6, "mem_mean": 0.4, "samples": 11},
        "substrate": {"rtt_wall_ms_p50": 1.0, "rtt_emulated_s_p50": 0.05},
        "failovers": [], "faults": [],
        "invariants": {"overcommit": 0, "double_placement": 0, "lost_jobs": 0, "split_brain": 0, "lost_commits": 0},
        "warnings": [],
    }
    if arch == "mesos":
        s["mesos"] = {"offers": {"made": 6, "accepted": 4, "declined": 1, "rescinded": 1},
                      "frameworks": {fw: {"dominant_share": [[t, 0.1 * i + t / 400] for t in range(0, 100, 10)]}
                                     for i, fw in enumerate(names)}}
    if faults:
        s["faults"] = [
            {"at_s": 20.0, "kind": "pause", "target": "scheduler-batch-0", "role": "scheduler", "source": "chaos", "duration_s": 5.0},
            {"at_s": 30.0, "kind": "partition", "target": ["machine-host-1"], "role": "machine", "duration_s": 10.0,
             "peer": ["coordinator-0"]},
            {"at_s": 40.0, "kind": "kill_leader", "target": "coordinator-0", "role": "coordinator", "restart_after_s": 25.0,
             "was_leader": True},
            {"at_s": 65.0, "kind": "restart", "target": "coordinator-0", "role": "coordinator"},
            {"at_s": 70.0, "kind": "kill", "target": "coordinator-1", "role": "coordinator", "was_leader": True},
        ]
        s["failovers"] = [
            {"role": "coordinator", "target": "coordinator-0", "killed_at_s": 40.0, "elected_at_s": 45.0,
             "new_leader": "coordinator-1", "downtime_emulated_s": 6.5, "downtime_wall_s": 0.13, "election_wall_s": 0.1},
            # No write was acknowledged after this kill: downtime unknown.
            {"role": "coordinator", "target": "coordinator-1", "killed_at_s": 70.0, "elected_at_s": 76.0,
             "new_leader": "coordinator-2", "downtime_emulated_s": None, "downtime_wall_s": None, "election_wall_s": 0.12},
        ]
    return s


def ev(name: str, t: float, actor: str, **fields: Any) -> dict[str, Any]:
    return {**fields, "event": name, "t": t, "actor": actor}


def make_events(arch: str, *, faults: bool = False, samples: bool = True) -> list[dict[str, Any]]:
    sched = {"batch": "framework-batch", "service": "framework-service"} if arch == "mesos" else \
        {"batch": "scheduler-batch-0", "service": "scheduler-service-0"}
    out = [ev("cell_sample", float(t), "cellstate", cpu=0.3 + t / 300, mem=0.2 + t / 400, version=t)
           for t in range(0, 101, 10)] if samples else []
    for j in range(10):
        cls = "service" if j % 4 == 0 else "batch"
        out.append(ev("job_submitted", 2.0 * j, "submitter", job_id=j, job_class=cls, kind=cls, tasks=2,
                      request=[1.0, 2.0], scheduler=sched[cls]))
        if j < 9:  # job 9 is never tried: the CDF must level off below 100%
            out.append(ev("job_attempt", 2.0 * j + 0.1 * (j + 1), sched[cls], job_id=j, attempt=1, first=True, scheduler=sched[cls]))
            out.append(ev("txn", 2.0 * j + 1.0, sched[cls], scheduler=sched[cls], job_id=j, claims=2, committed=2,
                          conflicted=0, think=0.5, span=0.7, rtt_ms=1.0))
            out.append(ev("job_scheduled", 2.0 * j + 1.0, sched[cls], job_id=j, scheduler=sched[cls], attempts=1))
    if arch == "mesos":
        out.append(ev("master_elected", 1.0, "master-0", master="master-0", epoch=1))
        for i, outcome in enumerate(["accepted", "accepted", "declined", "rescinded", "accepted", "accepted"]):
            fw = sched["batch" if i % 2 else "service"]
            out.append(ev("offers_made", 5.0 + 15 * i, "master-0", offers=[[i + 1, fw, [0, 1], 6.0, 24.0]]))
            out.append(ev("offers_closed", 8.0 + 15 * i, "master-0", offers=[[i + 1, fw, outcome, 3.0, 6.0, 24.0]]))
            out.append(ev("mesos_sample", 5.0 + 15 * i, "master-0", epoch=1, shares={fw: 0.2}, locked=[0.1, 0.1],
                          held=[0.0, 0.0], agents=2, frameworks=2))
    if faults:
        for t, leader, term in [(1.0, 0, 1), (45.0, 1, 2), (76.0, 2, 3)]:
            out.append(ev("raft_role", t, f"coordinator-{leader}", replica=leader, term=term, role="leader",
                          leader=leader, commit_index=0))
            # A leader re-announces itself on commit-index changes: not a new leader.
            out.append(ev("raft_role", t + 1, f"coordinator-{leader}", replica=leader, term=term, role="leader",
                          leader=leader, commit_index=3))
        out.append(ev("failover", 45.0, "driver", role="coordinator", old_leader="coordinator-0", new_leader="coordinator-1", term=2))
    return out


def make_run(path: Path, arch: str, **kw: Any) -> Path:
    path.mkdir(parents=True)
    summary = make_summary(arch, faults=kw.get("faults", False))
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in make_events(arch, **kw)))
    return path


def flatten(summary: dict[str, Any]) -> dict[str, float]:
    """Numeric summary metrics under dotted names, schedulers by name (the sweep.csv convention)."""
    out: dict[str, float] = {}

    def walk(d: dict[str, Any], prefix: str) -> None:
        for k, v in d.items():
            if k == "schedulers":
                for s in v:
                    walk({kk: vv for kk, vv in s.items() if kk != "name"}, f"schedulers.{s['name'].removeprefix('scheduler-')}.")
            elif isinstance(v, dict):
                walk(v, f"{prefix}{k}.")
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                out[f"{prefix}{k}"] = float(v)

    walk(summary, "")
    return out


def make_sweep(path: Path, values: dict[str, list[Any]]) -> Path:
    """A sweep over every combination of ``values`` (one or two keys), omega
    and mesos, with sweep.csv rows built from the tiny summaries."""
    path.mkdir(parents=True)
    keys = list(values)
    combos = [(a,) for a in values[keys[0]]] if len(keys) == 1 else [(a, b) for a in values[keys[0]] for b in values[keys[1]]]
    points, rows = [], []
    for i, combo in enumerate(combos):
        name = f"p{i:03d}_" + ",".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in zip(keys, combo))
        runs = {}
        for arch in ("omega", "mesos"):
            runs[arch] = [str(make_run(path / name / f"seed-{s}" / arch, arch).relative_to(path)) for s in (1, 2)]
            row: dict[str, Any] = {"point": name, "architecture": arch, "seeds": 2, "ok_runs": 2}
            row.update((k, json.dumps(v)) for k, v in zip(keys, combo))  # TOML literal: 5 or "best_fit"
            for m, v in flatten(make_summary(arch)).items():
                row[f"{m}.median"], row[f"{m}.mad"] = v * (1 + 0.1 * i), 0.01 * (i + 1)
            rows.append(row)
        points.append({"point": name, "set": dict(zip(keys, combo)), "runs": runs})
    (path / "sweep.json").write_text(json.dumps({"scenario": "tiny", "keys": keys, "values": values, "seeds": [1, 2], "points": points}))
    metrics = sorted({c for r in rows for c in r} - {"point", "architecture", "seeds", "ok_runs", *keys})
    rows[0]["utilization.mem_mean.median"] = ""  # empty cell = no value
    with (path / "sweep.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["point", "architecture", "seeds", "ok_runs", *keys, *metrics], restval="")
        w.writeheader()
        w.writerows(rows)
    return path


# ---- checking a report -------------------------------------------------------

def pngs_of(report: Path) -> set[str]:
    """Every PNG report.md references, after checking each is a real, non-empty PNG."""
    text = report.read_text()
    refs = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert refs, text
    for ref in refs:
        png = report.parent / ref
        assert png.is_file(), ref
        data = png.read_bytes()
        assert len(data) > 1000 and data.startswith(b"\x89PNG"), ref
    return set(refs)


def names(refs: set[str], prefix: str = "plots/") -> set[str]:
    return {r[len(prefix):-len(".png")] for r in refs if r.startswith(prefix) and "/" not in r[len(prefix):]}


# ---- tests -------------------------------------------------------------------

def test_omega_run_without_faults(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", "omega")
    report = write_report(run)
    assert report == run / "report.md"
    text = report.read_text()
    assert text.startswith("# tiny: omega, seed 7")
    assert names(pngs_of(report)) == COMMON_PLOTS
    assert "| invariants | all hold |" in text and "| jobs submitted / scheduled | 10 / 9 |" in text
    assert "*Skipped: no faults, failovers or leader changes in this run.*" in text


def test_mesos_run_with_faults_has_offer_share_and_failover_plots(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", "mesos", faults=True)
    report = write_report(run)
    assert names(pngs_of(report)) == COMMON_PLOTS | MESOS_PLOTS | {"failovers"}
    text = report.read_text()
    # The failover table lists both kills, the second with its downtime unknown.
    assert "| coordinator | coordinator-0 | 40.0 | coordinator-1 | 45.0 | 6.5 | 0.13 |" in text
    assert "| coordinator | coordinator-1 | 70.0 | coordinator-2 | 76.0 | - | - |" in text


def test_absent_data_skips_the_plot_and_says_why(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run", "omega", samples=False)
    (run / "plots").mkdir()
    (run / "plots" / "utilization.png").write_bytes(b"\x89PNG stale")  # from an earlier report
    report = write_report(run)
    assert "utilization" not in names(pngs_of(report))
    assert "*Skipped: no cell_sample events: the cell was never sampled.*" in report.read_text()
    assert not (run / "plots" / "utilization.png").exists()


def test_leader_changes_ignore_reannouncements() -> None:
    from schedlab.actors.analysis.stats import by_event
    from schedlab.api.report import leader_changes

    changes = leader_changes(by_event(make_events("omega", faults=True)), {"architecture": "omega"})
    assert changes == {"Raft leader": [(1.0, "coordinator-0"), (45.0, "coordinator-1"), (76.0, "coordinator-2")]}


def test_comparison_dir_has_one_report_with_a_section_per_architecture(tmp_path: Path) -> None:
    out = tmp_path / "cmp"
    make_run(out / "omega", "omega", faults=True)
    make_run(out / "mesos", "mesos")
    (out / "notes").mkdir()  # not a run: ignored
    report = write_report(out)
    refs = pngs_of(report)
    assert names(refs) == {"wait_cdf_by_architecture"}
    assert names(refs, "plots/omega/") == COMMON_PLOTS | {"failovers"}
    assert names(refs, "plots/mesos/") == COMMON_PLOTS | MESOS_PLOTS
    text = report.read_text()
    assert "|  | mesos | omega |" in text and "## mesos" in text and "## omega" in text
    assert not (out / "omega" / "report.md").exists()


def test_sweep_over_one_numeric_key(tmp_path: Path) -> None:
    sweep = make_sweep(tmp_path / "sweep", {"omega.schedulers.1.t_job": [5, 10, 20]})
    report = write_report(sweep)
    assert names(pngs_of(report)) == {"sweep_busyness", "sweep_conflict_fraction", "sweep_wait_p90", "sweep_cpu_utilization"}
    text = report.read_text()
    assert "| p000_t_job=5 | omega | 5 | 2/2 |" in text
    assert "batch-0 0.2 ± 0.01; service-0 0.5 ± 0.01" in text


def test_sweep_over_a_categorical_and_a_second_key(tmp_path: Path) -> None:
    from schedlab.api.report_sweep import load_sweep, sweep_series

    keys = {"omega.schedulers.1.policy": ["worst_fit", "best_fit"], "omega.schedulers.1.t_job": [5, 10]}
    sweep = make_sweep(tmp_path / "sweep", keys)
    report = write_report(sweep)
    assert len(names(pngs_of(report))) == 4
    meta, header, rows = load_sweep(sweep)
    series = sweep_series(meta, rows, header, "busyness", True)
    # One line per (architecture/scheduler, second-key value); x follows sweep.json's order.
    assert set(series) == {(f"{a}/{s}", f"t_job={v}") for a, ss in (("omega", ("batch-0", "service-0")),
                           ("mesos", ("framework-batch", "framework-service"))) for s in ss for v in (5, 10)}
    assert sorted(x for x, _m, _d in series[("omega/batch-0", "t_job=5")]) == [0.0, 1.0]
    assert "| p001_policy=worst_fit,t_job=10 | omega | worst_fit | 10 |" in report.read_text()


@pytest.mark.parametrize("setup", ["missing", "empty", "summary_only", "stray_files"])
def test_not_a_run_dir_raises_report_error_naming_it(tmp_path: Path, setup: str) -> None:
    path = tmp_path / "d"
    if setup != "missing":
        path.mkdir()
    if setup == "summary_only":
        (path / "summary.json").write_text(json.dumps(make_summary("omega")))
    if setup == "stray_files":
        (path / "sweep.json").write_text("{}")
        (path / "sub").mkdir()
    with pytest.raises(ReportError, match=re.escape(str(path))):
        write_report(path)
    assert not (path / "report.md").exists()


def test_missing_matplotlib_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = make_run(tmp_path / "run", "omega")
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    with pytest.raises(ReportError, match=re.escape("schedlab report needs matplotlib: pip install 'schedlab[plot]'")):
        write_report(run)
    assert not (run / "report.md").exists()
