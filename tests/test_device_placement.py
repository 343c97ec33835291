"""Devices (whole and shared), fragmentation (Weng et al., ATC 2023) and
the device-aware placement policies: pure, no Ray."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.model.devices import DeviceAsk, ask_problem, choices, device_fits, give_back, layout, take
from schedlab.schedulers.placement import device_policies as dp
from schedlab.schedulers.placement.fragmentation import (DeviceCell, Shape, cell_fragmentation, feasible,
                                                          machine_fragmentation, workload_of)

COL = 2  # cpu, mem, devices


def cell_of(devices: list[list[float]], cpu: list[float] | None = None, model: list[int] | None = None,
            counts: list[int] | None = None) -> DeviceCell:
    n = len(devices)
    width = max(len(r) for r in devices)
    dev = np.array([r + [0.0] * (width - len(r)) for r in devices])
    counts = counts or [len(r) for r in devices]
    cap = np.array([[64.0, 256.0, float(c)] for c in counts])
    free = cap.copy()
    free[:, 0] = cpu if cpu is not None else 64.0
    free[:, COL] = dev.sum(axis=1)
    return DeviceCell(free, cap, dev, np.array(model or [0] * n), COL)


def shape(amount: float, cpu: float = 1.0, models: set[int] | None = None) -> Shape:
    return Shape((cpu, 4.0, amount), None if models is None else frozenset(models))


# -- devices ---------------------------------------------------------------------


def test_an_ask_is_a_share_below_one_or_whole_devices() -> None:
    assert ask_problem(0.5) is None and ask_problem(2.0) is None and ask_problem(0.0) is None
    assert "whole number of devices" in ask_problem(1.5) and ask_problem(-1.0) is not None
    assert DeviceAsk(0.3).share and DeviceAsk(0.3).per_device == 0.3 and DeviceAsk(2.0).whole == 2


def test_a_share_must_fit_on_one_device_not_the_machines_sum() -> None:
    free = np.array([[0.5, 0.5], [0.7, 0.0]])
    assert device_fits(free, DeviceAsk(0.6)).tolist() == [False, True]  # machine 0 has 1.0 in sum, 0.5 per device
    assert device_fits(free, DeviceAsk(1.0)).tolist() == [False, False]
    assert [d.tolist() for d in choices(np.array([0.5, 1.0, 0.2]), DeviceAsk(0.4))] == [[0], [1]]
    assert [d.tolist() for d in choices(np.array([1.0, 0.5, 1.0, 1.0]), DeviceAsk(2.0))] == [[0, 2]]


def test_take_refuses_a_device_overcommit_and_give_back_restores() -> None:
    row = np.array([1.0, 0.3])
    after = take(row, np.array([0]), DeviceAsk(0.5))
    assert after.tolist() == [0.5, 0.3]
    with pytest.raises(ValueError, match="cannot hold"):
        take(row, np.array([1]), DeviceAsk(0.5))
    with pytest.raises(ValueError):
        take(row, np.array([0, 1]), DeviceAsk(2.0))
    assert give_back(after, [0], DeviceAsk(0.5)).tolist() == [1.0, 0.3]
    assert layout([2, 0, 3]).tolist() == [[1, 1, 0], [0, 0, 0], [1, 1, 1]]


# -- fragmentation ----------------------------------------------------------------


def test_fragmentation_is_what_each_shape_cannot_use() -> None:
    cell = cell_of([[0.5, 1.0]])
    frag = lambda s: cell_fragmentation(cell, [(s, 1.0)])  # noqa: E731
    assert frag(shape(0.6)) == pytest.approx(0.5)  # the half-free device cannot hold a 0.6 share
    assert frag(shape(1.0)) == pytest.approx(0.5)  # nor a whole-device task
    assert frag(shape(0.3)) == pytest.approx(0.0)  # both devices can hold a 0.3 share
    assert frag(shape(2.0)) == pytest.approx(1.5)  # cannot run at all: every free device is fragmented
    assert frag(shape(0.0)) == pytest.approx(1.5)  # a task without devices uses none of them
    assert frag(shape(0.3, cpu=100.0)) == pytest.approx(1.5)  # short of cpu: cannot run
    assert frag(shape(0.3, models={1})) == pytest.approx(1.5)  # a model it may not use
    mixed = [(shape(0.6), 0.5), (shape(0.3), 0.5)]
    assert cell_fragmentation(cell, mixed) == pytest.approx(0.25)


def test_a_workload_is_its_distinct_shapes_by_share() -> None:
    w = workload_of([(1, 4, 0.5), (1, 4, 0.5), (8, 4, 1.0), (1, 4, 0.5)])
    assert [(s.request, p) for s, p in w] == [((1.0, 4.0, 0.5), 0.75), ((8.0, 4.0, 1.0), 0.25)]


@st.composite
def cells(draw: st.DrawFn) -> DeviceCell:
    n = draw(st.integers(1, 5))
    counts = [draw(st.sampled_from([0, 1, 2, 4, 8])) for _ in range(n)]
    rows = [[draw(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.75, 1.0])) for _ in range(c)] for c in counts]
    rows = [r if r else [] for r in rows]
    cpu = [draw(st.sampled_from([0.0, 2.0, 8.0, 64.0])) for _ in range(n)]
    model = [draw(st.integers(0, 1)) for _ in range(n)]
    if max(counts) == 0:
        rows[0], counts[0] = [1.0], 1
    return cell_of(rows, cpu, model, counts)


SHAPES = st.builds(shape, st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.6, 1.0, 2.0, 4.0]), st.sampled_from([1.0, 4.0]),
                   st.sampled_from([None, {0}, {1}]))
WORKLOADS = st.lists(st.tuples(SHAPES, st.floats(0.05, 1.0)), min_size=1, max_size=4).map(
    lambda xs: [(s, w / sum(x[1] for x in xs)) for s, w in xs])


@settings(max_examples=150, deadline=None)
@given(cells(), WORKLOADS)
def test_fragmentation_is_never_negative_nor_more_than_what_is_free(cell: DeviceCell, workload: list) -> None:
    f = machine_fragmentation(cell.free, cell.devices, cell.model, cell.column, workload)
    assert np.all(f >= -1e-12) and np.all(f <= cell.devices.sum(axis=1) + 1e-9)


@settings(max_examples=150, deadline=None)
@given(cells(), WORKLOADS)
def test_all_shapes_at_once_measure_what_the_definition_does_shape_by_shape(cell: DeviceCell, workload: list) -> None:
    from schedlab.schedulers.placement.fragmentation import _by_shapes, _fragmentation

    args = (cell.free, cell.devices, cell.model, COL, workload)
    assert np.allclose(_by_shapes(*args), _fragmentation(*args))


@settings(max_examples=50, deadline=None)
@given(cells(), WORKLOADS, st.integers(8, 20))
def test_alike_rows_measured_once_give_each_rows_own_measure(cell: DeviceCell, workload: list, copies: int) -> None:
    from schedlab.schedulers.placement.fragmentation import _fragmentation

    free, dev, model = (np.repeat(x, copies, axis=0) for x in (cell.free, cell.devices, cell.model))
    assert np.allclose(machine_fragmentation(free, dev, model, COL, workload), _fragmentation(free, dev, model, COL, workload))


@settings(max_examples=150, deadline=None)
@given(cells(), SHAPES, WORKLOADS, st.integers(0, 2**16))
def test_fgds_choice_grows_fragmentation_no_more_than_any_feasible_alternative(cell: DeviceCell, s: Shape, workload: list,
                                                                               seed: int) -> None:
    m, devices, growth = dp.fgd_choice(cell, s, workload, np.random.default_rng(seed))
    ok = np.flatnonzero(feasible(cell, s))
    assert (m == -1) == (ok.size == 0)
    if m < 0:
        return
    ask = s.ask(COL)
    frag = lambda free, dev, k: machine_fragmentation(free[None], dev[None], cell.model[k:k + 1], COL, workload)[0]  # noqa: E731
    for k in ok:
        before = frag(cell.free[k], cell.devices[k], k)
        for d in choices(cell.devices[k], ask):
            dev = take(cell.devices[k], d, ask)
            free = cell.free[k] - np.asarray(s.request)
            free[COL] = dev.sum()
            assert growth <= frag(free, dev, k) - before + 1e-9
    assert m in ok


@settings(max_examples=100, deadline=None)
@given(cells(), SHAPES, WORKLOADS, st.integers(1, 6), st.sampled_from(sorted(dp.POLICIES) + ["gpu_clustering"]),
       st.integers(0, 2**16))
def test_every_policy_places_only_where_it_fits_and_overcommits_nothing(cell: DeviceCell, s: Shape, workload: list,
                                                                         n: int, name: str, seed: int) -> None:
    policy = dp.clustering(np.zeros((cell.devices.shape[0], dp.KINDS))) if name == "gpu_clustering" else dp.POLICIES[name]
    work = cell.copy()
    machines, taken = policy(work, s, n, np.random.default_rng(seed), workload)
    placed = machines[machines >= 0]
    assert len(taken) == placed.size and np.all(machines[placed.size:] == -1)  # stops at the first misfit
    assert np.all(work.free >= -1e-9) and np.all(work.devices >= -1e-9)
    ask = s.ask(COL)
    replay = cell.copy()
    for m, d in zip(placed, taken):
        assert feasible(replay, s)[m]
        assert (d.size == 0) == (ask.amount <= 0) and (ask.share or d.size == ask.whole or ask.amount <= 0)
        dp._place(replay, s, int(m), d)
    assert np.allclose(replay.devices, work.devices) and np.allclose(replay.free, work.free)
    if placed.size < n:
        assert not feasible(work, s).any()  # it stopped because nothing fits any more


def _one(policy: dp.DevicePolicy, cell: DeviceCell, s: Shape, workload: list = ()) -> tuple[int, list[int]]:
    machines, taken = policy(cell, s, 1, np.random.default_rng(0), workload)
    return int(machines[0]), taken[0].tolist()


def test_packing_shares_a_used_device_then_a_partly_used_machine_then_the_smallest_idle_one() -> None:
    cell = cell_of([[1.0, 1.0, 1.0, 1.0], [1.0, 0.3], [1.0, 1.0], [0.6, 1.0]])
    assert _one(dp.POLICIES["gpu_packing"], cell.copy(), shape(0.5)) == (3, [0])  # the used device with room
    # A whole device: from a partly used machine (1 or 3 alike: one free device each), not an idle one.
    assert _one(dp.POLICIES["gpu_packing"], cell.copy(), shape(1.0))[0] in (1, 3)
    idle = cell_of([[1.0] * 8, [1.0, 1.0]])
    assert _one(dp.POLICIES["gpu_packing"], idle, shape(1.0)) == (1, [0])  # fewer devices first


def test_clustering_goes_where_tasks_of_its_kind_run() -> None:
    cell = cell_of([[1.0, 1.0], [1.0, 1.0], [1.0, 1.0]])
    kinds = np.zeros((3, dp.KINDS))
    kinds[1, 0] = 2  # shares run on machine 1
    kinds[2, 1] = 1  # a one-device task on machine 2
    assert _one(dp.clustering(kinds), cell.copy(), shape(0.5))[0] == 1
    assert _one(dp.clustering(kinds), cell.copy(), shape(1.0))[0] == 2
    assert _one(dp.clustering(kinds), cell.copy(), shape(2.0))[0] == 0  # an empty machine before one of another kind
    assert kinds[0, 2] == 1  # it counts what it placed


def test_best_fit_takes_the_fullest_machine_and_the_tightest_device() -> None:
    cell = cell_of([[1.0, 1.0], [0.5, 0.8]])
    assert _one(dp.POLICIES["best_fit"], cell, shape(0.4)) == (1, [0])


def test_fgd_keeps_whole_devices_free_for_a_whole_device_workload() -> None:
    # Half-GPU tasks arrive; the target workload is mostly whole-GPU tasks. Putting the half on the
    # already half-used device leaves two whole ones; on a free device it would fragment one more.
    cell = cell_of([[0.5, 1.0, 1.0]])
    workload = [(shape(1.0), 0.8), (shape(0.5), 0.2)]
    assert _one(dp.fgd, cell, shape(0.5), workload) == (0, [0])


def test_a_cell_larger_than_a_chunk_is_measured_as_row_by_row() -> None:
    from schedlab.schedulers.placement.fragmentation import CHUNK, _by_shapes, _fragmentation

    rng = np.random.default_rng(7)
    n = 2 * CHUNK + 17
    dev = np.round(rng.choice([0.0, 0.25, 0.5, 1.0], size=(n, 8)), 2)
    free = np.column_stack([rng.choice([0.0, 4.0, 64.0], n), np.full(n, 256.0), dev.sum(axis=1)])
    model = rng.integers(0, 3, n)
    workload = [(shape(0.5), 0.3), (shape(1.0, models={1}), 0.3), (shape(4.0, cpu=8.0), 0.2), (shape(0.0), 0.2)]
    args = (free, dev, model, COL, workload)
    assert np.allclose(machine_fragmentation(*args), _fragmentation(*args)) and np.allclose(_by_shapes(*args), _fragmentation(*args))
