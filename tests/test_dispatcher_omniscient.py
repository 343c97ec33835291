"""The dispatcher's omniscient view (``[dispatcher] view = "omniscient"``):
the reference scheduler Sparrow is measured against. Pure: a slot is free
at its task's exact end, launches wait for the worker's own room, reports
never free twice, and the schedule is the greedy earliest-start one of
``schedulers.archs.sparrow.omniscient``. End to end on sim: the same starts,
and the invariants hold."""
from __future__ import annotations

import copy
import heapq
from pathlib import Path

import numpy as np
import pytest

from schedlab.actors.common.event_files import read_events
from schedlab.actors.run import run_scenario
from schedlab.schedulers.archs.dispatcher.head import HeadNode
from schedlab.schedulers.archs.sparrow.omniscient import EarliestStart
from schedlab.schedulers.events.shared import JOB_SUBMITTED, TASKS_COMPLETED, TASKS_LAUNCHED
from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.model.wire import pack_release, task_key, unpack_release, unpack_release_keys
from schedlab.schedulers.placement.policies import first_fit
from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.scenario.toml_table import ScenarioError


def job(job_id: int, durations: tuple[float, ...], cpu: float = 1.0) -> Job:
    return Job(job_id, "a", JobKind.BATCH, 0, 0.0, (cpu, 1.0), durations)


def head(machines: int, cpu: float, view: str = "omniscient") -> HeadNode:
    cap = np.tile([cpu, 16.0], (machines, 1))
    return HeadNode(cap, cap.copy(), 1, "fifo", first_fit, np.random.default_rng(0), view=view)


def report(h: HeadNode, host: int, keys: list[tuple[int, int]], machine: int) -> list:
    """Host ``host`` polls, reporting ``keys`` finished on ``machine``."""
    if not keys:
        return h.exchange(host, np.zeros(0, np.int64), np.zeros((0, 2)), [])
    blob = pack_release(np.full(len(keys), machine, dtype=np.int64),
                        np.vstack([np.asarray(h.jobs[j].job.request) for j, _ in keys]),
                        np.asarray([task_key(j, t, False) for j, t in keys], dtype=np.int64))
    machines, requests = unpack_release(blob)
    return h.exchange(host, machines, requests, unpack_release_keys(blob))


def test_a_slot_is_free_at_its_task_end_and_the_launch_waits_for_the_workers_room() -> None:
    h = head(machines=1, cpu=1.0)
    h.submit([job(1, (5.0,)), job(2, (3.0,))])
    h.dispatch(h.turn(), now=0.0)
    assert h.turn() is None and h.next_end() == 5.0
    assert [ln[:2] for ln in report(h, 0, [], 0)] == [[1, 0]]  # job 1 handed out
    assert h.release_due(4.999) == 0 and h.turn() is None
    assert h.release_due(5.0) == 1  # no report yet: the head's clock says it ended
    t = h.dispatch(h.turn(), now=5.0)
    assert t.placed == [(0, 0)] and h.to_launch[0][0][5] == 5.0  # starts at the end of the task before
    assert report(h, 0, [], 0) == [] and h.to_launch[0]  # the worker still runs job 1 by its account: held
    out = report(h, 0, [(1, 0)], 0)  # it reports job 1 finished: room, so job 2 goes out, start unchanged
    assert [(ln[0], ln[5]) for ln in out] == [(2, 5.0)] and not h.to_launch.get(0)
    assert h.free[0, 0] == 0.0 and h.room[0, 0] == 0.0  # job 1's cpu came back once, not twice
    assert h.next_end() == 8.0


def test_reported_view_waits_for_the_report() -> None:
    h = head(machines=1, cpu=1.0, view="reported")
    h.submit([job(1, (5.0,)), job(2, (3.0,))])
    h.dispatch(h.turn(), now=0.0)
    report(h, 0, [], 0)
    assert h.release_due(100.0) == 0 and h.next_end() is None and h.turn() is None
    report(h, 0, [(1, 0)], 0)
    assert h.turn().job.job_id == 2


def test_a_written_off_worker_forgets_what_the_clock_freed() -> None:
    h = head(machines=2, cpu=1.0)
    h.submit([job(1, (5.0, 5.0))])
    h.dispatch(h.turn(), now=0.0)
    report(h, 0, [], 0)
    report(h, 1, [], 1)
    assert h.release_due(5.0) == 2 and h.foreseen == {(1, 0), (1, 1)}
    lost, _ = h.write_off([0])
    assert lost == [[1, 0]] and h.foreseen == {(1, 1)}  # requeued as in the reported view
    report(h, 1, [(1, 1)], 1)
    assert not h.foreseen and h.free[1, 0] == 1.0 and h.room[1, 0] == 1.0


def _drive(machines: int, slots: int, jobs: list[tuple[float, Job]]) -> dict[tuple[int, int], float]:
    """The head alone in a discrete-event loop (no workers: its clock frees
    the slots): each task's start."""
    h = head(machines, float(slots))
    pending = list(jobs)
    starts: dict[tuple[int, int], float] = {}
    events = [t for t, _ in jobs]
    heapq.heapify(events)
    while events:
        now = heapq.heappop(events)
        h.release_due(now)
        while pending and pending[0][0] <= now:
            h.submit([pending.pop(0)[1]])
        while (jp := h.turn()) is not None:
            h.dispatch(jp, now)
        for launches in h.to_launch.values():
            for j, t, _m, _r, _d, s in launches:
                starts[(j, t)] = s
        h.to_launch.clear()
        if (end := h.next_end()) is not None:
            heapq.heappush(events, end)
    return starts


@pytest.mark.parametrize("seed", range(5))
def test_the_schedule_is_the_greedy_earliest_start_one(seed: int) -> None:
    rng = np.random.default_rng(seed)
    machines, slots = 4, 3
    t, jobs = 0.0, []
    for j in range(60):
        t += float(rng.exponential(1.0))
        jobs.append((t, job(j, tuple(float(x) for x in rng.exponential(5.0, size=int(rng.integers(1, 6)))))))
    starts = _drive(machines, slots, jobs)
    book = EarliestStart([slots] * machines)
    for arrival, jb in jobs:
        for i, d in enumerate(jb.durations):
            _w, start = book.place(d, arrival)
            assert starts[(jb.job_id, i)] == pytest.approx(start, abs=1e-9)


def test_the_scenario_key_and_its_defaults() -> None:
    from tests.conformance.scenarios import conformance_data

    data = conformance_data("dispatcher")
    data["dispatcher"] = {"view": "omniscient"}
    d = parse_scenario(copy.deepcopy(data), "d.toml").section
    assert (d.view, d.t_job, d.t_task, d.queue) == ("omniscient", 0.0, 0.0, "fifo")
    data["dispatcher"] = {"view": "omniscient", "t_job": 0.5}
    assert parse_scenario(copy.deepcopy(data), "d.toml").section.t_job == 0.5
    data["dispatcher"] = {}
    d = parse_scenario(copy.deepcopy(data), "d.toml").section
    assert (d.view, d.t_job) == ("reported", 0.01)
    data["dispatcher"] = {"view": "psychic"}
    with pytest.raises(ScenarioError, match=r"dispatcher\.view: must be one of reported, omniscient"):
        parse_scenario(copy.deepcopy(data), "d.toml")


LATENCY = 0.05
SCENARIO = {
    "name": "omniscient-test", "architecture": "dispatcher", "engine": "sim", "seed": 3, "time_scale": 10.0,
    "duration": 150.0,
    "cell": {"machines_per_actor": 4, "machine_classes": [{"name": "w", "count": 8, "cpu": 2.0, "mem": 8.0}]},
    "workload": {"classes": [{"name": "q", "kind": "batch", "interarrival": 0.95, "tasks": 4.0,
                              "duration": {"dist": "exponential", "mean": 3.0}, "cpu": 1.0, "mem": 1.0}]},
    "substrate": {"latency": LATENCY},
    "dispatcher": {"view": "omniscient"},
}


def test_on_sim_the_starts_are_the_earliest_ones_and_the_invariants_hold(tmp_path: Path) -> None:
    s = run_scenario(parse_scenario(copy.deepcopy(SCENARIO), "t.toml"), tmp_path)
    assert not any(s["invariants"].values()), s["invariants"]
    ev: dict[str, list] = {}
    for e in read_events(tmp_path / "events.jsonl"):
        ev.setdefault(e["event"], []).append(e)
    starts = {(row[0], row[1]): row[-1] for e in ev[TASKS_LAUNCHED] if not e.get("prefill") for row in e["tasks"]}
    ends = {(j, t): at for e in ev[TASKS_COMPLETED] for j, t, _m, at in e["tasks"]}
    submitted = sorted((e["t"], e["job_id"]) for e in ev[JOB_SUBMITTED])
    assert len(starts) > 500 and len(ends) > 450
    # Replay through the pure reference: each job reaches the head one
    # message delay after its release; durations from the run itself.
    book = EarliestStart([2] * 8)
    checked = waited = 0
    for t0, j in submitted:
        if any((j, i) not in ends for i in range(4)):
            break  # the run ended first: this job's durations (and so every later start) are unknown
        for i in range(4):
            _w, start = book.place(ends[(j, i)] - starts[(j, i)], t0 + LATENCY)
            # Event times are rounded to 0.1 ms; the head wakes 1 us after an end.
            assert starts[(j, i)] == pytest.approx(start, abs=1e-3), (j, i)
            checked += 1
            waited += start > t0 + LATENCY + 1e-3
    assert checked > 400 and waited > 40  # ~80% load: many tasks waited for a slot
