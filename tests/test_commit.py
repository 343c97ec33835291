"""The Omega commit rule, ``omega.commit``: hand-worked cases for every
combination of conflict detection and transaction mode, then property tests.
Pure: no Ray."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from schedlab.schedulers.shared_state.commit import Claims, CommitResult, ConflictMode, TxnMode, commit
from schedlab.schedulers.model.resources import DEFAULT, EPS, vector

R, S = ConflictMode.RESOURCE, ConflictMode.SEQUENCE
INC, AON = TxnMode.INCREMENTAL, TxnMode.ALL_OR_NOTHING
ALL_MODES = list(itertools.product(ConflictMode, TxnMode))
MODE_IDS = [f"{c.value}-{t.value}" for c, t in ALL_MODES]


def rows(*pairs: tuple[float, float]) -> np.ndarray:
    return np.stack([vector(cpu=c, mem=m) for c, m in pairs])


def make_claims(*items: tuple[int, tuple[float, float], int]) -> Claims:
    """Claims from (machine, (cpu, mem), seen_seq) triples."""
    if not items:
        return Claims(np.zeros(0, np.int64), np.zeros((0, len(DEFAULT))), np.zeros(0, np.int64))
    return Claims(
        machine=np.array([m for m, _, _ in items], dtype=np.int64),
        request=np.stack([vector(cpu=c, mem=mm) for _, (c, mm), _ in items]),
        seen_seq=np.array([s for _, _, s in items], dtype=np.int64),
    )


def cell() -> tuple[np.ndarray, np.ndarray]:
    """Three machines: roomy (seq 5), small (seq 0), empty (seq 2)."""
    return rows((4, 8), (2, 2), (0, 0)), np.array([5, 0, 2], dtype=np.int64)


def check_result_shapes(res: CommitResult, free: np.ndarray, seq: np.ndarray, k: int) -> None:
    assert res.accepted.shape == (k,) and res.accepted.dtype == bool
    assert res.free.shape == free.shape
    assert res.seq.shape == seq.shape
    assert not np.shares_memory(res.free, free)
    assert not np.shares_memory(res.seq, seq)
    assert res.committed + res.conflicted == k
    assert res.committed == int(res.accepted.sum())


# --------------------------------------------------------------------------
# hand-worked cases
# --------------------------------------------------------------------------


@pytest.mark.parametrize("cm,tm", ALL_MODES, ids=MODE_IDS)
def test_fresh_fitting_claims_all_commit(cm: ConflictMode, tm: TxnMode) -> None:
    free, seq = cell()
    claims = make_claims((0, (1, 2), 5), (1, (2, 2), 0), (0, (3, 6), 5))
    res = commit(free, seq, claims, cm, tm)
    check_result_shapes(res, free, seq, 3)
    assert res.accepted.tolist() == [True, True, True]
    assert np.array_equal(res.free, rows((0, 0), (0, 0), (0, 0)))
    assert res.seq.tolist() == [6, 1, 2]  # two claims on machine 0, bumped once
    assert res.touched.tolist() == [0, 1]
    assert res.committed == 3 and res.conflicted == 0


@pytest.mark.parametrize("tm", list(TxnMode))
def test_stale_seq_but_still_fits_commits_under_resource(tm: TxnMode) -> None:
    free, seq = cell()
    claims = make_claims((0, (1, 1), 4), (1, (1, 1), 0))  # machine 0 moved: 4 -> 5
    res = commit(free, seq, claims, R, tm)
    assert res.accepted.tolist() == [True, True]
    assert np.array_equal(res.free, rows((3, 7), (1, 1), (0, 0)))
    assert res.seq.tolist() == [6, 1, 2]
    assert res.touched.tolist() == [0, 1]


def test_stale_seq_conflicts_under_sequence_incremental() -> None:
    free, seq = cell()
    claims = make_claims((0, (1, 1), 4), (1, (1, 1), 0))
    res = commit(free, seq, claims, S, INC)
    assert res.accepted.tolist() == [False, True]
    assert np.array_equal(res.free, rows((4, 8), (1, 1), (0, 0)))
    assert res.seq.tolist() == [5, 1, 2]  # machine 0 untouched: seq unchanged
    assert res.touched.tolist() == [1]
    assert res.committed == 1 and res.conflicted == 1


def test_stale_seq_rejects_everything_under_sequence_all_or_nothing() -> None:
    free, seq = cell()
    claims = make_claims((0, (1, 1), 4), (1, (1, 1), 0))
    res = commit(free, seq, claims, S, AON)
    assert res.accepted.tolist() == [False, False]
    assert np.array_equal(res.free, free)
    assert np.array_equal(res.seq, seq)
    assert res.touched.size == 0
    assert res.committed == 0 and res.conflicted == 2


def test_seq_from_the_future_is_also_a_conflict_under_sequence() -> None:
    free, seq = cell()
    res = commit(free, seq, make_claims((0, (1, 1), 6)), S, INC)
    assert res.accepted.tolist() == [False]


@pytest.mark.parametrize("cm", list(ConflictMode))
def test_joint_overfill_incremental_earlier_claims_win(cm: ConflictMode) -> None:
    free, seq = cell()
    # machine 1 has (2, 2): 1.5 fits, then 1.0 no longer does, then 0.5 still does
    claims = make_claims((1, (1.5, 1), 0), (1, (1, 1), 0), (1, (0.5, 1), 0))
    res = commit(free, seq, claims, cm, INC)
    assert res.accepted.tolist() == [True, False, True]
    assert np.array_equal(res.free, rows((4, 8), (0, 0), (0, 0)))
    assert res.seq.tolist() == [5, 1, 2]  # once, despite two applied claims
    assert res.touched.tolist() == [1]


@pytest.mark.parametrize("cm", list(ConflictMode))
def test_joint_overfill_order_decides_the_winner(cm: ConflictMode) -> None:
    free, seq = cell()
    res = commit(free, seq, make_claims((1, (1, 1), 0), (1, (1.5, 1), 0)), cm, INC)
    assert res.accepted.tolist() == [True, False]
    assert np.array_equal(res.free[1], vector(cpu=1, mem=1))


@pytest.mark.parametrize("cm", list(ConflictMode))
def test_joint_overfill_all_or_nothing_applies_nothing(cm: ConflictMode) -> None:
    free, seq = cell()
    claims = make_claims((0, (1, 1), 5), (1, (1.5, 1), 0), (1, (1, 1), 0))
    res = commit(free, seq, claims, cm, AON)
    assert res.accepted.tolist() == [False, False, False]
    assert np.array_equal(res.free, free)
    assert np.array_equal(res.seq, seq)
    assert res.touched.size == 0


@pytest.mark.parametrize("cm", list(ConflictMode))
def test_one_misfit_on_another_machine_incremental(cm: ConflictMode) -> None:
    free, seq = cell()
    # the claim on machine 2 (empty) can never fit; the others are unaffected
    claims = make_claims((0, (1, 1), 5), (2, (1, 0), 2), (1, (1, 1), 0))
    res = commit(free, seq, claims, cm, INC)
    assert res.accepted.tolist() == [True, False, True]
    assert res.seq.tolist() == [6, 1, 2]
    assert res.touched.tolist() == [0, 1]


@pytest.mark.parametrize("cm,tm", ALL_MODES, ids=MODE_IDS)
def test_seq_bumped_exactly_once_per_touched_machine(cm: ConflictMode, tm: TxnMode) -> None:
    free = rows((10, 10), (10, 10), (10, 10), (10, 10))
    seq = np.array([3, 7, 0, 1], dtype=np.int64)
    claims = make_claims(
        (3, (1, 1), 1), (0, (1, 1), 3), (3, (1, 1), 1), (0, (1, 1), 3), (0, (2, 2), 3)
    )
    res = commit(free, seq, claims, cm, tm)
    assert res.accepted.all()
    assert res.seq.tolist() == [4, 7, 0, 2]
    assert res.touched.tolist() == [0, 3]  # sorted, unique
    assert np.array_equal(res.free, rows((6, 6), (10, 10), (10, 10), (8, 8)))


@pytest.mark.parametrize("cm,tm", ALL_MODES, ids=MODE_IDS)
def test_inputs_not_mutated(cm: ConflictMode, tm: TxnMode) -> None:
    free, seq = cell()
    claims = make_claims((1, (1.5, 1), 0), (1, (1, 1), 0), (0, (1, 1), 4))
    copies = (free.copy(), seq.copy(), claims.machine.copy(), claims.request.copy(), claims.seen_seq.copy())
    commit(free, seq, claims, cm, tm)
    for before, after in zip(copies, (free, seq, claims.machine, claims.request, claims.seen_seq)):
        assert np.array_equal(before, after)


@pytest.mark.parametrize("cm,tm", ALL_MODES, ids=MODE_IDS)
@pytest.mark.parametrize("bad", [3, 99, -1])
def test_machine_outside_cell_raises(cm: ConflictMode, tm: TxnMode, bad: int) -> None:
    free, seq = cell()
    claims = make_claims((0, (1, 1), 5), (bad, (1, 1), 0))
    with pytest.raises(ValueError):
        commit(free, seq, claims, cm, tm)
    assert np.array_equal(free, cell()[0]) and np.array_equal(seq, cell()[1])


@pytest.mark.parametrize("cm,tm", ALL_MODES, ids=MODE_IDS)
def test_empty_transaction(cm: ConflictMode, tm: TxnMode) -> None:
    free, seq = cell()
    res = commit(free, seq, make_claims(), cm, tm)
    check_result_shapes(res, free, seq, 0)
    assert np.array_equal(res.free, free)
    assert np.array_equal(res.seq, seq)
    assert res.touched.size == 0
    assert res.committed == 0 and res.conflicted == 0


@pytest.mark.parametrize("cm,tm", ALL_MODES, ids=MODE_IDS)
def test_eps_slack(cm: ConflictMode, tm: TxnMode) -> None:
    free, seq = rows((1, 1), (1, 1)), np.zeros(2, dtype=np.int64)
    ok = commit(free, seq, make_claims((0, (1 + EPS / 10, 1), 0)), cm, tm)
    assert ok.accepted.tolist() == [True]
    over = commit(free, seq, make_claims((0, (1 + 1e-6, 1), 0)), cm, tm)
    assert over.accepted.tolist() == [False]
    # accumulated float sums: 0.1 + 0.2 claimed against 0.3 free
    acc = commit(rows((0.3, 1), (0, 0)), seq, make_claims((0, (0.1, 0.5), 0), (0, (0.2, 0.5), 0)), cm, tm)
    assert acc.accepted.tolist() == [True, True]


# --------------------------------------------------------------------------
# property tests
# --------------------------------------------------------------------------

def grid_arrays(shape: tuple[int, ...], top: int) -> st.SearchStrategy[np.ndarray]:
    """Float arrays on a 1/4 grid in [0, top/4]: exact in binary floating point."""
    return hnp.arrays(np.int64, shape, elements=st.integers(0, top)).map(lambda a: a / 4.0)


@st.composite
def transactions(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, Claims, bool]:
    """A cell (free 0..10 per dimension) and a transaction of up to 12 claims
    (0..4 per dimension), and whether the seen seqs are *consistent*: every
    claim on one machine carries the same seen seq (one read of the local
    copy, as a real scheduler does); otherwise each claim has its own."""
    m = draw(st.integers(1, 6))
    k = draw(st.integers(0, 12))
    free = draw(grid_arrays((m, len(DEFAULT)), 40))
    seq = draw(hnp.arrays(np.int64, m, elements=st.integers(0, 3)))
    machine = draw(hnp.arrays(np.int64, k, elements=st.integers(0, m - 1)))
    request = draw(grid_arrays((k, len(DEFAULT)), 16))
    lag = st.sampled_from([0, 0, 0, 1, -1])  # mostly current, sometimes stale
    consistent = draw(st.booleans())
    if consistent:
        seen = (seq - draw(hnp.arrays(np.int64, m, elements=lag)))[machine]
    else:
        seen = seq[machine] - draw(hnp.arrays(np.int64, k, elements=lag))
    return free, seq, Claims(machine, request, seen.astype(np.int64)), consistent


def applied(free: np.ndarray, claims: Claims, accepted: np.ndarray) -> np.ndarray:
    """Sum of accepted requests per machine."""
    out = np.zeros_like(free)
    for i in np.flatnonzero(accepted):
        out[claims.machine[i]] += claims.request[i]
    return out


def check_invariants(free: np.ndarray, seq: np.ndarray, claims: Claims, cm: ConflictMode, tm: TxnMode) -> CommitResult:
    snapshot = (free.copy(), seq.copy(), claims.machine.copy(), claims.request.copy(), claims.seen_seq.copy())
    res = commit(free, seq, claims, cm, tm)
    check_result_shapes(res, free, seq, len(claims))
    # inputs untouched
    for before, after in zip(snapshot, (free, seq, claims.machine, claims.request, claims.seen_seq)):
        assert np.array_equal(before, after)
    # no over-commit
    assert np.all(res.free >= -1e-9)
    # conservation: new free + accepted requests == old free
    assert np.array_equal(res.free + applied(free, claims, res.accepted), free)
    # all or nothing
    if tm is AON:
        assert res.accepted.all() or not res.accepted.any()
    # sequence mode never accepts a stale claim
    if cm is S:
        assert np.all(claims.seen_seq[res.accepted] == seq[claims.machine[res.accepted]])
    # touched = machines with an accepted claim; their seq +1, others unchanged
    touched = np.unique(claims.machine[res.accepted])
    assert np.array_equal(res.touched, touched)
    bump = np.zeros_like(seq)
    bump[touched] = 1
    assert np.array_equal(res.seq, seq + bump)
    untouched = np.setdiff1d(np.arange(free.shape[0]), touched)
    assert np.array_equal(res.free[untouched], free[untouched])
    return res


def check_incremental_conflicts_are_real(
    free: np.ndarray, seq: np.ndarray, claims: Claims, cm: ConflictMode, res: CommitResult
) -> None:
    """Walking the claims in order: each rejected claim was stale (sequence
    mode) or did not fit after the earlier accepted ones; each accepted one fit."""
    running = free.copy()
    for i in range(len(claims)):
        m, req = claims.machine[i], claims.request[i]
        stale = claims.seen_seq[i] != seq[m]
        fit = bool(np.all(running[m] >= req))  # grid values: exact comparison
        if res.accepted[i]:
            assert fit and not (cm is S and stale)
            running[m] -= req
        else:
            assert (not fit) or (cm is S and stale)
    assert np.array_equal(running, res.free)


def check_joint_fit(free: np.ndarray, claims: Claims, res: CommitResult) -> None:
    """RESOURCE + INCREMENTAL: if all claims fit together, all are accepted."""
    demand = np.zeros_like(free)
    np.add.at(demand, claims.machine, claims.request)
    if np.all(demand <= free):
        assert res.accepted.all()
    else:
        # something on an over-demanded machine must have been refused
        over = np.flatnonzero(np.any(demand > free, axis=1))
        assert not res.accepted[np.isin(claims.machine, over)].all()


def check_sequence_subset_of_resource(
    seq: np.ndarray, claims: Claims, tm: TxnMode, by_resource: CommitResult, by_sequence: CommitResult
) -> None:
    assert np.all(by_resource.accepted[by_sequence.accepted])
    # and on machines whose seq did not move, the two modes agree exactly
    if tm is INC:
        fresh = claims.seen_seq == seq[claims.machine]
        assert np.array_equal(by_sequence.accepted, by_resource.accepted & fresh)


# All four modes run on each drawn input: cheaper than one hypothesis run per
# mode, and it lets the modes be compared on identical inputs.


@settings(max_examples=200, deadline=None)
@given(txn=transactions())
def test_commit_properties_all_modes(txn: tuple[np.ndarray, np.ndarray, Claims, bool]) -> None:
    free, seq, claims, consistent = txn
    results = {(cm, tm): check_invariants(free, seq, claims, cm, tm) for cm, tm in ALL_MODES}
    for cm in ConflictMode:
        check_incremental_conflicts_are_real(free, seq, claims, cm, results[cm, INC])
    check_joint_fit(free, claims, results[R, INC])  # seen seqs are ignored here
    if consistent:
        # (With several different seen seqs for one machine in one transaction
        # -- something no scheduler sends -- the subset property need not hold.)
        for tm in TxnMode:
            check_sequence_subset_of_resource(seq, claims, tm, results[R, tm], results[S, tm])


@st.composite
def jointly_fitting(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, Claims]:
    """A transaction whose claims all fit together on fresh seqs: free is the
    per-machine demand plus some slack."""
    _, seq, claims, _ = draw(transactions())
    m = seq.shape[0]
    demand = np.zeros((m, len(DEFAULT)))
    np.add.at(demand, claims.machine, claims.request)
    slack = draw(grid_arrays((m, len(DEFAULT)), 16))
    fresh = Claims(claims.machine, claims.request, seq[claims.machine].astype(np.int64))
    return demand + slack, seq, fresh


@settings(max_examples=100, deadline=None)
@given(txn=jointly_fitting())
def test_jointly_fitting_fresh_transaction_fully_commits(txn: tuple[np.ndarray, np.ndarray, Claims]) -> None:
    free, seq, claims = txn
    for cm, tm in ALL_MODES:
        res = commit(free, seq, claims, cm, tm)
        assert res.accepted.all(), (cm, tm)


@settings(max_examples=100, deadline=None)
@given(
    free=hnp.arrays(np.float64, st.tuples(st.integers(1, 4), st.just(len(DEFAULT))), elements=st.floats(0, 50)),
    machine=hnp.arrays(np.int64, st.integers(0, 10), elements=st.integers(0, 3)),
    data=st.data(),
)
def test_no_overcommit_with_arbitrary_floats(free: np.ndarray, machine: np.ndarray, data: st.DataObject) -> None:
    m = free.shape[0]
    machine = machine % m
    k = machine.size
    request = data.draw(hnp.arrays(np.float64, (k, len(DEFAULT)), elements=st.floats(0, 20)))
    seq = np.zeros(m, dtype=np.int64)
    claims = Claims(machine, request, np.zeros(k, dtype=np.int64))
    for cm, tm in ALL_MODES:
        res = commit(free, seq, claims, cm, tm)
        # EPS slack plus float rounding of a handful of additions
        assert np.all(res.free >= -EPS - 1e-12)
        assert np.allclose(res.free + applied(free, claims, res.accepted), free, rtol=0, atol=1e-9)
