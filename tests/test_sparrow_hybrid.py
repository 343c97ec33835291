"""Hawk: jobs routed by estimated task duration against the cutoff; long
ones to the centralized scheduler over the general partition only, short
ones late-bound over every worker; an idle worker steals only short
entries queued behind a long task."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.sparrow.hybrid import (
    Hawk,
    HawkConfig,
    LongScheduler,
    choose_steal,
    partition,
    steal_targets,
    stealable,
)
from schedlab.schedulers.archs.sparrow.worker import QueueView, Reservation, Task, Worker


def S(job: int) -> Reservation:
    return Reservation(job, 0, long=False)


def L(job: int) -> Task:
    return Task(job, 0, 1000.0, long=True)


def view(entries: list, worker: int = 1, slots: int = 1, busy: int = 1, running_long: int = 0) -> QueueView:
    return QueueView(worker, slots, busy, running_long, tuple(entries))


def test_partition_keeps_a_general_worker_and_the_config_checks_its_numbers() -> None:
    assert partition(10, 0.2) == ((0, 1, 2, 3, 4, 5, 6, 7), (8, 9))
    assert partition(10, 0.0) == (tuple(range(10)), ())
    with pytest.raises(ValueError, match="no general worker"):
        partition(1, 0.6)
    for bad in ({"cutoff": 0.0}, {"cutoff": 1.0, "short_fraction": 1.0}, {"cutoff": 1.0, "steal_attempts": -1}):
        with pytest.raises(ValueError):
            HawkConfig(**bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="probe ratio"):
        Hawk(HawkConfig(cutoff=10.0, d=4), 3)


def test_jobs_are_routed_by_their_estimate_against_the_cutoff() -> None:
    h = Hawk(HawkConfig(cutoff=100.0, short_fraction=0.25, d=2), 8)
    rng = np.random.default_rng(0)
    long = h.submit(1, [150.0, 90.0], rng)  # mean 120 > 100
    assert long.long and long.estimate == 120.0
    assert all(isinstance(e, Task) and e.long and w in h.general for w, e in long.placements)
    tie = h.submit(2, [100.0, 100.0], rng)  # at the cutoff: short
    assert not tie.long and len(tie.placements) == 4
    assert all(isinstance(e, Reservation) and not e.long for _, e in tie.placements)
    hinted = h.submit(3, [500.0], rng, estimate=5.0)  # the estimate decides, not the truth
    assert not hinted.long and h.get_task(3) == Task(3, 0, 500.0, False) and h.get_task(3) is None


def test_the_centralized_scheduler_picks_the_least_waiting_general_worker() -> None:
    c = LongScheduler((0, 1, 2))
    assert [w for w, _ in c.place([L(1)] * 4, 10.0)] == [0, 1, 2, 0]
    c.finished(1, 10.0)
    assert [w for w, _ in c.place([L(2)], 5.0)] == [1]
    assert c.waiting.tolist() == [20.0, 5.0, 10.0]


@settings(max_examples=100, deadline=None)
@given(n=st.integers(2, 20), frac=st.floats(0.0, 0.5), seed=st.integers(0, 2**32 - 1),
       jobs=st.lists(st.lists(st.floats(1.0, 300.0), min_size=1, max_size=6), min_size=1, max_size=12))
def test_long_tasks_never_go_to_the_short_only_partition(n: int, frac: float, seed: int,
                                                         jobs: list[list[float]]) -> None:
    h = Hawk(HawkConfig(cutoff=100.0, short_fraction=frac, d=1), n)
    rng = np.random.default_rng(seed)
    for j, durs in enumerate(jobs):
        r = h.submit(j, durs, rng)
        assert r.long == (float(np.mean(durs)) > 100.0)
        for w, e in r.placements:
            assert 0 <= w < n and e.long == r.long
            if r.long:
                assert w not in h.short_only


def test_short_jobs_reach_the_short_only_partition_too() -> None:
    h = Hawk(HawkConfig(cutoff=100.0, short_fraction=0.5, d=2), 10)
    r = h.submit(1, [1.0] * 5, np.random.default_rng(3))
    assert {w for w, _ in r.placements} == set(range(10))  # 10 reservations on 10 distinct workers


def test_stealable_is_the_first_short_group_behind_a_long_task() -> None:
    assert stealable(view([S(1), L(2), S(3), S(4), L(5), S(6)])) == (S(3), S(4))
    assert stealable(view([S(1), S(2), L(3), S(4)], running_long=1)) == (S(1), S(2))  # behind the running one
    assert stealable(view([S(1), S(2)], slots=2, busy=2, running_long=1)) == ()  # a short slot is still turning
    assert stealable(view([S(1), Task(2, 0, 1.0)])) == ()
    assert stealable(view([L(1), L(2), Task(3, 0, 1.0)])) == (Task(3, 0, 1.0),)


@settings(max_examples=150, deadline=None)
@given(n=st.integers(2, 8), k=st.integers(0, 8), seed=st.integers(0, 2**32 - 1), data=st.data())
def test_work_stealing_only_takes_short_entries_queued_behind_long_ones(n: int, k: int, seed: int,
                                                                        data: st.DataObject) -> None:
    kinds = [data.draw(st.lists(st.booleans(), max_size=6)) for _ in range(n)]  # True: long
    views = [view([L(10 * i + j) if lg else S(10 * i + j) for j, lg in enumerate(ks)], worker=i, busy=1,
                  running_long=int(data.draw(st.booleans()))) for i, ks in enumerate(kinds)]  # unique entries
    thief = data.draw(st.integers(0, n - 1))
    views[thief] = view([], worker=thief, busy=0)
    steal = choose_steal(views[thief], views, k, np.random.default_rng(seed))
    if steal is None:
        return
    assert steal.thief == thief and steal.victim != thief and steal.entries
    v = views[steal.victim]
    assert all(not e.long for e in steal.entries)
    first = v.entries.index(steal.entries[0])
    ahead = v.entries[:first]
    assert v.running_long >= v.slots or any(e.long for e in ahead)  # something long blocks them
    assert v.entries[first:first + len(steal.entries)] == steal.entries  # one contiguous group
    assert not choose_steal(views[(thief + 1) % n], views, k, np.random.default_rng(seed))  # busy: no steal


def test_no_steal_when_nothing_is_blocked_or_nobody_is_asked() -> None:
    views = [view([], worker=0, busy=0), view([S(1), S(2)], worker=1), view([L(3)], worker=2)]
    rng = np.random.default_rng(0)
    assert choose_steal(views[0], views, 5, rng) is None
    views[1] = view([L(4), S(1)], worker=1)
    assert choose_steal(views[0], views, 0, rng) is None
    assert choose_steal(views[0], views, 5, rng).entries == (S(1),)  # type: ignore[union-attr]


def test_a_stolen_reservation_asks_from_its_new_worker() -> None:
    h = Hawk(HawkConfig(cutoff=100.0, short_fraction=0.0, d=1, steal_attempts=1), 2)
    rng = np.random.default_rng(0)
    workers = [Worker(0), Worker(1)]
    lng = h.submit(1, [1000.0, 1000.0], rng)
    for w, e in lng.placements:
        workers[w].enqueue([e], 0.0)  # one long task on each worker
    short = h.submit(2, [1.0], rng)
    (w0, res), = short.placements
    workers[w0].enqueue([res], 0.0)  # behind a long task
    assert [w for w, _ in lng.placements] == [0, 1]  # task i on worker i
    workers[1 - w0].complete((1, 1 - w0), 1000.0)
    thief = workers[1 - w0]
    steal = choose_steal(thief.view(), [w.view() for w in workers], 1, rng)
    assert steal is not None and steal.entries == (res,)
    out = thief.enqueue(workers[w0].remove(steal.entries), 1000.0)
    (ask,) = out.messages
    out = thief.answer(ask.request, h.get_task(ask.job_id), 1000.0)
    assert [s.task.key for s in out.started] == [(2, 0)] and h.short.jobs == {}


@settings(max_examples=100, deadline=None)
@given(n=st.integers(2, 30), k=st.integers(0, 12), frac=st.floats(0.0, 0.6), seed=st.integers(0, 2**32 - 1))
def test_steal_targets_are_k_distinct_random_candidates_other_than_the_thief(n: int, k: int, frac: float,
                                                                             seed: int) -> None:
    general, _short = partition(n, frac)
    thief = seed % n
    got = steal_targets(thief, general, k, np.random.default_rng(seed))
    others = [w for w in general if w != thief]
    assert len(got) == min(k, len(others)) and len(set(got)) == len(got)
    assert set(got) <= set(others)
    # Ascending candidates skip the copy and draw the same workers (the
    # thief in the list or not).
    assert steal_targets(thief, general, k, np.random.default_rng(seed), ascending=True) == got
    assert steal_targets(n + 5, general, k, np.random.default_rng(seed), ascending=True) == \
        steal_targets(n + 5, general, k, np.random.default_rng(seed))


def test_hawk_steals_only_from_the_general_partition() -> None:
    """Hawk's thief contacts general workers only (its simulator draws the
    victims from the general partition): a short-only worker never holds a
    long task, so asking one is a wasted attempt. Here (artificially) only
    the short-only workers have something stealable: Hawk finds nothing,
    whatever the draw, while plain ``choose_steal`` over every worker would."""
    h = Hawk(HawkConfig(cutoff=100.0, short_fraction=0.5, steal_attempts=10), 6)
    assert h.general == (0, 1, 2) and h.short_only == (3, 4, 5)
    views = [view([], worker=0, busy=0)] + [view([S(w)], worker=w) for w in (1, 2)] \
        + [view([L(10 + w), S(w)], worker=w) for w in (3, 4, 5)]
    for seed in range(20):
        assert h.steal(views[0], views, np.random.default_rng(seed)) is None
        anywhere = choose_steal(views[0], views, 10, np.random.default_rng(seed))
        assert anywhere is not None and anywhere.victim in h.short_only
    views[2] = view([L(7), S(8), S(9)], worker=2)  # a general worker with short entries blocked
    for seed in range(20):
        st_ = h.steal(views[0], views, np.random.default_rng(seed))
        assert st_ is not None and st_.victim == 2 and st_.entries == (S(8), S(9))
    few = Hawk(HawkConfig(cutoff=100.0, short_fraction=0.5, steal_attempts=1), 6)
    hits = {few.steal(views[0], views, np.random.default_rng(seed)) is not None for seed in range(40)}
    assert hits == {True, False}  # one attempt: a coin between general workers 1 and 2
