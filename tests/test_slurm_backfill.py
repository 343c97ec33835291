"""SLURM's scheduling passes: FCFS stops at the first job that does not
fit; EASY backfill never delays the first blocked job's reservation;
conservative backfill never breaks any reservation; nothing is ever
over-committed. Hand-worked cases and hypothesis properties on random
partitions, running jobs and queues."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.slurm.backfill import Profile, QueuedJob, RunningJob, schedule


def whole(total: int) -> np.ndarray:
    """``total`` nodes of one unit each (whole-node allocation), all free."""
    return np.ones((total, 1))


def running(job_id: int, nodes: range | tuple, ends: float) -> RunningJob:
    return RunningJob(job_id, tuple(nodes), ends)


def free_now(total: int, rs: list[RunningJob]) -> np.ndarray:
    f = whole(total)
    for r in rs:
        for n in r.nodes:
            f[n] -= 1.0
    return f


def used_after(total: int, rs: list[RunningJob], qs: list[QueuedJob], p) -> Profile:  # noqa: ANN001
    """The partition once the pass's jobs have started (each running its limit)."""
    by_id = {q.job_id: q for q in qs}
    started = [RunningJob(j, p.placed[j], by_id[j].limit) for j in p.start]
    prof = Profile(0.0, free_now(total, rs), rs)
    for r in started:
        prof.reserve(0.0, r.ends, r.nodes, (1.0,))
    return prof

# 10 nodes; 6 busy until t = 100. Queue: an 8-node job (50 s), then small ones.
RUNNING = [running(1, range(6), 100.0)]
QUEUE = [QueuedJob(2, 8, 50.0), QueuedJob(3, 2, 90.0), QueuedJob(4, 2, 200.0), QueuedJob(5, 4, 30.0)]
FREE = free_now(10, RUNNING)


def test_fcfs_stops_at_the_first_job_that_does_not_fit() -> None:
    p = schedule(0.0, FREE, RUNNING, QUEUE, "fcfs")
    assert p.start == [] and p.reservations == {}


def test_easy_reserves_the_head_job_and_backfills_what_cannot_delay_it() -> None:
    # Job 2 needs 8 nodes: 10 are free at t = 100 (shadow time), nodes 0-7.
    # Job 3 (2 nodes, 90 s) ends before it; job 4 (2 nodes, 200 s) overlaps
    # it but takes nodes 8-9, which job 2 leaves; job 5 (4 nodes) finds none.
    p = schedule(0.0, FREE, RUNNING, QUEUE, "easy")
    assert p.reservations == {2: 100.0}
    assert p.start == [3, 4] and p.backfilled == [3, 4]
    assert p.placed == {3: (6, 7), 4: (8, 9)}


def test_conservative_reserves_every_job_in_priority_order() -> None:
    # As EASY, and job 5 (4 nodes, 30 s) gets its own reservation: at 150,
    # when job 2's 8 nodes come back (job 4 still holds 2 until 200).
    p = schedule(0.0, FREE, RUNNING, QUEUE, "conservative")
    assert p.start == [3, 4] and p.reservations == {2: 100.0, 5: 150.0}


def test_a_job_larger_than_the_partition_is_never_reserved() -> None:
    p = schedule(0.0, whole(4), [], [QueuedJob(1, 8, 10.0), QueuedJob(2, 1, 10.0)], "easy")
    assert p.start == [] and p.reservations == {}  # the head can never run, so nothing may jump it


def test_the_profile_steps() -> None:
    rs = [running(1, range(6), 100.0), running(2, (6, 7), 50.0)]
    prof = Profile(0.0, free_now(10, rs), rs)
    assert prof.times == [0.0, 50.0, 100.0] and [int(f.sum()) for f in prof.free] == [2, 4, 10]
    assert prof.earliest(QueuedJob(9, 4, 10.0)) == (50.0, (6, 7, 8, 9))
    assert prof.earliest(QueuedJob(9, 11, 1.0)) == (math.inf, ())
    prof.reserve(50.0, 60.0, (6, 7, 8, 9), (1.0,))  # 4 nodes from 50 to 110: none free in [50, 100)
    assert [int(f.sum()) for f in prof.free] == [2, 0, 6, 10]
    assert prof.earliest(QueuedJob(9, 4, 10.0))[0] == 100.0 and prof.earliest(QueuedJob(9, 8, 10.0))[0] == 110.0


def test_shared_nodes_pack_tasks_by_their_request() -> None:
    # Two 8-cpu nodes; node 0 has 2 cpus free until 100. A job of 5 tasks
    # of 2 cpus fits now (1 on node 0, 4 on node 1); one of 8 waits for 100.
    free = np.array([[2.0, 32.0], [8.0, 32.0]])
    rs = [RunningJob(1, (0, 0, 0), 100.0, (2.0, 4.0))]
    p = schedule(0.0, free, rs, [QueuedJob(2, 8, 50.0, (2.0, 4.0)), QueuedJob(3, 5, 40.0, (2.0, 4.0))], "easy")
    # Job 3 ends at 40, before job 2's reservation at 100: backfilled.
    assert p.reservations == {2: 100.0} and p.start == [3] and p.placed == {3: (0, 1, 1, 1, 1)}
    # One that would outlast 100 on the cpus job 2 needs is not.
    late = schedule(0.0, free, rs, [QueuedJob(2, 8, 50.0, (2.0, 4.0)), QueuedJob(3, 5, 400.0, (2.0, 4.0))], "easy")
    assert late.start == []


_running = st.lists(st.tuples(st.integers(1, 4), st.floats(1.0, 200.0)), max_size=5)
_queue = st.lists(st.tuples(st.integers(1, 8), st.floats(1.0, 300.0)), min_size=1, max_size=8)


def _case(total: int, running_: list, queue: list) -> tuple[list[RunningJob], list[QueuedJob]]:
    rs, used = [], 0
    for i, (n, end) in enumerate(running_):
        if used + n <= total:
            rs.append(RunningJob(100 + i, tuple(range(used, used + n)), end))
            used += n
    return rs, [QueuedJob(i, n, d) for i, (n, d) in enumerate(queue)]


@settings(max_examples=300, deadline=None)
@given(st.integers(4, 12), _running, _queue)
def test_easy_never_delays_the_reserved_job_and_never_overcommits(total: int, running_: list, queue: list) -> None:
    rs, qs = _case(total, running_, queue)
    p = schedule(0.0, free_now(total, rs), rs, qs, "easy")
    prof = used_after(total, rs, qs, p)
    assert min(float(f.min()) for f in prof.free) >= 0  # nothing over-committed, now or later
    fcfs = schedule(0.0, free_now(total, rs), rs, qs, "fcfs")
    assert p.start[:len(fcfs.start)] == fcfs.start  # backfill only adds to what FCFS starts
    for job_id, at in p.reservations.items():
        head = next(q for q in qs if q.job_id == job_id)
        # What it was promised, it still gets: the backfilled jobs leave it room.
        assert prof.earliest(head, not_before=at)[0] == at
        # And no backfill moved it: the same reservation as with no backfill at all.
        assert at == used_after(total, rs, qs, fcfs).earliest(head)[0]


@settings(max_examples=300, deadline=None)
@given(st.integers(4, 12), _running, _queue)
def test_conservative_keeps_every_reservation(total: int, running_: list, queue: list) -> None:
    rs, qs = _case(total, running_, queue)
    p = schedule(0.0, free_now(total, rs), rs, qs, "conservative")
    prof = used_after(total, rs, qs, p)
    by_id = {q.job_id: q for q in qs}
    for job_id, at in sorted(p.reservations.items(), key=lambda kv: [q.job_id for q in qs].index(kv[0])):
        q = by_id[job_id]
        got, nodes = prof.earliest(q, not_before=at)
        assert at > 0.0 and got == at  # every promise can be kept together
        prof.reserve(at, q.limit, nodes, (1.0,))
    assert min(float(f.min()) for f in prof.free) >= 0
    for job_id in p.backfilled:
        assert job_id in p.start


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 6), st.sampled_from([1.0, 2.0, 3.0]), st.floats(1.0, 300.0)),
                min_size=1, max_size=8), st.sampled_from(["fcfs", "easy", "conservative"]))
def test_shared_nodes_are_never_overcommitted(queue: list, mode: str) -> None:
    cap = np.array([[4.0, 16.0], [8.0, 32.0], [4.0, 16.0]])
    qs = [QueuedJob(i, n, d, (c, c * 2)) for i, (n, c, d) in enumerate(queue)]
    p = schedule(0.0, cap, [], qs, mode)
    used = np.zeros_like(cap)
    for j in p.start:
        q = qs[j]
        assert len(p.placed[j]) == q.tasks
        for n in p.placed[j]:
            used[n] += q.request
    assert (used <= cap + 1e-9).all()
