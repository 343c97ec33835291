"""The reproduction suite: exact findings judged exactly, the table and its
update on the fidelity page (stamped with date, commit and load), and a smoke run of emulated findings on the sim engine."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from schedlab.experiments.fidelity import TABLE_END, TABLE_START, Context, render, update_table
from schedlab.experiments.paper.findings import FINDINGS, drf_example
from schedlab.experiments.reproduce import main


def test_drf_worked_example_is_exact(tmp_path: Path) -> None:
    r = drf_example(Context(tmp_path, smoke=False))
    assert r.ok and r.numbers["tasks"] == [3, 2]
    assert r.numbers["shares"] == pytest.approx([2 / 3, 2 / 3])


def test_table_and_readme_markers(tmp_path: Path) -> None:
    f = next(x for x in FINDINGS if x.key == "drf_example")
    table = render([(f, drf_example(Context(tmp_path, smoke=False)), "", None), (FINDINGS[0], None, "RuntimeError: boom", "sim")])
    lines = table.splitlines()
    assert lines[0].startswith("| finding |") and "| engine |" in lines[0]
    assert "within tolerance" in lines[2] and "| computed |" in lines[2]
    assert "**error**" in lines[3] and "| sim |" in lines[3]
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{TABLE_START}\nold table\n{TABLE_END}\nafter\n")
    update_table(table, readme)
    text = readme.read_text()
    assert "old table" not in text and table in text and text.endswith(f"{TABLE_END}\nafter\n")
    stamp = text.split(TABLE_START, 1)[1].lstrip("\n").splitlines()[0]
    assert re.fullmatch(r"\*Measured \d{4}-\d{2}-\d{2} at commit \S+, \d+ cores, load average [\d., ]+ at the end\.\*", stamp), stamp


def test_unknown_finding_is_bad_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--only", "nope"]) == 2
    assert "unknown finding 'nope'" in capsys.readouterr().err


def test_every_finding_that_runs_has_an_engine() -> None:
    assert {f.engine for f in FINDINGS} <= {"ray", "sim", None}
    assert next(f for f in FINDINGS if f.key == "raft_election").engine == "ray"  # failover timing: the substrate's


def test_smoke_reproduction(tmp_path: Path) -> None:
    keys = ["drf_example", "raft_election"]  # one exact finding, one emulated sweep (live by default, here on sim)
    assert main(["--smoke", "--engine", "sim", "--only", ",".join(keys), "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "fidelity.json").read_text())
    assert sorted(r["finding"] for r in rows) == sorted(keys) and all(r["ok"] and not r["error"] for r in rows)
    assert {r["finding"]: r["engine"] for r in rows} == {"drf_example": None, "raft_election": "sim"}
    summary = json.loads(next((tmp_path / "raft_election").rglob("summary.json")).read_text())
    assert summary["engine"] == "sim"
    by = {r["finding"]: r["numbers"] for r in rows}
    # Every number comes from the runs just made: the sweeps are on disk.
    assert len(by["raft_election"]) == 2 and all(math.isfinite(v) and v > 0 for v in by["raft_election"].values())
    assert (tmp_path / "raft_election" / "sweep.csv").exists() and (tmp_path / "fidelity.md").read_text().count("\n| ") >= 2


def test_yarn_findings_smoke(tmp_path: Path) -> None:
    keys = ["yarn_delay_scheduling", "queue_elasticity"]  # sim findings, seconds-long in --smoke
    assert main(["--smoke", "--only", ",".join(keys), "--out", str(tmp_path)]) == 0
    by = {r["finding"]: r for r in json.loads((tmp_path / "fidelity.json").read_text())}
    assert set(by) == set(keys) and all(r["engine"] == "sim" and not r["error"] for r in by.values())
    loc = by["yarn_delay_scheduling"]["numbers"]["node_local"]
    assert set(loc) == {"0", "16"} and all(0 <= v <= 1 for v in loc.values())
    el = by["queue_elasticity"]["numbers"]
    assert all(math.isfinite(el[k]) for k in ("adhoc_burst", "adhoc_after", "prod_after"))


def test_slurm_backfill_finding_smoke(tmp_path: Path) -> None:
    assert main(["--smoke", "--only", "slurm_backfill", "--out", str(tmp_path)]) == 0
    (row,) = json.loads((tmp_path / "fidelity.json").read_text())
    assert row["engine"] == "sim" and not row["error"]
    n = row["numbers"]
    assert set(n["utilization"]) == {"fcfs", "easy", "conservative"}
    assert all(0 < u <= 1 for u in n["utilization"].values()) and n["easy_reservation_delays"] >= 0
    assert (tmp_path / "slurm_backfill" / "sweep.csv").exists()


def test_sparrow_findings_smoke(tmp_path: Path) -> None:
    keys = ["supermarket", "sparrow_vs_omniscient"]  # sim findings, seconds-long in --smoke
    assert main(["--smoke", "--only", ",".join(keys), "--out", str(tmp_path)]) == 0
    by = {r["finding"]: r for r in json.loads((tmp_path / "fidelity.json").read_text())}
    assert set(by) == set(keys) and all(r["engine"] == "sim" and not r["error"] for r in by.values())
    sm = by["supermarket"]["numbers"]
    assert sm["cells"] == [10, 50] and sm["limit_d2"] == pytest.approx(2.614, abs=1e-3) and sm["limit_random"] == pytest.approx(10.0)
    assert all(v > 1.0 for v in list(sm["d2"].values()) + list(sm["random"].values()))  # at least one service time
    so = by["sparrow_vs_omniscient"]["numbers"]
    assert so["omniscient"]["jobs"] > 100 and all(0.5 < v < 2.0 for v in so["ratio"].values())
    assert (tmp_path / "sparrow_vs_omniscient" / "sweep.csv").exists()


def test_the_fgd_finding_is_computed_from_the_shipped_sample(tmp_path: Path) -> None:
    from schedlab.experiments.fidelity import Context
    from schedlab.experiments.paper.findings_gpu import BASELINES, fgd_inflation

    r = fgd_inflation(Context(tmp_path, smoke=True))
    end = r.numbers["unallocated_at_end"]
    assert set(end) == {"fgd", *BASELINES} and all(0 <= v <= 1 for v in end.values())
    assert r.ok == (end["fgd"] <= min(end[p] for p in BASELINES))
    assert r.numbers["best_baseline"] == min(BASELINES, key=lambda p: end[p]) and "FGD" in r.measured
