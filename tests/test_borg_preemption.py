"""Borg preemption: which victims, on which machine (pure, no Ray)."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.borg.preemption import choose_preemption, victims_on
from schedlab.schedulers.archs.borg.priority import may_preempt


def v(cpu: float, mem: float) -> np.ndarray:
    return np.array([cpu, mem], dtype=np.float64)


def keys(vs) -> list:
    return [x[0] for x in vs]


def test_victims_on_fits_already_returns_empty() -> None:
    assert victims_on(v(2.0, 2.0), v(2.0, 2.0), 100, [("a", 0, v(1.0, 1.0))]) == []


def test_victims_lowest_priority_first_then_largest() -> None:
    running = [("p50", 50, v(4.0, 4.0)), ("p10", 10, v(1.0, 1.0))]
    assert keys(victims_on(v(0.0, 0.0), v(1.0, 1.0), 100, running)) == ["p10"]
    assert keys(victims_on(v(0.0, 0.0), v(3.0, 3.0), 100, running)) == ["p10", "p50"]
    running = [("small", 10, v(1.0, 1.0)), ("big", 10, v(3.0, 3.0))]
    assert keys(victims_on(v(0.0, 0.0), v(2.0, 2.0), 100, running)) == ["big"]


def test_victims_on_respects_may_preempt() -> None:
    running = [("prod", 250, v(8.0, 8.0)), ("same", 150, v(8.0, 8.0)), ("higher", 180, v(8.0, 8.0))]
    assert victims_on(v(0.0, 0.0), v(1.0, 1.0), 150, running) is None  # equal/higher never evicted
    assert victims_on(v(0.0, 0.0), v(1.0, 1.0), 300, [running[0]]) is None  # prod never evicts prod
    assert keys(victims_on(v(0.0, 0.0), v(1.0, 1.0), 200, running)) == ["same"]  # prod may evict batch
    assert victims_on(v(0.0, 0.0), v(17.0, 1.0), 200, running[1:]) is None  # not enough even evicting all


def test_choose_prefers_lower_max_victim_priority() -> None:
    free = np.array([[0.0, 0.0], [0.0, 0.0]])
    running = {0: [("m0", 50, v(2.0, 2.0))], 1: [("a", 10, v(1.0, 1.0)), ("b", 10, v(1.0, 1.0))]}
    m, vs = choose_preemption(free, v(2.0, 2.0), 100, running)
    assert m == 1 and sorted(keys(vs)) == ["a", "b"]


def test_choose_tie_breaks_on_count_then_size() -> None:
    free = np.array([[0.0, 0.0], [0.0, 0.0]])
    running = {0: [("a", 10, v(1.0, 1.0)), ("b", 10, v(1.0, 1.0))], 1: [("c", 10, v(2.0, 2.0))]}
    assert choose_preemption(free, v(2.0, 2.0), 100, running) == (1, running[1])
    running = {0: [("big", 10, v(4.0, 4.0))], 1: [("mid", 10, v(2.0, 2.0))]}
    m, vs = choose_preemption(free, v(2.0, 2.0), 100, running)
    assert m == 1 and keys(vs) == ["mid"]


def test_choose_eligibility_and_impossible() -> None:
    free = np.array([[0.0, 0.0], [0.0, 0.0]])
    running = {0: [("a", 10, v(2.0, 2.0))], 1: [("b", 20, v(2.0, 2.0))]}
    m, vs = choose_preemption(free, v(2.0, 2.0), 100, running, eligible=np.array([False, True]))
    assert m == 1 and keys(vs) == ["b"]
    assert choose_preemption(free, v(2.0, 2.0), 100, running, eligible=np.array([False, False])) is None
    assert choose_preemption(free, v(2.0, 2.0), 15, {1: running[1]}) is None
    assert choose_preemption(free, v(2.0, 2.0), 300, {0: [("p", 200, v(9.0, 9.0))]}) is None
    assert choose_preemption(free, v(2.0, 2.0), 100, {}) is None


def test_machine_that_already_fits_is_not_a_preemption() -> None:
    free = np.array([[5.0, 5.0], [0.0, 0.0]])
    running = {0: [("a", 10, v(1.0, 1.0))], 1: [("b", 10, v(2.0, 2.0))]}
    assert choose_preemption(free, v(2.0, 2.0), 100, running) == (1, running[1])
    assert choose_preemption(free, v(2.0, 2.0), 100, {0: running[0]}) is None


PRIOS = [0, 50, 99, 100, 150, 199, 200, 250, 359, 360, 400]


@st.composite
def situations(draw):
    m = draw(st.integers(1, 4))
    free = np.array([[draw(st.integers(0, 8)) * 0.5, draw(st.integers(0, 8)) * 0.5] for _ in range(m)])
    running = {}
    for i in range(m):
        if draw(st.booleans()) or i == 0:
            running[i] = [(f"t{i}.{j}", draw(st.sampled_from(PRIOS)), v(draw(st.integers(0, 6)) * 0.5,
                                                                          draw(st.integers(0, 6)) * 0.5))
                          for j in range(draw(st.integers(0, 4)))]
    req = v(draw(st.integers(0, 8)) * 0.5, draw(st.integers(0, 8)) * 0.5)
    eligible = np.array(draw(st.lists(st.booleans(), min_size=m, max_size=m))) if draw(st.booleans()) else None
    return free, running, req, draw(st.sampled_from([100, 199, 250, 360, 400])), eligible


def cost(vs) -> tuple:
    return (max(x[1] for x in vs), len(vs), float(sum(np.sum(x[2]) for x in vs)))


@given(situations())
@settings(max_examples=200, deadline=None)
def test_choose_preemption_properties(s) -> None:
    free, running, req, prio, eligible = s
    free_before = free.copy()
    got = choose_preemption(free, req, prio, running, eligible)
    np.testing.assert_array_equal(free, free_before)  # pure: no mutation
    possible = {}
    for m, tasks in running.items():
        if eligible is not None and not eligible[m]:
            continue
        if np.all(free[m] + 1e-9 >= req):
            continue  # fits already: not a preemption
        allowed = sum((x[2] for x in tasks if may_preempt(prio, x[1])), v(0.0, 0.0))
        if np.all(free[m] + allowed + 1e-9 >= req):
            possible[m] = victims_on(free[m], req, prio, tasks)
    if not possible:
        assert got is None
        return
    assert got is not None
    m, vs = got
    assert m in possible and vs
    assert all(any(x is t for t in running[m]) for x in vs)
    assert len({id(x) for x in vs}) == len(vs)
    assert all(may_preempt(prio, x[1]) for x in vs)
    assert [x[1] for x in vs] == sorted(x[1] for x in vs)  # lowest priority first
    assert np.all(free[m] + sum(x[2] for x in vs) + 1e-9 >= req)
    assert not np.all(free[m] + sum((x[2] for x in vs[:-1]), v(0.0, 0.0)) + 1e-9 >= req)  # no spare victim at end
    assert all(cost(vs) <= cost(other) for other in possible.values())
