"""The Omega scheduler's decision logic, without Ray or clocks."""
from __future__ import annotations

import numpy as np

from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.shared_state.commit import ConflictMode, TxnMode
from schedlab.schedulers.archs.omega.scheduler import OmegaSchedulerCore, SchedulerParams
from schedlab.schedulers.placement.policies import first_fit
from schedlab.schedulers.shared_state.cell import LocalCopy, SharedCell


def job(job_id: int, tasks: int, cpu: float = 1.0, mem: float = 1.0) -> Job:
    return Job(job_id, "batch", JobKind.BATCH, 0, 0.0, (cpu, mem), (10.0,) * tasks)


def core_for(cell: SharedCell, **params: object) -> OmegaSchedulerCore:
    p = SchedulerParams(name="s", t_job=0.5, t_task=0.1, policy=first_fit, **params)  # type: ignore[arg-type]
    return OmegaSchedulerCore(p, LocalCopy(cell.full()), np.random.default_rng(0))


def test_think_time_is_t_job_plus_t_task_per_pending_task() -> None:
    core = core_for(SharedCell(np.full((2, 2), 4.0)))
    core.submit([job(1, 3)])
    jp = core.next_job(0.0)
    assert jp is not None
    assert core.think_time(jp) == 0.5 + 0.1 * 3


def test_fifo_and_first_attempt_recorded_once() -> None:
    core = core_for(SharedCell(np.full((2, 2), 4.0)))
    core.submit([job(1, 1), job(2, 1)])
    jp = core.next_job(0.0)
    assert jp is not None and jp.job.job_id == 1
    assert core.begin_attempt(jp, 3.0) is True
    assert core.begin_attempt(jp, 5.0) is False
    assert jp.first_attempt == 3.0 and jp.attempts == 2


def test_plan_does_not_touch_the_local_copy() -> None:
    cell = SharedCell(np.full((2, 2), 4.0))
    core = core_for(cell)
    core.submit([job(1, 3)])
    jp = core.next_job(0.0)
    before = core.local.free.copy()
    plan = core.plan(jp)
    assert len(plan.claims) == 3
    np.testing.assert_array_equal(core.local.free, before)
    np.testing.assert_array_equal(plan.claims.seen_seq, core.local.seq[plan.claims.machine])


def test_full_commit_schedules_the_job() -> None:
    cell = SharedCell(np.full((2, 2), 4.0))
    core = core_for(cell)
    core.submit([job(1, 3)])
    jp = core.next_job(0.0)
    core.begin_attempt(jp, 0.0)
    plan = core.plan(jp)
    result = cell.commit(plan.claims, ConflictMode.RESOURCE, TxnMode.INCREMENTAL)
    out = core.settle(jp, plan, result.accepted, 1.0)
    assert out.status == "scheduled"
    assert sorted(out.committed_tasks.tolist()) == [0, 1, 2]
    assert len(core.queue) == 0


def test_conflicted_tasks_retry_and_only_they_stay_pending() -> None:
    cell = SharedCell(np.full((1, 2), 2.0))
    core = core_for(cell)
    core.submit([job(1, 2)])
    jp = core.next_job(0.0)
    core.begin_attempt(jp, 0.0)
    plan = core.plan(jp)
    # Another scheduler takes one slot meanwhile.
    other = core.plan(core.queue.popleft()) if core.queue else None
    assert other is None
    cell.commit(type(plan.claims)(np.array([0]), np.array([[1.0, 1.0]]), np.array([0])), ConflictMode.RESOURCE, TxnMode.INCREMENTAL)
    result = cell.commit(plan.claims, ConflictMode.RESOURCE, TxnMode.INCREMENTAL)
    out = core.settle(jp, plan, result.accepted, 1.0)
    assert out.status == "retry"
    assert out.committed_tasks.size == 1 and jp.pending.size == 1
    assert core.queue[0] is jp


def test_abandoned_after_max_attempts() -> None:
    cell = SharedCell(np.full((1, 2), 1.0))
    core = core_for(cell, max_attempts=3)
    core.submit([job(1, 1, cpu=1.0)])
    cell.commit(type(core.plan(core.queue[0]).claims)(np.array([0]), np.array([[1.0, 1.0]]), np.array([0])),
                ConflictMode.RESOURCE, TxnMode.INCREMENTAL)
    core.local.apply(cell.delta_since(0))
    statuses = []
    now = 0.0
    while core.queue:
        jp = core.next_job(now)
        if jp is None:
            now = core.next_due() or now
            continue
        core.begin_attempt(jp, now)
        plan = core.plan(jp)
        assert len(plan.claims) == 0  # nothing fits on the copy
        statuses.append(core.settle(jp, plan, np.zeros(0, dtype=bool), now).status)
    assert statuses == ["retry", "retry", "abandoned"]


def test_nothing_fits_backs_off() -> None:
    cell = SharedCell(np.full((1, 2), 0.5))
    core = core_for(cell, retry_backoff=7.0)
    core.submit([job(1, 1)])
    jp = core.next_job(10.0)
    core.begin_attempt(jp, 10.0)
    out = core.settle(jp, core.plan(jp), np.zeros(0, dtype=bool), 10.0)
    assert out.status == "retry"
    assert core.next_job(16.9) is None
    assert core.next_due() == 17.0
    assert core.next_job(17.0) is jp


# --- Recovery and the write-off log: decided here, the shell fetches and sends ---

def test_recover_keeps_placed_jobs_resumes_partial_ones_and_requeues_the_rest() -> None:
    core = core_for(SharedCell(np.full((2, 2), 4.0)))
    core.begin_recovery()
    assert core.lost_read_from() is None  # no write-off read while the cell answers
    got = core.recover([job(1, 2), job(2, 3), job(3, 2)], cursor=7, placed={1: [0, 1], 2: [1]})
    assert [j.job_id for j in got.placed] == [1] and got.queued == 2
    assert core.lost_read_from() == 7 and not core.recovering
    partial = core.next_job(0.0)
    assert partial is not None and partial.job.job_id == 2
    assert partial.pending.tolist() == [0, 2] and partial.first_attempt == -1.0  # wait time keeps its start
    anew = core.next_job(0.0)
    assert anew is not None and anew.job.job_id == 3 and anew.pending.tolist() == [0, 1] and anew.first_attempt is None
    assert core.next_job(0.0) is None


def test_recover_never_moves_the_cursor_back_and_abort_resumes_reads() -> None:
    core = core_for(SharedCell(np.full((2, 2), 4.0)))
    core.lost_cursor = 9
    core.begin_recovery()
    core.abort_recovery()
    assert core.lost_read_from() == 9
    core.begin_recovery()
    core.recover([], cursor=4, placed={})  # a stale leader's shorter log
    assert core.lost_read_from() == 9


def test_lost_tasks_of_own_jobs_are_requeued_in_task_order() -> None:
    core = core_for(SharedCell(np.full((2, 2), 4.0)))
    known = {1: job(1, 4), 2: job(2, 2)}
    mine = core.requeue_lost(0, 5, [(1, 3), (9, 0), (1, 0), (2, 1)], known)  # job 9 is another scheduler's
    assert mine == {1: [3, 0], 2: [1]} and core.lost_read_from() == 5
    first = core.next_job(0.0)
    assert first is not None and first.job.job_id == 1 and first.pending.tolist() == [0, 3]
    second = core.next_job(0.0)
    assert second is not None and second.job.job_id == 2 and second.pending.tolist() == [1]


def test_a_lost_log_answer_overtaken_by_a_recovery_is_dropped() -> None:
    known = {1: job(1, 2)}
    core = core_for(SharedCell(np.full((2, 2), 4.0)))
    core.begin_recovery()  # began while the read was out
    assert core.requeue_lost(0, 3, [(1, 0)], known) == {} and not core.queue
    core.recover([], cursor=2, placed={})
    assert core.requeue_lost(0, 3, [(1, 0)], known) == {}  # the cursor moved meanwhile: stale
    assert core.lost_read_from() == 2 and not core.queue
    assert core.requeue_lost(2, 1, [], known) == {} and core.lost_read_from() == 2  # a stale leader: forward only


def test_put_back_returns_a_stopped_attempt_to_the_head() -> None:
    core = core_for(SharedCell(np.full((2, 2), 4.0)))
    core.submit([job(1, 1), job(2, 1)])
    jp = core.next_job(0.0)
    assert jp is not None
    core.put_back(jp)
    again = core.next_job(0.0)
    assert again is jp
