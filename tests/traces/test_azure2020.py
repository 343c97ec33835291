"""The Azure packing trace 2020 reader on a synthetic SQLite file in the
trace's exact schema (schedulers.traces.samples.azure2020): the cell it
builds (one machine type, the one most VMs fit; the peak load by default),
each fitting VM a job of one task at its start, ending at its end or still
running, tiers by priority; bad databases refused in one line naming the
file, the table, the row and the column."""
from __future__ import annotations

import math
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.traces import azure2020 as az
from schedlab.schedulers.traces import form, readers
from schedlab.schedulers.traces.form import Trace, TraceError
from schedlab.schedulers.traces.readers import ReadOptions
from schedlab.schedulers.traces.samples import azure2020 as sample

FMT = "azure2020"
DAY = 86_400.0


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Trace]:
    out = tmp_path_factory.mktemp("azure")
    w = sample.write(out, machines=30, jobs=400, hours=12.0, seed=4)
    return w, readers.convert(w["path"], FMT, options=ReadOptions(machines=w["machines"]))


def _kept(w: dict) -> np.ndarray:
    """The VMs a conversion keeps: of a fitting type, and not started and ended before the trace's start."""
    vm = w["vm"]
    return w["fits"] & ~((vm["starttime"] < 0) & (vm["endtime"] <= 0))


def test_the_cell_is_one_machine_type_with_capacity_one(written: tuple[dict, Trace]) -> None:
    w, trace = written
    assert trace.format == FMT and not trace.recorded and trace.resources == ("cpu", "mem", "ssd")
    assert trace.machines == w["machines"] and trace.meta["machine_type"] == w["machine_type"] == sample.BEST
    assert all(f"type {sample.BEST}'s" in u for u in trace.units)
    ids, cap = trace.machines_at(0.0)
    assert ids.size == w["machines"] and (cap == 1.0).all()
    assert trace.meta["vms_skipped_not_fitting"] == int((~w["fits"]).sum()) > 0
    assert trace.meta["machines_from"] == "ReadOptions.machines"


def test_each_fitting_vm_is_a_job_of_one_task_from_its_start_to_its_end(written: tuple[dict, Trace]) -> None:
    w, trace = written
    vm, keep = w["vm"], _kept(w)
    order = np.lexsort((vm["vmId"][keep], vm["starttime"][keep] * DAY))
    assert np.array_equal(trace.job_source, vm["vmId"][keep][order])
    start, end = vm["starttime"][keep][order] * DAY, vm["endtime"][keep][order] * DAY
    assert np.array_equal(trace.job_submit, start) and (trace.job_submit < 0).any()
    assert np.array_equal(trace.task_job, np.arange(trace.jobs)) and (trace.task_index == 0).all()
    assert np.array_equal(trace.task_submit, start) and np.array_equal(trace.task_start, start)
    assert np.array_equal(trace.task_last_start, start) and (trace.task_attempts == 1).all() and (trace.task_machine == -1).all()
    assert np.array_equal(trace.task_end, end, equal_nan=True) and np.isnan(end).any()
    assert np.array_equal(trace.task_end_reason, np.where(np.isnan(end), form.NONE, form.FINISHED))
    assert np.array_equal(trace.task_request, w["request"][keep][order].astype(np.float32))
    tiers = np.asarray(trace.tiers)[trace.job_tier]
    assert np.array_equal(tiers, np.where(vm["priority"][keep][order] == 0, "high", "low"))
    assert np.array_equal(trace.job_priority, 1 - vm["priority"][keep][order]) and trace.service_tiers == ()
    assert [trace.users[u] for u in trace.job_user] == [str(t) for t in vm["tenantId"][keep][order].tolist()]


def _peak(w: dict) -> float:
    """The busiest resource's most asked at once, by a plain sweep (ends first at a tie)."""
    vm, fits = w["vm"], w["fits"]
    events = []
    for k in np.flatnonzero(fits).tolist():
        events.append((vm["starttime"][k] * DAY, 1, w["request"][k]))
        if not np.isnan(vm["endtime"][k]):
            events.append((vm["endtime"][k] * DAY, 0, -w["request"][k]))
    load, peak = np.zeros(3), np.zeros(3)
    for _, _, d in sorted(events, key=lambda e: (e[0], e[1])):
        load = load + d
        peak = np.maximum(peak, load)
    return float(peak.max())


def test_by_default_the_peak_load_fills_four_fifths_of_the_cell(written: tuple[dict, Trace]) -> None:
    w, _ = written
    trace = readers.convert(w["path"].parent, FMT)  # the folder holding it, as well
    assert trace.machines == math.ceil(_peak(w) * az.HEADROOM) == trace.meta["machines"]
    assert trace.meta["machines_from"].startswith("the peak load x 1.25")


def test_a_vm_requested_last_and_still_running_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "t.sqlite"
    _database(db, [(1, 1, 5, 0, 0.5, 2.0), (2, 1, 5, 1, 3.0, None)])
    trace = readers.convert(db, FMT, options=ReadOptions(machines=2))
    assert trace.job_source.tolist() == [1, 2] and trace.task_start.tolist() == [0.5 * DAY, 3.0 * DAY]
    assert np.isnan(trace.task_end[1]) and trace.tiers == ("high", "low")


def _database(path: Path, vms: list[tuple], vm_columns: str = "vmId INTEGER, tenantId INTEGER, vmTypeId INTEGER, "
              "priority INTEGER, starttime REAL, endtime REAL") -> None:
    with sqlite3.connect(path) as con:
        con.execute(f"CREATE TABLE vm ({vm_columns})")
        con.execute("CREATE TABLE vmType (id INTEGER, vmTypeId INTEGER, machineId INTEGER, core REAL, memory REAL, "
                    "hdd REAL, ssd REAL, nic REAL)")
        con.executemany("INSERT INTO vmType VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                        [(1, 5, 2, 0.25, 0.5, 0.0, None, 0.1), (2, 5, 3, 0.5, 1.0, 0.0, 0.1, 0.2), (3, 6, 3, 0.5, 0.5, 0, 0, 0)])
        con.executemany(f"INSERT INTO vm VALUES ({', '.join('?' * len(vms[0]))})", vms)
    con.close()


@given(st.lists(st.tuples(st.sampled_from([5, 6, 9]), st.sampled_from([0, 1]), st.floats(-2.0, 10.0),
                          st.one_of(st.none(), st.floats(-1.0, 20.0))), min_size=1, max_size=12))
@settings(max_examples=40, deadline=None)
def test_null_ends_and_types_that_do_not_fit_read_as_documented(vms: list[tuple[int, int, float, float | None]]) -> None:
    rows = [(k + 1, 7, t, p, s, e) for k, (t, p, s, e) in enumerate(vms)]
    with tempfile.TemporaryDirectory() as d:
        _database(Path(d) / "t.sqlite", rows)
        trace = readers.convert(Path(d) / "t.sqlite", FMT, options=ReadOptions(machines=3))
    counts = {2: sum(t == 5 for t, *_ in vms), 3: sum(t in (5, 6) for t, *_ in vms)}
    best = min(m for m in counts if counts[m] == max(counts.values()))  # most VMs fit; ties: the lowest id
    assert trace.meta["machine_type"] == best
    fits = [r for r in rows if r[2] == 5 or (r[2] == 6 and best == 3)]
    assert trace.meta["vms_skipped_not_fitting"] == len(rows) - len(fits)
    kept = {r[0]: r for r in fits if not (r[4] < 0 and r[5] is not None and max(r[5], r[4]) <= 0)}
    assert sorted(trace.job_source.tolist()) == sorted(kept)
    for j, v in enumerate(trace.job_source.tolist()):
        _, _, t, p, s, e = kept[v]
        assert trace.task_start[j] == s * DAY and trace.tiers[trace.job_tier[j]] == ("high", "low")[p]
        if e is None:
            assert np.isnan(trace.task_end[j]) and trace.task_end_reason[j] == form.NONE
        else:
            assert trace.task_end[j] == max(e, s) * DAY and trace.task_end_reason[j] == form.FINISHED
        want = {(2, 5): (0.25, 0.5, 0.0), (3, 5): (0.5, 1.0, 0.1), (3, 6): (0.5, 0.5, 0.0)}[(best, t)]
        assert trace.task_request[j].tolist() == np.asarray(want, np.float32).tolist()


# -- bad input -------------------------------------------------------------------------------------------

def _fine(path: Path) -> None:
    _database(path, [(1, 1, 5, 0, 0.5, 2.0), (2, 1, 5, 1, 1.0, None), (3, 2, 5, 0, 1.5, 4.0)])


@pytest.mark.parametrize("sql, message", [
    ("DROP TABLE vm", "t.sqlite: no table 'vm' (the packing trace has tables vm and vmType; found: vmType)"),
    ("DROP TABLE vmType", "t.sqlite: no table 'vmType'"),
    ("ALTER TABLE vm DROP COLUMN priority", "t.sqlite: table 'vm': column 'priority': missing"),
    ("UPDATE vm SET starttime = 'soon' WHERE rowid = 2", "t.sqlite: table 'vm': row 2: column 'starttime': not a number: 'soon'"),
    ("UPDATE vm SET starttime = NULL WHERE rowid = 3", "t.sqlite: table 'vm': row 3: column 'starttime': missing value (NULL)"),
    ("UPDATE vm SET endtime = 'later' WHERE rowid = 3", "t.sqlite: table 'vm': row 3: column 'endtime': not a number: 'later'"),
    ("UPDATE vm SET priority = 2 WHERE rowid = 1", "t.sqlite: table 'vm': row 1: column 'priority': unknown priority 2"),
    ("UPDATE vm SET vmId = 1.5 WHERE rowid = 2", "t.sqlite: table 'vm': row 2: column 'vmId': not an integer: 1.5"),
    ("UPDATE vmType SET core = 'x' WHERE rowid = 2", "t.sqlite: table 'vmType': row 2: column 'core': not a number: 'x'"),
    ("UPDATE vmType SET memory = -0.5 WHERE rowid = 1", "t.sqlite: table 'vmType': row 1: column 'memory': a negative fraction"),
])
def test_a_bad_database_is_refused_naming_file_table_row_and_column(tmp_path: Path, sql: str, message: str) -> None:
    db = tmp_path / "t.sqlite"
    _fine(db)
    assert readers.convert(db, FMT).jobs == 3
    with sqlite3.connect(db) as con:
        con.execute(sql)
    con.close()
    with pytest.raises(TraceError) as e:
        readers.convert(db, FMT)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_a_file_that_is_not_sqlite_and_folders_without_one_are_refused(tmp_path: Path) -> None:
    (tmp_path / "a.sqlite").write_text("vmId,starttime\n1,0.5\n")
    with pytest.raises(TraceError, match="a.sqlite: not a SQLite database"):
        readers.convert(tmp_path / "a.sqlite", FMT)
    (tmp_path / "b.sqlite").write_text("")
    with pytest.raises(TraceError, match="2 SQLite files"):
        readers.convert(tmp_path, FMT)
    with pytest.raises(TraceError, match="machines must be at least 1"):
        readers.convert(tmp_path / "a.sqlite", FMT, options=ReadOptions(machines=0))
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "trace.zip").write_text("")
    with pytest.raises(TraceError, match="no .sqlite file.*extract trace.zip first"):
        readers.convert(empty, FMT)
