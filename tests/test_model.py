"""Unit and property tests for the cell model: resource vectors, cells,
the task life cycle and the job wire format. Pure: no Ray."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.model.cluster import Cell, MachineClass, build_cell, host_count, host_of
from schedlab.schedulers.model.jobs import Job, JobKind, TaskState, transition
from schedlab.schedulers.model.resources import DEFAULT, EPS, fits, vector

CPU = DEFAULT.index("cpu")
MEM = DEFAULT.index("mem")


def cap(cpu: float, mem: float) -> tuple[float, ...]:
    """A capacity tuple in DEFAULT order (other dimensions zero)."""
    return tuple(vector(cpu=cpu, mem=mem))


# --------------------------------------------------------------------------
# resources.vector / fits
# --------------------------------------------------------------------------


def test_vector_places_amounts_by_resource_name() -> None:
    v = vector(cpu=2, mem=4.5)
    assert v.dtype == np.float64
    assert v.shape == (len(DEFAULT),)
    assert v[CPU] == 2.0
    assert v[MEM] == 4.5
    others = [i for i in range(len(DEFAULT)) if i not in (CPU, MEM)]
    assert np.all(v[others] == 0.0)


def test_vector_missing_dimensions_are_zero() -> None:
    assert np.array_equal(vector(), np.zeros(len(DEFAULT)))
    v = vector(mem=3)
    assert v[CPU] == 0.0 and v[MEM] == 3.0


def test_vector_unknown_resource_raises_naming_it() -> None:
    with pytest.raises(KeyError, match="gpu"):
        vector(cpu=1, gpu=2)


def test_fits_mask_per_row() -> None:
    request = vector(cpu=2, mem=4)
    free = np.stack(
        [
            vector(cpu=2, mem=4),  # exactly fits
            vector(cpu=1, mem=4),  # cpu short
            vector(cpu=2, mem=3),  # mem short
            vector(cpu=10, mem=10),  # roomy
            vector(cpu=0, mem=0),  # empty
        ]
    )
    mask = fits(free, request)
    assert mask.dtype == bool
    assert mask.tolist() == [True, False, False, True, False]


def test_fits_tolerates_float_slack_up_to_eps_only() -> None:
    request = vector(cpu=1, mem=1)
    just_under = vector(cpu=1 - EPS / 10, mem=1)  # within slack: fits
    well_under = vector(cpu=1 - 1e-6, mem=1)  # beyond slack: does not
    assert fits(np.stack([just_under, well_under]), request).tolist() == [True, False]
    # The classic accumulated-sum case: 0.1 + 0.2 > 0.3 in floats.
    assert fits(vector(cpu=0.3, mem=1)[None, :], vector(cpu=0.1 + 0.2, mem=1)).tolist() == [True]


def test_zero_request_fits_everywhere() -> None:
    free = np.zeros((3, len(DEFAULT)))
    assert fits(free, vector()).all()


@settings(max_examples=150, deadline=None)
@given(
    free=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 40)), min_size=1, max_size=10),
    req=st.tuples(st.integers(0, 40), st.integers(0, 40)),
)
def test_fits_matches_elementwise_comparison(free: list[tuple[int, int]], req: tuple[int, int]) -> None:
    f = np.stack([vector(cpu=c / 4, mem=m / 4) for c, m in free])
    r = vector(cpu=req[0] / 4, mem=req[1] / 4)
    mask = fits(f, r)
    for row, (c, m) in enumerate(free):
        assert mask[row] == (c >= req[0] and m >= req[1])


# --------------------------------------------------------------------------
# cluster.build_cell, host_of, host_count
# --------------------------------------------------------------------------


def test_build_cell_lays_out_classes_and_numbers_racks_cell_wide() -> None:
    big = MachineClass("big", count=5, capacity=cap(8, 16), racks=2, labels=("gpu", "ssd"))
    small = MachineClass("small", count=3, capacity=cap(4, 8), racks=3)
    cell = build_cell((big, small))
    assert isinstance(cell, Cell)
    assert cell.size == 8
    assert cell.classes == (big, small)
    # class after class
    assert cell.machine_class.tolist() == [0, 0, 0, 0, 0, 1, 1, 1]
    assert np.array_equal(cell.capacity[:5], np.tile(cap(8, 16), (5, 1)))
    assert np.array_equal(cell.capacity[5:], np.tile(cap(4, 8), (3, 1)))
    # big: machines round-robin over racks 0,1; small continues at rack 2
    assert cell.rack.tolist() == [0, 1, 0, 1, 0, 2, 3, 4]
    assert cell.labels == (frozenset({"gpu", "ssd"}),) * 5 + (frozenset(),) * 3
    total = cell.total()
    assert total[CPU] == 5 * 8 + 3 * 4
    assert total[MEM] == 5 * 16 + 3 * 8


def test_build_cell_rack_zero_means_one_rack() -> None:
    a = MachineClass("a", count=3, capacity=cap(1, 1), racks=0)
    b = MachineClass("b", count=2, capacity=cap(1, 1), racks=1)
    cell = build_cell((a, b))
    assert cell.rack.tolist() == [0, 0, 0, 1, 1]


def test_build_cell_empty() -> None:
    cell = build_cell(())
    assert cell.size == 0
    assert cell.capacity.shape == (0, len(DEFAULT))
    assert cell.rack.shape == (0,)
    assert cell.machine_class.shape == (0,)
    assert np.array_equal(cell.total(), np.zeros(len(DEFAULT)))


def test_build_cell_rejects_wrong_capacity_dimensions() -> None:
    bad = MachineClass("oddball", count=2, capacity=(1.0,) * (len(DEFAULT) + 1))
    with pytest.raises(ValueError, match="oddball"):
        build_cell((bad,))


machine_classes = st.lists(
    st.builds(
        MachineClass,
        name=st.text("abcxyz", min_size=1, max_size=4),
        count=st.integers(0, 12),
        capacity=st.tuples(st.integers(1, 64), st.integers(1, 256)).map(lambda t: cap(*t)),
        racks=st.integers(0, 6),
        labels=st.lists(st.sampled_from(["gpu", "ssd", "arm"]), max_size=3, unique=True).map(tuple),
    ),
    max_size=5,
)


@settings(max_examples=100, deadline=None)
@given(classes=machine_classes)
def test_build_cell_properties(classes: list[MachineClass]) -> None:
    cell = build_cell(tuple(classes))
    assert cell.size == sum(c.count for c in classes)
    assert cell.rack.shape == cell.machine_class.shape == (cell.size,)
    assert len(cell.labels) == cell.size
    racks_by_class: list[set[int]] = []
    start = 0
    for ci, mc in enumerate(classes):
        rows = slice(start, start + mc.count)
        start += mc.count
        assert np.all(cell.machine_class[rows] == ci)
        assert np.all(cell.capacity[rows] == np.asarray(mc.capacity))
        assert all(lab == frozenset(mc.labels) for lab in cell.labels[rows])
        used = set(cell.rack[rows].tolist())
        # machines are spread over min(count, racks) racks of their own
        assert len(used) == min(mc.count, max(1, mc.racks))
        racks_by_class.append(used)
    # two classes never share a rack
    for i in range(len(racks_by_class)):
        for j in range(i + 1, len(racks_by_class)):
            assert not racks_by_class[i] & racks_by_class[j]
    expected_total = sum((np.asarray(c.capacity) * c.count for c in classes), np.zeros(len(DEFAULT)))
    assert np.allclose(cell.total(), expected_total)


def test_host_of_contiguous_blocks() -> None:
    assert [host_of(m, 4) for m in range(9)] == [0, 0, 0, 0, 1, 1, 1, 1, 2]
    assert host_of(np.arange(6), 3).tolist() == [0, 0, 0, 1, 1, 1]
    assert host_of(7, 1) == 7


def test_host_count_rounds_up() -> None:
    assert host_count(10, 4) == 3
    assert host_count(8, 4) == 2
    assert host_count(1, 4) == 1
    assert host_count(0, 4) == 0
    assert host_count(5, 1) == 5


@settings(max_examples=150, deadline=None)
@given(machines=st.integers(1, 500), k=st.integers(1, 50))
def test_hosts_cover_machines_in_blocks_of_at_most_k(machines: int, k: int) -> None:
    hosts = host_of(np.arange(machines), k)
    n = host_count(machines, k)
    assert hosts.min() == 0 and hosts.max() == n - 1
    per_host = np.bincount(hosts, minlength=n)
    assert per_host.size == n
    assert np.all(per_host >= 1) and np.all(per_host <= k)
    assert np.all(np.diff(hosts) >= 0)  # contiguous blocks


# --------------------------------------------------------------------------
# task life cycle
# --------------------------------------------------------------------------

# Hand-written from the documented life cycle:
# PENDING -> RUNNING -> (COMPLETED | LOST); LOST -> PENDING on retry.
LEGAL = {
    (TaskState.PENDING, TaskState.RUNNING),
    (TaskState.RUNNING, TaskState.COMPLETED),
    (TaskState.RUNNING, TaskState.LOST),
    (TaskState.LOST, TaskState.PENDING),
}
ALL_PAIRS = [(a, b) for a in TaskState for b in TaskState]


@pytest.mark.parametrize("current,new", sorted(LEGAL, key=str))
def test_legal_transitions_return_new_state(current: TaskState, new: TaskState) -> None:
    assert transition(current, new) is new


@pytest.mark.parametrize("current,new", [p for p in ALL_PAIRS if p not in LEGAL])
def test_illegal_transitions_raise(current: TaskState, new: TaskState) -> None:
    with pytest.raises(ValueError, match=f"{current.value} -> {new.value}"):
        transition(current, new)


def test_task_life_cycle_with_retry() -> None:
    s = TaskState.PENDING
    for nxt in (TaskState.RUNNING, TaskState.LOST, TaskState.PENDING, TaskState.RUNNING, TaskState.COMPLETED):
        s = transition(s, nxt)
    assert s is TaskState.COMPLETED
    for any_state in TaskState:  # completed is terminal
        with pytest.raises(ValueError):
            transition(s, any_state)


# --------------------------------------------------------------------------
# Job wire format
# --------------------------------------------------------------------------


def make_job(**over: object) -> Job:
    base: dict = dict(
        job_id=7,
        job_class="web",
        kind=JobKind.SERVICE,
        priority=3,
        submit_time=12.5,
        request=(0.5, 2.0),
        durations=(math.inf, math.inf, math.inf),
    )
    base.update(over)
    return Job(**base)


def test_job_basics() -> None:
    job = make_job(durations=(1.0, 2.0))
    assert job.tasks == 2
    rv = job.request_vector()
    assert rv.dtype == np.float64 and rv.tolist() == [0.5, 2.0]


def test_to_wire_encodes_inf_as_minus_one_and_is_plain_json() -> None:
    job = make_job(durations=(math.inf, 3.0, 0.0))
    wire = job.to_wire()
    assert wire["durations"] == [-1.0, 3.0, 0.0]
    assert wire["kind"] == "service"
    # plain data: strict JSON (no inf/nan) must accept it
    text = json.dumps(wire, allow_nan=False)
    back = Job.from_wire(json.loads(text))
    assert back == job
    assert math.isinf(back.durations[0]) and back.durations[0] > 0
    assert back.kind is JobKind.SERVICE


def test_batch_job_round_trip() -> None:
    job = make_job(kind=JobKind.BATCH, durations=(1.5, 2.25, 1e-3), job_id=-4, priority=0)
    assert Job.from_wire(job.to_wire()) == job


finite_duration = st.floats(min_value=0.0, max_value=1e9, allow_nan=False, allow_infinity=False)


@settings(max_examples=100, deadline=None)
@given(
    job_id=st.integers(-(2**40), 2**40),
    job_class=st.text(max_size=12),
    kind=st.sampled_from(list(JobKind)),
    priority=st.integers(-100, 1000),
    submit_time=st.floats(min_value=0.0, max_value=1e9, allow_nan=False),
    request=st.lists(st.floats(min_value=0.0, max_value=1e6, allow_nan=False), min_size=len(DEFAULT), max_size=len(DEFAULT)),
    durations=st.lists(st.one_of(finite_duration, st.just(math.inf)), min_size=1, max_size=20),
)
def test_wire_round_trip_property(
    job_id: int,
    job_class: str,
    kind: JobKind,
    priority: int,
    submit_time: float,
    request: list[float],
    durations: list[float],
) -> None:
    job = Job(job_id, job_class, kind, priority, submit_time, tuple(request), tuple(durations))
    wire = job.to_wire()
    assert all(not math.isinf(d) for d in wire["durations"])
    back = Job.from_wire(json.loads(json.dumps(wire, allow_nan=False)))
    assert back == job
    assert back.tasks == job.tasks
    assert [math.isinf(d) for d in back.durations] == [math.isinf(d) for d in durations]
