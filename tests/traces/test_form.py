"""The canonical form and what every reader shares: folding task events,
the builder's selection (window, scale, first N jobs), saving and loading."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from schedlab.schedulers.traces import form, task_events as te
from schedlab.schedulers.traces.builder import Builder, Select
from schedlab.schedulers.traces.form import Trace, TraceError
from tests.traces.small import MACHINES, small_trace


def _fold(events: list[tuple]) -> dict[str, np.ndarray]:
    t, j, i, k, m = (np.asarray(c) for c in zip(*events))
    return te.fold(t.astype(float), j.astype(np.int64), i.astype(np.int32), k.astype(np.int64), m.astype(np.int64),
                   np.full((len(events), 1), np.nan))


def test_a_task_evicted_and_rescheduled_keeps_its_first_start_and_runs_its_last_attempt() -> None:
    f = _fold([(0, 1, 0, te.SUBMIT, -1), (2, 1, 0, te.SCHEDULE, 7), (5, 1, 0, te.EVICT, 7), (6, 1, 0, te.SUBMIT, -1),
               (9, 1, 0, te.SCHEDULE, 8), (30, 1, 0, te.FINISH, 8)])
    assert f["submit"].tolist() == [0] and f["start"].tolist() == [2] and f["last_start"].tolist() == [9]
    assert f["end"].tolist() == [30] and f["reason"].tolist() == [form.FINISHED]
    assert f["machine"].tolist() == [7] and f["attempts"].tolist() == [2]


def test_a_task_evicted_and_never_rescheduled_ends_evicted_and_one_running_has_no_end() -> None:
    f = _fold([(0, 1, 0, te.SUBMIT, -1), (2, 1, 0, te.SCHEDULE, 7), (5, 1, 0, te.EVICT, 7),
               (0, 2, 0, te.SUBMIT, -1), (3, 2, 0, te.SCHEDULE, 9)])
    assert f["reason"].tolist() == [form.EVICTED, form.NONE]
    assert f["end"][0] == 5 and np.isnan(f["end"][1])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2), st.sampled_from(range(8)), st.floats(0, 100)),
                min_size=1, max_size=40))
def test_fold_gives_one_row_per_task_and_times_in_order(events: list[tuple[int, int, int, float]]) -> None:
    rows = [(t, j, i, k, 5) for j, i, k, t in events]
    f = _fold(rows)
    assert len(f["job"]) == len({(j, i) for j, i, *_ in events})
    started = ~np.isnan(f["last_start"])
    assert np.all(f["start"][started] <= f["last_start"][started])
    ended = ~np.isnan(f["end"])
    both = ended & started  # (a task killed while it waited ended without starting)
    assert np.all(f["end"][both] >= f["last_start"][both])
    assert np.all((f["reason"] == form.NONE) == ~ended)
    assert np.all(f["submit"] <= np.where(started, f["start"], np.inf))


def test_the_small_trace_round_trips_through_a_file(tmp_path: Path) -> None:
    t = small_trace()
    t.save(tmp_path / "t.npz")
    back = Trace.load(tmp_path / "t.npz")
    for name in ("machine_time", "machine_capacity", "job_submit", "task_request", "task_end", "task_machine"):
        np.testing.assert_array_equal(getattr(back, name), getattr(t, name))
    assert back.tiers == t.tiers and back.service_tiers == ("production",) and back.span == t.span


def test_machines_present_follow_their_events() -> None:
    t = small_trace()
    assert t.machines_at(0.0)[0].size == MACHINES
    ids, caps = t.machines_at(t.span)
    assert ids.size == MACHINES - 1  # one removed at half time
    resized = int(np.flatnonzero(t.machine_source == 1001)[0])
    assert caps[list(ids).index(resized)].tolist() == [0.75, 1.0]


def test_a_window_keeps_standing_tasks_and_cuts_at_its_end() -> None:
    full = small_trace(span=600.0)
    b = _small_builder()
    cut = b.build(Select(window=(100.0, 200.0)))
    assert cut.span == 100.0 and cut.origin == 100.0
    assert np.all(cut.job_submit[cut.job_submit >= 0] < 100.0)
    assert np.all(np.isnan(cut.task_end) | (cut.task_end <= 100.0))
    assert (cut.job_submit < 0).any()  # jobs running at 100 s stay as standing load
    assert full.jobs >= cut.jobs


def _small_builder() -> Builder:
    b = Builder("test", ("cpu",), ("x",), ("<t>",), recorded=True)
    b.machine(0.0, 5, form.ADD, (1.0,))
    for j in range(20):
        b.job(j, 20.0 * j, "batch")
    f = te.fold(np.repeat(np.arange(20) * 20.0, 2) + np.tile([0, 1], 20), np.repeat(np.arange(20), 2).astype(np.int64),
                np.zeros(40, np.int32), np.tile([te.SUBMIT, te.SCHEDULE], 20), np.full(40, 5, np.int64), np.full((40, 1), 0.1))
    b.tasks(f)
    return b


def test_scale_keeps_a_share_of_machines_and_jobs_and_is_seeded() -> None:
    b = Builder("test", ("cpu",), ("x",), ("<t>",), recorded=False)
    for m in range(2000):
        b.machine(0.0, m, form.ADD, (1.0,))
    for j in range(2000):
        b.job(j, float(j), "batch")
    half = b.build(Select(scale=0.5, seed=3))
    assert 900 < half.machines < 1100 and 900 < half.jobs < 1100
    again = b.build(Select(scale=0.5, seed=3))
    np.testing.assert_array_equal(half.job_source, again.job_source)
    assert b.build(Select(max_jobs=7)).jobs == 7


def test_a_file_that_is_not_a_converted_trace_is_refused_in_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    with pytest.raises(TraceError) as e:
        Trace.load(bad)
    assert str(e.value).startswith(f"{bad}: not a converted trace") and "\n" not in str(e.value)
    with pytest.raises(TraceError, match="no such file"):
        Trace.load(tmp_path / "missing.npz")
