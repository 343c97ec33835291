"""What every reader feeds and ``schedulers.traces.form.Trace`` comes out of:
machine events, jobs and task rows in the trace's own ids and clock, then
one selection (a time window, a scale-down, the first N jobs) and the
mapping to dense indices.

Readers stream their files into a builder; the builder holds only what the
canonical form keeps (numbers, not rows of text), so memory grows with the
converted trace, not the raw one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.traces import form

_MIX = np.uint64(0x9E3779B97F4A7C15)


@dataclass(frozen=True)
class Select:
    """Which part of a trace to keep.

    ``window``: (start, end) in the trace's clock, seconds; jobs submitted
    in it are kept, and jobs submitted before it with a task running at
    its start (the cell's standing load: negative times); times are
    rebased so the window starts at 0 and anything after its end is cut
    (a task still running then has no end). ``scale`` in (0, 1]: keep
    that fraction of machines and of jobs, each chosen by a hash of its
    id (seeded), so the load per machine stays what it was. ``max_jobs``:
    then only the first N jobs by submission (with the standing ones)."""

    window: tuple[float, float] | None = None
    scale: float = 1.0
    max_jobs: int | None = None
    seed: int = 0


def _keep(ids: np.ndarray, fraction: float, seed: int) -> np.ndarray:
    if fraction >= 1.0:
        return np.ones(ids.size, dtype=bool)
    with np.errstate(over="ignore"):
        h = (ids.astype(np.uint64) + np.uint64(seed)) * _MIX
        h ^= h >> np.uint64(31)
        h *= _MIX
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53) < fraction


class _Chunks:
    """A growing column: chunks appended, concatenated once."""

    def __init__(self) -> None:
        self.parts: list[np.ndarray] = []

    def add(self, a: np.ndarray) -> None:
        self.parts.append(a)

    def array(self, dtype: type, width: int | None = None) -> np.ndarray:
        if not self.parts:
            return np.zeros((0,) if width is None else (0, width), dtype=dtype)
        return np.concatenate(self.parts).astype(dtype, copy=False)


TASK_COLUMNS = ("job", "index", "request", "submit", "start", "last_start", "end", "reason", "machine", "attempts")


class Builder:
    """Collects one trace. ``resources``/``units`` name the columns of
    capacities and requests; ``notes`` go into the trace's meta (what the
    reader approximated or skipped, in words)."""

    def __init__(self, fmt: str, resources: tuple[str, ...], units: tuple[str, ...], sources: tuple[str, ...],
                 recorded: bool, service_tiers: tuple[str, ...] = ()) -> None:
        self.fmt, self.resources, self.units, self.sources, self.recorded = fmt, resources, units, sources, recorded
        self.service_tiers = service_tiers
        self.notes: dict[str, object] = {}
        self._m_time: list[float] = []
        self._m_source: list[int] = []
        self._m_event: list[int] = []
        self._m_cap: list[tuple[float, ...]] = []
        self._jobs: dict[int, tuple[float, str, int, str, int, tuple[int, ...], tuple[str, ...]]] = {}
        self._tasks = {c: _Chunks() for c in TASK_COLUMNS}
        self._end = -math.inf  # the latest time any row names

    def machine(self, time: float, source: int, event: int, capacity: tuple[float, ...] = ()) -> None:
        """A machine's event; a REMOVE needs no capacity, an ADD or UPDATE
        one per resource (nan: unchanged, as an update that names only some)."""
        self._m_time.append(time)
        self._m_source.append(source)
        self._m_event.append(event)
        self._m_cap.append(tuple(capacity) if capacity else (math.nan,) * len(self.resources))
        self._end = max(self._end, time)

    def job(self, source: int, submit: float, tier: str, priority: int = 0, user: str = "", parent: int = -1,
            after: tuple[int, ...] = (), constraints: tuple[str, ...] = ()) -> None:
        """A job (a second call for the same id keeps the earlier submit and the rest of the later call)."""
        had = self._jobs.get(source)
        if had is not None:
            submit = min(submit, had[0])
        self._jobs[source] = (submit, tier, priority, user, parent, after, constraints)
        self._end = max(self._end, submit)

    def tasks(self, cols: dict[str, np.ndarray]) -> None:
        """A chunk of task rows, as ``schedulers.traces.task_events.fold``
        returns them (job and machine in the trace's own ids)."""
        for c in TASK_COLUMNS:
            self._tasks[c].add(np.asarray(cols[c]))
        for c in ("submit", "end", "last_start"):
            if cols[c].size:
                got = np.nanmax(cols[c]) if not np.all(np.isnan(cols[c])) else -math.inf
                self._end = max(self._end, float(got))

    def build(self, select: Select | None = None, default_tier: str = "unknown") -> form.Trace:
        """The trace, selected. Tasks of a job no row introduced get a job
        of ``default_tier`` submitted with its first task."""
        R = len(self.resources)
        t = {c: self._tasks[c].array(dt, R if c == "request" else None) for c, dt in
             zip(TASK_COLUMNS, (np.int64, np.int32, np.float32, np.float64, np.float64, np.float64, np.float64, np.int8,
                                np.int64, np.int16))}
        # Jobs only their tasks name.
        if t["job"].size:
            by_job = np.argsort(t["job"], kind="stable")
            ids, firsts = np.unique(t["job"][by_job], return_index=True)
            earliest = np.minimum.reduceat(t["submit"][by_job], firsts)
            orphans = [(j, s) for j, s in zip(ids.tolist(), earliest.tolist()) if j not in self._jobs]
            for jid, sub in orphans:
                self._jobs[jid] = (sub, default_tier, 0, "", -1, (), ())
            if orphans:
                self.notes["jobs_from_tasks"] = len(orphans)
        select = select or Select()
        start, end = select.window if select.window is not None else (0.0, self._end if math.isfinite(self._end) else 0.0)
        past = np.greater_equal if select.window is not None else np.greater  # the whole trace keeps its last instant
        # Machines: state at the window's start, then events inside it.
        m_time = np.asarray(self._m_time, dtype=np.float64)
        m_source = np.asarray(self._m_source, dtype=np.int64)
        m_event = np.asarray(self._m_event, dtype=np.int8)
        m_cap = np.asarray(self._m_cap, dtype=np.float64).reshape(len(self._m_time), R)
        machine_ids, m_dense = np.unique(m_source, return_inverse=True)
        keep_m = _keep(machine_ids, select.scale, select.seed)
        m_time, m_dense, m_event, m_cap = _machine_rows(m_time, m_dense, m_event, m_cap, start, end, keep_m)
        # Jobs.
        j_source = np.fromiter(self._jobs.keys(), dtype=np.int64, count=len(self._jobs))
        vals = list(self._jobs.values())
        j_submit = np.fromiter((v[0] for v in vals), dtype=np.float64, count=len(vals))
        # Tasks running at the window's start keep their job as standing load.
        running = ~np.isnan(t["last_start"]) & (t["last_start"] < start) & (np.isnan(t["end"]) | (t["end"] > start))
        standing_jobs = np.unique(t["job"][running])
        keep_j = _keep(j_source, select.scale, select.seed + 1)
        in_window = (j_submit >= start) & ~past(j_submit, end)
        standing = np.isin(j_source, standing_jobs) & (j_submit < start)
        keep_j &= in_window | standing
        if select.max_jobs is not None:
            win = np.flatnonzero(keep_j & in_window)
            over = win[np.argsort(j_submit[win], kind="stable")][select.max_jobs:]
            keep_j[over] = False
        order = np.flatnonzero(keep_j)
        order = order[np.lexsort((j_source[order], j_submit[order]))]
        dense = {int(s): i for i, s in enumerate(j_source[order].tolist())}
        tiers, users, cons = _Names(), _Names(), _Names()
        j_tier = np.empty(order.size, np.int16)
        j_prio = np.empty(order.size, np.int32)
        j_user = np.empty(order.size, np.int32)
        j_parent = np.empty(order.size, np.int32)
        after_ptr = np.zeros(order.size + 1, np.int64)
        con_ptr = np.zeros(order.size + 1, np.int64)
        after: list[int] = []
        con: list[int] = []
        for i, k in enumerate(order.tolist()):
            _sub, tier, prio, user, parent, aft, cs = vals[k]
            j_tier[i], j_prio[i], j_user[i] = tiers.code(tier), prio, users.code(user)
            j_parent[i] = dense.get(parent, -1)
            after.extend(dense[a] for a in aft if a in dense)
            con.extend(cons.code(c) for c in cs)
            after_ptr[i + 1], con_ptr[i + 1] = len(after), len(con)
        # Tasks of kept jobs, cut at the window's end.
        job_index = np.full(j_source.size, -1, dtype=np.int64)
        job_index[order] = np.arange(order.size)
        tj = np.full(t["job"].size, -1, dtype=np.int64)
        if j_source.size:
            srt = np.argsort(j_source)
            found = srt[np.minimum(np.searchsorted(j_source[srt], t["job"]), srt.size - 1)]
            hit = j_source[found] == t["job"]
            tj[hit] = job_index[found[hit]]
        keep_t = tj >= 0
        t = {c: v[keep_t] for c, v in t.items()}
        tj = tj[keep_t]
        cut_start = past(t["start"], end)
        cut_last = past(t["last_start"], end)
        t["start"][cut_start] = np.nan
        t["last_start"][cut_last] = np.nan
        late = ~np.isnan(t["end"]) & (t["end"] > end)
        t["end"][late] = np.nan
        t["reason"][late | np.isnan(t["last_start"])] = form.NONE
        t["end"][np.isnan(t["last_start"]) & ~np.isnan(t["end"]) & (t["reason"] == form.NONE)] = np.nan
        machine = _dense_machines(t["machine"], machine_ids, keep_m)
        ord_t = np.lexsort((t["index"], tj))
        shift = lambda a: (a - start)  # noqa: E731
        return form.Trace(
            format=self.fmt, sources=self.sources, resources=self.resources, units=self.units, origin=float(start),
            span=float(end - start), recorded=self.recorded, tiers=tiers.names(), service_tiers=self.service_tiers, users=users.names(),
            constraints=cons.names(), machine_source=machine_ids[keep_m], machine_time=m_time, machine_id=m_dense,
            machine_event=m_event, machine_capacity=m_cap.astype(np.float32),
            job_source=j_source[order], job_submit=shift(j_submit[order]), job_tier=j_tier, job_priority=j_prio,
            job_user=j_user, job_parent=j_parent, job_after_ptr=after_ptr, job_after=np.asarray(after, np.int32),
            job_constraint_ptr=con_ptr, job_constraint=np.asarray(con, np.int32),
            task_job=tj[ord_t].astype(np.int32), task_index=t["index"][ord_t], task_request=t["request"][ord_t],
            task_submit=shift(t["submit"][ord_t]), task_start=shift(t["start"][ord_t]),
            task_last_start=shift(t["last_start"][ord_t]), task_end=shift(t["end"][ord_t]),
            task_end_reason=t["reason"][ord_t], task_machine=machine[ord_t], task_attempts=t["attempts"][ord_t],
            meta=dict(self.notes),
        )


class _Names:
    def __init__(self) -> None:
        self._codes: dict[str, int] = {}

    def code(self, name: str) -> int:
        return self._codes.setdefault(name, len(self._codes))

    def names(self) -> tuple[str, ...]:
        return tuple(self._codes)


def _machine_rows(time: np.ndarray, dense: np.ndarray, event: np.ndarray, cap: np.ndarray, start: float, end: float,
                  keep: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The kept machines' events (dense ids renumbered over the kept ones):
    each machine's state at ``start`` as one ADD at 0 if present then, its
    events in (start, end] after it; an update's nan amounts carry the
    previous ones."""
    renum = np.cumsum(keep) - 1
    order = np.lexsort((np.arange(time.size), time))
    state: dict[int, np.ndarray | None] = {}
    out_t: list[float] = []
    out_id: list[int] = []
    out_ev: list[int] = []
    out_cap: list[np.ndarray] = []
    at_start_done = False

    def flush_start() -> None:
        for m, c in sorted(state.items()):
            if c is not None:
                out_t.append(0.0)
                out_id.append(int(renum[m]))
                out_ev.append(form.ADD)
                out_cap.append(c)

    for k in order.tolist():
        m = int(dense[k])
        if not keep[m]:
            continue
        tm = float(time[k])
        if tm > end:
            break
        if tm > start and not at_start_done:
            flush_start()
            at_start_done = True
        prev = state.get(m)
        ev = int(event[k])
        if ev == form.REMOVE:
            new = None
        else:
            new = cap[k].copy()
            if prev is not None:
                new = np.where(np.isnan(new), prev, new)
            new = np.nan_to_num(new)
        state[m] = new
        if at_start_done:
            if ev == form.REMOVE and prev is None:
                continue  # removing what is not there: nothing happens
            kind = form.REMOVE if new is None else (form.ADD if prev is None else form.UPDATE)
            out_t.append(tm - start)
            out_id.append(int(renum[m]))
            out_ev.append(kind)
            out_cap.append(np.zeros(cap.shape[1]) if new is None else new)
    if not at_start_done:
        flush_start()
    R = cap.shape[1]
    return (np.asarray(out_t, np.float64), np.asarray(out_id, np.int32), np.asarray(out_ev, np.int8),
            np.asarray(out_cap, np.float64).reshape(len(out_t), R))


def _dense_machines(source: np.ndarray, ids: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Trace machine ids -> kept dense ids (-1: unknown or not kept)."""
    out = np.full(source.size, -1, dtype=np.int32)
    if ids.size == 0:
        return out
    pos = np.minimum(np.searchsorted(ids, source), ids.size - 1)
    hit = (ids[pos] == source) & keep[pos]
    out[hit] = (np.cumsum(keep) - 1)[pos[hit]]
    return out
