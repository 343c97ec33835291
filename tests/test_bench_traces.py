"""scripts/bench_traces.py: ``--quick`` runs every step in its own process
and prints a row for each; the replay's invariants hold. No timing
assertions: speed targets belong to the bench's own output."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.scripts import bench_traces


@pytest.mark.parametrize("fmt", ["google2019", "alibaba2018"])
def test_quick_bench_prints_a_row_per_step(fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "traces.json"
    assert bench_traces.main(["--quick", "--format", fmt, "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = json.loads(out.read_text())["steps"]
    assert [r["step"] for r in rows] == list(bench_traces.STEPS)
    for r in rows:
        assert f"| {r['step']} |" in printed and r["peak_mb"] > 0
    convert, replay = rows[1], rows[-1]
    assert convert["machines"] == 60 and convert["jobs"] > 0 and convert["tasks"] >= convert["jobs"]
    assert replay["jobs_submitted"] > 0 and replay["invariants_hold"]
