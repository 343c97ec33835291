"""SLURM's scheduling passes: FCFS stops at the first job that does not
fit; EASY backfill never delays the first blocked job's reservation;
conservative backfill never breaks any reservation; nothing is ever
over-committed. Hand-worked cases and hypothesis properties on random
partitions, running jobs and queues."""
from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.slurm.backfill import Profile, QueuedJob, RunningJob, schedule

# 10 nodes; 6 busy until t = 100. Queue: an 8-node job (50 s), then small ones.
RUNNING = [RunningJob(1, 6, 100.0)]
QUEUE = [QueuedJob(2, 8, 50.0), QueuedJob(3, 2, 90.0), QueuedJob(4, 2, 200.0), QueuedJob(5, 4, 30.0)]


def test_fcfs_stops_at_the_first_job_that_does_not_fit() -> None:
    p = schedule(0.0, 10, RUNNING, QUEUE, "fcfs")
    assert p.start == [] and p.reservations == {}


def test_easy_reserves_the_head_job_and_backfills_what_cannot_delay_it() -> None:
    # Job 2 needs 8 nodes: 10 are free at t = 100 (shadow time). Job 3 (2
    # nodes, 90 s) ends before it; job 4 (2 nodes, 200 s) overlaps it but
    # uses the 2 nodes job 2 leaves; job 5 (4 nodes) finds none left now.
    p = schedule(0.0, 10, RUNNING, QUEUE, "easy")
    assert p.reservations == {2: 100.0}
    assert p.start == [3, 4] and p.backfilled == [3, 4]


def test_conservative_reserves_every_job_in_priority_order() -> None:
    # As EASY, and job 5 (4 nodes, 30 s) gets its own reservation: at 150,
    # when job 2's 8 nodes come back (job 4 still holds 2 until 200).
    p = schedule(0.0, 10, RUNNING, QUEUE, "conservative")
    assert p.start == [3, 4] and p.reservations == {2: 100.0, 5: 150.0}


def test_a_job_larger_than_the_partition_is_never_reserved() -> None:
    p = schedule(0.0, 4, [], [QueuedJob(1, 8, 10.0), QueuedJob(2, 1, 10.0)], "easy")
    assert p.start == [] and p.reservations == {}  # the head can never run, so nothing may jump it


def test_the_profile_steps() -> None:
    prof = Profile(0.0, 10, [RunningJob(1, 6, 100.0), RunningJob(2, 2, 50.0)])
    assert prof.times == [0.0, 50.0, 100.0] and prof.free == [2, 4, 10]
    assert prof.earliest(4, 10.0) == 50.0 and prof.earliest(11, 1.0) == math.inf
    prof.reserve(50.0, 60.0, 4)  # 4 nodes from 50 to 110: none free in [50, 100), 6 in [100, 110)
    assert prof.free == [2, 0, 6, 10] and prof.earliest(4, 10.0) == 100.0 and prof.earliest(8, 10.0) == 110.0


_running = st.lists(st.tuples(st.integers(1, 4), st.floats(1.0, 200.0)), max_size=5)
_queue = st.lists(st.tuples(st.integers(1, 8), st.floats(1.0, 300.0)), min_size=1, max_size=8)


def _case(total: int, running: list, queue: list) -> tuple[list[RunningJob], list[QueuedJob]]:
    rs, used = [], 0
    for i, (n, end) in enumerate(running):
        if used + n <= total:
            rs.append(RunningJob(100 + i, n, end))
            used += n
    return rs, [QueuedJob(i, n, d) for i, (n, d) in enumerate(queue)]


def _after(total: int, rs: list[RunningJob], qs: list[QueuedJob], started: list[int]) -> Profile:
    """The partition once the pass's jobs have started (each running its limit)."""
    by_id = {q.job_id: q for q in qs}
    return Profile(0.0, total, [*rs, *(RunningJob(j, by_id[j].nodes, by_id[j].limit) for j in started)])


@settings(max_examples=300, deadline=None)
@given(st.integers(4, 12), _running, _queue)
def test_easy_never_delays_the_reserved_job_and_never_overcommits(total: int, running: list, queue: list) -> None:
    rs, qs = _case(total, running, queue)
    p = schedule(0.0, total, rs, qs, "easy")
    prof = _after(total, rs, qs, p.start)
    assert min(prof.free) >= 0  # nothing over-committed, now or later
    fcfs = schedule(0.0, total, rs, qs, "fcfs")
    assert p.start[:len(fcfs.start)] == fcfs.start  # backfill only adds to what FCFS starts
    for job_id, at in p.reservations.items():
        head = next(q for q in qs if q.job_id == job_id)
        # What it was promised, it still gets: the backfilled jobs leave it room.
        assert prof.fits(at, head.limit, head.nodes)
        # And no backfill moved it: the same reservation as with no backfill at all.
        assert at == Profile(0.0, total, [*rs, *(RunningJob(j, next(q.nodes for q in qs if q.job_id == j),
                                                            next(q.limit for q in qs if q.job_id == j))
                                                 for j in fcfs.start)]).earliest(head.nodes, head.limit)


@settings(max_examples=300, deadline=None)
@given(st.integers(4, 12), _running, _queue)
def test_conservative_keeps_every_reservation(total: int, running: list, queue: list) -> None:
    rs, qs = _case(total, running, queue)
    p = schedule(0.0, total, rs, qs, "conservative")
    prof = _after(total, rs, qs, p.start)
    by_id = {q.job_id: q for q in qs}
    for job_id, at in sorted(p.reservations.items(), key=lambda kv: [q.job_id for q in qs].index(kv[0])):
        q = by_id[job_id]
        assert at > 0.0 and prof.fits(at, q.limit, q.nodes)  # every promise can be kept together
        prof.reserve(at, q.limit, q.nodes)
    assert min(prof.free) >= 0
    # A job starts now only if it does not push any earlier job's reservation back.
    for job_id in p.backfilled:
        assert job_id in p.start
