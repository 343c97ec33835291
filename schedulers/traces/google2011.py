"""Google's 2011 cluster data (ClusterData2011_2: "Google cluster-usage
traces: format + schema", trace version 2) as a canonical trace.

``src`` is the trace's folder as users download it: headerless CSV parts,
usually gzipped (``task_events/part-00000-of-00500.csv.gz``), missing
values as empty fields. Tables and their columns, in the schema's order:

- ``machine_events``: time, machine ID, event type (0 ADD, 1 REMOVE, 2
  UPDATE), platform ID, CPUs, memory. An UPDATE that leaves a capacity
  empty keeps the previous one.
- ``job_events``: time, missing info, job ID, event type, user, scheduling
  class, job name, logical job name.
- ``task_events``: time, missing info, job ID, task index, machine ID,
  event type (0 SUBMIT, 1 SCHEDULE, 2 EVICT, 3 FAIL, 4 FINISH, 5 KILL, 6
  LOST, 7 UPDATE_PENDING, 8 UPDATE_RUNNING), user, scheduling class,
  priority, CPU request, memory request, disk space request, different
  machines restriction.
- ``task_constraints`` (optional): time, job ID, task index, comparison
  operator (0 equal, 1 not equal, 2 less than, 3 greater than), attribute
  name, attribute value.
- ``machine_attributes`` (optional): not converted; the canonical form
  keeps no machine attributes.

Times are microseconds in the trace's clock (its window opens at 600 s),
kept as seconds: 0 means "before the trace began" (kept as 0), 2^63-1
"after it ended" (dropped: it did not happen in the trace, counted in
``notes``). CPU and memory are normalized to the largest machine (``UNITS``).

Priorities live on tasks: a job's is its first task event's, its tier
(``tier``) by the bands of the trace's analyses (Reiss et al., SoCC 2012;
Tirmazi et al., EuroSys 2020): free 0-1, best-effort batch 2-8,
production 9-10, monitoring 11 (ClusterData2011_2.md names 9-11
production and a "monitoring" 12 the trace does not have; the papers'
bands are used). A job's submit time and user are its first SUBMIT job
event's (else its first event's); a job with no job events is submitted
with its first task, its user its tasks'; a job with no tasks has
priority -1 and the reader's default tier. A job's constraints are the
distinct "attribute op value" strings of its tasks' constraint rows (ops
``OPERATORS``). The different-machines restriction (a task may not share
a machine with another of its job) has no canonical form: the jobs that
ask it are counted in ``notes``.

Tasks are folded by ``task_events.fold`` (first submission, first and last
start, how the last attempt ended, attempts; the request the last one any
event carried; UPDATEs are non-terminal). Each part must be in time order
(ties keep file order); a part that is not, a garbled number, a short row,
a missing required value or an unknown code is refused naming the file,
the line and the column. The task event log is read into compact typed
columns and folded once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.schedulers.traces import form, task_events as te
from schedlab.schedulers.traces.builder import Builder
from schedlab.schedulers.traces.files import Ordered, integer, number, rows, shards
from schedlab.schedulers.traces.google2019 import EventLog, banded, code, microseconds, whole
from schedlab.schedulers.traces.readers import ReadOptions, Reader

RESOURCES = ("cpu", "mem")
UNITS = ("fraction of the largest machine's cpu cores", "fraction of the largest machine's memory")
TIERS = ("free", "best_effort_batch", "production", "monitoring")
SERVICE_TIERS = ("production", "monitoring")
DEFAULT_TIER = "best_effort_batch"
US = 1_000_000.0

MACHINE_EVENTS = ("time", "machine ID", "event type", "platform ID", "CPUs", "memory")
JOB_EVENTS = ("time", "missing info", "job ID", "event type", "user", "scheduling class", "job name", "logical job name")
TASK_EVENTS = ("time", "missing info", "job ID", "task index", "machine ID", "event type", "user", "scheduling class",
               "priority", "CPU request", "memory request", "disk space request", "different machines restriction")
TASK_CONSTRAINTS = ("time", "job ID", "task index", "comparison operator", "attribute name", "attribute value")

# Task event types -> canonical kinds.
KINDS = (te.SUBMIT, te.SCHEDULE, te.EVICT, te.FAIL, te.FINISH, te.KILL, te.LOST, te.UPDATE, te.UPDATE)
SUBMIT = 0
MACHINE_KINDS = (form.ADD, form.REMOVE, form.UPDATE)
OPERATORS = ("==", "!=", "<", ">")


# The 2011 priorities (0-11) by the trace paper's bands (Reiss et al.):
# (the highest priority of the band, its tier).
BANDS = ((1, "free"), (8, "best_effort_batch"), (10, "production"), (math.inf, "monitoring"))


def tier(priority: int) -> str:
    """The tier of a 2011 priority (``BANDS``)."""
    return banded(priority, BANDS)


def timed(paths: list[Path], columns: tuple[str, ...], skipped: list[int] | None = None
          ) -> Iterator[tuple[str, int, dict[str, Any], int]]:
    """(file, line, row, time in µs) of every row of a table's shards, each
    shard checked to be in time order (the 2011 trace's are); a row "after
    the trace ended" is skipped (and counted in ``skipped[0]``)."""
    for path in paths:
        name, order = str(path), Ordered(str(path), "time")
        for line, row in rows(path, columns, header=False):
            t = microseconds(row, name, line)
            if t is None:
                if skipped is not None:
                    skipped[0] += 1
                continue
            order.check(t, line)
            yield name, line, row, t


def read_machines(b: Builder, paths: list[Path]) -> None:
    for name, line, row, t in timed(paths, MACHINE_EVENTS):
        mid = integer(row, "machine ID", name, line)
        kind = MACHINE_KINDS[code(row, "event type", name, line, 2)]
        if kind == form.REMOVE:
            b.machine(t / US, mid, form.REMOVE)
        else:
            b.machine(t / US, mid, kind, (number(row, "CPUs", name, line, math.nan),
                                          number(row, "memory", name, line, math.nan)))


@dataclass
class JobInfo:
    submit: float
    submitted: bool
    user: str


def read_jobs(paths: list[Path]) -> dict[int, JobInfo]:
    jobs: dict[int, JobInfo] = {}
    for name, line, row, t in timed(paths, JOB_EVENTS):
        kind = code(row, "event type", name, line, 8)
        jid = integer(row, "job ID", name, line)
        had = jobs.get(jid)
        if had is not None and (had.submitted or kind != SUBMIT):
            if not had.user and row["user"]:
                had.user = row["user"]
            continue
        jobs[jid] = JobInfo(t / US if had is None else min(had.submit, t / US), kind == SUBMIT,
                            row["user"] or (had.user if had else ""))
    return jobs


def read_constraints(paths: list[Path]) -> dict[int, set[str]]:
    out: dict[int, set[str]] = {}
    for name, line, row, _t in timed(paths, TASK_CONSTRAINTS):
        jid = integer(row, "job ID", name, line)
        integer(row, "task index", name, line)
        op = OPERATORS[code(row, "comparison operator", name, line, 3)]
        attr = row["attribute name"]
        if not attr:
            raise form.TraceError.at(name, line, "attribute name", "missing value")
        out.setdefault(jid, set()).add(f"{attr} {op} {row['attribute value']}".rstrip())
    return out


@dataclass
class Tasks:
    rows: dict[str, np.ndarray]
    priority: dict[int, int]  # each job's first task event's
    user: dict[int, str]  # each job's first non-empty task user
    apart: set[int]  # jobs with a different-machines restriction


def read_tasks(paths: list[Path], notes: dict[str, object]) -> Tasks:
    log = EventLog()
    prio: dict[int, int] = {}
    user: dict[int, str] = {}
    apart: set[int] = set()
    after_end = [0]
    for name, line, row, t in timed(paths, TASK_EVENTS, after_end):
        jid = whole(row, "job ID", name, line)
        idx = whole(row, "task index", name, line)
        kind = code(row, "event type", name, line, 8)
        p = whole(row, "priority", name, line)
        if jid not in prio:
            prio[jid] = p
        if row["user"] and jid not in user:
            user[jid] = row["user"]
        if whole(row, "different machines restriction", name, line, 0):
            apart.add(jid)
        log.add(t / US, jid, idx, KINDS[kind], whole(row, "machine ID", name, line, -1),
                number(row, "CPU request", name, line, math.nan), number(row, "memory request", name, line, math.nan))
    notes["task_events"] = len(log)
    if after_end[0]:
        notes["task_events_after_the_end"] = after_end[0]
    return Tasks(log.fold(), prio, user, apart)


def add_jobs(b: Builder, jobs: dict[int, JobInfo], tasks: Tasks, cons: dict[int, set[str]]) -> None:
    """Every job to the builder: those job events name, then those only
    task events name (submitted with their first task)."""
    def add(jid: int, submit: float, user: str) -> None:
        p = tasks.priority.get(jid, -1)
        b.job(jid, submit, tier(p) if p >= 0 else DEFAULT_TIER, p, user, constraints=tuple(sorted(cons.get(jid, ()))))

    for jid, j in jobs.items():
        add(jid, j.submit, j.user or tasks.user.get(jid, ""))
    job, submit = tasks.rows["job"], tasks.rows["submit"]
    if job.size:
        firsts = np.flatnonzero(np.r_[True, job[1:] != job[:-1]])  # fold's rows are sorted by job
        orphans = [(jid, sub) for jid, sub in zip(job[firsts].tolist(), np.minimum.reduceat(submit, firsts).tolist())
                   if jid not in jobs]
        for jid, sub in orphans:
            add(jid, sub, tasks.user.get(jid, ""))
        if orphans:
            b.notes["jobs_without_job_events"] = len(orphans)


def read(src: Path, options: ReadOptions) -> Builder:
    """The trace at ``src`` (see the module's docstring), or TraceError."""
    if not src.is_dir():
        raise form.TraceError(f"{src}: not a folder (google2011 reads the trace's folder of tables)")
    machines, job_files, task_files = shards(src, "machine_events"), shards(src, "job_events"), shards(src, "task_events")
    cons_files, attributes = shards(src, "task_constraints", required=False), shards(src, "machine_attributes", required=False)
    b = Builder("google2011", RESOURCES, UNITS, (str(src),), recorded=True, service_tiers=SERVICE_TIERS)
    read_machines(b, machines)
    jobs = read_jobs(job_files)
    cons = read_constraints(cons_files)
    tasks = read_tasks(task_files, b.notes)
    b.tasks(tasks.rows)
    add_jobs(b, jobs, tasks, cons)
    if tasks.apart:
        b.notes["jobs_with_different_machines_restriction"] = (f"{len(tasks.apart)} (not converted: the canonical form "
                                                               "has no anti-affinity)")
    if attributes:
        b.notes["machine_attributes"] = "not converted: the canonical form keeps no machine attributes"
    return b


READER = Reader("google2011", read, default_tier=DEFAULT_TIER)
