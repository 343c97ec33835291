"""A SLURM pass cut into steps (``schedule_steps``), as the controller's
shell runs it at ten thousand nodes, so its lease renewal is not kept
waiting: run to its end it decides exactly as one pass; what changed
between its steps (a node down, a job gone, room taken) is checked when
its starts are applied; and the availability profile built in one sweep
is the one built by adding each running job's end to every later step."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.slurm.backfill import Profile, QueuedJob, RunningJob, run_steps, schedule, schedule_steps
from schedlab.schedulers.archs.slurm.controller import SlurmCore
from tests.test_slurm_controller import core


def loaded() -> SlurmCore:
    c = core()
    for jid, (part, n) in enumerate([("short", 2), ("long", 3), ("short", 1), ("long", 2), ("long", 1)], start=1):
        assert c.submit(jid, part, n, 600.0, "a", 0.0) == ""
    return c


def profile_by_adding(now: float, free: np.ndarray, running: list[RunningJob]) -> Profile:
    """The profile as it was built before: each end added to every later step."""
    prof = Profile(now, free, [])
    for r in sorted(running, key=lambda r: r.ends):
        if not math.isinf(r.ends):
            prof._add(max(r.ends, now), math.inf, r.nodes, r.request, +1.0)
    return prof


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(1, 3), st.sampled_from([5.0, 10.0, 10.0, 30.0, math.inf, -1.0])),
                max_size=12))
def test_the_profile_built_in_one_sweep_is_the_one_built_end_by_end(rows: list) -> None:
    free = np.full((6, 2), 4.0)
    running = [RunningJob(i, (node,) * k, ends, (0.5, 1.0)) for i, (node, k, ends) in enumerate(rows)]
    a, b = Profile(0.0, free, running), profile_by_adding(0.0, free, running)
    assert a.times == b.times
    assert all(np.array_equal(x, y) for x, y in zip(a.free, b.free))


def test_a_pass_run_step_by_step_decides_as_one_pass() -> None:
    free = np.ones((10, 1))
    free[:6] = 0.0
    running = [RunningJob(1, tuple(range(6)), 100.0)]
    queue = [QueuedJob(2, 8, 50.0), QueuedJob(3, 2, 90.0), QueuedJob(4, 2, 200.0), QueuedJob(5, 4, 30.0)]
    for mode in ("fcfs", "easy", "conservative"):
        steps = schedule_steps(0.0, free, running, queue, mode)
        n = 0
        for _ in steps:
            n += 1
        assert n >= (1 if mode == "fcfs" else 2)  # it does pause (fcfs: only the profile; the head blocks)
        assert run_steps(schedule_steps(0.0, free, running, queue, mode)) == schedule(0.0, free, running, queue, mode)


def test_the_controller_step_by_step_starts_what_one_pass_starts() -> None:
    one, stepped = loaded(), loaded()
    want = one.schedule(1.0)
    got: list = []
    for applied in stepped.schedule_steps(1.0):
        got += applied or []
    assert [(s.job_id, s.nodes) for s in got] == [(s.job_id, s.nodes) for s in want]
    assert np.array_equal(one.used, stepped.used)


def _pause_after_first_step(c: SlurmCore):  # noqa: ANN202
    steps = c.schedule_steps(1.0)
    assert next(steps) is None  # the short partition's pass has begun, nothing applied yet
    return steps


def _finish(steps) -> list:  # noqa: ANN001
    return run_steps(steps)


def test_a_node_that_went_down_during_the_pass_gets_no_start() -> None:
    c = loaded()
    steps = _pause_after_first_step(c)
    c.node_down(0)  # job 1 (short, 2 nodes) was headed for nodes 0-1
    started = _finish(steps)
    assert all(0 not in s.nodes for s in started) and started
    assert c.jobs[1].started is None and c.used[0].sum() == 0.0


def test_a_job_gone_or_a_node_filled_during_the_pass_is_not_started() -> None:
    c = loaded()
    steps = _pause_after_first_step(c)
    c.finish(3, 1.0)  # cancelled while queued
    c.add_foreign((-1, 0), 1, (1.0,), math.inf)  # node 1 taken by load from elsewhere
    started = {s.job_id: s.nodes for s in _finish(steps)}
    assert 3 not in started and 3 not in c.jobs
    assert all(1 not in nodes for nodes in started.values())
    assert c.jobs[1].started is None and started  # job 1 was headed for nodes 0-1; others still start
    assert np.all(c.used <= c.cap)
