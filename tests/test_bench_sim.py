"""scripts/bench_sim.py: its scenario is valid for every registered
architecture, and ``--quick`` runs end to end on the sim engine and prints
its tables. No timing assertions: speed targets belong to the bench's own
output, not to tests on a shared machine."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlab.schedulers import arch as registry
from schedlab.scripts import bench_sim


@pytest.mark.parametrize("name", registry.names())
def test_the_bench_scenario_parses_for_every_architecture(name: str) -> None:
    sc = bench_sim.parse_bench(10000, 60.0, "sim", name)
    assert sc.architecture == name and sc.engine == "sim"
    assert sum(mc.count for mc in sc.cell.machine_classes) == 10000


def test_cell_day_extrapolation_counts_set_up_once() -> None:
    m = bench_sim.Measured("sim", "x", 1000, emulated_s=100.0, wall_s=3.0, cpu_s=3.0, emul_wall_s=2.0, emul_cpu_s=2.0,
                           placements=500, jobs_submitted=10, jobs_scheduled=10, invariants_ok=True)
    assert m.cpu_per_cell_day == pytest.approx(1.0 + 2.0 / 100.0 * 86400)
    assert m.emulated_per_wall == pytest.approx(50.0)
    assert m.placements_per_wall == pytest.approx(250.0)


def test_quick_bench_prints_a_row_per_architecture_and_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "bench.json"
    assert bench_sim.main(["--quick", "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "CSS" in printed and "emulated s / wall s" in printed
    rows = json.loads(out.read_text())["sim"]
    sizes = sorted({r["machines"] for r in rows})
    assert sizes == sorted(bench_sim.QUICK["machines"])
    assert [r["architecture"] for r in rows if r["machines"] == sizes[0]] == list(registry.names())
    for r in rows:
        assert r["invariants_ok"] and r["placements"] > 0 and r["emul_cpu_s"] > 0


def test_the_idle_clock_runs_css_cell_with_no_job() -> None:
    (m,) = bench_sim.idle_runs(60.0, only=["omega"])
    assert m.architecture == "omega" and m.jobs_submitted == 0 and m.placements == 0 and m.invariants_ok
    assert m.emul_cpu_per_cell_day == pytest.approx(m.emul_cpu_s / 60.0 * 86400)
