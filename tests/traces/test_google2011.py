"""The ClusterData2011_2 reader: a synthetic trace written in the trace's
exact schema (headerless CSV parts, gzipped and plain) converts to what
its writer says it wrote; task lives of any event order fold as their
events say, whatever values the schema lets them leave empty; a window
keeps the standing load and cuts at its end; bad input is refused naming
the file, the line and the column."""
from __future__ import annotations

import gzip
import math
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from schedlab.schedulers.traces import google2011, readers
from schedlab.schedulers.traces.form import TraceError
from schedlab.schedulers.traces.samples import google2011 as sample
from schedlab.schedulers.traces.samples.google2019 import AFTER_END
from tests.traces.test_google2019 import (MACHINES, Event, assert_converted, assert_lively, check_rows, check_window,
                                          lives, merged, refused)

FMT = "google2011"


@pytest.mark.parametrize("gz", [True, False])
def test_a_written_trace_reads_back_as_written(tmp_path: Path, gz: bool) -> None:
    x = sample.write(tmp_path / "trace", seed=3, gz=gz)
    assert all(p.name.endswith(".csv.gz" if gz else ".csv") and p.parent.name in google2011_tables() for p in x["files"])
    trace = readers.convert(tmp_path / "trace", FMT)
    assert_converted(trace, x, FMT, google2011.UNITS)
    assert trace.service_tiers == ("production", "monitoring") and set(trace.tiers) <= set(google2011.TIERS)
    assert_lively(x)
    assert str(x["apart"]) == trace.meta["jobs_with_different_machines_restriction"].split()[0]


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 30), st.sampled_from([0.05, 1.0, 30.0]), st.integers(0, 10_000))
def test_any_small_trace_reads_back_as_written(machines: int, jobs: int, hours: float, seed: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        x = sample.write(Path(d), machines=machines, jobs=jobs, hours=hours, seed=seed)
        assert_converted(readers.convert(d, FMT), x, FMT, google2011.UNITS)


def google2011_tables() -> set[str]:
    return {"machine_events", "machine_attributes", "job_events", "task_events", "task_constraints"}


def test_tiers_follow_the_trace_analyses_priority_bands() -> None:
    assert [google2011.tier(p) for p in range(12)] == ["free"] * 2 + ["best_effort_batch"] * 7 + ["production"] * 2 + [
        "monitoring"]


def test_a_window_keeps_the_standing_load_and_cuts_at_its_end(tmp_path: Path) -> None:
    check_window(tmp_path, FMT, sample.write(tmp_path, seed=5, jobs=400))


# --- task lives, drawn -----------------------------------------------------------

CODE_2011 = sample.CODE


def write_trace(folder: Path, events: list[tuple[Event, int]], job: int = 7_000, gz: bool = False,
                constraints: tuple[str, ...] = ()) -> Path:
    """A minimal 2011 trace: three machines, one job, ``events`` (task n:
    index n); returns the task events part."""
    def put(table: str, lines: list[str]) -> Path:
        (folder / table).mkdir(parents=True, exist_ok=True)
        path = folder / table / f"part-00000-of-00001.csv{'.gz' if gz else ''}"
        text = "".join(line + "\n" for line in lines)
        if gz:
            with gzip.open(path, "wt") as fh:
                fh.write(text)
        else:
            path.write_text(text)
        return path

    put("machine_events", [f"0,{m},0,p,1.0,0.5" for m in MACHINES])
    put("job_events", [f"0,,{job},0,u,1,j,l"])
    if constraints:
        put("task_constraints", list(constraints))
    rows = []
    for e, n in events:
        m = "" if e.machine is None else e.machine
        cpu, mem = ("", "") if e.request is None else e.request
        rows.append(f"{e.time},,{job},{n},{m},{CODE_2011[e.code]},u,1,9,{cpu},{mem},,")
    return put("task_events", rows)


@settings(max_examples=60, deadline=None)
@given(st.lists(lives(queue=False), min_size=1, max_size=3), st.booleans())
def test_any_task_life_folds_as_its_events_say(tasks: list[tuple[list[Event], dict[str, Any]]], gz: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        write_trace(Path(d), merged([evs for evs, _ in tasks]), gz=gz)
        trace = readers.convert(d, FMT)
        check_rows(trace, [row for _, row in tasks])
        assert trace.tiers == ("production",) and trace.users == ("u",)


@settings(max_examples=40, deadline=None)
@given(st.lists(lives(queue=False), min_size=1, max_size=3), st.data())
def test_rows_out_of_time_order_are_refused_naming_the_line(tasks: list[tuple[list[Event], dict[str, Any]]],
                                                           data: st.DataObject) -> None:
    events = [(e, n) for e, n in merged([evs for evs, _ in tasks]) if e.time != AFTER_END]
    times = [e.time for e, _ in events]
    later = [i for i in range(1, len(times)) if times[i] > times[0]]
    if not later:
        return
    i = data.draw(st.sampled_from(later))
    events[0], events[i] = events[i], events[0]
    times[0], times[i] = times[i], times[0]
    line = 1 + next(p for p in range(1, len(times)) if times[p] < max(times[:p]))
    with tempfile.TemporaryDirectory() as d:
        write_trace(Path(d), events)
        with pytest.raises(TraceError) as e:
            readers.convert(d, FMT)
    assert f"task_events/part-00000-of-00001.csv: line {line}: column 'time'" in str(e.value)


def test_constraints_and_empty_values(tmp_path: Path) -> None:
    """Operators 0..3 become "attribute op value" (an empty value stays
    empty); a task event may leave its machine and request empty."""
    cons = ("0,7000,0,0,a,3", "0,7000,0,1,b,", "1,7000,1,2,c,7", "2,7000,1,3,d,x", "2,7000,0,0,a,3")
    write_trace(tmp_path, merged([[Event(0, 0, None, None), Event(5, 3, None, None)], [Event(1, 0, None, (0.5, 0.25))]]),
                constraints=cons)
    trace = readers.convert(tmp_path, FMT)
    assert set(trace.constraints) == {"a == 3", "b !=", "c < 7", "d > x"}
    assert trace.task_machine.tolist() == [-1, -1] and np.isnan(trace.task_request[0]).all()
    assert trace.task_request[1].tolist() == [0.5, 0.25] and math.isnan(trace.task_start[1])


def test_a_job_without_job_events_takes_its_tasks_priority_and_user(tmp_path: Path) -> None:
    write_trace(tmp_path, merged([[Event(3, 0, None, None), Event(4, 3, 101, None)]]))
    p = tmp_path / "task_events" / "part-00000-of-00001.csv"
    first, second = p.read_text().splitlines()
    p.write_text(first.replace(",7000,", ",8000,").replace(",u,1,9,", ",,1,11,") + "\n"
                 + second.replace(",7000,", ",8000,").replace(",u,1,9,", ",v,1,11,") + "\n")
    trace = readers.convert(tmp_path, FMT)
    jobs = dict(zip(trace.job_source.tolist(), range(trace.jobs)))
    j = jobs[8000]
    assert (trace.job_submit[j], trace.job_priority[j], trace.tiers[trace.job_tier[j]], trace.users[trace.job_user[j]]) == (
        3e-6, 11, "monitoring", "v")
    k = jobs[7000]  # job events but no tasks: no priority
    assert (trace.job_priority[k], trace.tiers[trace.job_tier[k]], trace.meta["jobs_without_job_events"]) == (
        -1, google2011.DEFAULT_TIER, 1)


# --- bad input: refused naming the file, the line and the column -------------------


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    sample.write(tmp_path, seed=6, jobs=40)
    return tmp_path


def _edit(path: Path, line: int, edit: Any) -> None:
    lines = path.read_text().splitlines(keepends=True)
    fields = lines[line - 1].rstrip("\n").split(",")
    edit(fields)
    lines[line - 1] = ",".join(fields) + "\n"
    path.write_text("".join(lines))


def test_a_row_without_a_column_is_refused(trace_dir: Path) -> None:
    p = trace_dir / "task_events" / "part-00001-of-00002.csv"
    _edit(p, 5, lambda f: f.__delitem__(slice(9, None)))
    refused(trace_dir, str(p), "line 5", "'CPU request'", "missing", fmt=FMT)


@pytest.mark.parametrize("table,column,index,value", [
    ("task_events", "time", 0, "12x3"), ("task_events", "job ID", 2, "abc"), ("task_events", "memory request", 10, "0.1.2"),
    ("task_events", "event type", 5, "9"), ("machine_events", "CPUs", 4, "lots"), ("job_events", "event type", 3, "-1"),
    ("task_constraints", "comparison operator", 3, "4"), ("task_events", "priority", 8, "")])
def test_a_garbled_number_code_or_missing_value_is_refused(trace_dir: Path, table: str, column: str, index: int,
                                                           value: str) -> None:
    p = sorted((trace_dir / table).iterdir())[0]
    _edit(p, 3, lambda f: f.__setitem__(index, value))
    refused(trace_dir, str(p), "line 3", f"'{column}'", fmt=FMT)


def test_a_part_out_of_time_order_is_refused(trace_dir: Path) -> None:
    p = trace_dir / "task_events" / "part-00000-of-00002.csv"
    lines = p.read_text().splitlines(keepends=True)
    lines[1], lines[-1] = lines[-1], lines[1]
    p.write_text("".join(lines))
    refused(trace_dir, str(p), "line 3", "'time'", "out of time order", fmt=FMT)


@pytest.mark.parametrize("table", ["machine_events", "job_events", "task_events"])
def test_a_missing_table_is_refused(trace_dir: Path, table: str) -> None:
    for p in (trace_dir / table).iterdir():
        p.unlink()
    refused(trace_dir, str(trace_dir), table, fmt=FMT)
