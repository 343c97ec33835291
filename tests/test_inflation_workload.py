"""Workload inflation as a workload (schedulers.model.inflation) and its
measure (actors.analysis.inflation), pure."""
from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.actors.analysis.inflation import inflation_curve, inflation_summary
from schedlab.schedulers.events.shared import JOB_SUBMITTED, TASKS_KILLED, TASKS_LAUNCHED
from schedlab.schedulers.model.cluster import MachineClass, build_cell
from schedlab.schedulers.model.inflation import Inflation, inflation_jobs
from schedlab.schedulers.model.jobs import JobKind
from schedlab.schedulers.model.workload import Dist, JobClass


def _class(name: str, gpu: Dist, rate: float = 1.0) -> JobClass:
    return JobClass(name, JobKind.BATCH, Dist("constant", value=1.0 / rate), Dist("constant", value=1.0),
                    Dist("constant", value=10.0), (Dist("constant", value=1.0), Dist("constant", value=2.0), gpu))


def test_arrivals_stop_once_their_demand_reaches_the_multiple_and_repeat_by_seed() -> None:
    classes = (_class("a", Dist("empirical", values=(0.5, 1.0, 2.0))), _class("b", Dist("constant", value=0.0), rate=3.0))
    spec = Inflation(resource=2, until=1.3, gap=2.0)
    jobs = inflation_jobs(classes, 40.0, spec, seed=4)
    asked = np.cumsum([j.request[2] for j in jobs])
    assert asked[-1] >= 52.0 > asked[-2]
    assert all(j.tasks == 1 and math.isinf(j.durations[0]) and j.kind is JobKind.SERVICE for j in jobs)
    assert [j.submit_time for j in jobs[:3]] == [0.0, 2.0, 4.0] and [j.job_id for j in jobs[:3]] == [0, 1, 2]
    share_b = sum(j.job_class == "b" for j in jobs) / len(jobs)
    assert 0.6 < share_b < 0.9  # drawn by rate: b brings three tasks for a's one
    assert inflation_jobs(classes, 40.0, spec, seed=4) == jobs and inflation_jobs(classes, 40.0, spec, seed=5) != jobs
    assert inflation_jobs((classes[1],), 40.0, spec, seed=4) == []  # nothing asks for it: no endless stream


def test_the_measure_counts_launches_less_kills_at_each_arrival() -> None:
    cell = build_cell((MachineClass("m", 2, (4.0, 8.0)),))
    ev = {
        JOB_SUBMITTED: [{"t": float(i), "job_id": i, "request": [2.0, 1.0], "tasks": 1} for i in range(5)],
        TASKS_LAUNCHED: [{"t": 0.5, "tasks": [[0, 0, 0, 2.0, 1.0, 0.5]]}, {"t": 1.5, "tasks": [[1, 0, 0, 2.0, 1.0, 1.5]]},
                         {"t": 2.5, "tasks": [[2, 0, 1, 2.0, 1.0, 2.5], [-1, 0, 1, 2.0, 1.0, 0.0]]},
                         {"t": 4.5, "tasks": [[4, 0, 1, 2.0, 1.0, 4.5]]}],
        TASKS_KILLED: [{"t": 3.5, "tasks": [[1, 0, 0]]}],
    }
    times, arrived, allocated = inflation_curve(ev, cell, 0)
    assert times.tolist() == [0, 1, 2, 3, 4, 4.5] and arrived.tolist() == pytest.approx([0.25, 0.5, 0.75, 1.0, 1.25, 1.25])
    assert allocated.tolist() == pytest.approx([0.0, 0.25, 0.5, 0.75, 0.5, 0.75])  # the prefill (job -1) left out
    s = inflation_summary(ev, cell, {"resource": 0, "until": 1.25})
    assert s == {"resource": "cpu", "until": 1.25, "arrived": 1.25, "unallocated_at_full": 0.5, "unallocated_at_end": 0.25}
