"""Alibaba's cluster-trace-v2018 as a canonical trace: about 4000 machines
over 8 days, batch jobs (DAGs of tasks, each task many instances) and
online services (containers) co-located on the same machines.

What ``src`` holds: the folder the published archives were extracted into,
with the headerless CSVs ``machine_meta``, ``batch_task``,
``batch_instance`` and ``container_meta`` (each plain ``.csv`` or
``.csv.gz``, or a folder of such parts; the ``.tar.gz`` archives
themselves are not read: extract them). ``machine_meta`` is required, the
batch pair and ``container_meta`` each optional (at least one of them).
The usage tables are not read. Columns are by position, as the trace's
schema.txt orders them (``MACHINE_META``, ``BATCH_TASK``, ...).

Units: cpu in cores (``plan_cpu`` and ``cpu_request`` / 100, ``cpu_num``
as is); memory in the trace's normalized units, 100 = the largest
machine's memory (``mem_size``, ``plan_mem`` as they are). A request the
trace leaves empty is 0 (counted in the notes): replays need a number.

Times are the trace's seconds. The trace writes 0 for a time "before or
after the 8-day span", so 0 is read as the window's start where the row
says something began (a machine present, a container or an instance
running before the trace) and as unknown where it would be an end.

Machines: each ``machine_meta`` row is the machine's state from its time
on, in service (``USING``) or out of it; the trace's docs name no other
status, so the out-of-service words accepted are those of the 2017 trace's
machine events (``softerror``, ``harderror``, ``remove``) and
``offline``; anything else is refused, naming it (``MACHINE_IN``,
``MACHINE_OUT``).

Batch: every batch *task* is one canonical job (tier ``batch``, its user
the Alibaba job), its instances its tasks. Its DAG is in its name
(``dag``): ``M5_3_4`` is node 5 of its Alibaba job, after nodes 3 and 4,
so the canonical job runs after the canonical jobs of those nodes; names
of another shape (``task_Nzg3...``) are independent tasks. The trace
records no submissions: a task's job is submitted at the task's
``start_time`` (when its dependencies let it start); a task without one
at 0 if its status says it began (before the trace), else (still
waiting) at its Alibaba job's earliest task start. Each
``batch_instance`` row is one attempt of an instance (``seq_no``); an
instance's attempts fold into one task row (first and last start, where it
first ran, how and when its last attempt ended: ``INSTANCE_STATUS``). An
attempt whose status says it ended but whose ``end_time`` is 0 ends at its
task's ``end_time`` (else it ran for no time), counted in the notes. The
trace records no priorities: every job's is 0 (tiers tell batch from
online).

Online: every ``app_du`` (deploy unit) is one canonical job of tier
``online`` (a service tier), each of its containers a task, started at its
first row, on that row's machine, running until a row stops it (killed)
or past the trace's end; a later row with other requests updates them
(the last kept). ``cpu_limit`` is not used. The docs list no container
statuses: ``CONTAINER_RUNNING`` (``started``, ``allocated``: placed) and
``CONTAINER_STOPPED`` are accepted, anything else refused. Status words
of every table are matched ignoring case.

Ids: the trace's string ids map to integers deterministically: ``m_12``,
``c_12``, ``ins_12`` -> 12; a batch task's job -> ``batch_job_source``
(job number << 20 | DAG node), a deploy unit -> ``online_job_source``;
names of another shape -> a 62-bit hash in a range of its own.

Order: the trace's docs do not say any of these files is sorted by time
(batch files are not), so none is refused for order; rows are sorted once
read. Garbled numbers, rows with too few fields and unknown statuses are
TraceErrors naming the file, the line and the column.
"""
from __future__ import annotations

import csv
import gc
import hashlib
import math
import re
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from schedlab.schedulers.traces import files, form, task_events as te
from schedlab.schedulers.traces.builder import Builder
from schedlab.schedulers.traces.form import TraceError
from schedlab.schedulers.traces.readers import Reader, ReadOptions

# The columns of each table, in the order of the trace's schema.txt.
MACHINE_META = ("machine_id", "time_stamp", "failure_domain_1", "failure_domain_2", "cpu_num", "mem_size", "status")
BATCH_TASK = ("task_name", "instance_num", "job_name", "task_type", "status", "start_time", "end_time", "plan_cpu", "plan_mem")
BATCH_INSTANCE = ("instance_name", "task_name", "job_name", "task_type", "status", "start_time", "end_time", "machine_id",
                  "seq_no", "total_seq_no", "cpu_avg", "cpu_max", "mem_avg", "mem_max")
CONTAINER_META = ("container_id", "machine_id", "time_stamp", "app_du", "status", "cpu_request", "cpu_limit", "mem_size")

RESOURCES = ("cpu", "mem")
UNITS = ("cores (plan_cpu and cpu_request / 100; cpu_num)",
         "normalized memory: 100 = the largest machine's memory (mem_size, plan_mem)")

# Machine statuses (lower case): in service, or out of it.
MACHINE_IN = frozenset({"using"})
MACHINE_OUT = frozenset({"offline", "remove", "removed", "softerror", "harderror"})

# Batch statuses (the 2017 trace's state machine; 2018 uses the same words). A task's: did it begin.
TASK_STATUS = {"terminated": True, "failed": True, "running": True, "interrupted": True,
               "waiting": False, "ready": False, "cancelled": False}
# An instance attempt's status -> (did it start, even with start_time 0; did it start at all with a
# start_time; the event that ended it, or -1: still running or never started).
INSTANCE_STATUS: dict[str, tuple[bool, bool, int]] = {
    "terminated": (True, True, te.FINISH),
    "failed": (True, True, te.FAIL),
    "running": (True, True, -1),
    "cancelled": (False, True, te.KILL),  # a backup or a task given up
    "interrupted": (False, True, te.KILL),  # a backup instance stopped (its twin finished)
    "waiting": (False, False, -1),
    "ready": (False, False, -1),
}
_STATUS_NAMES = tuple(INSTANCE_STATUS)
_STARTS_AT_ZERO = np.array([v[0] for v in INSTANCE_STATUS.values()])
_STARTS = np.array([v[1] for v in INSTANCE_STATUS.values()])
_ENDS_BY = np.array([v[2] for v in INSTANCE_STATUS.values()], dtype=np.int8)

# Container statuses (lower case): placed and running, or stopped.
CONTAINER_RUNNING = frozenset({"started", "allocated", "running"})
CONTAINER_STOPPED = frozenset({"stopped", "removed", "deleted", "killed"})

_CHUNK = 100_000
_NODE_BITS = 20  # a DAG node number below 2**20 shares the job's number
_ONLINE = 1 << 60  # online jobs: 2**60 + the deploy unit's number
_HASHED = 1 << 62  # ids of any other shape: 2**62 + a hash
_DAG = re.compile(r"[A-Za-z]+\d+(?:_\d+)*", re.ASCII)


# -- ids ---------------------------------------------------------------------------------------------

def _hashed(kind: str, text: str) -> int:
    digest = hashlib.blake2b(f"{kind}\0{text}".encode(), digest_size=8).digest()
    return _HASHED | (int.from_bytes(digest, "big") & (_HASHED - 1))


def _numbered(text: str, prefix: str) -> int | None:
    """``prefix`` + decimal digits -> the number (below 2**59), else None."""
    rest = text[len(prefix):] if text.startswith(prefix) else ""
    if rest.isascii() and rest.isdigit() and len(rest) <= 17:
        return int(rest)
    return None


def entity_id(text: str, prefix: str) -> int:
    """A machine's, a container's or an instance's integer id: ``m_12`` -> 12
    (``prefix`` "m_"), another shape -> a hash at or above 2**62."""
    n = _numbered(text, prefix)
    return _hashed(prefix, text) if n is None else n


@lru_cache(maxsize=1 << 16)
def dag(task_name: str) -> tuple[int, tuple[int, ...]] | None:
    """(node, the nodes it runs after) of a DAG task's name: ``M5_3_4`` ->
    (5, (3, 4)), ``R2_1`` -> (2, (1,)), ``M1`` -> (1, ()); None for an
    independent task (``task_Nzg3...``, or any other shape). Only the
    numbers matter (the letters name the kind of step); a node listed
    twice, or after itself, counts once, or not."""
    if not _DAG.fullmatch(task_name):
        return None
    node, *after = (int(x) for x in task_name.lstrip("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz").split("_"))
    return node, tuple(dict.fromkeys(a for a in after if a != node))


def _node_source(job_name: str, node: int) -> int:
    n = _numbered(job_name, "j_")
    if n is not None and n < (1 << (60 - _NODE_BITS)) and 0 <= node < (1 << _NODE_BITS):
        return (n << _NODE_BITS) | node
    return _hashed("batch-node", f"{job_name}\0{node}")


@lru_cache(maxsize=1 << 16)
def batch_job_source(job_name: str, task_name: str) -> int:
    """The canonical job id of batch task ``task_name`` of Alibaba job
    ``job_name``: ``j_3``'s node 5 -> 3 << 20 | 5; an independent task (or
    an id of another shape) -> a hash at or above 2**62."""
    node = dag(task_name)
    if node is None:
        return _hashed("batch-task", f"{job_name}\0{task_name}")
    return _node_source(job_name, node[0])


@lru_cache(maxsize=1 << 12)
def online_job_source(app_du: str) -> int:
    """The canonical job id of deploy unit ``app_du``: ``app_7`` -> 2**60 + 7."""
    n = _numbered(app_du, "app_")
    return _hashed("online", app_du) if n is None else _ONLINE + n


# -- reading columns in chunks -------------------------------------------------------------------------

@dataclass
class _Chunk:
    """Up to ``_CHUNK`` rows of one file as text columns, with their lines."""

    source: str
    lines: list[int]
    text: dict[str, tuple[str, ...]]

    def __len__(self) -> int:
        return len(self.lines)

    def floats(self, column: str, missing: float | None = None) -> np.ndarray:
        """The column as float64; empty: ``missing`` (None: a TraceError)."""
        values = self.text[column]
        try:
            out = np.array(values, dtype=np.float64)
        except ValueError:
            out = np.array([files.number({column: v.strip()}, column, self.source, n, missing)
                            for v, n in zip(values, self.lines)], dtype=np.float64)
        bad = ~np.isfinite(out) if missing is None else np.isinf(out)
        if bad.any():
            k = int(np.argmax(bad))
            problem = "missing value" if np.isnan(out[k]) else f"not a finite number: {values[k].strip()!r}"
            raise TraceError.at(self.source, self.lines[k], column, problem)
        return out if missing is None or math.isnan(missing) else np.where(np.isnan(out), missing, out)

    def strings(self, column: str, required: bool = True) -> tuple[str, ...]:
        values = self.text[column]
        if required and "" in values:
            raise TraceError.at(self.source, self.lines[values.index("")], column, "missing value")
        return values

    def ids(self, column: str, prefix: str, required: bool = True) -> np.ndarray:
        """The column's ids as integers (``entity_id``; empty: -1)."""
        values = self.strings(column, required)
        cut = len(prefix)
        parts = [v[cut:] for v in values]
        if all(v.startswith(prefix) for v in values) and all(p.isascii() and p.isdigit() and len(p) <= 17 for p in parts):
            return np.array(parts, dtype=np.int64)
        return _mapped(values, lambda v: entity_id(v, prefix) if v else -1)

    def codes(self, column: str, known: dict[str, int], what: str) -> np.ndarray:
        """Each row's status as its code in ``known`` (lower case), or a TraceError naming it."""
        values = self.text[column]
        table = {v: known.get(v.strip().lower(), -1) for v in set(values)}
        unknown = [v for v, code in table.items() if code < 0]
        if unknown:
            k = min(values.index(v) for v in unknown)
            v = values[k].strip()
            problem = f"unknown {what} {v!r} (known: {', '.join(sorted(known))})" if v else "missing value"
            raise TraceError.at(self.source, self.lines[k], column, problem)
        return np.fromiter(map(table.__getitem__, values), np.int8, len(values))


def _mapped(values: Iterable[Hashable], fn: Callable[..., int]) -> np.ndarray:
    """``fn`` of each value (a tuple: of its items), computed once per distinct value."""
    values = list(values)
    table = {v: fn(*v) if isinstance(v, tuple) else fn(v) for v in set(values)}
    return np.fromiter(map(table.__getitem__, values), np.int64, len(values))


def _chunks(path: Path, columns: tuple[str, ...]) -> Iterator[_Chunk]:
    """``path``'s rows in chunks, by position (a headerless CSV, plain or
    gzip); a row with too few fields is a TraceError naming its first
    missing column. (``files.rows`` reads the same, a dict per row: too
    slow for a billion instance rows.)"""
    name, need = str(path), len(columns)
    lines: list[int] = []
    rows: list[list[str]] = []
    try:
        with files.open_text(path) as fh:
            for n, fields in enumerate(csv.reader(fh), start=1):
                if not fields:
                    continue
                if len(fields) < need:
                    raise TraceError.at(name, n, columns[len(fields)], f"missing: the row has {len(fields)} fields, {need} expected")
                lines.append(n)
                rows.append(fields)
                if len(rows) >= _CHUNK:
                    yield _Chunk(name, lines, dict(zip(columns, zip(*rows))))
                    lines, rows = [], []
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as e:
        raise TraceError(f"{name}: unreadable: {e}") from None
    if rows:
        yield _Chunk(name, lines, dict(zip(columns, zip(*rows))))


def _tables(src: Path, table: str, required: bool) -> list[Path]:
    found = files.shards(src, table, required=False)
    if not found and (src / f"{table}.tar.gz").exists():
        raise TraceError(f"{src / (table + '.tar.gz')}: extract it first (tar xzf): the reader reads {table}.csv or {table}.csv.gz")
    if required and not found:
        raise TraceError(f"{src}: no {table}.csv or {table}.csv.gz (the cluster-trace-v2018 table)")
    return found


# -- the tables ----------------------------------------------------------------------------------------

@dataclass
class _Notes:
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, key: str, n: int) -> None:
        if n:
            self.counts[key] = self.counts.get(key, 0) + int(n)


def _machines(paths: list[Path], b: Builder, notes: _Notes) -> None:
    status = {s: 0 for s in MACHINE_IN} | {s: 1 for s in MACHINE_OUT}
    for path in paths:
        for c in _chunks(path, MACHINE_META):
            ids = c.ids("machine_id", "m_").tolist()
            time = c.floats("time_stamp")
            out = c.codes("status", status, "machine status")
            cpu = c.floats("cpu_num", missing=math.nan)
            mem = c.floats("mem_size", missing=math.nan)
            invalid = (out == 0) & ~((cpu >= 0) & (mem >= 0))
            notes.add("machine_capacities_missing_or_invalid", int(invalid.sum()))
            cpu, mem = np.where(cpu >= 0, cpu, np.nan), np.where(mem >= 0, mem, np.nan)
            for k, m in enumerate(ids):
                if out[k]:
                    b.machine(float(time[k]), m, form.REMOVE)
                else:
                    b.machine(float(time[k]), m, form.ADD, (float(cpu[k]), float(mem[k])))


@dataclass
class _Tasks:
    """The batch tasks read, sorted by canonical job id."""

    source: np.ndarray
    submit: np.ndarray
    end: np.ndarray
    request: np.ndarray  # [n, 2] float32

    def find(self, source: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(row of each id, whether it is known)."""
        if self.source.size == 0:
            return np.zeros(source.size, np.int64), np.zeros(source.size, bool)
        at = np.minimum(np.searchsorted(self.source, source), self.source.size - 1)
        return at, self.source[at] == source


def _batch_tasks(paths: list[Path], b: Builder, notes: _Notes) -> _Tasks:
    status = {s: int(begun) for s, begun in TASK_STATUS.items()}
    parts: list[tuple[np.ndarray, ...]] = []
    waiting: list[tuple[int, str, tuple[int, ...]]] = []  # tasks the trace gives no start
    first: dict[str, float] = {}  # Alibaba job -> its earliest task start
    for path in paths:
        for c in _chunks(path, BATCH_TASK):
            tasks, jobs = c.strings("task_name"), c.strings("job_name")
            begun = c.codes("status", status, "task status").astype(bool)
            start = c.floats("start_time", missing=0.0)
            end = c.floats("end_time", missing=0.0)
            cpu = c.floats("plan_cpu", missing=math.nan) / 100.0
            mem = c.floats("plan_mem", missing=math.nan)
            notes.add("requests_missing", int(np.isnan(cpu).sum() + np.isnan(mem).sum()))
            source = _mapped(zip(jobs, tasks), batch_job_source)
            for k, (job, task) in enumerate(zip(jobs, tasks)):
                node = dag(task)
                after = tuple(_node_source(job, a) for a in node[1]) if node else ()
                s = float(start[k])
                if s != 0.0 or begun[k]:  # 0 and begun: before the trace
                    b.job(int(source[k]), s, "batch", 0, job, -1, after)
                    first[job] = min(s, first.get(job, s))
                else:
                    waiting.append((int(source[k]), job, after))
            parts.append((source, start, end, np.nan_to_num(np.column_stack([cpu, mem])).astype(np.float32)))
    for source_id, job, after in waiting:
        b.job(source_id, first.get(job, 0.0), "batch", 0, job, -1, after)
    notes.add("batch_tasks_without_start", len(waiting))
    return _sorted_tasks(parts, first, waiting, notes)


def _sorted_tasks(parts: list[tuple[np.ndarray, ...]], first: dict[str, float],
                  waiting: list[tuple[int, str, tuple[int, ...]]], notes: _Notes) -> _Tasks:
    if not parts:
        return _Tasks(np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros((0, 2), np.float32))
    source, start, end, request = (np.concatenate(p) for p in zip(*parts))
    submit = start.copy()
    if waiting:
        fallback = {s: first.get(job, 0.0) for s, job, _ in waiting}
        zero = np.flatnonzero(start == 0.0)
        submit[zero] = [fallback.get(int(s), 0.0) for s in source[zero].tolist()]  # 0 where it began
    order = np.argsort(source, kind="stable")
    source = source[order]
    notes.add("batch_tasks_named_twice", int(source.size - np.unique(source).size))
    return _Tasks(source, submit[order], end[order], request[order])


@dataclass
class _Events:
    """Event columns for ``task_events.fold``, gathered over chunks."""

    parts: list[tuple[np.ndarray, ...]] = field(default_factory=list)

    def add(self, *cols: np.ndarray) -> None:
        self.parts.append(cols)

    def fold(self) -> dict[str, np.ndarray] | None:
        """Task rows: (job, key) pairs -> dense indices within each job, events
        ordered by time, then attempt, then start before end."""
        if not self.parts:
            return None
        parts, self.parts = self.parts, []
        cols = [np.concatenate(p) for p in zip(*parts)]  # job, key, time, seq, kind, machine, request
        del parts
        index = _dense_index(cols[0], cols[1])
        kind = cols[4]
        within = (kind != te.SCHEDULE) & (kind != te.SUBMIT) & (kind != te.UPDATE)
        order = np.lexsort((within, cols[3], cols[2], index, cols[0]))
        del within
        job, time, index, kind, machine, request = (a[order] for a in (cols[0], cols[2], index, kind, cols[5], cols[6]))
        del cols
        return te.fold(time, job, index, kind, machine, request)


def _dense_index(job: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Each row's rank of ``key`` among the distinct keys of its ``job``."""
    if job.size == 0:
        return np.zeros(0, np.int32)
    order = np.lexsort((key, job))
    j, k = job[order], key[order]
    new_pair = np.ones(j.size, bool)
    new_pair[1:] = (j[1:] != j[:-1]) | (k[1:] != k[:-1])
    new_job = np.ones(j.size, bool)
    new_job[1:] = j[1:] != j[:-1]
    pair = np.cumsum(new_pair) - 1
    first = np.maximum.accumulate(np.where(new_job, pair, 0))
    out = np.empty(job.size, np.int32)
    out[order] = pair - first
    return out


def _batch_instances(paths: list[Path], tasks: _Tasks, b: Builder, notes: _Notes) -> None:
    status = {s: k for k, s in enumerate(_STATUS_NAMES)}
    events = _Events()
    for path in paths:
        for c in _chunks(path, BATCH_INSTANCE[:9]):
            _instance_chunk(c, status, tasks, events, notes)
    cols = events.fold()
    if cols is None:
        return
    at, _ = tasks.find(cols["job"])
    cols["submit"] = np.minimum(cols["submit"], tasks.submit[at])
    b.tasks(cols)


def _instance_chunk(c: _Chunk, status: dict[str, int], tasks: _Tasks, events: _Events, notes: _Notes) -> None:
    source = _mapped(zip(c.strings("job_name"), c.strings("task_name")), batch_job_source)
    key = c.ids("instance_name", "ins_")
    code = c.codes("status", status, "instance status")
    start = c.floats("start_time", missing=0.0)
    end = c.floats("end_time", missing=0.0)
    seq = np.clip(c.floats("seq_no", missing=0.0), -(2**31), 2**31 - 1).astype(np.int32)
    machine = c.ids("machine_id", "m_", required=False)
    at, known = tasks.find(source)
    notes.add("instances_without_task", int((~known).sum()))
    if not known.all():
        source, key, code, start, end, seq, machine, at = (a[known] for a in (source, key, code, start, end, seq, machine, at))
    started = _STARTS[code] & ((start != 0.0) | _STARTS_AT_ZERO[code])
    by = _ENDS_BY[code]
    ends = started & (by >= 0)
    task_end = tasks.end[at]
    fallback = ends & (end == 0.0)
    notes.add("ended_without_end_time", int(fallback.sum()))
    end = np.where(fallback, np.where((task_end != 0.0) & (task_end >= start), task_end, start), end)
    notes.add("ends_before_starts", int((ends & (end < start)).sum()))
    end = np.maximum(end, start)
    request = tasks.request[at]
    first_t = np.where(started, start, tasks.submit[at])
    first_k = np.where(started, te.SCHEDULE, te.SUBMIT).astype(np.int8)
    first_m = np.where(started, machine, -1)
    e = np.flatnonzero(ends)
    events.add(source, key, first_t, seq, first_k, first_m, request)
    events.add(source[e], key[e], end[e], seq[e], by[e], machine[e], np.full((e.size, 2), np.nan, np.float32))


def _containers(paths: list[Path], b: Builder, notes: _Notes) -> None:
    status = {s: 0 for s in CONTAINER_RUNNING} | {s: 1 for s in CONTAINER_STOPPED}
    parts: list[tuple[np.ndarray, ...]] = []
    apps: dict[int, str] = {}
    for path in paths:
        for c in _chunks(path, CONTAINER_META):
            app_names = c.strings("app_du")
            app = _mapped(app_names, online_job_source)
            apps.update(zip(app.tolist(), app_names))
            key = c.ids("container_id", "c_")
            machine = c.ids("machine_id", "m_", required=False)
            stop = c.codes("status", status, "container status").astype(bool)
            time = c.floats("time_stamp")
            cpu = c.floats("cpu_request", missing=math.nan) / 100.0
            mem = c.floats("mem_size", missing=math.nan)
            notes.add("requests_missing", int((np.isnan(cpu) & ~stop).sum() + (np.isnan(mem) & ~stop).sum()))
            parts.append((app, key, time, stop, machine, np.column_stack([cpu, mem]).astype(np.float32)))
    if not parts:
        return
    app, key, time, stop, machine, request = (np.concatenate(p) for p in zip(*parts))
    kind = _container_kinds(app, key, time, stop)
    request[stop] = np.nan
    first_run = (kind == te.SCHEDULE)
    request[first_run] = np.nan_to_num(request[first_run])  # a container placed without a request asks 0
    events = _Events([(app, key, time, np.zeros(time.size, np.int32), kind, np.where(stop, -1, machine), request)])
    cols = events.fold()
    if cols is None:
        return
    by_app = np.lexsort((time, app))
    firsts = np.flatnonzero(np.r_[True, app[by_app][1:] != app[by_app][:-1]])
    for source, submit in zip(app[by_app][firsts].tolist(), time[by_app][firsts].tolist()):
        b.job(source, submit, "online", 0, apps[source])
    b.tasks(cols)


def _container_kinds(app: np.ndarray, key: np.ndarray, time: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """Each container row's event: its first running row (or the first after
    a stop) places it, a later running row updates its requests, a stop kills it."""
    order = np.lexsort((np.arange(time.size), time, key, app))
    a, k, s = app[order], key[order], stop[order]
    first = np.ones(a.size, bool)
    first[1:] = (a[1:] != a[:-1]) | (k[1:] != k[:-1])
    after_stop = np.zeros(a.size, bool)
    after_stop[1:] = s[:-1] & ~first[1:]
    kind = np.where(s, te.KILL, np.where(first | after_stop, te.SCHEDULE, te.UPDATE)).astype(np.int8)
    out = np.empty_like(kind)
    out[order] = kind
    return out


# -- the reader ----------------------------------------------------------------------------------------

@contextmanager
def _gc_paused() -> Iterator[None]:
    """CPython's cycle collector paused: reading makes millions of short-lived
    rows, lists and tuples (no cycles), which it would rescan again and again
    (twice the time of a large read). Restored as it was."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read(src: Path, options: ReadOptions) -> Builder:
    """A Builder filled from the cluster-trace-v2018 tables under ``src``,
    or TraceError (``options`` is not used: the trace records its cell)."""
    if not src.is_dir():
        raise TraceError(f"{src}: not a folder: alibaba2018 reads the folder holding machine_meta.csv, batch_task.csv, ...")
    machine_files = _tables(src, "machine_meta", required=True)
    task_files = _tables(src, "batch_task", required=False)
    instance_files = _tables(src, "batch_instance", required=False)
    container_files = _tables(src, "container_meta", required=False)
    if bool(task_files) != bool(instance_files):
        have, lack = ("batch_task", "batch_instance") if task_files else ("batch_instance", "batch_task")
        raise TraceError(f"{src}: {have} without {lack}: the batch tables are read together")
    if not task_files and not container_files:
        raise TraceError(f"{src}: no workload: neither batch_task/batch_instance nor container_meta")
    used = machine_files + task_files + instance_files + container_files
    b = Builder("alibaba2018", RESOURCES, UNITS, tuple(str(p) for p in used), recorded=True, service_tiers=("online",))
    notes = _Notes()
    with _gc_paused():
        _machines(machine_files, b, notes)
        tasks = _batch_tasks(task_files, b, notes)
        _batch_instances(instance_files, tasks, b, notes)
        _containers(container_files, b, notes)
    b.notes.update(notes.counts)
    b.notes["approximations"] = (
        "batch task = job (after the jobs of its DAG parents), instance = task; submitted at the task's start_time; "
        "online deploy unit = service job, container = task; time 0 = the window's start; no priorities recorded")
    return b


READER = Reader(
    "alibaba2018", read, default_tier="batch")
