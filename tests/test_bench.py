"""scripts/bench.py: the knee of an offered-load ladder (pure), and the
``--quick`` bench end to end. No timing assertions: speed targets belong to
the bench's own output, not to tests on a shared machine."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from schedlab.scripts import bench
from schedlab.scripts.bench import find_knee

ROOT = Path(__file__).resolve().parents[1]


def test_knee_rising_then_flat_is_the_first_step_that_stops_keeping_up() -> None:
    ladder = [(2000, 2000), (4000, 3990), (8000, 7900), (16000, 8300), (32000, 8200)]
    knee = find_knee(ladder)
    assert (knee.index, knee.offered, knee.placed, knee.reached) == (3, 16000, 8300, True)
    assert "90%" in knee.reason


def test_knee_by_the_rise_rule_alone() -> None:
    # The 5,000 step drained a backlog (placed above offered); at 6,000 the
    # scheduler still places 100% of the offer, but only 7% more than before.
    knee = find_knee([(4000, 4000), (5000, 5600), (6000, 6000)])
    assert (knee.index, knee.placed, knee.reached) == (2, 6000, True)
    assert "rose" in knee.reason


def test_knee_of_a_falling_ladder_is_where_it_first_falls_behind() -> None:
    knee = find_knee([(2000, 1990), (4000, 3900), (8000, 3000), (16000, 2000)])
    assert (knee.index, knee.offered, knee.placed, knee.reached) == (2, 8000, 3000, True)
    # Falling from the first step: the ladder started above the capacity.
    knee = find_knee([(2000, 1500), (4000, 1400)])
    assert (knee.index, knee.offered, knee.placed, knee.reached) == (0, 2000, 1500, True)


def test_a_ladder_that_never_saturates_reports_its_last_step_not_reached() -> None:
    knee = find_knee([(2000, 2000), (4000, 4010), (8000, 7950)])
    assert (knee.index, knee.offered, knee.placed, knee.reached) == (2, 8000, 7950, False)
    assert knee.reason == "not reached"
    assert find_knee([(2000, 1990)]).reached is False


def test_knee_thresholds_are_the_documented_ones() -> None:
    # Placing at least 90% of offered, and at least 10% more than the step before: not saturated.
    assert not find_knee([(1000, 1000), (1200, 1101)]).reached
    assert find_knee([(1000, 1000), (1200, 1099)]).reached
    assert find_knee([(1000, 899)]).reached and not find_knee([(1000, 900)]).reached


def test_knee_rejects_empty_and_unsorted_ladders() -> None:
    with pytest.raises(ValueError):
        find_knee([])
    with pytest.raises(ValueError):
        find_knee([(4000, 4000), (2000, 2000)])


def test_the_default_ladder_never_fills_the_cell_and_fits_the_scenario_limits() -> None:
    args = bench._parse([])
    assert bench.expected_running(max(args.loads)) <= bench.MAX_CELL_SHARE * bench.cell_slots(args.machines)
    quick = bench._parse(["--quick"])
    assert len(quick.per_actor) * len(quick.batch) == 1
    assert bench.expected_running(max(quick.loads)) <= bench.MAX_CELL_SHARE * bench.cell_slots(quick.machines)


@pytest.mark.parametrize("argv", [
    ["--loads", "2000", "2100"],  # a step too small for the 10% rule
    ["--loads", "4000", "2000"],
    ["--machines", "100"],  # the default ladder would fill 100 machines
    ["--repeats", "0"],
    ["--duration", "0.5"],
    ["--tasks-per-job", "0"],
])
def test_bad_arguments_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        bench._parse(argv)
    assert e.value.code == 2


def test_the_target_line_names_the_target_for_the_job_size() -> None:
    assert bench._target(40, 30000.0).endswith("with jobs of 40 tasks: met")
    assert bench._target(1, 9000.0).endswith("with jobs of 1 tasks: NOT met")
    assert bench._target(7, 1.0) == "no target for jobs of 7 tasks"
    one = bench._parse(["--tasks-per-job", "1"])
    sc = bench.bench_scenario(one.machines, 250, 2, 3.0, 0.05, 4000.0, one.tasks_per_job)
    (cls,) = sc["workload"]["classes"]
    assert cls["tasks"] == 1.0 and cls["interarrival"] == 1 / 4000.0  # the same tasks/s, one task a commit


def _row(line: str) -> list[str]:
    assert line.startswith("|") and line.endswith("|"), line
    return [c.strip() for c in line.strip("|").split("|")]


@pytest.mark.ray
@pytest.mark.untimed
def test_quick_bench_end_to_end(tmp_path: Path, stale_ray_tmp: dict[str, str]) -> None:
    """On a machine where a dead cluster's address is recorded (conftest)."""
    out = tmp_path / "bench.json"
    # Two steps of the ladder, not --quick's three: the script's shape is
    # what is tested here (a third step cost the suite 10 s).
    done = subprocess.run([sys.executable, "-m", "schedlab.scripts.bench", "--quick", "--loads", "2000", "8000",
                           "--json", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=180, env=stale_ray_tmp)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("scenario: 1000 machines")
    assert any(x.startswith("raw Ray actor calls/s (pipelined, one actor): ") for x in lines)
    table = [x for x in lines if x.startswith("|")]
    header, rule, *rows = table
    assert _row(header)[:3] == ["machines_per_actor", "host actors", "batch_interval (s)"]
    assert len(_row(header)) == len(_row(rule)) == 7
    assert len(rows) == 1  # --quick: one configuration
    cells = _row(rows[0])
    assert len(cells) == 7 and cells[:3] == ["250", "4", "0.05"]
    assert lines[-1].startswith("best knee: machines_per_actor 250, batch_interval 0.05 s: ")
    result = json.loads(out.read_text())
    assert result["raw_calls_per_s"] > 0
    (config,) = result["configs"]
    knee = config["knee"]
    ladder = config["ladder"]
    assert 1 <= len(ladder) <= len(result["scenario"]["loads"])
    assert knee["index"] == len(ladder) - 1  # stopped climbing at the knee (or ran out of ladder)
    assert knee["placed"] == ladder[-1]["placed"] > 0
