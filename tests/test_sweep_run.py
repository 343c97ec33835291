"""``schedlab sweep`` end to end: run folders, sweep.csv, sweep.json and
reports (on the sim engine), parallel runs as separate processes on one
local Ray, and bad input."""
from __future__ import annotations

import csv
import json
import socket
from pathlib import Path

import pytest

from schedlab.cli.main import main
from tests.test_cli import schedlab

SHORT = ["--set", "duration=60", "--set", "time_scale=30", "--no-progress"]


def _rows(out: Path) -> list[dict]:
    return list(csv.DictReader((out / "sweep.csv").open()))


def test_sweep_runs_every_point_and_seed(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    code = main(["sweep", "scenarios/quickstart.toml", "--set", "omega.schedulers.0.t_job=0.1,2", "--seeds", "2",
                 "--engine", "sim", "--out", str(out), *SHORT])
    assert code == 0
    meta = json.loads((out / "sweep.json").read_text())
    assert meta["keys"] == ["omega.schedulers.0.t_job"] and len(meta["points"]) == 2 and len(meta["seeds"]) == 2
    for point in meta["points"]:
        for rel in point["runs"]["omega"]:
            assert (out / rel / "summary.json").exists() and (out / rel / "events.jsonl").exists()
    rows = _rows(out)
    assert [r["omega.schedulers.0.t_job"] for r in rows] == ["0.1", "2"]
    assert all(r["ok_runs"] == "2" and r["violations"] == "0" for r in rows)
    # The medians are the runs' own numbers: recompute one from the summaries.
    subs = [json.loads((out / rel / "summary.json").read_text()) for rel in meta["points"][1]["runs"]["omega"]]
    jobs = sorted(s["jobs"]["submitted"] for s in subs)
    assert float(rows[1]["jobs.submitted.median"]) == pytest.approx(sum(jobs) / 2)
    # Slower decisions, busier scheduler: the swept key reached the runs.
    busy = [float(r["schedulers.scheduler-batch-0.busyness.median"]) for r in rows]
    assert busy[1] > busy[0]
    # `schedlab report` on the sweep and on one of its runs.
    assert main(["report", str(out)]) == 0
    assert "plots/sweep_busyness.png" in (out / "report.md").read_text()
    run = out / meta["points"][0]["runs"]["omega"][0]
    assert main(["report", str(run)]) == 0 and (run / "plots" / "utilization.png").stat().st_size > 0


def test_report_on_a_directory_that_is_no_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(tmp_path) in err and "not a run, comparison, federation or sweep directory" in err


def test_sweep_bad_input_is_one_line_and_starts_nothing(tmp_path: Path) -> None:
    r = schedlab("sweep", "scenarios/quickstart.toml", "--set", "duration=100,-1", "--out", str(tmp_path / "x"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "duration: must be > 0" in r.stderr
    assert not (tmp_path / "x").exists()
    r = schedlab("sweep", "scenarios/quickstart.toml", "--set", "duration=1,1")
    assert r.returncode == 2 and "repeated" in r.stderr
    r = schedlab("sweep", "scenarios/quickstart.toml", "--set", "seed=1,2")
    assert r.returncode == 2 and "--seeds" in r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        r = schedlab("sweep", "scenarios/quickstart.toml", "--set", "duration=50,60", "--address", f"127.0.0.1:{port}",
                     "--out", str(tmp_path / "y"))
    assert r.returncode == 2 and f"no Ray cluster at 127.0.0.1:{port}" in r.stderr and not (tmp_path / "y").exists()


@pytest.mark.parametrize("parallel", ["1", "2"])
def test_a_sim_sweep_needs_no_ray_and_repeats_exactly(tmp_path: Path, parallel: str) -> None:
    """--engine sim: every run on the virtual clock (in this process, or one
    process per run with --parallel); a second sweep gives the same csv."""
    args = ["sweep", "dispatcher", "--engine", "sim", "--set", "dispatcher.queue=fifo,fair", "--set", "duration=300",
            "--parallel", parallel, "-q"]
    a, b = tmp_path / "a", tmp_path / "b"
    assert schedlab(*args, "--out", str(a)).returncode == 0
    assert schedlab(*args, "--out", str(b)).returncode == 0
    rows = _rows(a)
    assert [r["dispatcher.queue"] for r in rows] == ["fifo", "fair"] and all(r["violations"] == "0" for r in rows)
    assert json.loads((a / rows[0]["point"] / "seed-5" / "dispatcher" / "summary.json").read_text())["engine"] == "sim"
    assert (a / "sweep.csv").read_text() == (b / "sweep.csv").read_text()
