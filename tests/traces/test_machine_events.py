"""Machines that join and leave as a trace says: which are ever there and
when (``lifecycle.presence``), and the host kills and restarts a replay
turns that into (``trace_workload.machine_faults``)."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from schedlab.schedulers.scenario.parse import parse_scenario
from schedlab.schedulers.scenario.trace_workload import machine_faults
from schedlab.schedulers.traces import form
from schedlab.schedulers.traces.builder import Builder, Select
from schedlab.schedulers.traces.lifecycle import presence
from tests.conformance.scenarios import conformance_data
from tests.conftest import scenario_error
from tests.traces.small import MACHINES, small_trace


def _trace(events: list[tuple[float, int, int]], span: float = 1000.0) -> form.Trace:
    b = Builder("test", ("cpu", "mem"), ("x", "y"), ("<t>",), recorded=False)
    for t, m, ev in events:
        b.machine(t, m, ev, () if ev == form.REMOVE else (1.0, 1.0 + 0.5 * (ev == form.UPDATE)))
    b.job(1, 0.0, "batch")
    return b.build(Select(window=(0.0, span)))


def test_a_machine_removed_half_way_is_present_until_then() -> None:
    t = small_trace()
    p = presence(t, 0.0, t.span)
    assert p.ids.size == MACHINES
    removed = int(np.flatnonzero(t.machine_source == 1000)[0])
    assert p.intervals[list(p.ids).index(removed)] == ((0.0, t.span / 2),)
    assert all(iv == ((0.0, math.inf),) for m, iv in zip(p.ids, p.intervals) if m != removed)
    assert p.resized == 1  # machine 1001 resized at a third of the way (its last update changes nothing)


def test_joining_leaving_and_coming_back_become_kills_and_restarts() -> None:
    t = _trace([(0.0, 1, form.ADD), (100.0, 2, form.ADD), (200.0, 2, form.REMOVE), (250.0, 2, form.ADD),
                (300.0, 1, form.REMOVE)])
    p = presence(t, 0.0, 1000.0)
    index = np.arange(t.machines)
    got = [(f.at, f.target, f.restart_after) for f in machine_faults(p, index, compress=2.0)]
    assert got == [(0.0, "machine-host-1", 50.0), (100.0, "machine-host-1", 25.0), (150.0, "machine-host-0", None)]


def test_a_window_starts_from_the_state_then() -> None:
    t = _trace([(0.0, 1, form.ADD), (100.0, 2, form.ADD), (200.0, 1, form.REMOVE)], span=1000.0)
    p = presence(t, 150.0, 1000.0)
    assert [iv for iv in p.intervals] == [((0.0, 50.0),), ((0.0, math.inf),)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 900, allow_nan=False), st.integers(0, 3), st.booleans()), min_size=1, max_size=30))
def test_presence_agrees_with_the_machines_present_at_every_instant(raw: list[tuple[float, int, bool]]) -> None:
    events = sorted(((t, m, form.ADD if add else form.REMOVE) for t, m, add in raw), key=lambda e: e[0])
    t = _trace(events)
    p = presence(t, 0.0, 1000.0)
    for at in sorted({0.0, 999.0, *(e[0] + 1e-6 for e in events)}):
        there = {int(m) for m, spans in zip(p.ids, p.intervals) if any(a <= at < b for a, b in spans)}
        assert there == set(t.machines_at(at)[0].tolist()), at


def test_machine_events_need_a_host_actor_per_machine(tmp_path: Path) -> None:
    path = tmp_path / "t.npz"
    small_trace().save(path)
    data = conformance_data("omega") | {"engine": "sim", "duration": 400.0}
    data["cell"] = {"machines_per_actor": 4}
    data["workload"] = {"trace": {"file": str(path), "classes": {"production": "service", "batch": "batch"}}}
    assert scenario_error(data) == ("bad.toml: cell.machines_per_actor: machines join and leave one by one as the trace "
                                    "says: each needs a host actor of its own (1), or set [workload.trace] machine_events = false")
    data["workload"]["trace"]["machine_events"] = False
    sc = parse_scenario(data, "<t>")
    assert sc.faults == () and sc.cell.machines == MACHINES


@pytest.mark.parametrize("compress", [1.0, 4.0])
def test_a_machine_absent_at_the_start_is_in_the_cell_and_killed_until_it_joins(compress: float) -> None:
    t = _trace([(0.0, 1, form.ADD), (400.0, 2, form.ADD)])
    p = presence(t, 0.0, 1000.0)
    assert p.ids.size == 2
    faults = machine_faults(p, np.arange(t.machines), compress)
    assert [(f.at, f.restart_after) for f in faults] == [(0.0, 400.0 / compress)]


def _growing_trace(path: Path) -> None:
    """Four machines from the start, two joining at 60 s, one of the first
    leaving at 150 s; one-task jobs every second, each running 60 s, that
    the first four cannot all hold (small enough for one static slot of a
    matchmaker's machine: 1 cpu, 4 GB of 8 and 32)."""
    from schedlab.schedulers.traces import task_events as te

    b = Builder("test", ("cpu", "mem"), ("x", "y"), ("<t>",), recorded=True)
    for m in range(4):
        b.machine(0.0, m, form.ADD, (1.0, 1.0))
    for m in (4, 5):
        b.machine(60.0, m, form.ADD, (1.0, 1.0))
    b.machine(150.0, 0, form.REMOVE)
    rows = []
    for j in range(200):
        at = 1.0 * j
        b.job(j, at, "batch")
        rows += [(at, j, 0, te.SUBMIT, -1, 0.1, 0.1), (at, j, 0, te.SCHEDULE, j % 4, np.nan, np.nan),
                 (at + 60.0, j, 0, te.FINISH, j % 4, np.nan, np.nan)]
    c = list(zip(*rows))
    b.tasks(te.fold(np.asarray(c[0]), np.asarray(c[1], np.int64), np.asarray(c[2]), np.asarray(c[3]),
                    np.asarray(c[4], np.int64), np.column_stack([np.asarray(c[5]), np.asarray(c[6])])))
    b.build(Select(window=(0.0, 240.0))).save(path)


@pytest.fixture(scope="module")
def growing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("grow") / "grow.npz"
    _growing_trace(path)
    return path


@pytest.mark.parametrize("arch", __import__("schedlab.schedulers.arch", fromlist=["names"]).names())
def test_machines_that_join_are_used_once_they_join_on_every_architecture(arch: str, growing: Path, tmp_path: Path) -> None:
    from schedlab.actors.common.event_files import read_events
    from schedlab.actors.run import run_scenario
    from schedlab.schedulers.events.shared import TASKS_LAUNCHED
    from schedlab.schedulers import arch as registry

    data = conformance_data(arch) | {"engine": "sim", "duration": 240.0}
    data["cell"] = {"machines_per_actor": 1}
    data["workload"] = {"trace": {"file": str(growing), "classes": {"batch": "batch"}, "units": {"cpu": 8.0, "mem": 32.0}}}
    data[arch] = registry.spec_of(arch).example(("batch",))
    sc = parse_scenario(data, f"<{arch}>")
    assert sc.cell.machines == 6
    summary = run_scenario(sc, tmp_path)
    assert not any(summary["invariants"].values()), summary["invariants"]
    joined = {f.target for f in sc.faults if f.restart_after is not None}
    assert len(joined) == 2
    launches = [(e["t"], t[2]) for e in read_events(tmp_path / "events.jsonl") if e["event"] == TASKS_LAUNCHED
                for t in e["tasks"]]
    late = {f"machine-host-{m}" for t, m in launches if t > 60.0}
    assert late & joined, "no task ran on a machine that joined"
    early = {f"machine-host-{m}" for t, m in launches if t < 55.0}
    assert not early & joined, "a task ran on a machine before it joined"
