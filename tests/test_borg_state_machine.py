"""Borg's replicated cell state: what it records about placements taken back (pure)."""
from __future__ import annotations

import numpy as np

from schedlab.schedulers.archs.borg.cell_machine import BorgStateMachine


def cell() -> BorgStateMachine:
    cap = np.full((4, 2), 4.0)  # 4 machines, 2 per Borglet
    return BorgStateMachine(cap, cap, 2, {}, 10)


def submit(sm: BorgStateMachine, job_id: int, tasks: int, priority: int = 0) -> None:
    job = {"job_id": job_id, "user": "u", "priority": priority, "request": [2.0, 2.0], "durations": [10.0] * tasks, "job_class": "c"}
    assert sm.apply(("submit", [job], 0.0)) == [[job_id, True, ""]] or sm.jobs[job_id]


def test_down_records_unpulled_and_running_placements_it_takes_back() -> None:
    sm = cell()
    submit(sm, 1, 2)
    accepted, _, status = sm.apply(("place", 1, [[0, 0], [1, 2]], [], 1.0))
    assert accepted == [True, True] and status == "scheduled"
    launches, _, _ = sm.apply(("exchange", 1, [], 2.0))  # Borglet 1 pulls task 1 (machine 2)
    assert [ln[:3] for ln in launches] == [[1, 1, 2]]
    lost, unpulled = sm.apply(("down", [0, 1], 3.0))
    assert unpulled == [[1, 0]] and lost == [[1, 1]]
    assert sorted(sm.written_off) == [[1, 0, 0, 3.0], [1, 1, 2, 3.0]]
    # Replicated: a follower restoring a snapshot has the same record.
    other = cell()
    other.restore(sm.snapshot())
    assert sorted(other.written_off) == sorted(sm.written_off)


def test_preemption_before_launch_is_recorded_and_a_launched_victim_is_not() -> None:
    sm = cell()
    submit(sm, 1, 2, priority=0)
    sm.apply(("place", 1, [[0, 0], [1, 0]], [], 1.0))  # machine 0 full
    sm.apply(("exchange", 0, [], 1.5))  # both launched
    submit(sm, 2, 1, priority=0)
    sm.apply(("place", 2, [[0, 2]], [], 2.0))  # not pulled yet
    submit(sm, 3, 2, priority=300)
    sm.apply(("place", 3, [[0, 0]], [[1, 0], [2, 0]], 4.0))
    # (2, 0) never reached its Borglet: taken back and recorded; (1, 0) ran: killed, its Borglet confirms.
    assert sm.written_off == [[2, 0, 2, 4.0]]


def test_a_preempted_task_that_ended_before_its_kill_is_done_and_a_killed_one_pends_again() -> None:
    """A preempted task stays off the queue until its Borglet says it is
    dead. Killed: pending again. Ended on its own (the kill came after it
    finished): done, never placed again, or it would run a second time on
    another machine."""
    sm = cell()
    submit(sm, 1, 2, priority=0)
    sm.apply(("place", 1, [[0, 0], [1, 0]], [], 1.0))
    sm.apply(("exchange", 0, [], 1.5))  # both launched on machine 0
    submit(sm, 2, 2, priority=300)
    _, preempted, _ = sm.apply(("place", 2, [[0, 0], [1, 0]], [[1, 0], [1, 1]], 2.0))
    assert [v[:2] for v in preempted] == [[1, 0], [1, 1]] and sm.evicted == {(1, 0): 0, (1, 1): 0}
    assert 1 not in sm.queue  # nothing pending until the Borglet answers
    # Task 0 finished before the kill arrived; task 1 was killed.
    launches, kills, _ = sm.apply(("exchange", 0, [(1, 0, False), (1, 1, True)], 3.0))
    assert sorted(map(tuple, kills)) == [(1, 0), (1, 1)] and [ln[:3] for ln in launches] == [[2, 0, 0], [2, 1, 0]]
    assert sm.evicted == {}
    assert sm.jobs[1]["pending"] == [1] and sm.jobs[1]["done"] == 1 and 1 in sm.queue
    # The last task ends: the job is over (not queued, quota given back).
    sm.apply(("place", 1, [[1, 2]], [], 4.0))
    sm.apply(("exchange", 1, [], 4.5))
    sm.apply(("exchange", 1, [(1, 1, False)], 5.0))
    assert 1 not in sm.jobs and 1 not in sm.queue
