"""Omega's master cell state and delta syncing of scheduler copies.
Pure: no Ray."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.shared_state.commit import Claims, ConflictMode, TxnMode
from schedlab.schedulers.model.resources import DEFAULT, vector
from schedlab.schedulers.shared_state.cell import Delta, LocalCopy, SharedCell

R, S = ConflictMode.RESOURCE, ConflictMode.SEQUENCE
INC, AON = TxnMode.INCREMENTAL, TxnMode.ALL_OR_NOTHING


def rows(*pairs: tuple[float, float]) -> np.ndarray:
    return np.stack([vector(cpu=c, mem=m) for c, m in pairs])


def make_claims(*items: tuple[int, tuple[float, float], int]) -> Claims:
    return Claims(
        machine=np.array([m for m, _, _ in items], dtype=np.int64),
        request=np.stack([vector(cpu=c, mem=mm) for _, (c, mm), _ in items]).reshape(len(items), len(DEFAULT)),
        seen_seq=np.array([s for _, _, s in items], dtype=np.int64),
    )


def new_cell() -> SharedCell:
    return SharedCell(rows((4, 4), (4, 4), (4, 4), (4, 4)))


def same_as_master(local: LocalCopy, master: SharedCell) -> bool:
    return (
        local.version == master.version
        and np.array_equal(local.free, master.free)
        and np.array_equal(local.seq, master.seq)
    )


# --------------------------------------------------------------------------
# SharedCell
# --------------------------------------------------------------------------


def test_new_cell_is_empty_and_owns_its_arrays() -> None:
    capacity = rows((4, 4), (8, 2))
    sc = SharedCell(capacity)
    assert np.array_equal(sc.free, capacity)
    assert not np.shares_memory(sc.free, capacity)
    assert sc.seq.tolist() == [0, 0]
    assert sc.version == 0
    assert np.array_equal(sc.used(), np.zeros_like(capacity))


def test_new_cell_with_prefilled_free_copies_it() -> None:
    capacity = rows((4, 4), (8, 2))
    free = rows((1, 1), (8, 2))
    sc = SharedCell(capacity, free)
    free[0] = 0
    assert np.array_equal(sc.free, rows((1, 1), (8, 2)))
    assert np.array_equal(sc.used(), rows((3, 3), (0, 0)))


def test_commit_applies_bumps_version_and_stamps_rows() -> None:
    sc = new_cell()
    res = sc.commit(make_claims((1, (1, 2), 0), (3, (4, 4), 0)), R, INC)
    assert res.accepted.tolist() == [True, True]
    assert sc.version == 1
    assert np.array_equal(sc.free, rows((4, 4), (3, 2), (4, 4), (0, 0)))
    assert sc.seq.tolist() == [0, 1, 0, 1]
    d = sc.delta_since(0)
    assert d.version == 1
    assert d.machines.tolist() == [1, 3]
    assert np.array_equal(d.free, rows((3, 2), (0, 0)))
    assert d.seq.tolist() == [1, 1]


def test_fully_conflicted_commit_changes_nothing() -> None:
    sc = new_cell()
    res = sc.commit(make_claims((0, (5, 1), 0)), R, INC)
    assert res.accepted.tolist() == [False]
    assert sc.version == 0
    assert sc.delta_since(0).machines.size == 0
    assert np.array_equal(sc.free, rows((4, 4), (4, 4), (4, 4), (4, 4)))


def test_commit_uses_master_seq_for_sequence_conflicts() -> None:
    sc = new_cell()
    sc.commit(make_claims((2, (1, 1), 0)), S, INC)  # machine 2: seq 0 -> 1
    stale = sc.commit(make_claims((2, (1, 1), 0), (0, (1, 1), 0)), S, INC)
    assert stale.accepted.tolist() == [False, True]
    assert sc.seq.tolist() == [1, 0, 1, 0]
    assert np.array_equal(sc.free[2], vector(cpu=3, mem=3))


def test_release_returns_resources_and_bumps_each_machine_once() -> None:
    sc = new_cell()
    sc.commit(make_claims((0, (2, 2), 0), (0, (1, 1), 0), (2, (3, 3), 0)), R, INC)
    assert sc.version == 1
    sc.release(np.array([0, 0, 2]), rows((2, 2), (1, 1), (1, 1)))
    assert sc.version == 2
    assert np.array_equal(sc.free, rows((4, 4), (4, 4), (2, 2), (4, 4)))
    assert sc.seq.tolist() == [2, 0, 2, 0]
    d = sc.delta_since(1)
    assert d.version == 2 and d.machines.tolist() == [0, 2]


def test_release_clamps_at_capacity() -> None:
    sc = new_cell()
    sc.commit(make_claims((1, (1, 1), 0)), R, INC)
    sc.release(np.array([1]), rows((3, 3)))  # more than was taken
    assert np.array_equal(sc.free[1], vector(cpu=4, mem=4))


def test_empty_release_is_a_no_op() -> None:
    sc = new_cell()
    sc.release(np.array([], dtype=np.int64), np.zeros((0, len(DEFAULT))))
    assert sc.version == 0
    assert sc.seq.tolist() == [0, 0, 0, 0]


def test_delta_since_returns_only_changed_rows() -> None:
    sc = new_cell()
    sc.commit(make_claims((0, (1, 1), 0)), R, INC)  # v1: machine 0
    sc.commit(make_claims((2, (1, 1), 0)), R, INC)  # v2: machine 2
    sc.release(np.array([0]), rows((1, 1)))  # v3: machine 0 again
    assert sc.version == 3
    assert sc.delta_since(0).machines.tolist() == [0, 2]
    assert sc.delta_since(1).machines.tolist() == [0, 2]
    assert sc.delta_since(2).machines.tolist() == [0]
    assert sc.delta_since(3).machines.tolist() == []
    d = sc.delta_since(2)
    assert d.version == 3
    assert np.array_equal(d.free, sc.free[[0]])
    assert np.array_equal(d.seq, sc.seq[[0]])


def test_delta_and_full_are_copies() -> None:
    sc = new_cell()
    sc.commit(make_claims((1, (1, 1), 0)), R, INC)
    d = sc.delta_since(0)
    f = sc.full()
    d.free[:] = -5
    d.seq[:] = -5
    f.free[:] = -5
    f.seq[:] = -5
    assert np.array_equal(sc.free, rows((4, 4), (3, 3), (4, 4), (4, 4)))
    assert sc.seq.tolist() == [0, 1, 0, 0]


def test_full_snapshot() -> None:
    sc = new_cell()
    sc.commit(make_claims((3, (1, 1), 0)), R, INC)
    f = sc.full()
    assert f.version == 1
    assert f.machines.tolist() == [0, 1, 2, 3]
    assert np.array_equal(f.free, sc.free)
    assert np.array_equal(f.seq, sc.seq)


# --------------------------------------------------------------------------
# LocalCopy
# --------------------------------------------------------------------------


def test_local_copy_from_full_is_independent() -> None:
    sc = new_cell()
    local = LocalCopy(sc.full())
    assert same_as_master(local, sc)
    local.free[0] = 0  # a scheduler placing on its copy
    assert np.array_equal(sc.free[0], vector(cpu=4, mem=4))


def test_local_copy_syncs_by_delta() -> None:
    sc = new_cell()
    local = LocalCopy(sc.full())
    sc.commit(make_claims((1, (2, 2), 0)), R, INC)
    sc.release(np.array([1]), rows((1, 1)))
    local.apply(sc.delta_since(local.version))
    assert same_as_master(local, sc)


def test_stale_delta_is_ignored() -> None:
    sc = new_cell()
    local = LocalCopy(sc.full())
    sc.commit(make_claims((0, (1, 1), 0)), R, INC)
    old = sc.delta_since(0)  # version 1
    sc.commit(make_claims((0, (2, 2), 1)), R, INC)
    new = sc.delta_since(0)  # version 2
    local.apply(new)
    assert same_as_master(local, sc)
    local.apply(old)  # overtaken reply arrives late
    assert same_as_master(local, sc)
    assert np.array_equal(local.free[0], vector(cpu=1, mem=1))


def test_stale_hand_made_delta_is_ignored() -> None:
    local = LocalCopy(Delta(5, np.arange(2), rows((4, 4), (4, 4)), np.array([3, 3])))
    local.apply(Delta(4, np.array([0]), rows((0, 0)), np.array([9])))
    assert local.version == 5
    assert np.array_equal(local.free, rows((4, 4), (4, 4)))
    assert local.seq.tolist() == [3, 3]


# --------------------------------------------------------------------------
# property: copies synced by deltas always match the master
# --------------------------------------------------------------------------

grid = st.integers(0, 12).map(lambda q: q / 4)  # 0 .. 3
N_MACHINES = 5
N_COPIES = 3

claim_st = st.tuples(st.integers(0, N_MACHINES - 1), st.tuples(grid, grid))
op_st = st.one_of(
    # ("commit", copy that read the cell, claims, conflict mode, txn mode)
    st.tuples(
        st.just("commit"),
        st.integers(0, N_COPIES - 1),
        st.lists(claim_st, max_size=6),
        st.sampled_from(list(ConflictMode)),
        st.sampled_from(list(TxnMode)),
    ),
    # ("release", indices into the running tasks)
    st.tuples(st.just("release"), st.lists(st.integers(0, 1000), max_size=4)),
    # ("sync", copy)
    st.tuples(st.just("sync"), st.integers(0, N_COPIES - 1)),
    # ("fetch", copy): request a delta whose reply is delivered later
    st.tuples(st.just("fetch"), st.integers(0, N_COPIES - 1)),
    # ("deliver", copy): deliver its oldest outstanding reply (maybe stale)
    st.tuples(st.just("deliver"), st.integers(0, N_COPIES - 1)),
)


@settings(max_examples=120, deadline=None)
@given(ops=st.lists(op_st, max_size=40))
def test_local_copies_synced_by_deltas_equal_master(ops: list[tuple]) -> None:
    capacity = np.full((N_MACHINES, len(DEFAULT)), 4.0)
    sc = SharedCell(capacity)
    copies = [LocalCopy(sc.full()) for _ in range(N_COPIES)]
    in_flight: list[list[Delta]] = [[] for _ in range(N_COPIES)]
    running: list[tuple[int, np.ndarray]] = []  # (machine, request) of committed tasks

    for op in ops:
        kind = op[0]
        if kind == "commit":
            _, who, items, cm, tm = op
            seen_seq = copies[who].seq  # claims carry what this copy last saw
            claims = Claims(
                np.array([m for m, _ in items], dtype=np.int64),
                np.array([vector(cpu=c, mem=mm) for _, (c, mm) in items]).reshape(len(items), len(DEFAULT)),
                np.array([seen_seq[m] for m, _ in items], dtype=np.int64),
            )
            before_version = sc.version
            res = sc.commit(claims, cm, tm)
            assert sc.version == before_version + (1 if res.touched.size else 0)
            running.extend((int(claims.machine[i]), claims.request[i]) for i in np.flatnonzero(res.accepted))
        elif kind == "release":
            picks = sorted({i % len(running) for i in op[1]}, reverse=True) if running else []
            done = [running.pop(i) for i in picks]
            if done:
                sc.release(np.array([m for m, _ in done]), np.array([r for _, r in done]))
        elif kind == "sync":
            who = op[1]
            copies[who].apply(sc.delta_since(copies[who].version))
            assert same_as_master(copies[who], sc)
        elif kind == "fetch":
            who = op[1]
            in_flight[who].append(sc.delta_since(copies[who].version))
        elif kind == "deliver":
            who = op[1]
            if in_flight[who]:
                # deliver newest first, so the older replies arrive stale
                copies[who].apply(in_flight[who].pop())

        # master invariants: free + running tasks == capacity, free >= 0
        used = np.zeros_like(capacity)
        for m, r in running:
            used[m] += r
        assert np.array_equal(sc.free + used, capacity)
        assert np.all(sc.free >= 0)

    for who in range(N_COPIES):
        for d in reversed(in_flight[who]):  # stale leftovers must not hurt
            copies[who].apply(d)
        copies[who].apply(sc.delta_since(copies[who].version))
        assert same_as_master(copies[who], sc)


@settings(max_examples=100, deadline=None)
@given(ops=st.lists(st.tuples(st.integers(0, N_MACHINES - 1), st.booleans()), max_size=30))
def test_delta_rows_are_exactly_the_rows_changed_since(ops: list[tuple[int, bool]]) -> None:
    """delta_since(v) names exactly the machines changed after version v."""
    sc = SharedCell(np.full((N_MACHINES, len(DEFAULT)), 100.0))
    changed_at_version: list[set[int]] = [set()]  # index = version
    for machine, is_release in ops:
        if is_release and sc.free[machine, 0] < 100.0:
            sc.release(np.array([machine]), np.ones((1, len(DEFAULT))))
        else:
            res = sc.commit(make_claims((machine, (1, 1), int(sc.seq[machine]))), S, INC)
            assert res.accepted.all()
        changed_at_version.append({machine})
        assert sc.version == len(changed_at_version) - 1
    for v in range(sc.version + 1):
        expected = set().union(*changed_at_version[v + 1 :])
        assert set(sc.delta_since(v).machines.tolist()) == expected
