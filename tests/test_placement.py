"""Placement policies: the shared contract (property tests over every
registered policy) and each policy's specific behaviour. Pure: no Ray."""
from __future__ import annotations

import copy
import pickle
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.placement.cursor import NextFit
from schedlab.schedulers.placement.policies import (
    PLACEMENT_POLICIES,
    almost_worst_fit,
    best_fit,
    first_fit,
    get_policy,
    next_fit,
    next_k_fit,
    random_first_fit,
    register_policy,
    worst_fit,
)
from schedlab.schedulers.model.resources import DEFAULT, EPS, fits, vector

CPU = DEFAULT.index("cpu")
MEM = DEFAULT.index("mem")

# Collected at import time, before any test registers extra policies.
POLICY_NAMES = sorted(PLACEMENT_POLICIES)
BUILTINS = {"first_fit", "random_first_fit", "best_fit", "worst_fit", "almost_worst_fit", "next_fit", "next_k_fit",
            "round_robin"}

# Values on a 1/4 grid are exact in binary floating point, so the arithmetic
# checks below can demand exact equality.
grid = st.integers(0, 64).map(lambda q: q / 4)  # 0 .. 16
grid_request = st.integers(0, 24).map(lambda q: q / 4)  # 0 .. 6


@st.composite
def free_matrices(draw: st.DrawFn, max_machines: int = 12) -> np.ndarray:
    m = draw(st.integers(1, max_machines))
    rows = draw(st.lists(st.lists(grid, min_size=len(DEFAULT), max_size=len(DEFAULT)), min_size=m, max_size=m))
    return np.asarray(rows, dtype=np.float64)


requests = st.lists(grid_request, min_size=len(DEFAULT), max_size=len(DEFAULT)).map(lambda r: np.asarray(r, dtype=np.float64))
float_free = st.lists(
    st.lists(st.floats(0.0, 100.0, allow_nan=False), min_size=len(DEFAULT), max_size=len(DEFAULT)), min_size=1, max_size=12
).map(lambda r: np.asarray(r, dtype=np.float64))
float_requests = st.lists(
    st.one_of(st.just(0.0), st.floats(0.01, 20.0, allow_nan=False)), min_size=len(DEFAULT), max_size=len(DEFAULT)
).map(lambda r: np.asarray(r, dtype=np.float64))


def rows(*pairs: tuple[float, float]) -> np.ndarray:
    return np.stack([vector(cpu=c, mem=m) for c, m in pairs])


def check_contract(
    before: np.ndarray, after: np.ndarray, request: np.ndarray, n_tasks: int, out: np.ndarray, exact: bool
) -> None:
    m = before.shape[0]
    out = np.asarray(out)
    assert out.shape == (n_tasks,)
    assert np.issubdtype(out.dtype, np.integer)
    assert np.all((out >= -1) & (out < m))
    placed = out[out >= 0]
    counts = np.bincount(placed, minlength=m)
    expected = before - counts[:, None] * request[None, :]
    # subtracts exactly what it placed (nothing more, nothing less)
    if exact:
        assert np.array_equal(after, expected)
    else:
        assert np.allclose(after, expected, rtol=0, atol=1e-9)
    # never over-fills a row
    assert np.all(after >= -EPS - 1e-12)
    assert np.all(counts[:, None] * request[None, :] <= before + EPS + 1e-12)
    missing = out == -1
    if missing.any():
        # -1 only when nothing fits anymore ...
        assert not fits(after, request).any()
        # ... so once a task misses, every later (identical) task misses too
        first_miss = int(np.argmax(missing))
        assert np.all(missing[first_miss:])


# --------------------------------------------------------------------------
# contract, every registered policy
# --------------------------------------------------------------------------


def test_builtin_policies_registered() -> None:
    assert BUILTINS <= set(PLACEMENT_POLICIES)


# Each property runs every registered policy on the same drawn input (one
# hypothesis run instead of one per policy keeps the suite fast). The
# registered next_fit and next_k_fit instances keep their cursor from one
# example to the next, cells of every size included: the contract must hold
# whatever state an earlier call left behind.


@settings(max_examples=200, deadline=None)
@given(free=free_matrices(), request=requests, n_tasks=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
def test_policy_contract_grid(free: np.ndarray, request: np.ndarray, n_tasks: int, seed: int) -> None:
    for name in POLICY_NAMES:
        work = free.copy()
        out = PLACEMENT_POLICIES[name](work, request, n_tasks, np.random.default_rng(seed))
        check_contract(free, work, request, n_tasks, out, exact=True)


@settings(max_examples=100, deadline=None)
@given(free=float_free, request=float_requests, n_tasks=st.integers(0, 40), seed=st.integers(0, 2**32 - 1))
def test_policy_contract_floats(free: np.ndarray, request: np.ndarray, n_tasks: int, seed: int) -> None:
    for name in POLICY_NAMES:
        work = free.copy()
        out = PLACEMENT_POLICIES[name](work, request, n_tasks, np.random.default_rng(seed))
        check_contract(free, work, request, n_tasks, out, exact=False)


@settings(max_examples=100, deadline=None)
@given(
    free=free_matrices(),
    jobs=st.lists(st.tuples(requests, st.integers(0, 15)), min_size=1, max_size=5),
    seed=st.integers(0, 2**32 - 1),
)
def test_consecutive_calls_see_earlier_choices(
    free: np.ndarray, jobs: list[tuple[np.ndarray, int]], seed: int
) -> None:
    """Several jobs placed on the same local copy never jointly over-fill it."""
    for name in POLICY_NAMES:
        policy = PLACEMENT_POLICIES[name]
        rng = np.random.default_rng(seed)
        work = free.copy()
        used = np.zeros_like(free)
        for request, n in jobs:
            before = work.copy()
            out = policy(work, request, n, rng)
            check_contract(before, work, request, n, out, exact=True)
            for m in out[out >= 0]:
                used[m] += request
        assert np.all(used <= free)
        assert np.array_equal(work, free - used)


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_everything_fits_means_no_misses(name: str) -> None:
    free = rows(*[(8, 8)] * 5)
    out = PLACEMENT_POLICIES[name](free, vector(cpu=1, mem=1), 40, np.random.default_rng(0))
    assert np.all(out >= 0)
    assert np.array_equal(free, np.zeros_like(free))  # 5 machines x 8 slots, all used


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_nothing_fits_means_all_misses_and_free_untouched(name: str) -> None:
    free = rows((1, 8), (8, 1), (0.5, 0.5))
    orig = free.copy()
    out = PLACEMENT_POLICIES[name](free, vector(cpu=2, mem=2), 3, np.random.default_rng(0))
    assert out.tolist() == [-1, -1, -1]
    assert np.array_equal(free, orig)


@pytest.mark.parametrize("name", POLICY_NAMES)
def test_zero_tasks(name: str) -> None:
    free = rows((4, 4))
    out = PLACEMENT_POLICIES[name](free, vector(cpu=1, mem=1), 0, np.random.default_rng(0))
    assert len(out) == 0
    assert np.array_equal(free, rows((4, 4)))


# --------------------------------------------------------------------------
# specific behaviour
# --------------------------------------------------------------------------


def test_first_fit_packs_lowest_indices_first() -> None:
    free = rows((4, 4), (4, 4), (4, 4))
    out = first_fit(free, vector(cpu=1, mem=1), 6, np.random.default_rng(0))
    assert out.tolist() == [0, 0, 0, 0, 1, 1]
    assert np.array_equal(free, rows((0, 0), (2, 2), (4, 4)))


def test_first_fit_skips_machines_that_do_not_fit_and_pads_with_minus_one() -> None:
    free = rows((0.5, 8), (2, 2), (8, 8))
    out = first_fit(free, vector(cpu=1, mem=1), 14, np.random.default_rng(0))
    # machine 0 has no cpu; machine 1 holds 2; machine 2 holds 8; 4 tasks miss
    assert out.tolist() == [1, 1] + [2] * 8 + [-1] * 4
    assert np.array_equal(free, rows((0.5, 8), (0, 0), (0, 0)))


@settings(max_examples=150, deadline=None)
@given(free=free_matrices(), request=requests, n_tasks=st.integers(1, 40))
def test_first_fit_only_moves_on_when_lower_machines_are_full(
    free: np.ndarray, request: np.ndarray, n_tasks: int
) -> None:
    work = free.copy()
    out = first_fit(work, request, n_tasks, np.random.default_rng(0))
    placed = out[out >= 0]
    assert np.all(np.diff(placed) >= 0)
    if placed.size:
        # every machine below the highest one used is full by the end
        assert not fits(work[: placed.max()], request).any()


def test_best_fit_picks_tightest_machine() -> None:
    free = rows((4, 4), (2, 2), (8, 8), (3, 3))
    out = best_fit(free, vector(cpu=2, mem=2), 2, np.random.default_rng(0))
    # task 1: machine 1 is left empty (tightest); task 2: machine 3 leaves (1,1)
    assert out.tolist() == [1, 3]
    assert np.array_equal(free, rows((4, 4), (0, 0), (8, 8), (1, 1)))


def test_worst_fit_picks_emptiest_machine() -> None:
    free = rows((4, 4), (2, 2), (8, 8), (3, 3))
    out = worst_fit(free, vector(cpu=2, mem=2), 2, np.random.default_rng(0))
    # machine 2 stays emptiest after the first task too: (6,6) vs (4,4)
    assert out.tolist() == [2, 2]
    assert np.array_equal(free, rows((4, 4), (2, 2), (4, 4), (3, 3)))


def test_best_and_worst_fit_ignore_machines_that_do_not_fit() -> None:
    # machine 0 would be the tightest but lacks memory; machine 2 the
    # emptiest in cpu but lacks memory
    free = rows((2, 1), (3, 3), (16, 1), (6, 6))
    req = vector(cpu=2, mem=2)
    assert best_fit(free.copy(), req, 1, np.random.default_rng(0)).tolist() == [1]
    assert worst_fit(free.copy(), req, 1, np.random.default_rng(0)).tolist() == [3]


# Machines whose cpu and mem free are equal: "tightest" and "emptiest" are
# then unambiguous, whatever the per-dimension normalisation.
square_free = st.lists(st.integers(0, 64), min_size=1, max_size=12).map(
    lambda xs: np.asarray([[x / 4] * len(DEFAULT) for x in xs], dtype=np.float64)
)


@settings(max_examples=150, deadline=None)
@given(free=square_free, q=st.integers(1, 24))
def test_best_fit_and_worst_fit_single_task_extremes(free: np.ndarray, q: int) -> None:
    request = np.full(len(DEFAULT), q / 4)
    ok = fits(free, request)
    b = int(best_fit(free.copy(), request, 1, np.random.default_rng(0))[0])
    w = int(worst_fit(free.copy(), request, 1, np.random.default_rng(0))[0])
    if not ok.any():
        assert b == -1 and w == -1
        return
    assert ok[b] and ok[w]
    assert free[b, 0] == free[ok, 0].min()
    assert free[w, 0] == free[ok, 0].max()


def test_random_first_fit_deterministic_for_same_seed() -> None:
    free = rows(*[(4, 4)] * 50)
    req = vector(cpu=1, mem=1)
    a_free, b_free = free.copy(), free.copy()
    a = random_first_fit(a_free, req, 30, np.random.default_rng(1234))
    b = random_first_fit(b_free, req, 30, np.random.default_rng(1234))
    assert np.array_equal(a, b)
    assert np.array_equal(a_free, b_free)
    c = random_first_fit(free.copy(), req, 30, np.random.default_rng(4321))
    assert not np.array_equal(a, c)


def test_random_first_fit_spreads_tasks() -> None:
    free = rows(*[(4, 4)] * 200)
    req = vector(cpu=1, mem=1)
    for seed in range(5):
        out = random_first_fit(free.copy(), req, 50, np.random.default_rng(seed))
        assert np.all(out >= 0)
        # first fit would use 13 machines; uniform choice uses ~44 on average
        assert np.unique(out).size >= 30


def test_random_first_fit_only_uses_fitting_machines_and_reaches_all_of_them() -> None:
    free = rows(*[(4, 4), (0.5, 4)] * 10)  # odd machines lack cpu
    req = vector(cpu=1, mem=1)
    seen: set[int] = set()
    rng = np.random.default_rng(7)
    for _ in range(50):
        out = random_first_fit(free.copy(), req, 5, rng)
        assert np.all(out % 2 == 0)
        seen.update(out.tolist())
    assert seen == set(range(0, 20, 2))


# --------------------------------------------------------------------------
# almost worst fit
# --------------------------------------------------------------------------


def test_almost_worst_fit_picks_the_second_emptiest_machine() -> None:
    free = rows((4, 4), (2, 2), (8, 8), (3, 3))
    out = almost_worst_fit(free, vector(cpu=2, mem=2), 2, np.random.default_rng(0))
    # task 1: emptiest is machine 2, second machine 0; task 2: machine 2 is
    # still emptiest (6,6 left), then machine 3 (1,1 left) beats 0 and 1 (0,0)
    assert out.tolist() == [0, 3]
    assert np.array_equal(free, rows((2, 2), (2, 2), (8, 8), (1, 1)))


def test_almost_worst_fit_takes_the_emptiest_when_it_is_the_only_fit() -> None:
    free = rows((1, 1), (4, 4), (0.5, 8))
    out = almost_worst_fit(free, vector(cpu=2, mem=2), 3, np.random.default_rng(0))
    assert out.tolist() == [1, 1, -1]
    assert np.array_equal(free, rows((1, 1), (0, 0), (0.5, 8)))


def test_almost_worst_fit_ties_go_to_the_lowest_index() -> None:
    # two equally empty machines: the first is "the emptiest", the second "the second"
    free = rows((4, 4), (4, 4), (2, 2))
    assert almost_worst_fit(free, vector(cpu=1, mem=1), 1, np.random.default_rng(0)).tolist() == [1]


@settings(max_examples=150, deadline=None)
@given(free=square_free, q=st.integers(1, 24))
def test_almost_worst_fit_single_task_is_second_largest(free: np.ndarray, q: int) -> None:
    request = np.full(len(DEFAULT), q / 4)
    ok = fits(free, request)
    m = int(almost_worst_fit(free.copy(), request, 1, np.random.default_rng(0))[0])
    if not ok.any():
        assert m == -1
        return
    room = np.sort(free[ok, 0])[::-1]
    assert ok[m]
    assert free[m, 0] == (room[1] if room.size > 1 else room[0])


# --------------------------------------------------------------------------
# next fit and next-k fit: a cursor kept across calls
# --------------------------------------------------------------------------


def test_next_fit_cursor_persists_across_calls_and_wraps() -> None:
    nf = NextFit(1)
    free = rows((1, 1), (4, 4), (4, 4))
    small, big = vector(cpu=1, mem=1), vector(cpu=2, mem=2)
    assert nf(free, big, 1, np.random.default_rng(0)).tolist() == [1]  # machine 0 too small
    assert nf.cursor == 1
    # first fit would go back to machine 0; next fit stays where it was
    assert nf(free, small, 1, np.random.default_rng(0)).tolist() == [1]
    assert nf(free, big, 2, np.random.default_rng(0)).tolist() == [2, 2]  # machine 1 has (1,1) left
    # machine 2 is full: the cursor wraps past the end to machine 0, then 1
    assert nf(free, small, 2, np.random.default_rng(0)).tolist() == [0, 1]
    assert nf.cursor == 1
    assert np.array_equal(free, np.zeros_like(free))
    assert nf(free, small, 2, np.random.default_rng(0)).tolist() == [-1, -1]


def test_next_k_fit_keeps_the_k_newest_machines_open() -> None:
    big, small = vector(cpu=3, mem=3), vector(cpu=1, mem=1)
    chosen = {}
    for k in (1, 2, 3):
        policy, free = NextFit(k), rows(*[(4, 4)] * 4)
        for _ in range(3):  # each big task opens the next machine: 0, 1, 2
            policy(free, big, 1, np.random.default_rng(0))
        chosen[k] = int(policy(free, small, 1, np.random.default_rng(0))[0])
    # open machines, oldest first: k=1 [2]; k=2 [1, 2] (0 closed); k=3 [0, 1, 2]
    assert chosen == {1: 2, 2: 1, 3: 0}


def test_next_k_fit_revisits_a_closed_machine_only_after_a_lap() -> None:
    policy, free = NextFit(2), rows(*[(4, 4)] * 4)
    big, small = vector(cpu=3, mem=3), vector(cpu=1, mem=1)
    place = lambda req: int(policy(free, req, 1, np.random.default_rng(0))[0])  # noqa: E731
    assert [place(big), place(big), place(big)] == [0, 1, 2]  # open [1, 2]
    assert place(small) == 1  # oldest open machine with room; machine 0 was closed
    assert place(small) == 2
    # both open machines full: the cursor moves on to 3, not back to 0,
    # although machine 0 has room and first fit would take it
    assert place(small) == 3 and policy.open == [2, 3]
    assert place(big) == 3
    # now 2 and 3 are full and nothing lies past 3: wrap to 0
    assert place(small) == 0 and policy.open == [3, 0]


@settings(max_examples=150, deadline=None)
@given(free=free_matrices(), request=requests, n_tasks=st.integers(0, 40), k=st.integers(1, 4))
def test_fresh_next_k_fit_places_one_job_as_first_fit_does(
    free: np.ndarray, request: np.ndarray, n_tasks: int, k: int
) -> None:
    """A fresh cursor starts at machine 0 and a job's tasks are identical, so
    it moves on exactly when first fit would."""
    a, b = free.copy(), free.copy()
    assert np.array_equal(NextFit(k)(a, request, n_tasks, np.random.default_rng(0)),
                          first_fit(b, request, n_tasks, np.random.default_rng(0)))
    assert np.array_equal(a, b)


@settings(max_examples=150, deadline=None)
@given(
    free=free_matrices(),
    jobs=st.lists(st.tuples(requests, st.integers(0, 15)), min_size=1, max_size=6),
)
def test_next_fit_moves_on_only_past_machines_that_are_full(
    free: np.ndarray, jobs: list[tuple[np.ndarray, int]]
) -> None:
    """Whenever the cursor moves from machine a to b, a and every machine it
    skipped (cyclically between a and b) could not take the task, and still
    cannot: next fit only ever takes room away."""
    nf = NextFit(1)
    work = free.copy()
    m = work.shape[0]
    for request, n in jobs:
        start = nf.cursor
        before = work.copy()
        out = nf(work, request, n, np.random.default_rng(0))
        check_contract(before, work, request, n, out, exact=True)
        placed = [int(x) for x in out if x >= 0]
        if not placed:
            continue
        skipped: list[int] = list(range(placed[0])) if start is None else []  # a fresh cursor starts at 0
        path = placed if start is None else [start, *placed]
        for a, b in zip(path, path[1:]):
            if a != b:  # left a: a, and every machine after it up to b, had no room
                skipped += [(a + i) % m for i in range((b - a) % m)]
        assert not fits(work[skipped], request).any()
        assert nf.cursor == placed[-1]


def test_next_fit_pickles_with_its_cursor_and_copies_move_independently() -> None:
    policy, free = NextFit(2), rows(*[(4, 4)] * 4)
    big, small = vector(cpu=3, mem=3), vector(cpu=1, mem=1)
    for _ in range(3):
        policy(free, big, 1, np.random.default_rng(0))
    clone = pickle.loads(pickle.dumps(policy))
    assert isinstance(clone, NextFit) and clone.k == 2 and clone.open == [1, 2]
    # each scheduler actor gets its own copy: moving one leaves the other
    clone(free.copy(), small, 3, np.random.default_rng(0))
    assert policy.open == [1, 2]
    assert copy.deepcopy(policy).open == [1, 2]
    # the registered instances pickle too (Ray ships them into every actor)
    for name in ("next_fit", "next_k_fit"):
        assert pickle.loads(pickle.dumps(get_policy(name))).k == get_policy(name).k


def test_next_fit_forgets_machines_past_a_smaller_cell() -> None:
    policy = NextFit(3)
    policy.open = [5, 7]  # as if an earlier call saw a bigger cell (a Mesos offer)
    out = policy(rows((4, 4), (4, 4)), vector(cpu=1, mem=1), 2, np.random.default_rng(0))
    assert out.tolist() == [0, 0]
    assert policy.open == [0]


def test_next_fit_needs_at_least_one_open_machine() -> None:
    with pytest.raises(ValueError):
        NextFit(0)


# --------------------------------------------------------------------------
# registry
# --------------------------------------------------------------------------


@pytest.fixture
def restore_registry() -> Iterator[None]:
    saved = dict(PLACEMENT_POLICIES)
    yield
    PLACEMENT_POLICIES.clear()
    PLACEMENT_POLICIES.update(saved)


def test_get_policy_returns_builtins() -> None:
    assert get_policy("first_fit") is first_fit
    assert get_policy("random_first_fit") is random_first_fit
    assert get_policy("best_fit") is best_fit
    assert get_policy("worst_fit") is worst_fit
    assert get_policy("almost_worst_fit") is almost_worst_fit
    assert get_policy("next_fit") is next_fit
    assert get_policy("next_k_fit") is next_k_fit
    assert isinstance(next_fit, NextFit) and next_fit.k == 1
    assert isinstance(next_k_fit, NextFit) and next_k_fit.k == 3


def test_get_policy_unknown_name_raises_key_error_naming_it() -> None:
    with pytest.raises(KeyError) as excinfo:
        get_policy("no_such_policy_xyz")
    message = str(excinfo.value)
    assert "no_such_policy_xyz" in message
    assert "first_fit" in message  # lists the known ones


def last_fit(free: np.ndarray, request: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """A user policy: first fit from the back of the cell."""
    out = first_fit(free[::-1], request, n_tasks, rng)
    return np.where(out >= 0, free.shape[0] - 1 - out, -1)


def test_register_policy_makes_it_selectable(restore_registry: None) -> None:
    register_policy("last_fit", last_fit)
    policy = get_policy("last_fit")
    assert policy is last_fit
    free = rows((4, 4), (4, 4), (2, 2))
    before = free.copy()
    out = policy(free, vector(cpu=1, mem=1), 3, np.random.default_rng(0))
    assert out.tolist() == [2, 2, 1]
    check_contract(before, free, vector(cpu=1, mem=1), 3, out, exact=True)


def test_register_policy_overrides(restore_registry: None) -> None:
    register_policy("first_fit", last_fit)
    assert get_policy("first_fit") is last_fit


def test_registry_restored_after_registration_tests() -> None:
    assert set(PLACEMENT_POLICIES) == set(POLICY_NAMES)
    assert get_policy("first_fit") is first_fit


def test_round_robin_spreads_tasks_one_per_machine_per_lap_and_keeps_its_cursor() -> None:
    from schedlab.schedulers.placement.cursor import RoundRobin

    rr = RoundRobin()
    free = np.full((4, 2), 4.0)
    req = np.array([1.0, 1.0])
    rng = np.random.default_rng(0)
    assert rr(free, req, 6, rng).tolist() == [0, 1, 2, 3, 0, 1]  # first fit would put 4 on machine 0
    assert rr(free, req, 3, rng).tolist() == [2, 3, 0]  # the cursor carried over from the last job
    free[1] = 0.0  # full: skipped, not waited on
    assert rr(free, req, 2, rng).tolist() == [2, 3]  # cursor was at 1
    empty = np.zeros((3, 2))
    assert rr(empty, req, 2, rng).tolist() == [-1, -1]
    assert pickle.loads(pickle.dumps(rr)).cursor == rr.cursor

