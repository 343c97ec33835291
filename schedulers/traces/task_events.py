"""Folding a trace's task event log into one row per task, vectorized.

Google's traces (2011 and 2019) record a task's life as events: submitted,
scheduled on a machine, then evicted, failed, finished, killed or lost —
and after an eviction or a failure it may be submitted and scheduled again.
A reader maps its own event codes to ``EVENTS`` and hands the log as
columns; ``fold`` sorts it by task and time (NumPy's lexsort: millions of
events in seconds, no Python object per event) and reduces each task's
events to what ``schedulers.traces.form`` keeps.
"""
from __future__ import annotations

import numpy as np

from schedlab.schedulers.traces import form

# Canonical event kinds.
SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE = range(8)
EVENTS = ("submit", "schedule", "evict", "fail", "finish", "kill", "lost", "update")
_REASON = np.array([form.NONE, form.NONE, form.EVICTED, form.FAILED, form.FINISHED, form.KILLED, form.LOST, form.NONE],
                   dtype=np.int8)
_TERMINAL = np.array([False, False, True, True, True, True, True, False])


def fold(time: np.ndarray, job: np.ndarray, index: np.ndarray, kind: np.ndarray, machine: np.ndarray,
         request: np.ndarray) -> dict[str, np.ndarray]:
    """One row per task (job, index) from its events.

    ``time`` s (float64), ``job`` the trace's job id (int64), ``index`` the
    task's index in it, ``kind`` an EVENTS code, ``machine`` the trace's
    machine id (-1 none), ``request`` [n, R] (nan where an event carries
    none). Ties in time keep file order (a stable sort), as the traces
    order events that share a timestamp.

    Per task: submit = its first event's time (a submission, or whatever
    came first in a window that cut it); start = its first SCHEDULE;
    last_start = its last; end and reason = its last terminal event if that
    came after the last start (else it is running, or waiting again, at
    the end: nan, NONE); machine = where it first ran; request = the last
    request any of its events carried (an UPDATE changes it)."""
    n = time.size
    if n == 0:
        empty = np.zeros(0)
        return {"job": empty.astype(np.int64), "index": empty.astype(np.int32), "request": np.zeros((0, request.shape[1]), np.float32),
                "submit": empty, "start": empty, "last_start": empty, "end": empty, "reason": empty.astype(np.int8),
                "machine": empty.astype(np.int64), "attempts": empty.astype(np.int16)}
    order = np.lexsort((np.arange(n), time, index, job))
    time, job, index, kind, machine, request = time[order], job[order], index[order], kind[order], machine[order], request[order]
    new = np.ones(n, dtype=bool)
    new[1:] = (job[1:] != job[:-1]) | (index[1:] != index[:-1])
    starts = np.flatnonzero(new)
    group = np.cumsum(new) - 1
    rows = np.arange(n)

    def last_where(mask: np.ndarray) -> np.ndarray:
        return np.maximum.reduceat(np.where(mask, rows, -1), starts)

    def first_where(mask: np.ndarray) -> np.ndarray:
        got = np.minimum.reduceat(np.where(mask, rows, n), starts)
        return np.where(got == n, -1, got)

    def take(values: np.ndarray, at: np.ndarray, missing: float) -> np.ndarray:
        out = np.full(at.size, missing, dtype=values.dtype)
        ok = at >= 0
        out[ok] = values[at[ok]]
        return out

    sched = kind == SCHEDULE
    first_s, last_s = first_where(sched), last_where(sched)
    last_t = last_where(_TERMINAL[kind])
    ended = (last_t >= 0) & (last_t > last_s)
    end = np.where(ended, take(time, last_t, np.nan), np.nan)
    reason = np.where(ended, _REASON[kind[np.maximum(last_t, 0)]], form.NONE).astype(np.int8)
    req = np.empty((starts.size, request.shape[1]), dtype=np.float32)
    for r in range(request.shape[1]):
        req[:, r] = take(request[:, r], last_where(~np.isnan(request[:, r])), np.nan)
    machine_first = take(machine.astype(np.int64), first_s, -1)
    return {
        "job": job[starts], "index": index[starts].astype(np.int32), "request": req, "submit": time[starts],
        "start": take(time, first_s, np.nan), "last_start": take(time, last_s, np.nan), "end": end, "reason": reason,
        "machine": machine_first, "attempts": np.bincount(group, weights=sched, minlength=starts.size).astype(np.int16),
    }
