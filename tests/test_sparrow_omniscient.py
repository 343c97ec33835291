"""The omniscient reference: each task where it starts earliest, and its
predicted starts are what FIFO worker cores really do."""
from __future__ import annotations

import heapq

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.sparrow.omniscient import EarliestStart, Omniscient
from schedlab.schedulers.archs.sparrow.worker import Reservation, Task, Worker


def test_each_task_goes_where_it_starts_earliest() -> None:
    o = Omniscient([1, 2])
    placed = o.place([Task(1, i, d) for i, d in enumerate([10.0, 4.0, 3.0, 1.0])], 0.0)
    # w0 slot, w1 two slots: 0->w0@0, 1->w1@0, 2->w1@0, 3 -> w1@3 (its slot frees at 3, before w0's 10 and w1's 4)
    assert placed == [(0, 0.0), (1, 0.0), (1, 0.0), (1, 3.0)]
    assert o.book.starts(5.0).tolist() == [10.0, 5.0]
    with pytest.raises(ValueError):
        EarliestStart([])


def test_ties_go_to_the_lowest_id_or_at_random() -> None:
    b = EarliestStart([1, 1, 1])
    assert b.place(1.0, 0.0)[0] == 0
    picks = {EarliestStart([1, 1, 1]).place(1.0, 0.0, rng=np.random.default_rng(s))[0] for s in range(30)}
    assert picks == {0, 1, 2}
    assert b.place(1.0, 0.0, candidates=[0, 2]) == (2, 0.0)


@settings(max_examples=60, deadline=None)
@given(slots=st.lists(st.integers(1, 3), min_size=1, max_size=4),
       arrivals=st.lists(st.tuples(st.floats(0.0, 5.0), st.floats(0.1, 10.0)), min_size=1, max_size=25))
def test_predicted_starts_are_the_workers_real_starts(slots: list[int], arrivals: list[tuple[float, float]]) -> None:
    o = Omniscient(slots)
    workers = [Worker(i, s) for i, s in enumerate(slots)]
    predicted: dict[tuple[int, int], float] = {}
    actual: dict[tuple[int, int], float] = {}
    ends: list[tuple[float, int, int, int]] = []
    now = 0.0

    def run_until(t: float) -> None:
        while ends and ends[0][0] <= t:
            end, w, j, i = heapq.heappop(ends)
            record(workers[w].complete((j, i), end))

    def record(out) -> None:
        for s in out.started:
            actual[s.task.key] = s.start
            heapq.heappush(ends, (s.end, s.worker, *s.task.key))

    for j, (gap, dur) in enumerate(arrivals):
        now += gap
        run_until(now)
        book = EarliestStart.from_workers(workers, now)  # rebuilt from the cores: the same books
        assert book.starts(now).tolist() == o.book.starts(now).tolist()
        task = Task(j, 0, dur)
        [(w, start)] = o.place([task], now)
        predicted[task.key] = start
        record(workers[w].enqueue([task], now))
    run_until(float("inf"))
    assert actual == pytest.approx(predicted)


def test_reservations_have_no_known_work() -> None:
    w = Worker(0)
    w.enqueue([Task(1, 0, 5.0), Reservation(2, 0)], 0.0)
    with pytest.raises(ValueError, match="reservation"):
        EarliestStart.from_workers([w], 1.0)
