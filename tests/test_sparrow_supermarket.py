"""The supermarket model: the closed form against hand values, and a small
event-driven emulation (worker cores, the placement policies, a heapq loop:
no actors) showing power of two choices beating random placement by the
margin the closed form predicts."""
from __future__ import annotations

import heapq
import math

import numpy as np
import pytest

from schedlab.schedulers.archs.sparrow.placement import per_task_sampling, random_placement
from schedlab.schedulers.archs.sparrow.supermarket import expected_time, tail_fraction
from schedlab.schedulers.archs.sparrow.worker import Task, Worker


def test_hand_values() -> None:
    # d=2, lam=0.9: 1 + 0.9^2 + 0.9^6 + 0.9^14 + 0.9^30 + 0.9^62 + ...
    hand = 1 + 0.81 + 0.531441 + 0.9**14 + 0.9**30 + 0.9**62 + 0.9**126
    assert expected_time(0.9, 2) == pytest.approx(hand, abs=1e-9) and expected_time(0.9, 2) == pytest.approx(2.614, abs=1e-3)
    assert expected_time(0.9, 1) == pytest.approx(10.0)
    assert expected_time(0.5, 2) == pytest.approx(1 + 0.25 + 0.5**6 + 0.5**14 + 0.5**30, abs=1e-12)
    assert expected_time(0.9, 3) == pytest.approx(1 + 0.9**3 + 0.9**12 + 0.9**39 + 0.9**120, abs=1e-9)
    assert expected_time(0.0, 2) == 1.0 and expected_time(0.0, 1) == 1.0


def test_tail_fractions() -> None:
    assert tail_fraction(0.9, 2, 0) == 1.0 and tail_fraction(0.9, 2, 1) == pytest.approx(0.9)
    assert tail_fraction(0.9, 2, 3) == pytest.approx(0.9**7)
    assert tail_fraction(0.9, 1, 5) == pytest.approx(0.9**5)  # M/M/1: geometric
    assert tail_fraction(0.5, 2, 12) == 0.0  # 0.5^4095 underflows to zero, not an error


@pytest.mark.parametrize("lam", [0.3, 0.7, 0.9, 0.99])
@pytest.mark.parametrize("d", [1, 2, 3, 5])
def test_littles_law_ties_the_time_to_the_tails_and_more_choices_help(lam: float, d: int) -> None:
    tasks_per_server = sum(tail_fraction(lam, d, i) for i in range(1, 4000))
    assert expected_time(lam, d) == pytest.approx(tasks_per_server / lam, rel=1e-9)
    assert expected_time(lam, d + 1) < expected_time(lam, d)
    assert expected_time(min(lam + 0.005, 0.995), d) > expected_time(lam, d)


def test_bad_arguments_are_refused() -> None:
    for lam, d in [(1.0, 2), (-0.1, 2), (0.5, 0), (0.5, 1.5)]:
        with pytest.raises(ValueError):
            expected_time(lam, d)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        tail_fraction(0.5, 2, -1)


def simulate(policy: str, lam: float = 0.9, n: int = 100, jobs: int = 30_000, warmup: int = 3_000,
             seed: int = 11) -> float:
    """Mean time in system of single-task jobs, Poisson arrivals at lam*n,
    exponential tasks of mean 1, on ``n`` one-slot worker cores. Random
    placement's queues start from M/M/1's stationary (geometric) lengths: at
    lam=0.9 an empty cell takes longer than the run to fill."""
    rng = np.random.default_rng(seed)
    workers = [Worker(i) for i in range(n)]
    loads = np.zeros(n, dtype=np.int64)
    arrive = np.cumsum(rng.exponential(1 / (lam * n), size=jobs))
    work = rng.exponential(1.0, size=jobs)
    events: list[tuple[float, int, int, int]] = []  # (time, seq, worker or -1 for an arrival, job)
    seq = 0

    def push(out) -> None:
        nonlocal seq
        for s in out.started:
            seq += 1
            heapq.heappush(events, (s.end, seq, s.worker, s.task.job_id))

    if policy == "random":
        for w, k in enumerate(rng.geometric(1 - lam, size=n) - 1):
            push(workers[w].enqueue([Task(-1 - w, i, float(x)) for i, x in enumerate(rng.exponential(1.0, k))], 0.0))
            loads[w] = k
    sampler = per_task_sampling(2, n)
    for j, t in enumerate(arrive):
        seq += 1
        heapq.heappush(events, (float(t), seq, -1, j))
    times = []
    while events:
        now, _, w, j = heapq.heappop(events)
        if w < 0:
            p = random_placement(1, n, rng) if policy == "random" else sampler.place(1, loads, rng)
            w = int(p.workers[0])
            loads[w] += 1
            push(workers[w].enqueue([Task(j, 0, float(work[j]))], now))
        else:
            loads[w] -= 1
            key = (j, 0) if j >= 0 else next(k for k in workers[w].running)
            push(workers[w].complete(key, now))
            if j >= warmup:
                times.append(now - arrive[j])
    assert len(times) == jobs - warmup and loads.sum() == 0
    return float(np.mean(times))


def test_two_choices_beat_random_by_the_closed_forms_margin() -> None:
    two = simulate("d2")
    rand = simulate("random")
    assert two == pytest.approx(expected_time(0.9, 2), rel=0.30)
    assert rand == pytest.approx(expected_time(0.9, 1), rel=0.30)
    assert rand > 3 * two, (rand, two)
    assert math.isfinite(two)
