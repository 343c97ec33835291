"""A synthetic Alibaba cluster-trace-v2018, in the trace's exact schema
(headerless CSVs, columns in schema.txt's order, its id shapes and status
words), for tests and demos of ``schedlab.schedulers.traces.alibaba2018``:
the real trace is 48 GB and behind a survey.

What it holds, seeded (NumPy's generator): machines of two shapes, most
present from before the trace (time 0), some added, removed (and some
back) or resized mid-trace; batch jobs, most DAGs of several tasks named
as the trace names them (``M1``, ``R3_1_2``), some of independent
``task_...`` tasks, each task many instances, some retried after a
failure, some failed, cancelled or interrupted, and the trace's end
cutting the last ones (running, ``end_time`` 0; waiting, times 0); a few
empty requests and a few failed attempts without an end; online deploy
units of containers, most running from before the trace, some updated
and some stopped. Rows are written in no time order (as the batch files
are).

``write`` returns what the reader should find, in the canonical form's
terms but the trace's own numbers (``j_12`` -> 12), so tests can compare
a conversion with it: see its docstring.
"""
from __future__ import annotations

import base64
import gzip
import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from schedlab.schedulers.traces import form

OUT_OF_SERVICE = "OFFLINE"
_FINAL = ("Terminated", "Failed", "Cancelled", "Interrupted")
_FINAL_P = (0.95, 0.02, 0.015, 0.015)
_FINAL_REASON = (form.FINISHED, form.FAILED, form.KILLED, form.KILLED)
_ATTEMPTS = 3


def _open(path: Path, gz: bool) -> io.TextIOBase:
    if gz:
        return io.TextIOWrapper(gzip.open(path, "wb", compresslevel=4), encoding="utf-8", newline="")
    return open(path, "w", encoding="utf-8", newline="")


def _between(rng: np.random.Generator, lo: int, hi: int) -> int:
    """An integer in [lo, hi), or lo where that is empty."""
    return int(rng.integers(lo, max(lo + 1, hi)))


def _write(path: Path, gz: bool, rows: Iterable[str]) -> None:
    with _open(path, gz) as fh:
        batch: list[str] = []
        for r in rows:
            batch.append(r)
            if len(batch) >= 50_000:
                fh.write("\n".join(batch) + "\n")
                batch = []
        if batch:
            fh.write("\n".join(batch) + "\n")


# -- machines ------------------------------------------------------------------------------------------

@dataclass
class _Cell:
    ids: np.ndarray  # machine numbers (m_<n>)
    stable: np.ndarray  # the numbers of machines present throughout
    rows: dict[str, np.ndarray]  # machine_meta as written: id, time, present, cpu, mem (+ fd1, fd2)


def _machines(rng: np.random.Generator, n: int, span: int) -> _Cell:
    ids = rng.choice(np.arange(1, 3 * n + 1), n, replace=False)
    cpu = rng.choice([64, 96], n, p=[0.3, 0.7])
    mem = np.where(cpu == 96, 100, 50)
    late, removed = rng.random(n) < 0.1, rng.random(n) < 0.1
    back, resized = removed & (rng.random(n) < 0.5), rng.random(n) < 0.05
    if n >= 8:  # at least one of each
        late[0], removed[1], back[1], removed[2], back[2], resized[3] = True, True, True, True, False, True
    resized &= ~removed
    stable = ~late & ~removed
    if not stable.any():
        late[-1] = removed[-1] = back[-1] = resized[-1] = False
        stable[-1] = True
    rows: list[tuple[int, int, bool, int, int]] = []
    for k in range(n):
        t0 = _between(rng, 1, span // 2) if late[k] else 0
        rows.append((int(ids[k]), t0, True, int(cpu[k]), int(mem[k])))
        if resized[k]:
            rows.append((int(ids[k]), _between(rng, t0 + 1, span), True, int(cpu[k]), int(mem[k]) // 2))
        if removed[k]:
            t_r = _between(rng, t0 + 1, int(span * 0.7))
            rows.append((int(ids[k]), t_r, False, int(cpu[k]), int(mem[k])))
            if back[k]:
                rows.append((int(ids[k]), _between(rng, t_r + 1, span), True, int(cpu[k]), int(mem[k])))
    order = rng.permutation(len(rows))
    cols = list(zip(*(rows[i] for i in order)))
    table = {"id": np.asarray(cols[0], np.int64), "time": np.asarray(cols[1], np.float64), "present": np.asarray(cols[2], bool),
             "cpu": np.asarray(cols[3], np.float64), "mem": np.asarray(cols[4], np.float64)}
    return _Cell(ids, ids[stable], table)


def _machine_lines(rng: np.random.Generator, cell: _Cell) -> Iterable[str]:
    r = cell.rows
    fd1 = {int(m): int(rng.integers(1, 60)) for m in cell.ids}
    fd2 = {int(m): "abcdefghijk"[int(rng.integers(0, 11))] for m in cell.ids}
    for m, t, p, c, mem in zip(r["id"].tolist(), r["time"].tolist(), r["present"].tolist(), r["cpu"].tolist(), r["mem"].tolist()):
        yield f"m_{m},{int(t)},{fd1[m]},{fd2[m]},{int(c)},{int(mem)},{'USING' if p else OUT_OF_SERVICE}"


# -- batch: jobs, tasks (DAG nodes), instances ------------------------------------------------------------

@dataclass
class _Dag:
    job: np.ndarray  # per task: its job's number (j_<n>)
    names: list[str]
    node: np.ndarray  # -1: independent
    after: list[tuple[int, ...]]  # the nodes it runs after
    submit: np.ndarray  # per task: its job's submission (roots start then)


def _dags(rng: np.random.Generator, jobs: int, span: int) -> _Dag:
    numbers = rng.choice(np.arange(1, 10 * jobs + 1), jobs, replace=False)
    submits = rng.integers(1, max(2, int(span * 0.85)), jobs)
    is_dag = rng.random(jobs) < 0.85
    sizes = np.where(is_dag, np.minimum(1 + rng.geometric(0.35, jobs), 12), rng.integers(1, 4, jobs))
    job: list[int] = []
    names: list[str] = []
    node: list[int] = []
    after: list[tuple[int, ...]] = []
    submit: list[int] = []
    for j in range(jobs):
        for k in range(1, int(sizes[j]) + 1):
            job.append(int(numbers[j]))
            submit.append(int(submits[j]))
            if not is_dag[j]:
                names.append("task_" + base64.b64encode(rng.bytes(18)).decode().replace("/", "A").replace("+", "B") + "==")
                node.append(-1)
                after.append(())
                continue
            deps: tuple[int, ...] = ()
            if k > 1 and rng.random() > 0.15:
                deps = tuple(sorted({int(d) for d in rng.integers(1, k, int(rng.integers(1, min(3, k - 1) + 1)))}, reverse=True))
            letter = "M" if not deps else ("J" if len(deps) > 1 else "R")
            names.append(letter + str(k) + "".join(f"_{d}" for d in deps))
            node.append(k)
            after.append(deps)
    return _Dag(np.asarray(job, np.int64), names, np.asarray(node, np.int64), after, np.asarray(submit, np.float64))


@dataclass
class _Instances:
    """Per instance (tasks' instances in order): offsets from its task's
    ready time of each attempt's start and end, attempts, machines."""

    task: np.ndarray
    start: np.ndarray  # [n, 3]
    end: np.ndarray  # [n, 3]
    attempts: np.ndarray
    machine: np.ndarray  # [n, 3]
    final: np.ndarray  # index into _FINAL


def _instances(rng: np.random.Generator, counts: np.ndarray, stable: np.ndarray) -> _Instances:
    n = int(counts.sum())
    task = np.repeat(np.arange(counts.size), counts)
    dur = np.clip(np.round(rng.lognormal(4.0, 1.2, (n, _ATTEMPTS))), 1, 6 * 3600)
    gap = rng.integers(0, 6, (n, _ATTEMPTS)).astype(np.float64)  # a retry may start the second the last ended
    start = np.empty((n, _ATTEMPTS))
    start[:, 0] = rng.integers(0, 4, n)
    for a in range(1, _ATTEMPTS):
        start[:, a] = start[:, a - 1] + dur[:, a - 1] + gap[:, a - 1]
    attempts = 1 + (rng.random(n) < 0.06) + (rng.random(n) < 0.01)
    final = rng.choice(len(_FINAL), n, p=_FINAL_P)
    return _Instances(task, start, start + dur, attempts, rng.choice(stable, (n, _ATTEMPTS)), final)


def _ready(dag: _Dag, length: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each task's ready time: its job's submission, or its last parent's end
    plus a few seconds (tasks of a job are in node order, parents first)."""
    ready = np.empty(dag.job.size)
    delays = rng.integers(0, 5, dag.job.size).tolist()
    at: dict[int, int] = {}
    jobs, nodes, submits, lengths = dag.job.tolist(), dag.node.tolist(), dag.submit.tolist(), length.tolist()
    for t in range(dag.job.size):
        if t == 0 or jobs[t] != jobs[t - 1]:
            at = {}
        deps = dag.after[t]
        ready[t] = submits[t] if not deps else max(ready[at[d]] + lengths[at[d]] for d in deps) + delays[t]
        if nodes[t] >= 0:
            at[nodes[t]] = t
    return ready


def write(out: Path, *, machines: int = 40, jobs: int = 300, hours: float = 6.0, seed: int = 0, gz: bool = False) -> dict:
    """Write ``machine_meta``, ``batch_task``, ``batch_instance`` and
    ``container_meta`` (``.csv``, or ``.csv.gz`` with ``gz``) into ``out``:
    ``machines`` machines, ``jobs`` Alibaba batch jobs, ``max(2, jobs // 20)``
    deploy units, over ``hours``. Returns:

    - ``span``: the trace's length (s); ``files``: the paths written;
      ``rows``: rows written per table;
    - ``machines``: the machine numbers; ``machine_rows``: machine_meta as
      written (``id``, ``time``, ``present``, ``cpu``, ``mem``);
    - ``tasks`` (one per canonical batch job): ``job`` (the Alibaba job's
      number), ``name``, ``node`` (-1: independent), ``after`` (parent
      nodes), ``submit`` (the canonical job's), ``cpu`` (cores), ``mem``,
      ``instances``;
    - ``instances`` (one per canonical task, tasks' instances in order, in
      index order within each): ``task`` (row of ``tasks``), ``submit``,
      ``start``, ``last_start``, ``end`` (nan: none), ``reason``
      (``form.END_REASONS`` code), ``machine`` (number, -1), ``attempts``;
    - ``apps``: ``number``, ``submit``; ``containers`` (app then container
      number order): ``app``, ``number``, ``machine``, ``start``, ``end``,
      ``reason``, ``cpu``, ``mem``."""
    rng = np.random.default_rng(seed)
    span = int(hours * 3600)
    out.mkdir(parents=True, exist_ok=True)
    ext = ".csv.gz" if gz else ".csv"
    cell = _machines(rng, machines, span)
    dag = _dags(rng, jobs, span)
    counts = np.minimum(1 + rng.geometric(0.12, dag.job.size), 200)
    inst = _instances(rng, counts, cell.stable)
    last = inst.attempts - 1
    length = np.zeros(dag.job.size)
    np.maximum.at(length, inst.task, inst.end[np.arange(inst.task.size), last])
    ready = _ready(dag, length, rng)
    batch = _batch_tables(rng, dag, inst, ready, span)
    online = _online(rng, max(2, jobs // 20), span, cell.stable)
    paths = {t: out / f"{t}{ext}" for t in ("machine_meta", "batch_task", "batch_instance", "container_meta")}
    _write(paths["machine_meta"], gz, _machine_lines(rng, cell))
    _write(paths["batch_task"], gz, batch.pop("task_lines"))
    _write(paths["batch_instance"], gz, batch.pop("instance_lines"))
    _write(paths["container_meta"], gz, online.pop("lines"))
    rows = {"machine_meta": int(cell.rows["id"].size), "batch_task": int(dag.job.size),
            "batch_instance": batch.pop("instance_rows"), "container_meta": online.pop("rows")}
    return {"span": span, "files": list(paths.values()), "rows": rows, "machines": np.sort(cell.ids),
            "machine_rows": cell.rows, **batch, **online}


@dataclass
class _Fates:
    """How the span cut each instance, and the few written oddly."""

    rows: np.ndarray  # attempts written (0: waiting)
    final: np.ndarray  # the last written attempt's status (index into _FINAL), -1: running at the end
    complete: np.ndarray  # ended, no retry left beyond the span
    no_end: np.ndarray  # a final failure written with end_time 0
    unstarted: np.ndarray  # a cancellation before it started (times 0)


def _fates(rng: np.random.Generator, inst: _Instances, start: np.ndarray, end: np.ndarray, span: int) -> _Fates:
    rows, ended = _cut(start, end, inst.attempts, span)
    complete = ended & (rows == inst.attempts)
    final = np.where(ended, np.where(complete, inst.final, 1), -1)  # a retry not started yet: the last written one failed
    n = rows.size
    return _Fates(rows, final, complete, (final == 1) & (rng.random(n) < 0.3), (final == 2) & (rows == 1) & (rng.random(n) < 0.3))


def _task_table(rng: np.random.Generator, dag: _Dag, inst: _Instances, fate: _Fates, end: np.ndarray, ready: np.ndarray,
                span: int) -> tuple[list[str], dict[str, np.ndarray]]:
    """batch_task's lines, and per task: ``start``, ``end`` (as written), ``submit`` (its canonical job's), ``cpu``, ``mem``."""
    n = dag.job.size
    done = np.ones(n, bool)
    np.logical_and.at(done, inst.task, fate.complete)
    task_end = np.zeros(n)
    np.maximum.at(task_end, inst.task, np.where(fate.rows == 0, 0.0, end[np.arange(inst.task.size), np.maximum(fate.rows - 1, 0)]))
    task_end = np.where(done, task_end, 0.0)
    task_start = np.where(ready <= span, ready, 0.0)
    all_ok = np.ones(n, bool)
    np.logical_and.at(all_ok, inst.task, fate.final == 0)
    status = np.where(done, np.where(all_ok, "Terminated", "Failed"), np.where(task_start > 0, "Running", "Waiting"))
    plan_cpu, plan_mem = rng.choice([50, 100, 150, 200, 400, 800], n), rng.integers(5, 300, n)
    cpu_missing, mem_missing = rng.random(n) < 0.005, rng.random(n) < 0.01
    first: dict[int, float] = {}
    for j, s in zip(dag.job.tolist(), task_start.tolist()):
        if s > 0:
            first[j] = min(s, first.get(j, s))
    submit = np.where(task_start > 0, task_start, [first.get(j, 0.0) for j in dag.job.tolist()])
    lines = [
        f"{name},{cnt},j_{j},{tt},{st},{int(s)},{int(e)},{'' if cm else pc},{'' if mm else pm / 100}"
        for name, cnt, j, tt, st, s, e, cm, pc, mm, pm in zip(
            dag.names, np.bincount(inst.task, minlength=n).tolist(), dag.job.tolist(), rng.integers(1, 13, n).tolist(),
            status.tolist(), task_start.tolist(), task_end.tolist(), cpu_missing.tolist(), plan_cpu.tolist(),
            mem_missing.tolist(), plan_mem.tolist())]
    return lines, {"end": task_end, "submit": submit, "plan_cpu": plan_cpu,
                   "cpu": np.where(cpu_missing, 0.0, plan_cpu / 100.0), "mem": np.where(mem_missing, 0.0, plan_mem / 100.0)}


def _batch_tables(rng: np.random.Generator, dag: _Dag, inst: _Instances, ready: np.ndarray, span: int) -> dict:
    """The batch_task and batch_instance lines, and what a reader should make of them."""
    abs_start = ready[inst.task][:, None] + inst.start
    abs_end = ready[inst.task][:, None] + inst.end
    fate = _fates(rng, inst, abs_start, abs_end, span)
    task_lines, task = _task_table(rng, dag, inst, fate, abs_end, ready, span)
    lines, count = _instance_lines(rng, dag, inst, abs_start, abs_end, fate, task["plan_cpu"])
    expect = _expected_instances(inst, abs_start, abs_end, fate, task["end"], task["submit"])
    tasks = {"job": dag.job, "name": dag.names, "node": dag.node, "after": dag.after, "submit": task["submit"],
             "cpu": task["cpu"], "mem": task["mem"], "instances": np.bincount(inst.task, minlength=dag.job.size)}
    return {"tasks": tasks, "instances": expect, "task_lines": task_lines, "instance_lines": lines, "instance_rows": count}


def _cut(start: np.ndarray, end: np.ndarray, attempts: np.ndarray, span: int) -> tuple[np.ndarray, np.ndarray]:
    """(attempts written per instance, whether the last written one ended
    inside the span): an attempt exists if it starts in the span and the
    one before ended in it; one running past the span is the last, and so
    is one whose retry starts after it."""
    n = attempts.size
    rows = np.zeros(n, np.int64)
    alive = np.ones(n, bool)
    for a in range(_ATTEMPTS):
        exists = alive & (a < attempts) & (start[:, a] <= span)
        rows += exists
        alive = exists & (end[:, a] <= span)
    last = np.maximum(rows - 1, 0)
    ended = (rows > 0) & (end[np.arange(n), last] <= span)
    return rows, ended


def _usage(rng: np.random.Generator, plan_cpu: np.ndarray) -> list[str]:
    """Each instance's cpu_avg, cpu_max, mem_avg and mem_max, as written."""
    u = rng.random((plan_cpu.size, 4))
    avg = np.round(plan_cpu * (0.2 + 0.6 * u[:, 0]), 2)
    cols = (avg, np.round(avg * (1 + u[:, 1]), 2), np.round(0.02 + u[:, 2], 2), np.round(0.02 + u[:, 2] + u[:, 3] / 10, 2))
    return [f"{a},{b},{c},{d}" for a, b, c, d in zip(*(x.tolist() for x in cols))]


def _instance_lines(rng: np.random.Generator, dag: _Dag, inst: _Instances, start: np.ndarray, end: np.ndarray,
                    fate: _Fates, plan_cpu: np.ndarray) -> tuple[Iterator[str], int]:
    """batch_instance's lines, made as they are written, and how many."""
    usage = _usage(rng, plan_cpu[inst.task])

    def lines() -> Iterator[str]:
        task, rows_l, final_l = inst.task.tolist(), fate.rows.tolist(), fate.final.tolist()
        no_end_l, unstarted_l = fate.no_end.tolist(), fate.unstarted.tolist()
        start_i, end_i, machine_l = start.astype(np.int64), end.astype(np.int64), inst.machine.tolist()
        for i in range(inst.task.size):
            t = task[i]
            head = f"ins_{i + 1},{dag.names[t]},j_{int(dag.job[t])},1"
            if rows_l[i] == 0:
                yield f"{head},Waiting,0,0,,1,1,,,,"
                continue
            for a in range(rows_l[i]):
                s, e, m = int(start_i[i, a]), int(end_i[i, a]), f"m_{machine_l[i][a]}"
                if a < rows_l[i] - 1:
                    st = "Failed"
                elif final_l[i] < 0:
                    st, e = "Running", 0
                else:
                    st = _FINAL[final_l[i]]
                    e = 0 if no_end_l[i] else e
                    if unstarted_l[i]:
                        s, e, m = 0, 0, ""
                yield f"{head},{st},{s},{e},{m},{a + 1},{rows_l[i]},{usage[i]}"

    return lines(), int(np.maximum(fate.rows, 1).sum())


def _expected_instances(inst: _Instances, start: np.ndarray, end: np.ndarray, fate: _Fates, task_end: np.ndarray,
                        submit: np.ndarray) -> dict:
    """Each instance's canonical task row, as the reader's docstring says it folds."""
    idx = np.arange(inst.task.size)
    lasts = np.maximum(fate.rows - 1, 0)
    ran = (fate.rows > 0) & ~fate.unstarted
    first_start = np.where(ran, start[:, 0], np.nan)
    last_start = np.where(ran, start[idx, lasts], np.nan)
    t_end = task_end[inst.task]
    ending = np.where(fate.no_end, np.where(t_end != 0, t_end, last_start), end[idx, lasts])
    has_end = ran & (fate.final >= 0)
    reason = np.where(has_end, np.asarray(_FINAL_REASON)[np.maximum(fate.final, 0)], form.NONE).astype(np.int8)
    return {"task": inst.task, "submit": submit[inst.task], "start": first_start, "last_start": last_start,
            "end": np.where(has_end, ending, np.nan), "reason": reason,
            "machine": np.where(ran, inst.machine[:, 0], -1), "attempts": np.where(ran, fate.rows, 0)}


# -- online: deploy units and their containers ------------------------------------------------------------

def _online(rng: np.random.Generator, apps: int, span: int, stable: np.ndarray) -> dict:
    numbers = np.sort(rng.choice(np.arange(1, 20 * apps + 1), apps, replace=False))
    sizes = np.minimum(rng.geometric(0.3, apps), 30)
    n = int(sizes.sum())
    app = np.repeat(numbers, sizes)
    number = np.arange(1, n + 1) * 3
    machine = rng.choice(stable, n)
    t0 = np.where(rng.random(n) < 0.7, 0, rng.integers(1, int(span * 0.8), n))
    cpu = rng.choice([100, 200, 400, 800], n)
    limit = cpu * rng.choice([1, 2], n)
    mem = rng.integers(50, 800, n)
    allocated = rng.random(n) < 0.1
    updated = rng.random(n) < 0.15
    stopped = rng.random(n) < 0.1
    if n >= 4:  # at least one of each
        stopped[0], updated[1], allocated[2], t0[3] = True, True, True, max(1, span // 3)
    rows: list[tuple[int, str]] = []
    end = np.full(n, np.nan)
    final_cpu = cpu.copy()
    for i in range(n):
        head = f"c_{number[i]},m_{machine[i]}"
        tail = f"app_{app[i]}"
        t = int(t0[i])
        req = f"{cpu[i]},{limit[i]},{mem[i] / 100}"
        rows.append((t, f"{head},{t},{tail},{'allocated' if allocated[i] else 'started'},{req}"))
        if allocated[i]:
            t += int(rng.integers(1, 60))
            rows.append((t, f"{head},{t},{tail},started,{req}"))
        if updated[i]:
            t = _between(rng, t + 1, span)
            final_cpu[i] = 2 * cpu[i]
            rows.append((t, f"{head},{t},{tail},started,{2 * cpu[i]},{2 * limit[i]},{mem[i] / 100}"))
        if stopped[i]:
            t = _between(rng, t + 1, span + 60)
            end[i] = t
            rows.append((t, f"{head},{t},{tail},stopped,{final_cpu[i]},{limit[i]},{mem[i] / 100}"))
    lines = [rows[k][1] for k in rng.permutation(len(rows))]
    submit = np.full(apps, np.inf)
    np.minimum.at(submit, np.searchsorted(numbers, app), t0.astype(np.float64))
    containers = {"app": app, "number": number, "machine": machine, "start": t0.astype(np.float64), "end": end,
                  "reason": np.where(stopped, form.KILLED, form.NONE).astype(np.int8), "cpu": final_cpu / 100.0,
                  "mem": mem / 100.0}
    return {"apps": {"number": numbers, "submit": submit}, "containers": containers, "lines": lines, "rows": len(lines)}
