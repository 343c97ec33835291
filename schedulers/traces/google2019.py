"""Google's 2019 cluster data (ClusterData2019: trace format v3, the
``clusterdata_trace_format_v3.proto`` schema) as a canonical trace.

``src`` is one cell's folder as users download it: BigQuery's export,
newline-delimited JSON (``<table>-000000000000.json[.gz]`` shards, 64-bit
integers written as strings, nested records as objects, nulls left out),
or CSV with a header (a query's export: BigQuery cannot write nested
fields to CSV, so a record's fields are flat columns, ``resource_request.cpus``
or ``resource_request_cpus``, and repeated fields are JSON text). Tables:

- ``machine_events``: time, machine_id, type (1 ADD, 2 REMOVE, 3 UPDATE;
  0, "unknown", is skipped and counted), capacity {cpus, memory}. An
  UPDATE that leaves a capacity out keeps the previous one.
- ``collection_events``: time, type, collection_id, collection_type (0 a
  job, 1 an alloc set), priority, user, parent_collection_id,
  start_after_collection_ids (dependencies), alloc_collection_id.
- ``instance_events``: time, type (0 SUBMIT, 1 QUEUE, 2 ENABLE, 3
  SCHEDULE, 4 EVICT, 5 FAIL, 6 FINISH, 7 KILL, 8 LOST, 9 UPDATE_PENDING,
  10 UPDATE_RUNNING), collection_id, instance_index, collection_type,
  machine_id, priority, resource_request {cpus, memory}, constraint
  [{name, value, relation}].
- ``machine_attributes`` (optional): not converted; the canonical form
  keeps no machine attributes (constraints are kept as strings).

Times are microseconds in the trace's clock, kept as seconds: 0 means
"before the trace began" (kept as 0: such tasks and machines are there at
the start), 2^63-1 "after it ended" (such an event did not happen in the
trace: dropped, counted in ``notes``). Amounts are Google's, normalized to
the largest machine (``UNITS``).

Each job's submit time, priority (its tier: ``tier``), user, parent and
dependencies come from its earliest SUBMIT collection event (else its
earliest event); a job only instance events name takes its tier from their
priority and its submit time from its first task's; a job with no
priority anywhere is kept with priority -1 and the reader's default tier.
A job's constraints are those its instances carry ("name op value", ops
``RELATIONS``; the first instance event that names any).

Approximations, in words in ``notes``:

- Alloc sets (collection_type 1) are reservations that jobs run inside:
  their instances are not replayed as tasks (the jobs' own tasks are, with
  their own requests, so a replay packs the work, not the reservation);
  alloc sets, their instance events and the jobs inside them are counted.
- QUEUE and ENABLE (the batch scheduler holding an instance back) and the
  two UPDATEs are non-terminal events: a task's life is folded by
  ``task_events.fold`` (first submission, first and last start, how its
  last attempt ended, attempts), its request the last one any event
  carried; a task evicted or failed and scheduled again is one task of
  several attempts.
- machine_id 0 (none) and -1 (a dedicated machine) are "no machine".

Rows may come in any order (BigQuery writes an export's shards in no
particular order): events are sorted by time, rows of the same microsecond
keeping their order in the files (a SUBMIT and a SCHEDULE in the same
microsecond: the fold relies on it). A garbled number, a missing column or value the schema requires,
or an unknown code is refused naming the file, the line and the column.
The instance event log is read into compact typed columns (no Python
object per row) and folded once, so memory grows with events, not text.
"""
from __future__ import annotations

import csv
import json
import math
from array import array
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.schedulers.traces import form, task_events as te
from schedlab.schedulers.traces.builder import Builder
from schedlab.schedulers.traces.files import integer, number, open_text, rows, shards
from schedlab.schedulers.traces.readers import ReadOptions, Reader

RESOURCES = ("cpu", "mem")
UNITS = ("fraction of the largest machine's cpu (Google's NCU)",
         "fraction of the largest machine's memory (normalized RAM bytes)")
TIERS = ("free", "best_effort_batch", "mid", "production", "monitoring")
SERVICE_TIERS = ("production", "monitoring")
DEFAULT_TIER = "best_effort_batch"
AFTER_END = 2**63 - 1  # "after the trace ended"
US = 1_000_000.0

# Instance event types -> canonical kinds (QUEUE, ENABLE, UPDATE_*: non-terminal).
KINDS = (te.SUBMIT, te.UPDATE, te.UPDATE, te.SCHEDULE, te.EVICT, te.FAIL, te.FINISH, te.KILL, te.LOST, te.UPDATE, te.UPDATE)
SUBMIT = 0
MACHINE_KINDS = {1: form.ADD, 2: form.REMOVE, 3: form.UPDATE}
RELATIONS = ("==", "!=", "<", ">", "<=", ">=", "present", "absent")  # MachineConstraint.Relation 0..7
_RELATION_NAMES = {n: i for i, n in enumerate(("EQUAL", "NOT_EQUAL", "LESS_THAN", "GREATER_THAN", "LESS_THAN_EQUAL",
                                                "GREATER_THAN_EQUAL", "PRESENT", "NOT_PRESENT"))}
JOB, ALLOC_SET = 0, 1

MACHINE_COLUMNS = ("time", "machine_id", "type")
MACHINE_OPTIONAL = ("capacity.cpus", "capacity.memory")
COLLECTION_COLUMNS = ("time", "type", "collection_id")
COLLECTION_OPTIONAL = ("collection_type", "priority", "user", "parent_collection_id", "start_after_collection_ids",
                       "alloc_collection_id")
INSTANCE_COLUMNS = ("time", "type", "collection_id", "instance_index")
INSTANCE_OPTIONAL = ("collection_type", "machine_id", "priority", "resource_request.cpus", "resource_request.memory",
                     "constraint")
NESTED = {"capacity": ("cpus", "memory"), "resource_request": ("cpus", "memory")}


# The tiers by the ranges of the trace's paper (Tirmazi et al., EuroSys
# 2020): free <= 99, best-effort batch 110-115 (100-109, which it leaves
# unnamed, counted with it), mid 116-119, production 120-359, monitoring
# >= 360: (the highest priority of the band, its tier).
BANDS = ((99, "free"), (115, "best_effort_batch"), (119, "mid"), (359, "production"), (math.inf, "monitoring"))


def banded(priority: int, bands: tuple[tuple[float, str], ...]) -> str:
    """The tier of the first band whose top is at or above ``priority``."""
    return next(name for top, name in bands if priority <= top)


def tier(priority: int) -> str:
    """The tier of a 2019 priority (``BANDS``)."""
    return banded(priority, BANDS)


# --- reading rows -------------------------------------------------------


def table_rows(path: Path, required: tuple[str, ...], optional: tuple[str, ...]) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line, row) of one shard with every column named by its dotted
    name (``resource_request.cpus``): a JSON line's nested records are
    flattened, a CSV's columns found by either spelling (``_`` for ``.``);
    ``required`` columns must be in a CSV's header (a TraceError naming
    line 1 and the column), ``optional`` ones may be absent (missing values)."""
    if ".json" in path.name:
        for line, row in rows(path, required, header=True):
            for rec, keys in NESTED.items():
                got = row.get(rec)
                if got is None:
                    continue
                if not isinstance(got, dict):
                    raise form.TraceError.at(str(path), line, rec, f"not an object: {str(got)[:40]!r}")
                for k in keys:
                    row[f"{rec}.{k}"] = got.get(k)
            yield line, row
        return
    head = _csv_header(path)
    spelled = {c: c if c in head or c.replace(".", "_") not in head else c.replace(".", "_") for c in required + optional}
    present = list(required) + [c for c in optional if spelled[c] in head]
    rename = {spelled[c]: c for c in present if spelled[c] != c}
    for line, row in rows(path, [spelled[c] for c in present], header=True):
        for theirs, ours in rename.items():
            row[ours] = row.pop(theirs)
        yield line, row


def _csv_header(path: Path) -> set[str]:
    with open_text(path) as fh:
        head = next(csv.reader(fh), None)
    return {h.strip() for h in head} if head else set()


def whole(row: dict[str, Any], column: str, source: str, line: int, missing: int | None = None) -> int:
    """``files.integer``, the common case (an int, or a decimal string as
    JSON exports and CSV give them) first: the event logs' hot path."""
    v = row.get(column)
    if type(v) is str and v:
        try:
            return int(v)
        except ValueError:
            pass
    elif type(v) is int:
        return v
    return integer(row, column, source, line, missing)


def real(row: dict[str, Any], column: str, source: str, line: int, missing: float | None = None) -> float:
    """``files.number``, the common case (a JSON number) first."""
    v = row.get(column)
    if type(v) is float:
        return v if math.isfinite(v) else number(row, column, source, line, missing)
    return number(row, column, source, line, missing)


def microseconds(row: dict[str, Any], source: str, line: int) -> int | None:
    """The row's time (µs), or None when it is "after the trace ended"."""
    t = whole(row, "time", source, line)
    if t == AFTER_END:
        return None
    if t < 0:
        raise form.TraceError.at(source, line, "time", f"negative time: {t}")
    return t


def code(row: dict[str, Any], column: str, source: str, line: int, top: int) -> int:
    """An enum column's value, refused unless in 0..top."""
    v = whole(row, column, source, line)
    if not 0 <= v <= top:
        raise form.TraceError.at(source, line, column, f"unknown code {v} (0..{top})")
    return v


def json_list(v: Any, source: str, line: int, column: str) -> list[Any]:
    """A repeated field: a JSON array (a CSV's JSON text), a bare value, or nothing."""
    if v is None or v == "":
        return []
    if isinstance(v, str):
        try:
            v = json.loads(v)
        except json.JSONDecodeError:
            raise form.TraceError.at(source, line, column, f"not a JSON list: {v[:40]!r}") from None
    return v if isinstance(v, list) else [v]


# --- the instance event log -----------------------------------------------


class EventLog:
    """A task event log as typed columns: rows appended into compact arrays
    (no Python object per row) and moved into NumPy chunks every ``chunk``
    rows, folded once at the end."""

    def __init__(self, chunk: int = 1 << 20) -> None:
        self.chunk = chunk
        self.parts: list[tuple[np.ndarray, ...]] = []
        self._fresh()

    def _fresh(self) -> None:
        self.time, self.job, self.index = array("d"), array("q"), array("i")
        self.kind, self.machine, self.cpu, self.mem = array("b"), array("q"), array("f"), array("f")

    def add(self, time: float, job: int, index: int, kind: int, machine: int, cpu: float, mem: float) -> None:
        self.time.append(time)
        self.job.append(job)
        self.index.append(index)
        self.kind.append(kind)
        self.machine.append(machine)
        self.cpu.append(cpu)
        self.mem.append(mem)
        if len(self.time) >= self.chunk:
            self._flush()

    def _flush(self) -> None:
        if len(self.time):
            self.parts.append(tuple(np.array(a) for a in (self.time, self.job, self.index, self.kind, self.machine,
                                                          self.cpu, self.mem)))
        self._fresh()

    def __len__(self) -> int:
        return sum(p[0].size for p in self.parts) + len(self.time)

    def fold(self) -> dict[str, np.ndarray]:
        """One row per task (``task_events.fold``), the log released."""
        self._flush()
        dtypes = (np.float64, np.int64, np.int32, np.int8, np.int64, np.float32, np.float32)
        cols = [np.concatenate([p[i] for p in self.parts]) if self.parts else np.zeros(0, dt) for i, dt in enumerate(dtypes)]
        self.parts = []
        time, job, index, kind, machine, cpu, mem = cols
        return te.fold(time, job, index, kind, machine, np.column_stack([cpu, mem]))


# --- the tables -------------------------------------------------------------


@dataclass
class JobInfo:
    """What a job's collection events say of it (the earliest SUBMIT's, else the earliest event's)."""

    submit: float
    submitted: bool
    priority: int | None
    user: str
    parent: int
    after: tuple[int, ...]
    in_alloc: bool = False


@dataclass
class Collections:
    jobs: dict[int, JobInfo] = field(default_factory=dict)
    alloc_sets: set[int] = field(default_factory=set)


def timed(paths: list[Path], columns: tuple[str, ...], optional: tuple[str, ...], skipped: list[int] | None = None
          ) -> Iterator[tuple[str, int, dict[str, Any], int]]:
    """(file, line, row, time in µs) of every row of a table's shards, in
    file order; a row "after the trace ended" is skipped (and counted in
    ``skipped[0]``)."""
    for path in paths:
        name = str(path)
        for line, row in table_rows(path, columns, optional):
            t = microseconds(row, name, line)
            if t is None:
                if skipped is not None:
                    skipped[0] += 1
                continue
            yield name, line, row, t


def read_machines(b: Builder, paths: list[Path]) -> None:
    unknown = 0
    for name, line, row, t in timed(paths, MACHINE_COLUMNS, MACHINE_OPTIONAL):
        mid = integer(row, "machine_id", name, line)
        kind = code(row, "type", name, line, 3)
        if kind == 0:
            unknown += 1
            continue
        if MACHINE_KINDS[kind] == form.REMOVE:
            b.machine(t / US, mid, form.REMOVE)
        else:
            cap = (number(row, "capacity.cpus", name, line, math.nan), number(row, "capacity.memory", name, line, math.nan))
            b.machine(t / US, mid, MACHINE_KINDS[kind], cap)
    if unknown:
        b.notes["machine_events_of_unknown_type"] = unknown


def read_collections(paths: list[Path], notes: dict[str, object]) -> Collections:
    out = Collections()
    for name, line, row, t in timed(paths, COLLECTION_COLUMNS, COLLECTION_OPTIONAL):
        kind = code(row, "type", name, line, 10)
        cid = integer(row, "collection_id", name, line)
        ctype = integer(row, "collection_type", name, line, JOB)
        if ctype == ALLOC_SET:
            out.alloc_sets.add(cid)
            continue
        if ctype != JOB:
            raise form.TraceError.at(name, line, "collection_type", f"unknown code {ctype} (0 job, 1 alloc set)")
        # Its earliest SUBMIT says who it is (else its earliest event); its
        # submit time is its earliest event's, whatever the rows' order.
        had = out.jobs.get(cid)
        at, submitted = t / US, kind == SUBMIT
        if had is None or (submitted, -at) > (had.submitted, -had.submit):
            out.jobs[cid] = _job_info(row, name, line, at if had is None else min(had.submit, at), submitted)
        elif at < had.submit:
            had.submit = at
    jobs = out.jobs
    notes["alloc_sets"] = len(out.alloc_sets)
    notes["jobs_in_alloc_sets"] = sum(j.in_alloc for j in jobs.values())
    return out


def _job_info(row: dict[str, Any], name: str, line: int, submit: float, submitted: bool) -> JobInfo:
    prio = row.get("priority")
    after = json_list(row.get("start_after_collection_ids"), name, line, "start_after_collection_ids")
    return JobInfo(
        submit=submit, submitted=submitted,
        priority=None if prio is None or prio == "" else integer(row, "priority", name, line),
        user=str(row.get("user") or ""),
        parent=integer(row, "parent_collection_id", name, line, 0) or -1,
        after=tuple(integer({"start_after_collection_ids": a}, "start_after_collection_ids", name, line) for a in after),
        in_alloc=integer(row, "alloc_collection_id", name, line, 0) != 0)


def constraint_strings(raw: Any, source: str, line: int) -> tuple[str, ...]:
    """An instance's constraints as "name op value" strings (sorted, distinct)."""
    out = set()
    for c in json_list(raw, source, line, "constraint"):
        if not isinstance(c, dict) or not c.get("name"):
            raise form.TraceError.at(source, line, "constraint", f"not a {{name, value, relation}} record: {str(c)[:40]!r}")
        rel = c.get("relation", 0)
        rel = _RELATION_NAMES.get(rel, rel) if isinstance(rel, str) else rel
        r = integer({"constraint": rel}, "constraint", source, line)
        if not 0 <= r < len(RELATIONS):
            raise form.TraceError.at(source, line, "constraint", f"unknown relation {r} (0..{len(RELATIONS) - 1})")
        value = "" if r >= 6 or c.get("value") is None else str(c["value"])
        out.add(f"{c['name']} {RELATIONS[r]} {value}".rstrip())
    return tuple(sorted(out))


@dataclass
class Instances:
    """What the instance events say beyond the folded task rows."""

    tasks: dict[str, np.ndarray]
    priority: dict[int, int]  # each job's first instance priority
    constraints: dict[int, tuple[str, ...]]


def read_instances(paths: list[Path], coll: Collections, notes: dict[str, object]) -> Instances:
    log = EventLog()
    first_prio: dict[int, tuple[float, int]] = {}  # job -> (time, priority) of its earliest instance event
    cons: dict[int, tuple[float, tuple[str, ...]]] = {}  # job -> the earliest constraints any instance named
    alloc_events = after_end = 0
    for path in paths:
        name = str(path)
        for line, row in table_rows(path, INSTANCE_COLUMNS, INSTANCE_OPTIONAL):
            t = microseconds(row, name, line)
            if t is None:
                after_end += 1
                continue
            kind = code(row, "type", name, line, 10)
            cid = whole(row, "collection_id", name, line)
            idx = whole(row, "instance_index", name, line)
            ctype = whole(row, "collection_type", name, line, -1)
            if ctype == ALLOC_SET or (ctype == -1 and cid in coll.alloc_sets):
                alloc_events += 1
                continue
            machine = whole(row, "machine_id", name, line, 0)
            if cid not in first_prio or t < first_prio[cid][0]:
                first_prio[cid] = (t, whole(row, "priority", name, line, -1))
            raw = row.get("constraint")
            if raw and raw != "[]" and (cid not in cons or t < cons[cid][0]):
                cons[cid] = (t, constraint_strings(raw, name, line))
            log.add(t / US, cid, idx, KINDS[kind], machine if machine > 0 else -1,
                    real(row, "resource_request.cpus", name, line, math.nan),
                    real(row, "resource_request.memory", name, line, math.nan))
    notes["alloc_instance_events"] = alloc_events
    notes["task_events"] = len(log)
    if after_end:
        notes["task_events_after_the_end"] = after_end
    return Instances(log.fold(), {j: p for j, (_t, p) in first_prio.items()}, {j: c for j, (_t, c) in cons.items()})


def add_jobs(b: Builder, coll: Collections, inst: Instances) -> None:
    """Every job to the builder: those collection events name, then those
    only instance events name (submitted with their first task)."""
    for jid, j in coll.jobs.items():
        prio = j.priority if j.priority is not None else inst.priority.get(jid, -1)
        b.job(jid, j.submit, tier(prio) if prio >= 0 else DEFAULT_TIER, prio, j.user, j.parent, j.after,
              inst.constraints.get(jid, ()))
    job, submit = inst.tasks["job"], inst.tasks["submit"]
    if job.size == 0:
        return
    firsts = np.flatnonzero(np.r_[True, job[1:] != job[:-1]])  # fold's rows are sorted by job
    earliest = np.minimum.reduceat(submit, firsts)
    orphans = 0
    for jid, sub in zip(job[firsts].tolist(), earliest.tolist()):
        if jid in coll.jobs:
            continue
        orphans += 1
        prio = inst.priority.get(jid, -1)
        b.job(jid, sub, tier(prio) if prio >= 0 else DEFAULT_TIER, prio, "", -1, (), inst.constraints.get(jid, ()))
    if orphans:
        b.notes["jobs_without_collection_events"] = orphans


def read(src: Path, options: ReadOptions) -> Builder:
    """The cell at ``src`` (see the module's docstring), or TraceError."""
    if not src.is_dir():
        raise form.TraceError(f"{src}: not a folder (google2019 reads a cell's folder of tables)")
    machines, collections = shards(src, "machine_events"), shards(src, "collection_events")
    instances, attributes = shards(src, "instance_events"), shards(src, "machine_attributes", required=False)
    b = Builder("google2019", RESOURCES, UNITS, (str(src),), recorded=True, service_tiers=SERVICE_TIERS)
    read_machines(b, machines)
    coll = read_collections(collections, b.notes)
    inst = read_instances(instances, coll, b.notes)
    b.tasks(inst.tasks)
    add_jobs(b, coll, inst)
    if attributes:
        b.notes["machine_attributes"] = "not converted: the canonical form keeps no machine attributes"
    b.notes["alloc_sets_approximated"] = ("alloc-set instances (reservations) are not replayed; the jobs inside "
                                          "alloc sets are, with their own tasks' requests")
    return b


READER = Reader("google2019", read, default_tier=DEFAULT_TIER)
