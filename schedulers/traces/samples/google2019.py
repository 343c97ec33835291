"""A synthetic Google ClusterData2019 cell, written in the trace's exact
schema (``clusterdata_trace_format_v3.proto``, as BigQuery exports it:
JSON lines, 64-bit integers as strings, nested records as objects, nulls
left out; or CSV with a header), and what was written, so a test can
compare a reader's output against it.

The cell (``draw``, shared with the 2011 writer) is drawn with a seeded
NumPy generator, vectorized, so a day of a 12,000-machine cell (200,000
jobs, millions of task events) writes in minutes; events are written in
time order in chunks (no file is built in memory). Its shapes are the
traces' in kind, not fitted: tiers mixed; heavy-tailed tasks per job
(Pareto) and run times (log-normal; services mostly outlive the trace);
services and some batch already running at time 0 (the trace's "before
it began"); tasks evicted or failed and resubmitted, finished, failed,
killed (some while waiting), lost, still running or still waiting at the
end, a few with a final event "after the end" (2^63-1); requests updated
while running; machines present at 0, added, removed (some re-added) and
resized mid-trace, one event at the trace's last instant; constraints;
dependencies and parents; alloc sets with jobs inside; a few jobs with no
collection events and a few with no tasks; values left out where the
schema allows (an event's request, a machine id, an update's cpus).

What the writer returns is derived from the drawn lives (each task's
attempts and how each ended), not by folding the events it wrote, so a
reader is checked against the model, not against itself.
"""
from __future__ import annotations

import base64
import csv
import gzip
import hashlib
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np

from schedlab.schedulers.traces import form

AFTER_END = 2**63 - 1
US = 1_000_000
# Instance/collection event codes (the proto's EventType); the 2011 writer maps them.
SUBMIT, QUEUE, ENABLE, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING = range(11)
REASON = {EVICT: form.EVICTED, FAIL: form.FAILED, FINISH: form.FINISHED, KILL: form.KILLED, LOST: form.LOST}
TIERS = ("free", "best_effort_batch", "mid", "production", "monitoring")
SERVICE = frozenset({"production", "monitoring"})
# Machine shapes (cpu, memory), normalized: the largest machine is 1.0 of each.
SHAPES = np.array([(0.5, 0.5), (0.5, 0.25), (0.5, 0.75), (1.0, 1.0), (0.25, 0.25)])
SHAPE_P = (0.45, 0.2, 0.15, 0.1, 0.1)
ATTRIBUTES = 12  # machine attribute names (constraints name them)


def digest(kind: str, k: int) -> str:
    """An obfuscated name, as the traces hash them (base64 of a hash)."""
    return base64.b64encode(hashlib.sha256(f"{kind}{k}".encode()).digest()).decode()


def quantize(x: np.ndarray) -> np.ndarray:
    """Amounts on a 1e-6 grid: written and read back exactly (repr)."""
    return np.round(np.clip(x, 1e-6, 1.0), 6)


@dataclass
class Cell:
    """A drawn cell: times in µs, machines and jobs by index (ids beside)."""

    horizon: int  # the trace's last instant
    machine_ids: np.ndarray  # [M] int64
    stable: np.ndarray  # [S] machine indices present throughout (tasks run there)
    m_time: np.ndarray  # [E] machine events, time-sorted
    m_machine: np.ndarray
    m_kind: np.ndarray  # form.ADD / REMOVE / UPDATE
    m_cpu: np.ndarray  # nan: not named (an update keeps the previous)
    m_mem: np.ndarray
    job_ids: np.ndarray  # [J] int64, jobs sorted by submit
    j_submit: np.ndarray
    j_tier: np.ndarray  # index into the tiers drawn from
    j_user: np.ndarray
    j_parent: np.ndarray  # job index, -1
    j_after: list[tuple[int, ...]]
    j_orphan: np.ndarray  # no job/collection events written
    j_cons: list[tuple[tuple[str, int, str | None], ...]]  # (attribute, op code, value)
    j_tasks: np.ndarray
    t_job: np.ndarray  # [T], sorted by job then index
    t_index: np.ndarray
    t_submit: np.ndarray
    t_req: np.ndarray  # [T, 2]
    t_req2: np.ndarray  # [T, 2]: after its update
    t_update: np.ndarray  # the update's time, -1 none
    e_time: np.ndarray  # [N] task events, time-sorted (AFTER_END last)
    e_task: np.ndarray
    e_code: np.ndarray  # the 2019 EventType
    e_machine: np.ndarray  # machine index, -1
    e_new: np.ndarray  # carries the updated request
    e_blank: np.ndarray  # its request is left out
    x_start: np.ndarray  # [T] expected, µs, -1: none
    x_last: np.ndarray
    x_end: np.ndarray
    x_reason: np.ndarray  # form.END_REASONS codes
    x_machine: np.ndarray  # machine index, -1
    x_attempts: np.ndarray


def _ids(rng: np.random.Generator, n: int, base: int, step: int) -> np.ndarray:
    return base + np.cumsum(rng.integers(1, step, n, dtype=np.int64))


def _machines(rng: np.random.Generator, M: int, H: int, ids: tuple[int, int]) -> dict[str, np.ndarray]:
    shape = rng.choice(len(SHAPES), M, p=SHAPE_P)
    shape[0] = 3  # one of the largest machines, so amounts are fractions of it
    cpu, mem = SHAPES[shape, 0], SHAPES[shape, 1]
    late = rng.random(M) < 0.08
    removed = ~late & (rng.random(M) < 0.05)
    late[0] = removed[0] = False
    back = removed & (rng.random(M) < 0.6)
    resized = ~late & ~removed & (rng.random(M) < 0.04)
    resized[0] = False
    rm_at = rng.integers(H // 10, 8 * H // 10, M)
    back_at = rm_at + rng.integers(600 * US, 7200 * US, M)
    back &= back_at < H
    new_mem = np.where(mem >= 0.5, mem / 2, mem * 2)
    cpu_named = rng.random(M) < 0.5
    nan = np.full(M, np.nan)
    rows: list[tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]] = [  # (which machines, time, kind, cpu, mem)
        (~late, np.zeros(M, np.int64), form.ADD, cpu, mem),
        (late, rng.integers(H // 20, 9 * H // 10, M), form.ADD, cpu, mem),
        (removed, rm_at, form.REMOVE, nan, nan),
        (back, back_at, form.ADD, cpu, mem),
        (resized, rng.integers(H // 10, 95 * H // 100, M), form.UPDATE, np.where(cpu_named, cpu, np.nan), new_mem),
    ]
    sel = [(np.flatnonzero(which), t, k, cc, mm) for which, t, k, cc, mm in rows]
    machine = np.concatenate([w for w, *_ in sel])
    time = np.concatenate([t[w] for w, t, _, _, _ in sel])
    kind = np.concatenate([np.full(w.size, k) for w, _, k, _, _ in sel])
    c = np.concatenate([cc[w] for w, _, _, cc, _ in sel])
    m = np.concatenate([mm[w] for w, _, _, _, mm in sel])
    # The trace's clock runs to its end: machine 0 restated at the last instant.
    machine, time = np.r_[machine, 0], np.r_[time, H]
    kind, c, m = np.r_[kind, form.UPDATE], np.r_[c, cpu[0]], np.r_[m, mem[0]]
    order = np.lexsort((machine, time))
    return {"ids": _ids(rng, M, *ids), "stable": np.flatnonzero(~late & ~removed), "time": time[order].astype(np.int64),
            "machine": machine[order], "kind": kind[order].astype(np.int8), "cpu": c[order], "mem": m[order]}


def _jobs(rng: np.random.Generator, J: int, M: int, H: int, tier_p: Sequence[float], service: np.ndarray,
          empty: float, ids: tuple[int, int], ops: int) -> dict[str, Any]:
    tier = rng.choice(len(tier_p), J, p=tier_p)
    svc = service[tier]
    standing = rng.random(J) < np.where(svc, 0.5, 0.05)
    submit = np.where(standing, 0, rng.integers(US, 97 * H // 100, J))
    order = np.argsort(submit, kind="stable")
    tier, svc, standing, submit = tier[order], svc[order], standing[order], submit[order]
    cap = int(min(2000, max(20, 5 * M)))
    tasks = 1 + np.minimum((rng.pareto(1.3, J) * 2).astype(np.int64), cap - 1)
    tasks[~standing & (rng.random(J) < empty)] = 0
    tasks[0] = max(int(tasks[0]), 1)  # at least one task in the cell
    orphan = (tasks > 0) & (rng.random(J) < 0.01)
    batchy = ~svc & ~standing & (np.arange(J) > 0)
    parent = np.where(batchy & (rng.random(J) < 0.03), (rng.random(J) * np.arange(J)).astype(np.int64), -1)
    after: list[tuple[int, ...]] = [()] * J
    for j in np.flatnonzero(batchy & (rng.random(J) < 0.05)).tolist():
        after[j] = tuple(sorted(set(rng.integers(0, j, int(rng.integers(1, 4))).tolist())))
    cons: list[tuple[tuple[str, int, str | None], ...]] = [()] * J
    for j in np.flatnonzero((tasks > 0) & (rng.random(J) < 0.1)).tolist():
        cons[j] = tuple(_constraint(rng, ops) for _ in range(int(rng.integers(1, 4))))
    return {"ids": _ids(rng, J, *ids), "tier": tier, "service": svc, "standing": standing, "submit": submit,
            "tasks": tasks, "orphan": orphan, "user": rng.integers(0, max(5, J // 20), J), "parent": parent,
            "after": after, "cons": cons}


def _constraint(rng: np.random.Generator, ops: int) -> tuple[str, int, str | None]:
    name = digest("attribute", int(rng.integers(0, ATTRIBUTES)))
    op = int(rng.integers(0, ops))
    if op >= 6:  # present / not present: no value
        return name, op, None
    r = rng.random()
    value = str(int(rng.integers(0, 8))) if r < 0.6 else (digest("value", int(rng.integers(0, 5))) if r < 0.9 else "")
    return name, op, value


def draw(machines: int, jobs: int, hours: float, seed: int, tiers: Sequence[str], tier_p: Sequence[float], *,
         queue: bool, empty: float, ops: int, machine_ids: tuple[int, int], job_ids: tuple[int, int]) -> Cell:
    """A cell's machines, jobs and task lives, and each task's expected row."""
    rng = np.random.default_rng(seed)
    H = int(hours * 3600 * US)
    mach = _machines(rng, machines, H, machine_ids)
    service = np.array([t in SERVICE for t in tiers])
    jb = _jobs(rng, jobs, machines, H, tier_p, service, empty, job_ids, ops)
    T = int(jb["tasks"].sum())
    t_job = np.repeat(np.arange(jobs), jb["tasks"])
    t_index = np.arange(T) - np.repeat(np.cumsum(jb["tasks"]) - jb["tasks"], jb["tasks"])
    late = (t_index > 0) & ~jb["standing"][t_job] & (rng.random(T) < 0.3)
    t_submit = np.minimum(jb["submit"][t_job] + np.where(late, rng.exponential(20 * US, T).astype(np.int64), 0), H - 1)
    req = quantize(np.column_stack([rng.lognormal(math.log(0.02), 0.9, jobs), rng.lognormal(math.log(0.01), 1.0, jobs)]))[t_job]
    upd = rng.random(T) < 0.05
    req2 = np.column_stack([req[:, 0], quantize(req[:, 1] * 1.5)])
    tier = jb["tier"][t_job]
    life = _lives(rng, H, t_submit, tier, jb["service"][t_job], jb["standing"][t_job], tiers, mach["stable"], upd, queue)
    return Cell(
        horizon=H, machine_ids=mach["ids"], stable=mach["stable"], m_time=mach["time"], m_machine=mach["machine"],
        m_kind=mach["kind"], m_cpu=mach["cpu"], m_mem=mach["mem"], job_ids=jb["ids"], j_submit=jb["submit"],
        j_tier=jb["tier"], j_user=jb["user"], j_parent=jb["parent"], j_after=jb["after"], j_orphan=jb["orphan"],
        j_cons=jb["cons"], j_tasks=jb["tasks"], t_job=t_job, t_index=t_index, t_submit=t_submit, t_req=req, t_req2=req2,
        t_update=life.pop("update"), **life)


def _lives(rng: np.random.Generator, H: int, t_submit: np.ndarray, tier: np.ndarray, service: np.ndarray,
           standing: np.ndarray, tiers: Sequence[str], stable: np.ndarray, upd: np.ndarray, queue: bool) -> dict[str, np.ndarray]:
    """Each task's attempts (wait, run, how it ended, resubmission), its
    events, and its expected folded row."""
    T = t_submit.size
    name = np.array(tiers)[tier]
    never = ~standing & (((name == "free") & (rng.random(T) < 0.1)) | (rng.random(T) < 0.01))
    pkill = ~never & ~standing & (rng.random(T) < 0.015)
    ran = ~never & ~pkill
    evict_p = np.select([name == "free", name == "best_effort_batch", name == "mid", name == "production"], [0.5, 0.2, 0.15, 0.08], 0.03)
    A = np.where(ran, np.minimum(rng.geometric(1 - evict_p) - 1, 4) + 1, 0)
    first = np.cumsum(A) - A
    a_task = np.repeat(np.arange(T), A)
    N = a_task.size
    k = np.arange(N) - first[a_task]
    final = k == A[a_task] - 1
    wait_mean = np.select([service, name == "free"], [2 * US, 300 * US], 60 * US)[a_task]
    wait = np.where(standing[a_task] & (k == 0), 0, US // 1000 + rng.exponential(wait_mean).astype(np.int64))
    run = np.where(service[a_task], rng.lognormal(math.log(40 * 3600), 1.0, N), rng.lognormal(math.log(600), 1.4, N))
    dur = np.maximum(np.where(final, run, rng.uniform(30, 7200, N)) * US, US).astype(np.int64)
    delay = np.where(final, 0, rng.integers(US, 60 * US, N))
    inc = wait + dur + delay
    cs = np.cumsum(inc)
    base = np.repeat((cs - inc)[first[A > 0]], A[A > 0])
    sched = t_submit[a_task] + (cs - inc - base) + wait
    end = sched + dur
    machine = stable[rng.integers(0, stable.size, N)]
    outcome = np.where(service, rng.choice([FINISH, KILL, FAIL], T, p=[0.3, 0.55, 0.15]),
                       rng.choice([FINISH, FAIL, KILL, LOST], T, p=[0.8, 0.07, 0.11, 0.02]))
    end_code = np.where(final, outcome[a_task], np.where(rng.random(N) < 0.8, EVICT, FAIL))
    after_end = final & (end > H) & (rng.random(N) < 0.2)
    update = np.full(T, -1, np.int64)
    fin = np.flatnonzero(final)
    update[a_task[fin]] = np.where(upd[a_task[fin]], sched[fin] + dur[fin] * 3 // 10, -1)
    ev = _events(rng, H, t_submit, A, first, a_task, k, sched, end, delay, machine, end_code, after_end, update, pkill,
                 wait, queue)
    x = _expected(H, T, A, first, sched, end, end_code, machine)
    return {**ev, **x, "update": update}


def _events(rng: np.random.Generator, H: int, t_submit: np.ndarray, A: np.ndarray, first: np.ndarray, a_task: np.ndarray,
            k: np.ndarray, sched: np.ndarray, end: np.ndarray, delay: np.ndarray, machine: np.ndarray,
            end_code: np.ndarray, after_end: np.ndarray, update: np.ndarray, pkill: np.ndarray, wait: np.ndarray,
            queue: bool) -> dict[str, np.ndarray]:
    T = t_submit.size
    none = lambda n: np.full(n, -1, np.int64)  # noqa: E731  (no machine)
    parts: list[tuple[np.ndarray, ...]] = [(t_submit, np.arange(T), np.full(T, SUBMIT), none(T), np.zeros(T, np.int64))]
    kill_at = t_submit + US + rng.exponential(60 * US, T).astype(np.int64)
    pk = np.flatnonzero(pkill)
    parts.append((kill_at[pk], pk, np.full(pk.size, KILL), none(pk.size), np.full(pk.size, 3)))
    if queue:  # the batch scheduler holding some back before their first start
        q = np.flatnonzero((k == 0) & (wait >= 3000) & (rng.random(a_task.size) < 0.1))
        parts.append((t_submit[a_task[q]] + wait[q] // 3, a_task[q], np.full(q.size, QUEUE), none(q.size), np.full(q.size, 1)))
        parts.append((t_submit[a_task[q]] + 2 * wait[q] // 3, a_task[q], np.full(q.size, ENABLE), none(q.size), np.full(q.size, 2)))
    seq = 10 + 10 * k
    parts.append((sched, a_task, np.full(a_task.size, SCHEDULE), machine, seq + 1))
    parts.append((np.where(after_end, AFTER_END, end), a_task, end_code, machine, seq + 3))
    again = np.flatnonzero(k < A[a_task] - 1)  # a non-final attempt: resubmitted
    parts.append((end[again] + delay[again], a_task[again], np.full(again.size, SUBMIT), none(again.size), seq[again] + 10))
    up = np.flatnonzero(update >= 0)
    last_attempt = first[up] + A[up] - 1
    parts.append((update[up], up, np.full(up.size, UPDATE_RUNNING), machine[last_attempt], 10 + 10 * k[last_attempt] + 2))
    time, task, code, mach, order = (np.concatenate([p[i] for p in parts]) for i in range(5))
    keep = (time <= H) | (time == AFTER_END)
    time, task, code, mach, order = time[keep], task[keep], code[keep], mach[keep], order[keep]
    srt = np.lexsort((order, task, time))
    time, task, code, mach, order = time[srt], task[srt], code[srt], mach[srt], order[srt]
    useq = np.full(T, np.iinfo(np.int64).max)
    useq[up] = 10 + 10 * k[last_attempt] + 2
    # A start's request may be left out when the attempt's end (which carries it) is written.
    blank = np.zeros(time.size, bool)
    s = np.flatnonzero(code == SCHEDULE)
    blank[s] = (end[first[task[s]] + (order[s] - 10) // 10] <= H) & (rng.random(s.size) < 0.1)
    return {"e_time": time, "e_task": task, "e_code": code.astype(np.int8), "e_machine": mach, "e_new": order >= useq[task],
            "e_blank": blank}


def _expected(H: int, T: int, A: np.ndarray, first: np.ndarray, sched: np.ndarray, end: np.ndarray, end_code: np.ndarray,
              machine: np.ndarray) -> dict[str, np.ndarray]:
    """What folding a task's written events must give: its starts within
    the trace, the end of its last written attempt if that was written."""
    started = np.zeros(T, np.int64)
    np.add.at(started, np.repeat(np.arange(T), A), sched <= H)
    ok = started > 0
    N = sched.size  # an index past the attempts: a task that never started
    sched, end, end_code, machine = np.r_[sched, -1], np.r_[end, -1], np.r_[end_code, SUBMIT], np.r_[machine, -1]
    fi, li = np.where(ok, first, N), np.where(ok, first + started - 1, N)
    ended = ok & (end[li] <= H)
    reason_of = np.zeros(11, np.int8)
    for c, r in REASON.items():
        reason_of[c] = r
    return {"x_start": sched[fi], "x_last": sched[li], "x_end": np.where(ended, end[li], -1),
            "x_reason": np.where(ended, reason_of[end_code[li]], form.NONE).astype(np.int8), "x_machine": machine[fi],
            "x_attempts": started}


# --- what a test compares ---------------------------------------------------


def expected(cell: Cell, job_tier: Sequence[str], job_priority: np.ndarray, users: Sequence[str],
             constraints: Sequence[frozenset[str]], parents: bool, notes: dict[str, object]) -> dict[str, Any]:
    """The canonical trace the written files must convert to (with the
    default selection): times in seconds; jobs and tasks by their ids."""
    s = lambda a: np.where(a >= 0, a / US, np.nan)  # noqa: E731
    ids = cell.machine_ids
    named = ~cell.j_orphan & parents  # a job's parent and dependencies are in its collection events
    req = np.where(((cell.t_update >= 0) & (cell.t_update <= cell.horizon))[:, None], cell.t_req2, cell.t_req)
    return {
        "span": cell.horizon / US,
        "machines": _machine_expected(cell),
        "machine_ids": np.sort(ids),
        "jobs": {"id": cell.job_ids, "submit": cell.j_submit / US, "tier": list(job_tier), "priority": job_priority,
                 "user": list(users), "constraints": list(constraints),
                 "parent": np.where(named & (cell.j_parent >= 0), cell.job_ids[np.maximum(cell.j_parent, 0)], -1),
                 "after": [tuple(cell.job_ids[list(a)].tolist()) if n and a else () for a, n in zip(cell.j_after, named)]},
        "tasks": {"job": cell.job_ids[cell.t_job], "index": cell.t_index, "submit": cell.t_submit / US,
                  "start": s(cell.x_start), "last_start": s(cell.x_last), "end": s(cell.x_end), "reason": cell.x_reason,
                  "machine": np.where(cell.x_machine >= 0, ids[np.maximum(cell.x_machine, 0)], -1),
                  "attempts": cell.x_attempts, "request": req},
        "task_events": int(np.sum(cell.e_time != AFTER_END)),
        "notes": notes,
    }


def _machine_expected(cell: Cell) -> list[tuple[float, int, int, float, float]]:
    """(time s, machine id, kind, cpu, mem) as the canonical form keeps them:
    an update's left-out amount carried from before, a REMOVE's zeros."""
    cur: dict[int, tuple[float, float]] = {}
    out = []
    for t, m, kind, c, mm in zip(cell.m_time.tolist(), cell.m_machine.tolist(), cell.m_kind.tolist(), cell.m_cpu.tolist(),
                                 cell.m_mem.tolist()):
        mid = int(cell.machine_ids[m])
        if kind == form.REMOVE:
            cur.pop(mid, None)
            out.append((t / US, mid, form.REMOVE, 0.0, 0.0))
            continue
        prev = cur.get(mid)
        cap = (prev[0] if math.isnan(c) and prev else c, prev[1] if math.isnan(mm) and prev else mm)
        out.append((t / US, mid, form.ADD if prev is None else form.UPDATE, *cap))
        cur[mid] = cap
    return out


# --- writing ------------------------------------------------------------------


def open_out(path: Path, gz: bool) -> IO[str]:
    if gz:
        return io.TextIOWrapper(gzip.open(path, "wb", compresslevel=1), encoding="utf-8", newline="")
    return open(path, "w", encoding="utf-8", newline="")


def write_sharded(paths: Sequence[Path], n: int, gz: bool, head: str, chunk: Callable[[int, int], str],
                  rows_per_chunk: int = 50_000) -> None:
    """Rows 0..n split evenly over ``paths`` (each shard in time order as
    the stream is), each written in chunks ``chunk(lo, hi)`` formats."""
    bounds = np.linspace(0, n, len(paths) + 1).astype(int)
    for path, lo, hi in zip(paths, bounds[:-1], bounds[1:]):
        with open_out(path, gz) as fh:
            fh.write(head)
            for a in range(int(lo), int(hi), rows_per_chunk):
                fh.write(chunk(a, min(a + rows_per_chunk, int(hi))))


def csv_text(rows: Any) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(rows)
    return buf.getvalue()


def shard_count(n: int, per: int = 2_000_000) -> int:
    return max(2, -(-n // per))


_PRIORITY = {"free": (0, 25), "best_effort_batch": (110, 111, 114, 115), "mid": (116, 117, 119),
             "production": (120, 200, 200, 300, 359), "monitoring": (360, 400, 450)}
TIER_P = (0.15, 0.45, 0.05, 0.3, 0.05)


def write(out: Path, *, machines: int = 40, jobs: int = 300, hours: float = 6.0, seed: int = 0, gz: bool = False,
          fmt: str = "json") -> dict[str, Any]:
    """A synthetic ClusterData2019 cell in ``out`` (``fmt``: BigQuery's
    JSON-lines export, or CSV with a header); returns what a reader must
    convert it to (``expected``) and the files written."""
    if fmt not in ("json", "csv"):
        raise ValueError(f"fmt: json or csv, not {fmt!r}")
    out.mkdir(parents=True, exist_ok=True)
    cell = draw(machines, jobs, hours, seed, TIERS, TIER_P, queue=True, empty=0.005, ops=8,
                machine_ids=(1_000_000_000, 5_000_000), job_ids=(300_000_000_000, 2_000_000))
    rng = np.random.default_rng(seed + 1)
    tier_names = [TIERS[t] for t in cell.j_tier.tolist()]
    prio = np.array([int(rng.choice(_PRIORITY[t])) for t in tier_names], np.int64)
    users = [digest("user", u) for u in cell.j_user.tolist()]
    allocs = _alloc_sets(rng, cell)
    w = _Writer2019(out, gz, fmt, cell, rng, prio, users, allocs)
    w.machines()
    w.attributes()
    w.collections()
    w.instances()
    cons = [frozenset(f"{n} {_REL[op]} {'' if v is None else v}".rstrip() for n, op, v in c) for c in cell.j_cons]
    notes: dict[str, object] = {"alloc_sets": allocs.n, "alloc_instance_events": w.alloc_events,
             "jobs_in_alloc_sets": int(np.sum((allocs.of_job >= 0) & ~cell.j_orphan)),
             "task_events_after_the_end": int(np.sum(cell.e_time == AFTER_END))}
    x = expected(cell, tier_names, prio, [("" if o else u) for o, u in zip(cell.j_orphan.tolist(), users)], cons,
                 True, notes)
    x["files"] = w.files
    return x


_REL = ("==", "!=", "<", ">", "<=", ">=", "present", "absent")


@dataclass
class _Allocs:
    n: int
    ids: np.ndarray
    submit: np.ndarray  # µs
    instances: np.ndarray  # per alloc set
    of_job: np.ndarray  # [J] alloc set index, -1


def _alloc_sets(rng: np.random.Generator, cell: Cell) -> _Allocs:
    J, H = cell.job_ids.size, cell.horizon
    n = max(1, J // 200)
    submit = np.sort(np.where(rng.random(n) < 0.5, 0, rng.integers(US, H // 2, n)))
    of_job = np.where(rng.random(J) < 0.05, rng.integers(0, n, J), -1)
    of_job = np.where(submit[np.maximum(of_job, 0)] <= cell.j_submit, of_job, -1)  # a job runs in an existing one
    return _Allocs(n, 900_000_000_000 + np.arange(n, dtype=np.int64) * 7, submit, rng.integers(1, 9, n), of_job)


class _Writer2019:
    def __init__(self, out: Path, gz: bool, fmt: str, cell: Cell, rng: np.random.Generator, prio: np.ndarray,
                 users: list[str], allocs: _Allocs) -> None:
        self.out, self.gz, self.fmt, self.cell, self.rng = out, gz, fmt, cell, rng
        self.prio, self.users, self.allocs = prio, users, allocs
        self.files: list[Path] = []
        self.alloc_events = 0

    def _paths(self, table: str, n: int) -> list[Path]:
        ext = ".json" if self.fmt == "json" else ".csv"
        paths = [self.out / f"{table}-{i:012d}{ext}{'.gz' if self.gz else ''}" for i in range(n)]
        self.files += paths
        return paths

    def _write(self, table: str, header: Sequence[str], n: int, json_chunk: Callable[[int, int], str],
               csv_chunk: Callable[[int, int], list[tuple[Any, ...]]], shards: int = 1) -> None:
        paths = self._paths(table, shards)
        if self.fmt == "json":
            write_sharded(paths, n, self.gz, "", json_chunk)
        else:
            write_sharded(paths, n, self.gz, ",".join(header) + "\n", lambda a, b: csv_text(csv_chunk(a, b)))

    def machines(self) -> None:
        c = self.cell
        ids = c.machine_ids[c.m_machine].tolist()
        code = np.array([1, 2, 3])[c.m_kind].tolist()  # ADD 1, REMOVE 2, UPDATE 3
        t, cpu, mem = c.m_time.tolist(), c.m_cpu.tolist(), c.m_mem.tolist()
        switch = [digest("switch", m // 40) for m in c.m_machine.tolist()]
        plat = [digest("platform", int(s)) for s in (c.m_machine % 5).tolist()]

        def cap_json(i: int) -> str:
            named = [f'"{k}":{v!r}' for k, v in (("cpus", cpu[i]), ("memory", mem[i])) if not math.isnan(v)]
            return f',"capacity":{{{",".join(named)}}}' if named else ""

        def js(a: int, b: int) -> str:
            return "".join(f'{{"time":"{t[i]}","machine_id":"{ids[i]}","type":"{code[i]}","switch_id":"{switch[i]}"'
                           f'{cap_json(i)},"platform_id":"{plat[i]}"}}\n' for i in range(a, b))

        def cs(a: int, b: int) -> list[tuple[Any, ...]]:
            return [(t[i], ids[i], code[i], switch[i], _blank(cpu[i]), _blank(mem[i]), plat[i], "") for i in range(a, b)]

        self._write("machine_events", ("time", "machine_id", "type", "switch_id", "capacity.cpus", "capacity.memory",
                                       "platform_id", "missing_data_reason"), len(t), js, cs)

    def attributes(self) -> None:
        ids = self.cell.machine_ids.tolist()
        rows = [(0, m, digest("attribute", (i * 7 + a) % ATTRIBUTES), str((i + a) % 8)) for i, m in enumerate(ids) for a in range(3)]

        def js(a: int, b: int) -> str:
            return "".join(f'{{"time":"{r[0]}","machine_id":"{r[1]}","name":"{r[2]}","value":"{r[3]}","deleted":false}}\n'
                           for r in rows[a:b])

        self._write("machine_attributes", ("time", "machine_id", "name", "value", "deleted"), len(rows), js,
                    lambda a, b: [(*r, "false") for r in rows[a:b]])

    def collections(self) -> None:
        c, al = self.cell, self.allocs
        H = c.horizon
        J = c.job_ids.size
        x_end = np.where(c.x_end >= 0, c.x_end, np.iinfo(np.int64).max)
        t_first = np.full(J, np.iinfo(np.int64).max)
        np.minimum.at(t_first, c.t_job, np.where(c.x_start >= 0, c.x_start, np.iinfo(np.int64).max))
        t_last = np.zeros(J, np.int64)
        np.maximum.at(t_last, c.t_job, x_end)
        all_fin = np.ones(J, bool)
        np.logical_and.at(all_fin, c.t_job, c.x_reason == form.FINISHED)
        empty = c.j_tasks == 0
        t_last[empty] = c.j_submit[empty] + 60 * US
        rows: list[tuple[int, int, int, int, int]] = []  # time, order, kind, entity, code
        for j in np.flatnonzero(~c.j_orphan).tolist():
            rows.append((int(c.j_submit[j]), 0, 0, j, SUBMIT))
            if t_first[j] <= H:
                rows.append((int(t_first[j]), 1, 0, j, SCHEDULE))
            if t_last[j] <= H:
                rows.append((int(t_last[j]), 2, 0, j, FINISH if all_fin[j] and not empty[j] else KILL))
        for a in range(al.n):
            rows.append((int(al.submit[a]), 0, 1, a, SUBMIT))
            rows.append((int(al.submit[a]) + US, 1, 1, a, SCHEDULE))
        rows.sort()
        jlines = [self._collection(r) for r in rows]
        self._write("collection_events", _COLLECTION_HEADER, len(rows), lambda a, b: "".join(_js(d) for d in jlines[a:b]),
                    lambda a, b: [tuple(_cell(d.get(k)) for k in _COLLECTION_HEADER) for d in jlines[a:b]])

    def _collection(self, r: tuple[int, int, int, int, int]) -> dict[str, Any]:
        t, _, is_alloc, e, kind = r
        c = self.cell
        if is_alloc:
            return {"time": t, "type": kind, "collection_id": int(self.allocs.ids[e]), "scheduling_class": 2,
                    "collection_type": 1, "priority": 200, "alloc_collection_id": 0, "user": digest("user", 0),
                    "collection_name": digest("alloc", e), "start_after_collection_ids": []}
        d: dict[str, Any] = {"time": t, "type": kind, "collection_id": int(c.job_ids[e]), "scheduling_class": e % 4,
                             "collection_type": 0, "priority": int(self.prio[e])}
        al = int(self.allocs.of_job[e])
        d["alloc_collection_id"] = int(self.allocs.ids[al]) if al >= 0 else 0
        if kind == SUBMIT or self.rng.random() < 0.5:  # later events may leave these out
            d["user"] = self.users[e]
            d["collection_name"] = digest("job", e)
            if c.j_parent[e] >= 0:
                d["parent_collection_id"] = int(c.job_ids[c.j_parent[e]])
            d["start_after_collection_ids"] = [int(c.job_ids[a]) for a in c.j_after[e]]
        d["max_per_machine"] = 0
        return d

    def instances(self) -> None:
        c, al, rng = self.cell, self.allocs, self.rng
        H = c.horizon
        # Alloc-set instances: submitted with their set, running from a second later, some released.
        a_set = np.repeat(np.arange(al.n), al.instances)
        a_idx = np.arange(a_set.size) - np.repeat(np.cumsum(al.instances) - al.instances, al.instances)
        a_mach = c.stable[rng.integers(0, c.stable.size, a_set.size)]
        a_end = al.submit[a_set] + rng.integers(3600 * US, 48 * 3600 * US, a_set.size)
        at = np.concatenate([al.submit[a_set], al.submit[a_set] + US, a_end])
        ak = np.concatenate([np.full(a_set.size, SUBMIT), np.full(a_set.size, SCHEDULE), np.full(a_set.size, FINISH)])
        ai = np.tile(np.arange(a_set.size), 3)
        keep = at <= H
        self.alloc_events = int(keep.sum())
        # Merge into the task event stream (time order; allocs after tasks at a tie).
        n_task = c.e_time.size
        time = np.concatenate([c.e_time, at[keep]])
        src = np.concatenate([np.arange(n_task), n_task + np.flatnonzero(keep)])
        order = np.lexsort((src, time))
        src = src[order]
        is_task = src < n_task
        e = np.where(is_task, src, 0)
        a = np.where(is_task, 0, src - n_task)
        job = c.t_job[c.e_task[e]]
        ids = np.where(is_task, c.job_ids[job], al.ids[a_set[ai[a]]])
        index = np.where(is_task, c.t_index[c.e_task[e]], a_idx[ai[a]])
        code = np.where(is_task, c.e_code[e], ak[a])
        mach_ix = np.where(is_task, c.e_machine[e], np.where(ak[a] == SUBMIT, -1, a_mach[ai[a]]))
        machine = np.where(mach_ix >= 0, c.machine_ids[np.maximum(mach_ix, 0)], 0)
        machine_left_out = (mach_ix < 0) & (rng.random(src.size) < 0.5)  # "no machine": 0, or left out
        req = np.where(c.e_new[e][:, None], c.t_req2[c.e_task[e]], c.t_req[c.e_task[e]])
        blank = is_task & c.e_blank[e]
        job_alloc = al.of_job[job]
        alloc_id = np.where(is_task & (job_alloc >= 0), al.ids[np.maximum(job_alloc, 0)], 0)
        prio = np.where(is_task, self.prio[job], 200)
        cons_js = [json.dumps([{"name": n, **({} if v is None else {"value": v}), "relation": str(op)} for n, op, v in cs],
                              separators=(",", ":")) for cs in c.j_cons]
        cols = {"time": time[order], "type": code, "collection_id": ids, "collection_type": np.where(is_task, 0, 1),
                "priority": prio, "alloc_collection_id": alloc_id, "instance_index": index, "machine_id": machine,
                "cpus": req[:, 0], "memory": req[:, 1], "is_task": is_task, "blank": blank, "left_out": machine_left_out,
                "job": job, "alloc_index": np.where(is_task & (job_alloc >= 0), index % 4, -1)}
        w = _InstanceRows(cols, cons_js)
        self._write("instance_events", _INSTANCE_HEADER, src.size, w.json, w.csv, shards=shard_count(src.size))


_COLLECTION_HEADER = ("time", "type", "collection_id", "scheduling_class", "missing_type", "collection_type", "priority",
                      "alloc_collection_id", "user", "collection_name", "collection_logical_name", "parent_collection_id",
                      "start_after_collection_ids", "max_per_machine", "max_per_switch", "vertical_scaling", "scheduler")
_INSTANCE_HEADER = ("time", "type", "collection_id", "scheduling_class", "missing_type", "collection_type", "priority",
                    "alloc_collection_id", "instance_index", "machine_id", "alloc_instance_index", "resource_request.cpus",
                    "resource_request.memory", "constraint")


def _blank(v: float) -> Any:
    return "" if math.isnan(v) else v


def _js(d: dict[str, Any]) -> str:
    """One JSON line as BigQuery exports it: INT64 as strings, nulls left out."""
    parts = []
    for k, v in d.items():
        if isinstance(v, list):
            parts.append(f'"{k}":[{",".join(json.dumps(str(x)) for x in v)}]')
        elif isinstance(v, int):
            parts.append(f'"{k}":"{v}"')
        else:
            parts.append(f'"{k}":{json.dumps(v)}')
    return "{" + ",".join(parts) + "}\n"


def _cell(v: Any) -> Any:
    if v is None:
        return ""
    if isinstance(v, list):
        return json.dumps([str(x) for x in v])
    return v


class _InstanceRows:
    """Instance event rows formatted a chunk at a time (columns become
    Python values only a chunk at a time)."""

    def __init__(self, cols: dict[str, np.ndarray], cons: list[str]) -> None:
        self.cols, self.cons = cols, cons

    def _chunk(self, a: int, b: int) -> dict[str, list[Any]]:
        return {k: v[a:b].tolist() for k, v in self.cols.items()}

    def json(self, a: int, b: int) -> str:
        c = f = self._chunk(a, b)
        out = []
        for i in range(b - a):
            mach = "" if f["left_out"][i] else f',"machine_id":"{c["machine_id"][i]}"'
            req = "" if f["blank"][i] else f',"resource_request":{{"cpus":{c["cpus"][i]!r},"memory":{c["memory"][i]!r}}}'
            cons = self.cons[f["job"][i]] if f["is_task"][i] else "[]"
            ai = f["alloc_index"][i]
            out.append(f'{{"time":"{c["time"][i]}","type":"{c["type"][i]}","collection_id":"{c["collection_id"][i]}",'
                       f'"scheduling_class":"{(a + i) % 4}","collection_type":"{c["collection_type"][i]}",'
                       f'"priority":"{c["priority"][i]}","alloc_collection_id":"{c["alloc_collection_id"][i]}",'
                       f'"instance_index":"{c["instance_index"][i]}"{mach},"alloc_instance_index":"{ai}"{req},'
                       f'"constraint":{cons}}}\n')
        return "".join(out)

    def csv(self, a: int, b: int) -> list[tuple[Any, ...]]:
        c = f = self._chunk(a, b)
        return [(c["time"][i], c["type"][i], c["collection_id"][i], (a + i) % 4, "", c["collection_type"][i], c["priority"][i],
                 c["alloc_collection_id"][i], c["instance_index"][i], "" if f["left_out"][i] else c["machine_id"][i],
                 f["alloc_index"][i], "" if f["blank"][i] else c["cpus"][i], "" if f["blank"][i] else c["memory"][i],
                 self.cons[f["job"][i]] if f["is_task"][i] else "[]") for i in range(b - a)]
