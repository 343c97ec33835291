"""The node monitor's stealing decisions (``stealing.Stealing``: when a
worker tries, whom it contacts, what it takes) and a restarted scheduler's
(``holdings``: what the node monitors hold of it, what to place again),
without Ray or clocks."""
from __future__ import annotations

import math

import numpy as np

from schedlab.schedulers.archs.sparrow.holdings import (add_long_work, merge_holdings, missing, not_started,
                                                        reservations_to_add)
from schedlab.schedulers.archs.sparrow.stealing import Stealing
from schedlab.schedulers.archs.sparrow.worker import QueueView, Reservation, Task, Worker


def stealing(**kw: object) -> Stealing:
    args: dict = dict(enabled=True, victims=tuple(range(8)), attempts=3, interval=1.0, machines_per_host=4)
    args.update(kw)
    return Stealing(**args)


def busy_worker(m: int) -> Worker:
    w = Worker(m, 1)
    w.enqueue([Task(1, 0, 100.0, long=True)], 0.0)
    return w


def test_an_idle_worker_tries_at_once_then_every_interval() -> None:
    s, w = stealing(), Worker(0, 1)
    assert s.due(0, w, 10.0) and not s.due(0, w, 10.5) and s.due(0, w, 11.0)
    assert s.went_idle(0, w)  # its task ended: the periodic wait is forgotten
    assert s.due(0, w, 11.2)


def test_a_busy_worker_or_stealing_off_never_tries() -> None:
    s, busy = stealing(), busy_worker(1)
    assert not s.due(1, busy, 5.0) and not s.went_idle(1, busy)
    off = stealing(enabled=False, victims=())
    assert not off.went_idle(0, Worker(0, 1))
    assert off.targets(0, np.random.default_rng(0)) == []


def test_targets_are_distinct_victims_other_than_the_thief_and_batched_by_host() -> None:
    s = stealing(victims=tuple(range(6)))
    got = s.targets(2, np.random.default_rng(3))
    assert len(got) == 3 == len(set(got)) and 2 not in got and set(got) <= set(range(6))
    assert got == stealing(victims=tuple(range(6))).targets(2, np.random.default_rng(3))  # the Generator decides
    assert [s.host_of(t) for t in (0, 3, 4, 7)] == [0, 0, 1, 1]
    assert s.on_host([5, 1, 4, 2], 1) == [5, 4] and s.on_host([5, 1, 4, 2], 0) == [1, 2]


def test_take_is_the_short_entries_behind_a_long_task_and_nothing_from_an_unreachable_one() -> None:
    short = [Reservation(7, 0), Reservation(8, 0)]
    blocked = QueueView(3, 1, 1, 1, tuple(short))  # one slot, running a long task
    assert Stealing.take(blocked) == tuple(short)
    assert Stealing.take(QueueView(3, 1, 1, 0, tuple(short))) == ()  # running a short task: not blocked
    assert Stealing.take(None) == ()


def test_holdings_merge_every_reply() -> None:
    replies = [
        {"started": [[1, 0], [1, 2]], "queued": {1: [3]}, "reservations": {2: 2}, "running": [[0, 1, 0]]},
        {"started": [[2, 0]], "queued": {"1": [4]}, "reservations": {"2": 1, 3: 1}, "running": [[5, 2, 0]]},
    ]
    h = merge_holdings(replies)
    assert h.started == {1: {0, 2}, 2: {0}} and h.queued == {1: {3, 4}}
    assert h.reservations == {2: 3, 3: 1} and h.running == [[0, 1, 0], [5, 2, 0]]


def test_what_a_restarted_scheduler_places_again() -> None:
    assert not_started(5, {0, 2}) == [1, 3, 4]
    assert missing(5, {0, 2}, {3}) == [1, 4]
    assert reservations_to_add(2, left=3, have=1) == 4 and reservations_to_add(2, left=3, have=5) == 0


def test_long_work_ahead_counts_finite_estimates_on_general_workers_only() -> None:
    waiting = np.array([1.0, 0.0, 0.0])
    add_long_work(waiting, (0, 1, 2), [[0, 1, 0], [2, 1, 1], [2, 9, 0], [7, 1, 0], [1, 4, 0]],
                  {1: 10.0, 4: math.inf})
    assert waiting.tolist() == [11.0, 0.0, 10.0]  # job 9 has no estimate, worker 7 is short-only
