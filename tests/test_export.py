"""Tables written to files: ``schedlab export RUN_DIR --format csv|parquet``
and a sweep's tidy CSV (one row per point x seed x architecture)."""
from __future__ import annotations

import csv
import json
import statistics
import sys
from pathlib import Path

import pytest

import schedlab
from schedlab.cli.main import main
from schedlab.cli.sweep_grid import flatten


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> schedlab.Run:
    data = {"duration": 300}
    # A killed host: tasks lost, so every outcome column has a gap or two.
    faults = [{"at": 150.0, "action": "kill", "target": "machine-host-1"}]
    return schedlab.run("quickstart", engine="sim", out=tmp_path_factory.mktemp("export") / "run", overrides={"faults": faults}, **data)


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_export_csv_writes_every_table_as_the_api_reads_it(run: schedlab.Run, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["export", str(run.path), "--out", str(tmp_path)]) == 0
    assert "jobs.csv" in capsys.readouterr().out
    for name in ("jobs", "tasks", "samples", "events"):
        table = run.table(name)
        rows = read_csv(tmp_path / f"{name}.csv")
        assert len(rows) == len(table) > 0 and list(rows[0]) == table.names
        for got, want in zip(rows, table):
            for c in table.columns:
                v = want[c.name]
                if v is None:
                    assert got[c.name] == ""
                elif c.kind == "float":
                    assert float(got[c.name]) == v  # exact: written with repr
                elif c.kind == "int":
                    assert int(got[c.name]) == v
                elif c.kind == "json":
                    assert json.loads(got[c.name]) == v
                else:
                    assert got[c.name] == str(v)
    lost = [r for r in read_csv(tmp_path / "tasks.csv") if r["outcome"] == "lost"]
    assert lost and {r["host"] for r in lost} == {"1"}


def test_export_defaults_to_the_run_directory_and_takes_a_subset(tmp_path: Path) -> None:
    r = schedlab.run("quickstart", engine="sim", duration=60, out=tmp_path)
    assert main(["export", str(tmp_path), "--tables", "jobs,samples"]) == 0
    assert sorted(p.name for p in tmp_path.glob("*.csv")) == ["jobs.csv", "samples.csv"]
    assert len(read_csv(tmp_path / "jobs.csv")) == r.summary["jobs"]["submitted"]


def test_export_parquet(run: schedlab.Run, tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet")
    assert main(["export", str(run.path), "--format", "parquet", "--out", str(tmp_path)]) == 0
    for name in ("jobs", "tasks", "samples", "events"):
        table = run.table(name)
        got = pq.read_table(tmp_path / f"{name}.parquet").to_pylist()
        if name == "events":
            got = [dict(r, fields=json.loads(r["fields"])) for r in got]
        assert got == list(table), name
    assert str(pq.read_table(tmp_path / "jobs.parquet").schema.field("scheduled_s").type) == "double"


@pytest.mark.parametrize("args, words", [
    (["export", "{tmp}"], ["not a schedlab run directory"]),
    (["export", "{run}", "--tables", "jobs,nope"], ["--tables", "nope"]),
    (["export", "{run}", "--out", "{run}/summary.json"], ["summary.json", "cannot write"]),
])
def test_export_bad_input_is_one_line_and_exit_2(run: schedlab.Run, tmp_path: Path, capsys: pytest.CaptureFixture,
                                                   args: list[str], words: list[str]) -> None:
    argv = [a.format(tmp=tmp_path, run=run.path) for a in args]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "\n" not in err and all(w in err for w in words), err


def test_export_parquet_without_pyarrow_says_how_to_install(run: schedlab.Run, tmp_path: Path, capsys: pytest.CaptureFixture,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    for m in ("pyarrow", "pyarrow.parquet"):
        monkeypatch.setitem(sys.modules, m, None)
    assert main(["export", str(run.path), "--format", "parquet", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "pip install 'schedlab[analysis]'" in err, err
    assert not (tmp_path / "x").exists()  # refused before writing anything


def test_a_sweep_writes_a_tidy_row_per_point_seed_and_architecture(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    assert main(["sweep", "quickstart", "--engine", "sim", "--set", "omega.schedulers.1.t_job=5,30", "--set", "duration=120",
                 "--seeds", "2", "--out", str(out), "-q"]) == 0
    tidy = read_csv(out / "sweep_tidy.csv")
    assert [(r["point"], r["seed"], r["architecture"], r["omega.schedulers.1.t_job"], r["status"]) for r in tidy] == [
        ("p000_t_job=5", "7", "omega", "5", "ok"), ("p000_t_job=5", "8", "omega", "5", "ok"),
        ("p001_t_job=30", "7", "omega", "30", "ok"), ("p001_t_job=30", "8", "omega", "30", "ok")]
    for r in tidy:
        summary = json.loads((out / r["run"] / "summary.json").read_text())
        assert summary["seed"] == int(r["seed"])
        for name, value in flatten(summary).items():
            assert float(r[name]) == pytest.approx(value, rel=1e-5), name
    # The aggregated sweep.csv is the median of the tidy rows.
    key = "jobs.scheduled"
    for row in read_csv(out / "sweep.csv"):
        mine = [float(r[key]) for r in tidy if r["point"] == row["point"]]
        assert float(row[f"{key}.median"]) == statistics.median(mine)
