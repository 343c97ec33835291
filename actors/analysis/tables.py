"""A run's events as tables: one row per job, per task launch, per
utilization sample, per event. Pure (no Ray, no pandas at import): the
Python API (``schedlab.Run``), ``schedlab export`` and notebooks read the
same rows, and the job rows agree with ``summary.json`` because they come
from the summary's own derivation (``summary.job_fates``).

Times are emulated seconds since the run's start (the events' ``t``); a
time that never happened is None (empty in CSV, null in Parquet, NaN in
pandas). Each table's columns are documented where it is built: ``JOBS``,
``TASKS``, ``SAMPLES``, ``DEVICES``, ``EVENTS``.
"""
from __future__ import annotations

import collections
import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.actors.analysis.devices import device_series
from schedlab.actors.analysis.stats import by_event
from schedlab.actors.analysis.summary import first_attempts, job_fates
from schedlab.schedulers.events.shared import (
    CELL_SAMPLE, MACHINES_DOWN, PREEMPTED, TASKS_COMPLETED, TASKS_KILLED, TASKS_LAUNCHED, TASKS_LOST, TXN,
)
from schedlab.schedulers.model.cluster import Cell
from schedlab.schedulers.model.resources import EPS

INSTALL_HINT = "pip install 'schedlab[analysis]'"


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # int, float, str, bool or json (a list or dict; JSON text in CSV and Parquet)
    doc: str


@dataclass(frozen=True)
class Table:
    """Rows with named, typed columns. Iterating gives one dict per row;
    ``table["col"]`` a column's values; ``to_pandas()`` a DataFrame (needs
    the ``analysis`` extra); ``write(path, "csv" | "parquet")`` a file."""
    name: str
    columns: tuple[Column, ...]
    rows: list[tuple]

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.columns]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        names = self.names
        return (dict(zip(names, r)) for r in self.rows)

    def __getitem__(self, column: str) -> list[Any]:
        i = self.names.index(column)  # ValueError names the column
        return [r[i] for r in self.rows]

    def __repr__(self) -> str:
        return f"<Table {self.name}: {len(self.rows)} rows x {len(self.columns)} columns ({', '.join(self.names)})>"

    def describe(self) -> str:
        """Each column, its type and what it means: one line each."""
        return "\n".join(f"{c.name} ({c.kind}): {c.doc}" for c in self.columns)

    def to_pandas(self) -> Any:
        """A pandas DataFrame: whole-number columns with a gap are ``Int64``
        (pandas' nullable integer), None is NaN in float columns, json columns
        hold the lists and dicts themselves."""
        pd = need("pandas")
        df = pd.DataFrame.from_records(self.rows, columns=self.names)
        for i, c in enumerate(self.columns):
            if c.kind == "int":
                df[c.name] = df[c.name].astype("Int64" if any(r[i] is None for r in self.rows) else "int64")
            elif c.kind == "float":
                df[c.name] = df[c.name].astype("float64")
            elif c.kind == "bool" and not any(r[i] is None for r in self.rows):
                df[c.name] = df[c.name].astype(bool)
        return df

    def write(self, path: str | Path, fmt: str) -> Path:
        """Write the table as ``fmt`` (csv or parquet) to ``path``."""
        p = Path(path)
        if fmt == "csv":
            with p.open("w", newline="") as f:
                w = csv.writer(f)
                w.writerow(self.names)
                w.writerows([_csv_cell(v, c.kind) for v, c in zip(r, self.columns)] for r in self.rows)
        elif fmt == "parquet":
            pa, pq = need("pyarrow"), need("pyarrow.parquet")
            types = {"int": pa.int64(), "float": pa.float64(), "str": pa.string(), "bool": pa.bool_(), "json": pa.string()}
            arrays = {c.name: pa.array([_json(v) if c.kind == "json" else v for v in self[c.name]], type=types[c.kind])
                      for c in self.columns}
            pq.write_table(pa.table(arrays, schema=pa.schema([(c.name, types[c.kind]) for c in self.columns])), p)
        else:
            raise ValueError(f"unknown format {fmt!r} (csv or parquet)")
        return p


FORMATS = ("csv", "parquet")


def need(module: str) -> Any:
    """Import an optional module of the analysis extra, or ImportError saying how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{module.split('.')[0]} is not installed; it comes with the analysis extra: {INSTALL_HINT}") from None


def _json(v: Any) -> str | None:
    return None if v is None else json.dumps(v, separators=(",", ":"), sort_keys=True)


def _csv_cell(v: Any, kind: str) -> Any:
    if v is None:
        return ""
    if kind == "json":
        return _json(v)
    if kind == "float":
        return repr(float(v))  # round-trips exactly
    return v


# ----------------------------------------------------------------- jobs

JOBS = (
    Column("job_id", "int", "the job's id (job_submitted.job_id); one row per submitted job of the workload"),
    Column("job_class", "str", "its job class in the scenario's [[workload.classes]]"),
    Column("kind", "str", "batch (runs to completion) or service (runs until the end)"),
    Column("scheduler", "str", "the scheduler the submitter routed it to"),
    Column("tasks", "int", "tasks in the job"),
    Column("submit_s", "float", "when it was submitted"),
    Column("first_attempt_s", "float", "when a scheduler first tried to place it (the earliest first job_attempt); "
                                       "first_attempt_s - submit_s is the summary's wait_time_s.first_attempt"),
    Column("scheduled_s", "float", "when it was fully scheduled (every task placed; the summary's job_scheduled event): "
                                   "scheduled_s - submit_s is wait_time_s.fully_scheduled. None when it never was, or when "
                                   "only a replicated control plane's final record says so (status scheduled, no time)"),
    Column("completed_s", "float", "a batch job whose every task finished: when the last one did; else None"),
    Column("status", "str", "at the end: scheduled, abandoned (its scheduler gave up), pending (still waiting), "
                            "rejected (refused at admission) or unreported (none of these; the lost_jobs invariant counts them). "
                            "Counts per status equal summary jobs.scheduled, .abandoned and .pending"),
    Column("attempts", "int", "scheduling attempts: transactions (txn events) its schedulers ended for it, "
                              "committed, conflicted or empty"),
    Column("claims", "int", "task placements its transactions claimed, in all attempts"),
    Column("conflicts", "int", "of those claims, how many conflicted (were refused at commit)"),
    Column("preemptions", "int", "its tasks taken back to make room for others: victims in preempted events (priority "
                                 "preemption) and tasks_lost with reason revoked (offer revocation); 0 where the "
                                 "architecture does neither"),
)


def jobs(events: list[dict]) -> Table:
    """One row per submitted job (``JOBS`` says what each column means)."""
    ev = by_event(events)
    fates = job_fates(ev)
    first = first_attempts(ev)
    attempts: collections.Counter[int] = collections.Counter()
    claims: collections.Counter[int] = collections.Counter()
    conflicts: collections.Counter[int] = collections.Counter()
    for e in ev.get(TXN, []):
        j = e["job_id"]  # required by TXN's schema
        attempts[j] += 1
        claims[j] += int(e["claims"])
        conflicts[j] += int(e.get("conflicted", 0))  # absent: nothing could conflict (TXN)
    preempted: collections.Counter[int] = collections.Counter()
    for e in ev.get(PREEMPTED, []):
        # As declared: one decision with its victims [job, task, ...], or
        # one event per victim, named by its own job_id (or app).
        for v in e["victims"] if "victims" in e else [[e["job_id"] if "job_id" in e else e["app"]]]:
            preempted[int(v[0])] += 1
    for e in ev.get(TASKS_LOST, []):
        if e.get("reason") == "revoked":
            for k in e["tasks"]:
                preempted[int(k[0])] += 1
    rows = []
    for j, sub in sorted(fates.submitted.items()):
        if j in fates.scheduled or j in fates.final_placed:
            status = "scheduled"
        elif j in fates.abandoned:
            status = "abandoned"
        elif j in fates.pending:
            status = "pending"
        elif j in fates.rejected:
            status = "rejected"
        else:
            status = "unreported"
        done = fates.scheduled.get(j)
        rows.append((j, sub["job_class"], sub["kind"], sub.get("scheduler"), int(sub["tasks"]), sub["t"], first.get(j),
                     done["t"] if done else None, fates.completed.get(j), status,
                     attempts[j], claims[j], conflicts[j], preempted[j]))
    return Table("jobs", JOBS, rows)


# ---------------------------------------------------------------- tasks

TASKS = (
    Column("job_id", "int", "the task's job (negative: a standing task of the prefill, running from the start)"),
    Column("task", "int", "its index in the job"),
    Column("machine", "int", "the machine it ran on"),
    Column("host", "int", "the machine host actor that ran it"),
    Column("prefill", "bool", "a standing task of the prefill, not a job of the workload"),
    Column("cpu", "float", "cpu it asked for"),
    Column("mem", "float", "memory it asked for"),
    Column("more", "json", "its amounts of each further resource, in [cell] resources order (empty: none)"),
    Column("start_s", "float", "when its run time starts counting: the commit of its placement (0 for prefill); "
                               "a completed task ran end_s - start_s"),
    Column("launched_s", "float", "when its host started it (the tasks_launched event; up to a batch interval after start_s)"),
    Column("end_s", "float", "when it ended (completed: its exact end; killed, written off or lost: when that was "
                             "logged); None while it ran to the end of the run"),
    Column("outcome", "str", "completed; killed (by its scheduler: a preemption or revocation); written_off (its host "
                             "was marked down and reset); lost (its host died, or was marked down and never heard "
                             "from); running (still running at the end)"),
)


def tasks(events: list[dict]) -> Table:
    """One row per launch: every task in every tasks_launched event, in
    launch-time order, so a task placed again after a loss has a row per
    launch (``TASKS`` says what each column means)."""
    from schedlab.actors.analysis.invariants import machine_faults

    ev = by_event(events)
    # Ends before launches at one instant (a slot freed and reused in one
    # flush), host losses first of all: the invariant checker's order.
    timeline: list[tuple[float, int, int, Any]] = []
    for e in ev.get(TASKS_LAUNCHED, []):
        timeline += [(e["t"], 3, int(e["host"]), (task, bool(e.get("prefill")))) for task in e["tasks"]]
    for e in ev.get(TASKS_COMPLETED, []):
        timeline += [(e["t"], 2, 0, (task, "completed", float(task[3]))) for task in e["tasks"]]
    for e in ev.get(TASKS_KILLED, []):
        outcome = "written_off" if e.get("reason") == "written_off" else "killed"
        timeline += [(e["t"], 2, 0, (task, outcome, e["t"])) for task in e["tasks"]]
    for e in ev.get(MACHINES_DOWN, []):
        timeline.append((e["t"], 0, 0, set(e["hosts"])))
    for t, host, killed in machine_faults(ev):
        if killed:
            timeline.append((t, 0, 0, {host}))
    timeline.sort(key=lambda x: (x[0], x[1]))
    rows: list[list] = []
    running: dict[tuple[int, int], int] = {}  # (job, task) -> its open row
    for t, kind, host, item in timeline:
        if kind == 0:
            for key in [key for key, i in running.items() if rows[i][3] in item]:
                _end(rows[running.pop(key)], t, "lost")
        elif kind == 2:
            task, outcome, end = item
            key = (int(task[0]), int(task[1]))
            i = running.get(key)
            if i is not None and rows[i][2] == int(task[2]):  # not a written-off copy ending late
                del running[key]
                _end(rows[i], end, outcome)
        else:
            task, prefill = item
            key = (int(task[0]), int(task[1]))
            if key in running:  # a double launch (an invariant counts it): the first copy is the one tracked
                continue
            cpu, mem, *more = (float(x) for x in task[3:-1])  # [job, task, machine, *request, start]
            running[key] = len(rows)
            rows.append([key[0], key[1], int(task[2]), host, prefill,
                         cpu, mem, more, float(task[-1]), t, None, "running"])
    return Table("tasks", TASKS, [tuple(r) for r in rows])


def _end(row: list, t: float, outcome: str) -> None:
    row[10], row[11] = t, outcome


# -------------------------------------------------------------- samples

SAMPLES = (
    Column("t", "float", "when the sample was taken"),
    Column("cpu", "float", "fraction of the cell's cpu in use (placed tasks, prefill included)"),
    Column("mem", "float", "fraction of the cell's memory in use"),
    Column("more", "json", "fractions of each further resource in use, in [cell] resources order (empty: none)"),
    Column("actor", "str", "who sampled it (the keeper of the cell's state: a cell state, leader or master)"),
)


def samples(events: list[dict], duration: float | None = None) -> Table:
    """The utilization time series: every cell_sample within the run
    (0 <= t <= duration), the ones summary utilization averages, so the
    mean of ``cpu`` is summary utilization.cpu_mean."""
    rows = [(e["t"], float(e["cpu"]), float(e["mem"]), list(e.get("more", ())), e.get("actor"))
            for e in events if e["event"] == CELL_SAMPLE and 0 <= e["t"] and (duration is None or e["t"] <= duration + EPS)]
    return Table("samples", SAMPLES, rows)


# -------------------------------------------------------------- devices

DEVICES = (
    Column("t", "float", "when measured (evenly over the run)"),
    Column("model", "str", "a device model ('-': machines whose class names none)"),
    Column("devices", "int", "devices of that model in the cell"),
    Column("allocated", "float", "devices' worth held by tasks (a share counts its fraction)"),
    Column("unallocated", "float", "devices' worth free"),
    Column("fragmented", "float", "of the free, devices' worth a typical task cannot use (Weng et al., ATC 2023)"),
)


def devices(events: list[dict], cell: Cell, duration: float) -> Table:
    """The device measures over the run, per model (empty: the cell has no
    device resource); their means are summary.json's ``devices``."""
    series = device_series(by_event(events), cell, duration)
    rows = [] if series is None else [
        (float(t), m, int(series.devices[k]), round(float(series.allocated[i, k]), 6),
         round(float(series.devices[k] - series.allocated[i, k]), 6), round(float(series.fragmented[i, k]), 6))
        for i, t in enumerate(series.t) for k, m in enumerate(series.models)]
    return Table("devices", DEVICES, rows)


# --------------------------------------------------------------- events

EVENTS = (
    Column("t", "float", "when (negative: while the run was being set up)"),
    Column("event", "str", "what: job_submitted, txn, tasks_launched, cell_sample, fault, ..."),
    Column("actor", "str", "the actor that logged it"),
    Column("fields", "json", "everything else the event carries"),
)


def events_table(events: list[dict]) -> Table:
    """events.jsonl as a table, in file order (``EVENTS``)."""
    rows = [(e["t"], e["event"], e.get("actor"), {k: v for k, v in e.items() if k not in ("t", "event", "actor")})
            for e in events]
    return Table("events", EVENTS, rows)
