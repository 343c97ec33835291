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


def test_tally_counts_placements_elections_and_raft_leader_terms(tmp_path: Path) -> None:
    lines = [
        {"event": "tasks_launched", "prefill": True, "tasks": [[1, 0, 0]], "t": 0.0},
        {"event": "tasks_launched", "tasks": [[2, 0, 0], [2, 1, 3]], "t": 1.0},
        {"event": "raft_role", "role": "leader", "term": 1, "t": 0.1},
        {"event": "raft_role", "role": "follower", "term": 2, "t": 5.0},
        {"event": "raft_role", "role": "leader", "term": 2, "t": 5.1},
        {"event": "raft_role", "role": "leader", "term": 2, "t": 5.2},  # the same term said twice
        {"event": "rm_elected", "rm": "rm-0", "t": 0.5},
        {"event": "lb_elected", "lb": "lb-1", "t": 9.0},
        {"event": "job_scheduled", "job_id": 2, "t": 1.0},
    ]
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in lines))
    assert bench_sim.tally(events) == (2, 2, 2)


def test_the_report_prints_targets_and_the_live_cell_table() -> None:
    def m(arch: str, per_day_cpu: float, **kw: object) -> bench_sim.Measured:
        base = dict(engine="sim", architecture=arch, machines=10000, emulated_s=86400.0, wall_s=1.0, cpu_s=per_day_cpu,
                    emul_wall_s=1.0, emul_cpu_s=per_day_cpu, placements=10, jobs_submitted=5, jobs_scheduled=5,
                    invariants_ok=True)
        return bench_sim.Measured(**{**base, **kw})  # type: ignore[arg-type]

    out = bench_sim.report([], [], css=[m("omega", 10.0), m("borg", 40.0), m("yarn", 5.0)], idle=[m("omega", 3.0)],
                           cell=[m("yarn", 1.0, engine="ray", elections=1, raft_terms=1, per_actor=1000)])
    css, idle = out.split("The idle clock")
    rows = {line.split("|")[1].strip(): line for line in css.splitlines() if line.startswith("| ")}
    assert "| <= 14: met |" in rows["omega"] and "| <= 28: NOT met |" in rows["borg"]
    assert "| - |" in rows["yarn"]  # no target set for it
    assert "| <= 2: NOT met |" in next(x for x in idle.splitlines() if x.startswith("| omega |"))
    assert "1,000 machines per host actor" in out
    assert out.splitlines()[-1] == "| yarn | 86,400.0 | 10 | 5/5 | 1 | 1 | ok |"


def test_an_architecture_may_offer_the_bench_its_own_classes() -> None:
    """The web farm serves pages, not 90 s batch tasks: its registry entry
    gives the bench a page class, and its example section is built for it;
    the others keep the bench's batch and service classes."""
    web = bench_sim.bench_scenario(1000, 60.0, "sim", "webfarm", 3)
    assert [c["name"] for c in web["workload"]["classes"]] == ["page"]
    omega = bench_sim.bench_scenario(1000, 60.0, "sim", "omega", 1)
    assert [c["name"] for c in omega["workload"]["classes"]] == ["batch", "service"]
    m = bench_sim.measure(1000, 120.0, "sim", "webfarm")
    # Served, but for the pages still in flight at the end (or sent before a balancer held the address).
    assert m.invariants_ok and m.jobs_submitted > 40 and m.jobs_scheduled >= 0.8 * m.jobs_submitted, m
