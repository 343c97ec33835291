"""Sparrow's placement: random, per-task power of d choices, batch sampling
(m least loaded of d*m probed) and late binding (every task handed out once,
every unused reservation cancelled), with their probe and message costs."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.sparrow.placement import (
    batch_sampling,
    check_d,
    late_binding,
    per_task_sampling,
    random_placement,
)
from schedlab.schedulers.archs.sparrow.worker import Task, Worker


@pytest.mark.parametrize("make", [per_task_sampling, batch_sampling, late_binding])
def test_d_larger_than_the_cell_is_refused_with_a_clear_message(make) -> None:
    with pytest.raises(ValueError, match=r"probe ratio d=5 must be between 1 and the number of workers \(4\)"):
        make(5, 4)
    with pytest.raises(ValueError, match="d=0"):
        make(0, 4)
    make(4, 4)  # d = n is allowed: probe everyone


def test_random_placement_is_uniform_and_costs_one_message_a_task() -> None:
    p = random_placement(40_000, 8, np.random.default_rng(1))
    counts = np.bincount(p.workers, minlength=8)
    assert p.probes == 0 and p.messages == 40_000 and counts.size == 8
    assert np.abs(counts / 5000 - 1).max() < 0.05
    with pytest.raises(ValueError):
        check_d(1, 0)


def test_per_task_sampling_matches_a_direct_computation_of_its_probes() -> None:
    loads = np.array([5, 3, 8, 0, 2, 7, 1, 6, 4, 9])  # distinct: no tie to break
    pol = per_task_sampling(3, 10)
    for seed in range(20):
        p = pol.place(6, loads, np.random.default_rng(seed))
        rng = np.random.default_rng(seed)  # the same probes, drawn again
        probes = [rng.choice(10, size=3, replace=False) for _ in range(6)]
        assert p.workers.tolist() == [int(pr[np.argmin(loads[pr])]) for pr in probes]
        assert all(len(set(pr.tolist())) == 3 for pr in probes)
    assert (p.probes, p.messages) == (6 * 3, 2 * 6 * 3 + 6)


def test_per_task_sampling_chooses_with_the_exact_power_of_d_probabilities() -> None:
    """n=4, d=2: enumerate the six probe pairs (ties split evenly) and
    compare with the seeded policy's frequencies."""
    loads = np.array([0, 1, 1, 3])
    exact = np.zeros(4)
    pairs = list(itertools.combinations(range(4), 2))
    for pair in pairs:
        best = [w for w in pair if loads[w] == min(loads[list(pair)])]
        for w in best:
            exact[w] += 1 / len(pairs) / len(best)
    assert exact.tolist() == pytest.approx([0.5, 0.25, 0.25, 0.0])
    p = per_task_sampling(2, 4).place(20_000, loads, np.random.default_rng(7))
    freq = np.bincount(p.workers, minlength=4) / 20_000
    assert np.abs(freq - exact).max() < 0.015


@settings(max_examples=120, deadline=None)
@given(n=st.integers(1, 30), d=st.integers(1, 4), m=st.integers(1, 12), seed=st.integers(0, 2**32 - 1),
       data=st.data())
def test_batch_sampling_places_on_the_m_least_loaded_of_the_probed(n: int, d: int, m: int, seed: int,
                                                                   data: st.DataObject) -> None:
    d = min(d, n)
    loads = np.array(data.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)))
    p = batch_sampling(d, n).place(m, loads, np.random.default_rng(seed))
    probed = np.random.default_rng(seed).choice(n, size=min(d * m, n), replace=False)
    assert len(set(probed.tolist())) == len(probed) and p.probes == len(probed)
    assert set(p.workers.tolist()) <= set(probed.tolist())
    if m <= len(probed):
        assert len(set(p.workers.tolist())) == m  # one task each
        assert sorted(loads[p.workers].tolist()) == sorted(loads[probed].tolist())[:m]
    else:  # more tasks than workers: water-filling keeps the probed balanced
        after = loads[probed] + np.array([np.count_nonzero(p.workers == w) for w in probed])
        got = [w for w in probed if np.count_nonzero(p.workers == w)]
        assert max(after[list(probed).index(w)] for w in got) <= after.min() + 1
    assert p.messages == 2 * p.probes + m


def test_batch_sampling_spreads_a_job_per_task_sampling_may_stack() -> None:
    """Per-task sampling's probes go out together: two tasks probing the
    same idle worker both land there. Batch sampling puts one task a worker."""
    loads = np.array([0, 9, 9, 9])
    stacked = per_task_sampling(2, 4).place(3, loads, np.random.default_rng(0))
    spread = batch_sampling(2, 4).place(3, loads, np.random.default_rng(0))
    assert len(set(spread.workers.tolist())) == 3 and 0 in spread.workers
    assert np.count_nonzero(stacked.workers == 0) >= 2


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 12), d=st.integers(1, 4), sizes=st.lists(st.integers(1, 9), min_size=1, max_size=5),
       slots=st.integers(1, 2), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_late_binding_runs_every_task_once_and_cancels_every_unused_reservation(
        n: int, d: int, sizes: list[int], slots: int, seed: int, data: st.DataObject) -> None:
    """The scheduler and real worker cores; hypothesis picks the order in
    which GetTasks are answered and tasks complete."""
    d = min(d, n)
    rng = np.random.default_rng(seed)
    sched = late_binding(d, n, scheduler=3)
    workers = [Worker(i, slots) for i in range(n)]
    asks: list = []
    running: list[tuple[int, tuple[int, int]]] = []
    ran: list[tuple[int, int]] = []
    now = 0.0

    def absorb(out) -> None:
        asks.extend(out.messages)
        for s in out.started:
            ran.append(s.task.key)
            running.append((s.worker, s.task.key))

    for j, m in enumerate(sizes):
        res = sched.submit(j, [Task(j, i, 1.0) for i in range(m)], rng)
        assert len(res) == d * m and sched.outstanding(j) == d * m and sched.left(j) == m
        per_worker = np.bincount([w for w, _ in res], minlength=n)
        assert per_worker.max() - per_worker.min() <= 1  # distinct workers while they last
        for w, r in res:
            absorb(workers[w].enqueue([r], now))
    while asks or running:
        now += 1.0
        if asks and (not running or data.draw(st.booleans())):
            msg = asks.pop(data.draw(st.integers(0, len(asks) - 1)))
            assert msg.scheduler == 3
            absorb(workers[msg.worker].answer(msg.request, sched.get_task(msg.job_id), now))
        else:
            w, key = running.pop(data.draw(st.integers(0, len(running) - 1)))
            absorb(workers[w].complete(key, now))
    assert sorted(ran) == sorted((j, i) for j, m in enumerate(sizes) for i in range(m))  # each once
    assert sched.cancels == (d - 1) * sum(sizes) and sched.jobs == {}
    assert all(w.queue_length() == 0 for w in workers)
    assert sched.counters.per_task() == (d, 3 * d)
    with pytest.raises(ValueError, match="no reservation of job 0 outstanding"):
        sched.get_task(0)


def test_late_binding_hands_out_tasks_in_order_then_cancels() -> None:
    sched = late_binding(2, 10)
    tasks = [Task(7, i, 1.0) for i in range(3)]
    assert len(sched.submit(7, tasks, np.random.default_rng(0))) == 6
    got = [sched.get_task(7) for _ in range(6)]
    assert got == tasks + [None, None, None] and sched.cancels == 3
    sched.submit(8, [Task(8, 0, 1.0)], np.random.default_rng(0))
    with pytest.raises(ValueError, match="already submitted"):
        sched.submit(8, [Task(8, 0, 1.0)], np.random.default_rng(0))
    with pytest.raises(ValueError, match="must belong"):
        sched.submit(9, tasks, np.random.default_rng(0))
