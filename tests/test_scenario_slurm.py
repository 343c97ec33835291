"""The [slurm] section: bad input refused in one line before anything
starts (an unknown partition, a time limit over a partition's maximum, a
logged job asking more than its partition allows), the time limit each job
asks, and the saved state's round trip."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from schedlab.schedulers.archs.slurm.controller import Partition, SlurmCore
from schedlab.schedulers.archs.slurm.ctld import Slurmctld
from schedlab.schedulers.archs.slurm.spec import time_limit
from schedlab.schedulers.archs.slurm.state_save import Restored, StateMirror
from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.scenario.parse import ScenarioError, parse_scenario
from tests.conftest import small_scenario_data


def data(**slurm: object) -> dict:
    d = small_scenario_data(engine="sim")
    del d["omega"]
    d["architecture"] = "slurm"
    d["slurm"] = {"partitions": [{"name": "short", "classes": ["batch"], "max_time": 3600.0},
                                 {"name": "long", "classes": ["service"], "machine_classes": ["b"]}], **slurm}
    return d


@pytest.mark.parametrize("change, words", [
    ({"default_partition": "gpu"}, "slurm.default_partition: unknown partition 'gpu' (one of short, long)"),
    ({"time_limits": {"batch": 7200.0}}, "slurm.time_limits.batch: 7200 s is over partition short's max_time 3600 s"),
    ({"time_limits": {"nobody": 60.0}}, "slurm.time_limits.nobody: unknown job class 'nobody'"),
    ({"controllers": 2}, "slurm.controllers: the backup controller takes over through the coordinator's lease"),
    ({"estimate": {"dist": "uniform", "low": 0.5, "high": 2.0}}, "slurm.estimate: users over-estimate"),
    ({"select": "cons_res"}, "slurm.select: must be one of"),
])
def test_bad_sections_are_refused_in_one_line(change: dict, words: str) -> None:
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data(**change), "s.toml")
    msg = str(e.value)
    assert msg.startswith("s.toml: ") and words in msg and "\n" not in msg


def test_a_partition_naming_an_unknown_job_class_or_machine_class_is_refused() -> None:
    d = data()
    d["slurm"]["partitions"][0]["classes"] = ["batch", "gpu"]
    with pytest.raises(ScenarioError, match=r"slurm.partitions\[0\].classes: unknown job class 'gpu'"):
        parse_scenario(d, "s.toml")
    d = data()
    d["slurm"]["partitions"][1]["machine_classes"] = ["z"]
    with pytest.raises(ScenarioError, match=r"slurm.partitions\[1\].machine_classes: unknown machine class 'z'"):
        parse_scenario(d, "s.toml")


def test_a_logged_job_asking_more_than_its_partition_allows_is_refused(tmp_path: Path) -> None:
    (tmp_path / "s.toml").write_text("")
    (tmp_path / "log.swf").write_text("1 0 -1 100 2 -1 -1 2 7200 -1 1 1 1 -1 1 1 -1 -1\n")
    d = data()
    d["workload"]["classes"][0] = {"name": "batch", "swf": "log.swf", "cpu": 1.0, "mem": 1.0}
    with pytest.raises(ScenarioError, match="workload.classes.batch: 1 logged jobs ask more time than partition short's "
                                            "max_time 3600 s"):
        parse_scenario(d, str(tmp_path / "s.toml"))


def test_the_time_limit_a_job_asks() -> None:
    sc = parse_scenario(data(estimate={"dist": "uniform", "low": 2.0, "high": 2.0}, time_limits={"service": 600.0}),
                        "s.toml")
    s = sc.section
    run = Job(1, "batch", JobKind.BATCH, 0, 0.0, (1.0, 1.0), (100.0, 130.0))
    assert time_limit(s, run, 0) == 300.0  # 130 s x 2, up to whole minutes
    assert time_limit(s, Job(2, "batch", JobKind.BATCH, 0, 0.0, (1.0, 1.0), (5000.0,)), 0) == 3600.0  # the max
    assert time_limit(s, Job(3, "batch", JobKind.BATCH, 0, 0.0, (1.0, 1.0), (10.0,), estimate=45.0), 0) == 45.0
    assert time_limit(s, Job(4, "service", JobKind.SERVICE, 0, 0.0, (1.0, 1.0), (math.inf,)), 0) == 600.0
    bare = parse_scenario(data(), "s.toml").section
    assert time_limit(bare, run, 0) == 3600.0  # no estimate knob: the partition's default time


def test_the_saved_state_brings_back_queued_running_and_ended_jobs() -> None:
    part = Partition("p", (0, 1, 2), 3600.0, 600.0)
    cap = np.array([[4.0, 16.0]] * 3)

    def books() -> Slurmctld:
        return Slurmctld(SlurmCore((part,), 3, capacity=cap), cap, 3)

    c = books()
    jobs = [Job(i, "a", JobKind.BATCH, 0, 0.0, (2.0, 4.0), (50.0,) * 3) for i in range(3)]
    for j in jobs:
        c.submit(j, "p", 100.0, 0.0)
    started = c.schedule(0.0)
    assert [s.job_id for s in started] == [0, 1]  # 6 tasks of 2 cpus on 3 x 4 cpus
    c.exchange(0, [(0, t, False) for t in range(3)], 50.0)  # job 0 ends
    m = StateMirror({})
    m.ctld = c
    records = m.take_dirty()
    assert records[0] == ["ended"] and not m.take_dirty()  # only what changed is written again
    n = Slurmctld(SlurmCore((part,), 3, capacity=cap), cap, 3, recovering=True)
    Restored.of(records).into(n)
    assert n.core.jobs[1].started == 0.0 and n.core.jobs[1].request == (2.0, 4.0)
    assert np.array_equal(n.core.used, c.core.used)  # job 1 holds exactly what it held
    assert n.core.jobs[2].started is None and 0 in n.gone
    assert n.submit(jobs[0], "p", 100.0, 60.0) == "" and 0 not in n.core.jobs  # ended: not run twice
