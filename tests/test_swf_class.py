"""A job class replaying an SWF log: its jobs arrive as recorded, rigid,
with their users' estimates; bad input names file, key and line."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.model.workload import generate_jobs
from schedlab.schedulers.scenario.parse import ScenarioError, parse_scenario
from tests.conftest import small_scenario_data

LOG = """; two jobs, one cancelled before it ran
1 10 -1 100 8 -1 -1 8 300 -1 1 1 1 -1 1 1 -1 -1
2 20 -1 -1 4 -1 -1 4 600 -1 5 1 1 -1 1 1 -1 -1
3 35 -1 50 3 -1 -1 -1 -1 -1 1 2 1 -1 1 1 -1 -1
"""


def scenario(tmp_path: Path, **cls: object) -> dict:
    (tmp_path / "log.swf").write_text(LOG)
    (tmp_path / "s.toml").write_text("")  # the scenario file: the log is looked for beside it
    data = small_scenario_data(engine="sim")
    data["workload"]["classes"] = [{"name": "hpc", "swf": "log.swf", "procs_per_task": 4, "cpu": 4.0, "mem": 16.0,
                                    **cls}]
    data["omega"]["schedulers"] = [{"name": "batch", "classes": ["hpc"], "t_job": 0.5, "t_task": 0.01}]
    return data


def test_an_swf_class_replays_the_log_as_rigid_jobs_with_estimates(tmp_path: Path) -> None:
    sc = parse_scenario(scenario(tmp_path, start=5.0), str(tmp_path / "s.toml"))
    jobs = generate_jobs(sc.workload.classes, 1000.0, sc.seed)
    # Job 2 never ran (run time -1): skipped. 8 procs / 4 = 2 tasks; 3 procs -> 1 task.
    assert [(j.submit_time, j.tasks, j.durations, j.estimate) for j in jobs] == [
        (15.0, 2, (100.0, 100.0), 300.0), (40.0, 1, (50.0,), 50.0)]  # no requested time: its run time
    assert all(j.request == (4.0, 16.0) and j.job_class == "hpc" for j in jobs)
    assert generate_jobs(sc.workload.classes, 40.0, sc.seed)[-1].submit_time == 15.0  # the horizon cuts the log


def test_the_estimate_survives_the_wire() -> None:
    j = Job(7, "hpc", JobKind.BATCH, 0, 1.0, (1.0, 1.0), (5.0, math.inf), estimate=60.0)
    assert Job.from_wire(j.to_wire()) == j
    assert "estimate" not in Job(1, "a", j.kind, 0, 0.0, (1.0, 1.0), (1.0,)).to_wire()


def test_the_shipped_sample_is_found_from_anywhere(tmp_path: Path) -> None:
    data = scenario(tmp_path)
    data["workload"]["classes"][0]["swf"] = "workloads/slurm_sample.swf"
    data["workload"]["classes"][0]["max_jobs"] = 50
    sc = parse_scenario(data, str(tmp_path / "nowhere.toml"))
    assert len(sc.workload.classes[0].trace) == 50


@pytest.mark.parametrize("change, words", [
    ({"swf": "missing.swf"}, "workload.classes[0].swf: no file 'missing.swf'"),
    ({"procs_per_task": 0}, "workload.classes[0].procs_per_task: must be >= 1"),
    ({"interarrival": 3.0}, "workload.classes[0].interarrival"),
])
def test_bad_swf_classes_are_refused_naming_the_key(tmp_path: Path, change: dict, words: str) -> None:
    with pytest.raises(ScenarioError, match=words.replace("[", r"\[").replace("]", r"\]")):
        parse_scenario(scenario(tmp_path, **change), str(tmp_path / "s.toml"))


def test_a_malformed_log_line_is_named(tmp_path: Path) -> None:
    data = scenario(tmp_path)
    (tmp_path / "log.swf").write_text(LOG + "4 40 -1 x 1 -1 -1 1 60 -1 1 1 1 -1 1 1 -1 -1\n")
    with pytest.raises(ScenarioError, match=r"swf: .*log.swf: line 5: field 4 \(run\)"):
        parse_scenario(data, str(tmp_path / "s.toml"))


def test_a_rigid_class_draws_one_duration_per_job() -> None:
    data = small_scenario_data(engine="sim")
    data["workload"]["classes"][0]["rigid"] = True
    sc = parse_scenario(data, "s.toml")
    jobs = [j for j in generate_jobs(sc.workload.classes, 300.0, sc.seed) if j.job_class == "batch" and j.tasks > 1]
    assert jobs and all(len(set(j.durations)) == 1 for j in jobs)
