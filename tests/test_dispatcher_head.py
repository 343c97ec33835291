"""The central dispatcher's head node (schedulers.archs.dispatcher.head),
without Ray: queue disciplines, head-of-line blocking, workers' reports,
write-offs and a restarted head's recovery."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.dispatcher.head import HeadNode
from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.model.wire import pack_release, task_key, unpack_release, unpack_release_keys
from schedlab.schedulers.placement.cursor import RoundRobin
from schedlab.schedulers.placement.policies import first_fit

RNG = np.random.default_rng(0)


def job(job_id: int, tasks: int, cpu: float = 1.0, user: str = "a", duration: float = 10.0) -> Job:
    return Job(job_id, user, JobKind.BATCH, 0, 0.0, (cpu, 1.0), (duration,) * tasks)


def head(machines: int = 2, cpu: float = 4.0, queue: str = "fifo", k: int = 1, policy=first_fit) -> HeadNode:
    cap = np.tile([cpu, 16.0], (machines, 1))
    return HeadNode(cap, cap.copy(), k, queue, policy, RNG)


def finish(h: HeadNode, host: int, keys: list[tuple[int, int]], killed: bool = False) -> object:
    """A worker's poll reporting these tasks finished."""
    rows = [(h.running[key], key) for key in keys]
    blob = pack_release(np.asarray([m for m, _ in rows], dtype=np.int64),
                        np.vstack([np.asarray(h.jobs[k[0]].job.request) for _, k in rows]),
                        np.asarray([task_key(j, t, killed) for _, (j, t) in rows], dtype=np.int64))
    machines, requests = unpack_release(blob)
    return h.exchange(host, machines, requests, unpack_release_keys(blob))


def test_fifo_places_the_head_in_order_and_no_job_passes_it() -> None:
    h = head(machines=2, cpu=4.0)
    h.submit([job(1, 6), job(2, 3), job(3, 1, cpu=0.5)])
    assert [jp.job.job_id for jp in h.first_turn()] == [1]
    t = h.dispatch(h.turn(), now=0.0)
    assert t.placed == [(0, 0), (1, 0), (2, 0), (3, 0), (4, 1), (5, 1)] and t.now_scheduled
    assert [jp.job.job_id for jp in h.first_turn()] == [2] and h.first_turn() == []
    t = h.dispatch(h.turn(), now=1.0)
    assert t.placed == [(0, 1), (1, 1)] and not t.now_scheduled  # the third task waits for room
    assert [jp.job.job_id for jp in h.heads()] == [2] and h.turn() is None
    assert not h.blocked()  # job 3 (0.5 cpu) would not fit either
    h.exchange(0, np.zeros(0, np.int64), np.zeros((0, 2)), [])
    finish(h, 0, [(1, 0)])  # 1 cpu back
    assert h.turn().job.job_id == 2  # the head first: job 3 does not pass it
    t = h.dispatch(h.turn(), now=2.0)
    assert t.placed == [(2, 0)] and t.now_scheduled
    assert h.heads()[0].job.job_id == 3 and h.turn() is None  # no room left for job 3


def test_head_of_line_blocking_is_seen_only_when_a_job_behind_would_fit() -> None:
    h = head(machines=1, cpu=4.0)
    h.submit([job(1, 3)])
    h.dispatch(h.turn(), 0.0)  # 3 of 4 cpu used
    h.submit([job(2, 1, cpu=2.0), job(3, 1, cpu=1.0)])
    assert h.turn() is None  # job 2 (2 cpu) is at the head and does not fit
    assert h.blocked()  # job 3 (1 cpu) would fit behind it: the head blocks it
    h.submit([job(4, 1, cpu=9.0)])
    assert h.blocked()
    finish(h, 0, [(1, 0)])  # 2 cpu free now: the head fits again
    assert not h.blocked() and h.turn().job.job_id == 2


def test_fair_queue_serves_users_in_round_robin_and_a_stuck_user_blocks_only_itself() -> None:
    h = head(machines=1, cpu=4.0, queue="fair")
    h.submit([job(1, 1, user="a"), job(2, 1, user="a"), job(3, 1, user="b"), job(4, 1, user="b")])
    order = []
    for _ in range(4):
        jp = h.turn()
        order.append(jp.job.job_id)
        h.dispatch(jp, 0.0)
    assert order == [1, 3, 2, 4]  # a, b, a, b
    h2 = head(machines=1, cpu=4.0, queue="fair")
    h2.submit([job(1, 1, cpu=8.0, user="a"), job(2, 1, user="b")])
    assert h2.turn().job.job_id == 2  # a's head fits nowhere; b is served
    assert not h2.blocked()


def test_round_robin_filling_spreads_a_job_over_the_workers() -> None:
    h = head(machines=4, cpu=4.0, policy=RoundRobin())
    h.submit([job(1, 4)])
    assert [m for _, m in h.dispatch(h.turn(), 0.0).placed] == [0, 1, 2, 3]


def test_launches_go_out_once_and_finished_tasks_free_their_room() -> None:
    h = head(machines=2, cpu=2.0, k=1)
    h.submit([job(1, 3)])
    h.dispatch(h.turn(), 5.0)
    out = h.exchange(0, np.zeros(0, np.int64), np.zeros((0, 2)), [])
    assert [ln[:3] for ln in out] == [[1, 0, 0], [1, 1, 0]] and out[0][5] == 5.0 and out[0][4] == 10.0
    assert h.exchange(0, np.zeros(0, np.int64), np.zeros((0, 2)), []) == []  # handed out once
    assert h.free[0, 0] == 0.0
    finish(h, 0, [(1, 0)])
    assert h.free[0, 0] == 1.0 and (1, 0) in h.finished and (1, 0) not in h.running


def test_a_silent_worker_is_written_off_and_its_tasks_go_back_to_the_front() -> None:
    h = head(machines=2, cpu=2.0)
    h.submit([job(1, 4), job(2, 1)])
    h.dispatch(h.turn(), 0.0)  # job 1 fills both machines
    h.exchange(0, np.zeros(0, np.int64), np.zeros((0, 2)), [])  # host 0 pulled its launches; host 1 not yet
    lost, unpulled = h.write_off([0, 1])
    assert sorted(map(tuple, lost)) == [(1, 0), (1, 1)] and sorted(map(tuple, unpulled)) == [(1, 2), (1, 3)]
    assert [jp.job.job_id for jp in h.heads()] == [1] and list(h.jobs[1].pending) == [0, 1, 2, 3]
    assert h.turn() is None  # every machine is down
    assert h.exchange(0, np.zeros(0, np.int64), np.zeros((0, 2)), []) == {"reset": True, "launches": []}
    assert h.turn().job.job_id == 1  # host 0 is back, empty: job 1 first again, ahead of job 2
    assert h.dispatch(h.turn(), 1.0).placed == [(0, 0), (1, 0)]


def test_a_restarted_worker_is_written_off_and_back_at_once() -> None:
    h = head(machines=2, cpu=2.0)
    h.submit([job(1, 2)])
    h.dispatch(h.turn(), 0.0)
    lost, unpulled = h.rejoin(0)
    assert sorted(map(tuple, lost + unpulled)) == [(1, 0), (1, 1)]
    assert h.free[0, 0] == 2.0 and h.up.all()
    assert h.turn().job.job_id == 1


def test_a_restarted_head_rebuilds_from_registrations_before_requeueing() -> None:
    h = HeadNode(np.tile([2.0, 8.0], (2, 1)), np.tile([2.0, 8.0], (2, 1)), 1, "fifo", first_fit, RNG, registered=False)
    jobs = [job(1, 3), job(2, 1)]
    h.recover(jobs)
    assert h.queued() == 0 and h.awaiting_recovery  # nothing requeued before every worker is heard from
    h.submit([job(3, 1)])  # a new job meanwhile: no worker is known yet, so nothing can take it
    assert h.turn() is None
    assert h.exchange(0, np.zeros(0, np.int64), np.zeros((0, 2)), []) == {"register": True}
    h.register(0, running=[(1, 0, 0, [1.0, 1.0]), (-1, 0, 0, [0.5, 1.0])], finished=[(1, 1)], unreported=[(1, 1)])
    assert h.try_recover() == [] and h.awaiting_recovery  # host 1 not heard from yet
    h.register(1, running=[], finished=[], unreported=[])
    done = h.try_recover()
    assert done == [] and h.queued() == 3
    assert list(h.jobs[1].pending) == [2] and h.jobs[1].placed == {0, 1}  # task 0 runs, task 1 finished
    assert np.allclose(h.free[0], [0.5, 6.0])  # its running tasks, prefill included, hold their room
    # Task 1 finished before the registration: its report now gives nothing back twice.
    blob = pack_release(np.asarray([0]), np.asarray([[1.0, 1.0]]), np.asarray([task_key(1, 1)]))
    h.exchange(0, *unpack_release(blob), unpack_release_keys(blob))
    assert np.allclose(h.free[0], [0.5, 6.0])


def test_a_recovered_job_already_placed_needs_nothing_more() -> None:
    h = HeadNode(np.tile([2.0, 8.0], (1, 1)), np.tile([2.0, 8.0], (1, 1)), 1, "fifo", first_fit, RNG, registered=False)
    h.register(0, running=[(7, 0, 0, [1.0, 1.0])], finished=[(7, 1)], unreported=[])
    h.recover([job(7, 2)])
    assert h.awaiting_recovery == [] and h.queued() == 0 and h.jobs[7].scheduled


@settings(max_examples=60, deadline=None)
@given(queue=st.sampled_from(["fifo", "fair"]),
       ops=st.lists(st.tuples(st.sampled_from(["submit", "turn", "finish", "down", "back"]), st.integers(1, 4),
                              st.sampled_from([0.5, 1.0, 2.0, 3.0])), max_size=40))
def test_never_overfills_a_machine_and_never_runs_a_task_twice(queue: str, ops: list) -> None:
    h = head(machines=3, cpu=4.0, queue=queue)
    cap = h.capacity.copy()
    next_id = 1
    for op, n, cpu in ops:
        if op == "submit":
            h.submit([job(next_id, n, cpu=cpu, user="ab"[next_id % 2])])
            next_id += 1
        elif op == "turn" and (jp := h.turn()) is not None:
            h.dispatch(jp, 0.0)
        elif op == "finish":
            host = n % 3
            mine = [k for k, m in h.running.items() if m == host][:n]
            h.exchange(host, np.zeros(0, np.int64), np.zeros((0, 2)), [])  # pull launches first
            if mine:
                finish(h, host, mine)
        elif op == "down":
            h.write_off([n % 3])
        elif op == "back":
            h.exchange(n % 3, np.zeros(0, np.int64), np.zeros((0, 2)), [])
        used = np.zeros_like(cap)
        for (j, _t), m in h.running.items():
            used[m] += h.jobs[j].job.request
        assert (used <= cap + 1e-9).all()
        assert np.allclose(h.free[h.up], (cap - used)[h.up])
        for jp in h.jobs.values():  # a task is pending, running, or finished: never two of these
            running = {t for (j, t) in h.running if j == jp.job.job_id}
            assert not running & set(jp.pending) and len(set(jp.pending)) == len(jp.pending)
    assert math.isfinite(h.utilization()[0])


def test_a_worker_back_after_a_write_off_is_known_again_and_keeps_what_was_decided_for_it() -> None:
    h = head(machines=1, cpu=4.0)
    h.write_off([0])
    assert h.exchange(0, np.zeros(0, np.int64), np.zeros((0, 2)), []) == {"reset": True, "launches": []}
    h.submit([job(1, 3)])
    h.dispatch(h.turn(), 0.0)  # decided for host 0, not handed out yet
    assert h.exchange(0, np.zeros(0, np.int64), np.zeros((0, 2)), []) != {"register": True}  # no second registration
    h2 = HeadNode(np.tile([4.0, 16.0], (1, 1)), np.tile([4.0, 16.0], (1, 1)), 1, "fifo", first_fit, RNG, registered=False)
    h2.register(0, running=[], finished=[], unreported=[])
    h2.submit([job(1, 3)])
    h2.dispatch(h2.turn(), 0.0)
    h2.register(0, running=[], finished=[], unreported=[])  # registering again before the launches were pulled
    assert h2.free[0, 0] == 1.0  # the three decided tasks still hold their room

