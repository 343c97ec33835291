"""The ClusterData2019 reader: a synthetic cell written in the trace's exact
schema (JSON lines and CSV, gzipped and plain) converts to what its
writer says it wrote; task lives of any event order fold as their events
say, whatever values the schema lets them leave out; a window keeps the
standing load and cuts at its end; bad input is refused naming the file,
the line and the column."""
from __future__ import annotations

import gzip
import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from schedlab.schedulers.traces import form, google2019, readers
from schedlab.schedulers.traces.builder import Select
from schedlab.schedulers.traces.form import Trace, TraceError
from schedlab.schedulers.traces.samples import google2019 as sample
from schedlab.schedulers.traces.samples.google2019 import (EVICT, FAIL, FINISH, KILL, LOST, QUEUE, SCHEDULE, SUBMIT,
                                                           UPDATE_RUNNING)

FMT = "google2019"


# --- the round trip: what was written is what is read ----------------------


def _sets(ptr: np.ndarray, values: np.ndarray, names: np.ndarray) -> list[frozenset[Any]]:
    return [frozenset(names[values[ptr[i]:ptr[i + 1]]].tolist()) for i in range(ptr.size - 1)]


def _same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    got, want = np.asarray(got), np.asarray(want)
    if got.dtype.kind == "f":
        np.testing.assert_array_equal(got, want.astype(got.dtype), err_msg=what)  # nan equals nan
    else:
        assert got.tolist() == want.tolist(), what


def assert_converted(trace: Trace, x: dict[str, Any], fmt: str, units: tuple[str, ...]) -> None:
    """``trace`` (converted with the default selection) is what the sample
    writer says it wrote: machines and their events, jobs, tasks, times in
    seconds, units, end reasons, recorded machines, the reader's counts."""
    assert (trace.format, trace.units, trace.resources, trace.recorded) == (fmt, units, ("cpu", "mem"), True)
    assert trace.origin == 0.0 and trace.span == x["span"]
    assert trace.machine_source.tolist() == x["machine_ids"].tolist()
    got_m = sorted(zip(trace.machine_time.tolist(), trace.machine_source[trace.machine_id].tolist(),
                       trace.machine_event.tolist(), trace.machine_capacity[:, 0].tolist(),
                       trace.machine_capacity[:, 1].tolist()))
    f32 = lambda v: float(np.float32(v))  # noqa: E731
    assert got_m == sorted((t, m, k, f32(c), f32(mm)) for t, m, k, c, mm in x["machines"])
    # Jobs, by id.
    xj = x["jobs"]
    g, w = np.argsort(trace.job_source), np.argsort(xj["id"])
    _same(trace.job_source[g], xj["id"][w], "job ids")
    _same(trace.job_submit[g], xj["submit"][w], "job submit")
    _same(np.array(trace.tiers)[trace.job_tier[g]], np.array(xj["tier"])[w], "job tier")
    _same(trace.job_priority[g], xj["priority"][w], "job priority")
    _same(np.array(trace.users)[trace.job_user[g]], np.array(xj["user"])[w], "job user")
    parent = np.where(trace.job_parent >= 0, trace.job_source[np.maximum(trace.job_parent, 0)], -1)
    _same(parent[g], xj["parent"][w], "job parent")
    after = _sets(trace.job_after_ptr, trace.job_after, trace.job_source)
    assert [after[i] for i in g] == [frozenset(xj["after"][i]) for i in w]
    cons = _sets(trace.job_constraint_ptr, trace.job_constraint, np.array(trace.constraints, dtype=object))
    assert [cons[i] for i in g] == [xj["constraints"][i] for i in w]
    # Tasks, by (job id, index).
    xt = x["tasks"]
    owner = trace.job_source[trace.task_job]
    g, w = np.lexsort((trace.task_index, owner)), np.lexsort((xt["index"], xt["job"]))
    _same(owner[g], xt["job"][w], "task job")
    _same(trace.task_index[g], xt["index"][w], "task index")
    for name in ("submit", "start", "last_start", "end"):
        _same(getattr(trace, f"task_{name}")[g], xt[name][w], f"task {name}")
    _same(trace.task_end_reason[g], xt["reason"][w], "task end reason")
    _same(trace.task_attempts[g], xt["attempts"][w], "task attempts")
    machine = np.where(trace.task_machine >= 0, trace.machine_source[np.maximum(trace.task_machine, 0)], -1)
    _same(machine[g], xt["machine"][w], "task machine")
    _same(trace.task_request[g], xt["request"][w], "task request")
    for k, v in x["notes"].items():
        assert trace.meta.get(k, 0) == v, k


def assert_lively(x: dict[str, Any]) -> None:
    """The sample has the shapes a reader must handle: standing tasks at 0,
    rescheduled ones, every end, tasks running or waiting at the end."""
    t = x["tasks"]
    reasons = set(t["reason"].tolist())
    assert {form.FINISHED, form.KILLED, form.EVICTED, form.FAILED, form.NONE} <= reasons
    assert (t["start"] == 0).any() and (t["attempts"] > 1).any()
    assert (~np.isnan(t["start"]) & np.isnan(t["end"])).any()  # running at the end
    assert np.isnan(t["start"]).any()  # never started
    assert len({k for _, _, k, _, _ in x["machines"]}) == 3  # added, removed, updated
    assert any(x["jobs"]["constraints"]) and len(set(x["jobs"]["tier"])) >= 4


@pytest.mark.parametrize("fmt,gz", [("json", True), ("json", False), ("csv", True), ("csv", False)])
def test_a_written_cell_reads_back_as_written(tmp_path: Path, fmt: str, gz: bool) -> None:
    x = sample.write(tmp_path / "cell", seed=3, gz=gz, fmt=fmt)
    assert all(p.name.endswith(".gz" if gz else f".{fmt}") for p in x["files"])
    trace = readers.convert(tmp_path / "cell", FMT)
    assert_converted(trace, x, FMT, google2019.UNITS)
    assert trace.service_tiers == ("production", "monitoring") and set(trace.tiers) <= set(google2019.TIERS)
    assert_lively(x)
    assert any(x["jobs"]["after"]) and (x["jobs"]["parent"] >= 0).any()
    assert trace.meta["alloc_sets"] >= 1 and trace.meta["alloc_instance_events"] > 0


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 6), st.integers(1, 30), st.sampled_from([0.05, 1.0, 30.0]), st.integers(0, 10_000),
       st.sampled_from(["json", "csv"]))
def test_any_small_cell_reads_back_as_written(machines: int, jobs: int, hours: float, seed: int, fmt: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        x = sample.write(Path(d), machines=machines, jobs=jobs, hours=hours, seed=seed, fmt=fmt)
        assert_converted(readers.convert(d, FMT), x, FMT, google2019.UNITS)


def test_csv_columns_may_spell_nested_fields_with_underscores(tmp_path: Path) -> None:
    x = sample.write(tmp_path, seed=4, fmt="csv", jobs=60)
    for p in tmp_path.glob("*.csv"):
        head, rest = p.read_text().split("\n", 1)
        p.write_text(head.replace(".", "_") + "\n" + rest)
    assert_converted(readers.convert(tmp_path, FMT), x, FMT, google2019.UNITS)


def test_tiers_follow_the_trace_papers_priority_ranges() -> None:
    assert [google2019.tier(p) for p in (0, 99, 100, 110, 115, 116, 119, 120, 359, 360, 450)] == [
        "free", "free", "best_effort_batch", "best_effort_batch", "best_effort_batch", "mid", "mid", "production",
        "production", "monitoring", "monitoring"]


def test_a_window_keeps_the_standing_load_and_cuts_at_its_end(tmp_path: Path) -> None:
    check_window(tmp_path, FMT, sample.write(tmp_path, seed=5, jobs=400))


def check_window(src: Path, fmt: str, x: dict[str, Any]) -> None:
    """The middle third of the sample at ``src``: the jobs submitted in it
    and the standing ones (submitted before, a task running at its start,
    negative times), every task cut at its end as the builder documents,
    the machines present at its start."""
    a, b = x["span"] / 3, 2 * x["span"] / 3
    trace = readers.convert(src, fmt, Select(window=(a, b)))
    assert (trace.origin, trace.span) == (a, b - a)
    t, j = x["tasks"], x["jobs"]
    running = (t["last_start"] < a) & (np.isnan(t["end"]) | (t["end"] > a))
    submit = dict(zip(j["id"].tolist(), j["submit"].tolist()))
    standing = {k for k in t["job"][running].tolist() if submit[k] < a}
    inside = {k for k, s in submit.items() if a <= s < b}
    assert standing and set(trace.job_source.tolist()) == standing | inside
    assert (trace.job_submit < 0).sum() == len(standing)
    # Every task of a kept job, cut at the window's end as the builder documents.
    keep = np.isin(t["job"], trace.job_source)
    owner = trace.job_source[trace.task_job]
    g, w = np.lexsort((trace.task_index, owner)), np.lexsort((t["index"][keep], t["job"][keep]))
    cut = {k: v[keep][w] for k, v in t.items() if k in ("submit", "start", "last_start", "end", "reason")}
    start = np.where(cut["start"] >= b, np.nan, cut["start"])
    last = np.where(cut["last_start"] >= b, np.nan, cut["last_start"])
    late = cut["end"] > b
    reason = np.where(late | np.isnan(last), form.NONE, cut["reason"])
    end = np.where(late | (np.isnan(last) & (reason == form.NONE)), np.nan, cut["end"])
    for name, want in (("submit", cut["submit"]), ("start", start), ("last_start", last), ("end", end)):
        np.testing.assert_allclose(getattr(trace, f"task_{name}")[g], want - a, rtol=0, atol=1e-6, err_msg=name)
    _same(trace.task_end_reason[g], reason, "end reason")
    assert (trace.task_last_start[g] < 0).any() and (late & ~np.isnan(last)).any()
    # The machines present at the window's start, as the writer changed them.
    present: dict[int, tuple[float, float]] = {}
    for tm, m, kind, c, mm in x["machines"]:
        if tm > a:
            break
        if kind == form.REMOVE:
            del present[m]
        else:
            present[m] = (c, mm)
    ids, cap = trace.machines_at(0.0)
    assert dict(zip(trace.machine_source[ids].tolist(), map(tuple, cap.tolist()))) == present


# --- task lives, drawn: any order of events, any values left out ------------


@dataclass(frozen=True)
class Event:
    time: int  # µs
    code: int  # the 2019 EventType
    machine: int | None  # None: left out
    request: tuple[float, float] | None  # None: left out


MACHINES = (101, 102, 103)


@st.composite
def lives(draw: st.DrawFn, queue: bool = True) -> tuple[list[Event], dict[str, Any]]:
    """One task's events (ties allowed: they keep their order) and the row
    folding them must give (times in µs; None: not in the trace)."""
    t = draw(st.integers(0, 1000))
    events: list[Event] = []
    req = lambda: draw(st.none() | st.tuples(st.sampled_from([0.01, 0.25]), st.sampled_from([0.02, 0.5])))  # noqa: E731
    gap = lambda: draw(st.integers(0, 50))  # noqa: E731
    events.append(Event(t, SUBMIT, None, req()))
    if queue and draw(st.booleans()):
        t += gap()
        events.append(Event(t, QUEUE, None, req()))
    starts = draw(st.integers(0, 3))
    machines: list[int | None] = []
    for k in range(starts):
        t += gap()
        m = draw(st.sampled_from(MACHINES) | st.none())
        machines.append(m)
        events.append(Event(t, SCHEDULE, m, req()))
        if draw(st.booleans()):
            t += gap()
            events.append(Event(t, UPDATE_RUNNING, m, req()))
        if k < starts - 1:
            t += gap()
            events.append(Event(t, draw(st.sampled_from([EVICT, FAIL])), m, req()))
            t += gap()
            events.append(Event(t, SUBMIT, None, req()))
    last = draw(st.sampled_from([FINISH, FAIL, KILL, LOST, EVICT, None, "after"]))
    if last == "after":  # "after the trace ended": did not happen
        events.append(Event(sample.AFTER_END, FINISH, machines[-1] if machines else None, req()))
    elif last is not None:
        t += gap()
        events.append(Event(t, last, machines[-1] if machines else None, req()))
    sched = [e.time for e in events if e.code == SCHEDULE]
    ended = starts > 0 and last not in (None, "after")
    named = [e.request for e in events if e.request is not None and e.time != sample.AFTER_END]
    row = {"submit": events[0].time, "start": sched[0] if sched else None, "last_start": sched[-1] if sched else None,
           "end": t if ended else None, "reason": sample.REASON[last] if ended else form.NONE,
           "machine": machines[0] if machines and machines[0] is not None else -1, "attempts": starts,
           "request": named[-1] if named else (math.nan, math.nan)}
    return events, row


def merged(tasks: list[list[Event]]) -> list[tuple[Event, int]]:
    """The tasks' events in one time order (a tie keeps each task's order)."""
    flat = [(e.time, n, i, e) for n, evs in enumerate(tasks) for i, e in enumerate(evs)]
    return [(e, n) for _, n, _, e in sorted(flat, key=lambda r: (r[0], r[1], r[2]))]


def write_cell(folder: Path, events: list[tuple[Event, int]], job: int = 7_000, gz: bool = False) -> None:
    """A minimal 2019 cell: three machines, one job, ``events`` (task n: index n)."""
    def put(table: str, rows: list[dict[str, Any]]) -> None:
        text = "".join(json.dumps(r) + "\n" for r in rows)
        if gz:
            with gzip.open(folder / f"{table}-000000000000.json.gz", "wt") as fh:
                fh.write(text)
        else:
            (folder / f"{table}-000000000000.json").write_text(text)

    put("machine_events", [{"time": "0", "machine_id": str(m), "type": "1", "capacity": {"cpus": 1.0, "memory": 0.5}}
                           for m in MACHINES])
    put("collection_events", [{"time": "0", "type": "0", "collection_id": str(job), "collection_type": "0",
                               "priority": "200", "user": "u"}])
    rows = []
    for e, n in events:
        r: dict[str, Any] = {"time": str(e.time), "type": str(e.code), "collection_id": str(job), "instance_index": str(n)}
        if e.machine is not None:
            r["machine_id"] = str(e.machine)
        if e.request is not None:
            r["resource_request"] = {"cpus": e.request[0], "memory": e.request[1]}
        rows.append(r)
    put("instance_events", rows)


def check_rows(trace: Trace, rows: list[dict[str, Any]]) -> None:
    assert trace.tasks == len(rows)
    for n, want in enumerate(rows):
        i = int(np.flatnonzero(trace.task_index == n)[0])
        for name in ("submit", "start", "last_start", "end"):
            v = want[name]
            got = float(getattr(trace, f"task_{name}")[i])
            assert (math.isnan(got) if v is None else got == v / 1e6), (name, got, v)
        assert trace.task_end_reason[i] == want["reason"] and trace.task_attempts[i] == want["attempts"]
        m = int(trace.task_machine[i])
        assert (int(trace.machine_source[m]) if m >= 0 else -1) == want["machine"]
        np.testing.assert_array_equal(trace.task_request[i], np.asarray(want["request"], np.float32))


@settings(max_examples=60, deadline=None)
@given(st.lists(lives(), min_size=1, max_size=3), st.booleans())
def test_any_task_life_folds_as_its_events_say(tasks: list[tuple[list[Event], dict[str, Any]]], gz: bool) -> None:
    with tempfile.TemporaryDirectory() as d:
        write_cell(Path(d), merged([evs for evs, _ in tasks]), gz=gz)
        check_rows(readers.convert(d, FMT), [row for _, row in tasks])


@settings(max_examples=40, deadline=None)
@given(st.lists(lives(), min_size=1, max_size=3), st.randoms(use_true_random=False))
def test_rows_in_any_order_fold_as_in_time_order(tasks: list[tuple[list[Event], dict[str, Any]]], rnd: Any) -> None:
    """BigQuery writes an export's rows in no particular order: a shard
    shuffled (rows of one microsecond keeping their order) reads the same."""
    events = merged([evs for evs, _ in tasks])
    queue: dict[int, list[Any]] = {}
    for e in events:
        queue.setdefault(e[0].time, []).append(e)
    times = [e[0].time for e in events]
    rnd.shuffle(times)  # the shuffled rows' times; each time's rows then in their own order
    shuffled = [queue[t].pop(0) for t in times]
    with tempfile.TemporaryDirectory() as d:
        write_cell(Path(d), shuffled)
        check_rows(readers.convert(d, FMT), [row for _, row in tasks])


# --- bad input: refused naming the file, the line and the column --------------


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines(keepends=True)


def refused(src: Path, *parts: str, fmt: str = FMT) -> None:
    """Converting ``src`` as ``fmt`` is refused with a message holding every one of ``parts``."""
    with pytest.raises(TraceError) as e:
        readers.convert(src, fmt)
    assert all(p in str(e.value) for p in parts), str(e.value)


@pytest.fixture
def cell(tmp_path: Path) -> Path:
    sample.write(tmp_path, seed=6, jobs=40)
    return tmp_path


@pytest.fixture
def csv_cell(tmp_path: Path) -> Path:
    sample.write(tmp_path, seed=6, jobs=40, fmt="csv")
    return tmp_path


def test_a_csv_shard_without_a_column_is_refused(csv_cell: Path) -> None:
    p = csv_cell / "instance_events-000000000001.csv"
    lines = _lines(p)
    head = lines[0].rstrip("\n").split(",")
    k = head.index("instance_index")
    p.write_text("".join(",".join(c for i, c in enumerate(line.rstrip("\n").split(",")) if i != k) + "\n" for line in lines))
    refused(csv_cell, str(p), "line 1", "'instance_index'")


def test_a_json_line_without_a_required_value_is_refused(cell: Path) -> None:
    p = cell / "collection_events-000000000000.json"
    lines = _lines(p)
    row = json.loads(lines[4])
    del row["collection_id"]
    lines[4] = json.dumps(row) + "\n"
    p.write_text("".join(lines))
    refused(cell, str(p), "line 5", "'collection_id'", "missing value")


@pytest.mark.parametrize("table,column,value", [("instance_events-000000000000", "time", "12x3"),
                                                 ("instance_events-000000000001", "collection_id", "abc"),
                                                 ("machine_events-000000000000", "type", "2.5"),
                                                 ("instance_events-000000000000", "type", "11")])
def test_a_garbled_number_or_code_is_refused(cell: Path, table: str, column: str, value: str) -> None:
    p = cell / f"{table}.json"
    lines = _lines(p)
    row = json.loads(lines[6])
    row[column] = value
    lines[6] = json.dumps(row) + "\n"
    p.write_text("".join(lines))
    refused(cell, str(p), "line 7", f"'{column}'")


def test_a_garbled_csv_amount_is_refused(csv_cell: Path) -> None:
    p = csv_cell / "instance_events-000000000000.csv"
    lines = _lines(p)
    head = lines[0].rstrip("\n").split(",")
    fields = lines[3].split(",")
    fields[head.index("resource_request.cpus")] = "0.1.2"
    lines[3] = ",".join(fields)
    p.write_text("".join(lines))
    refused(csv_cell, str(p), "line 4", "'resource_request.cpus'", "not a number")


def test_a_shard_out_of_time_order_reads_as_one_in_order(cell: Path) -> None:
    before = readers.convert(cell, FMT)
    for table in ("machine_events", "collection_events"):
        p = cell / f"{table}-000000000000.json"
        lines = _lines(p)
        p.write_text("".join(reversed(lines)))  # (rows sharing a microsecond are of other machines or jobs)
    after = readers.convert(cell, FMT)
    for name in ("machine_time", "machine_id", "machine_capacity", "job_source", "job_submit", "job_tier", "job_after"):
        np.testing.assert_array_equal(getattr(after, name), getattr(before, name))


@pytest.mark.parametrize("table", ["machine_events", "collection_events", "instance_events"])
def test_a_missing_table_is_refused(cell: Path, table: str) -> None:
    for p in cell.glob(f"{table}-*"):
        p.unlink()
    refused(cell, str(cell), table)


def test_a_constraint_that_is_not_a_record_is_refused(tmp_path: Path) -> None:
    write_cell(tmp_path, merged([[Event(0, SUBMIT, None, None)]]))
    p = tmp_path / "instance_events-000000000000.json"
    row = json.loads(p.read_text())
    row["constraint"] = ["just a name"]
    p.write_text(json.dumps(row) + "\n")
    refused(tmp_path, str(p), "line 1", "'constraint'")


def test_constraints_and_missing_optional_values(tmp_path: Path) -> None:
    """Relations 0..7 (by number or name) become "name op value"; an event
    may leave out its collection type, machine, priority and request."""
    write_cell(tmp_path, merged([[Event(0, SUBMIT, None, None), Event(5, SCHEDULE, None, None)]]))
    p = tmp_path / "instance_events-000000000000.json"
    first, second = (json.loads(s) for s in p.read_text().splitlines())
    first["constraint"] = [{"name": "a", "value": "3", "relation": "0"}, {"name": "b", "relation": "6"},
                           {"name": "c", "value": "9", "relation": "GREATER_THAN_EQUAL"}, {"name": "d", "value": "x", "relation": 1}]
    p.write_text(json.dumps(first) + "\n" + json.dumps(second) + "\n")
    trace = readers.convert(tmp_path, FMT)
    assert set(trace.constraints) == {"a == 3", "b present", "c >= 9", "d != x"}
    assert trace.task_machine.tolist() == [-1] and np.isnan(trace.task_request).all()
    assert trace.task_attempts.tolist() == [1] and trace.task_start.tolist() == [5e-6]
