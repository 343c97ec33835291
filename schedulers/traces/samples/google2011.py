"""A synthetic Google ClusterData2011_2 trace, written in the trace's exact
schema ("Google cluster-usage traces: format + schema", version 2):
headerless CSV parts (``task_events/part-00000-of-00002.csv[.gz]``), the
columns in the schema's order, missing values as empty fields, times in
microseconds (0: before the trace began, 2^63-1: after it ended), CPU and
memory normalized to the largest machine. Returns what was written, for
tests to compare a reader's output against.

The cell is ``samples.google2019.draw``'s (the same lives: tiers mixed,
heavy-tailed tasks and run times, standing load at 0, evictions and
resubmissions, failures, kills, lost tasks, tasks running or waiting at
the end, request updates, machines added, removed and resized), in the
2011 trace's terms: priorities 0-11, event codes 0-8, no alloc sets, no
dependencies; constraints are task_constraints rows (operators 0-3); a
few jobs have no job events (their tasks name them) and a few no tasks.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from schedlab.schedulers.traces import form
from schedlab.schedulers.traces.samples.google2019 import (AFTER_END, ATTRIBUTES, EVICT, FAIL, FINISH, KILL, LOST,
                                                           SCHEDULE, SUBMIT, UPDATE_PENDING, UPDATE_RUNNING, US, Cell,
                                                           csv_text, digest, draw, expected, shard_count, write_sharded)

TIERS = ("free", "best_effort_batch", "production", "monitoring")
TIER_P = (0.15, 0.5, 0.3, 0.05)
DEFAULT_TIER = "best_effort_batch"  # the reader's, for a job with no tasks (no priority)
_PRIORITY = {"free": (0, 0, 1), "best_effort_batch": (2, 4, 4, 5, 6, 8), "production": (9, 9, 10), "monitoring": (11,)}
# The 2019 writer's event codes -> 2011's (QUEUE and ENABLE are not drawn for 2011).
CODE = np.full(11, -1, np.int8)
for _c19, _c11 in ((SUBMIT, 0), (SCHEDULE, 1), (EVICT, 2), (FAIL, 3), (FINISH, 4), (KILL, 5), (LOST, 6),
                   (UPDATE_PENDING, 7), (UPDATE_RUNNING, 8)):
    CODE[_c19] = _c11
OPERATORS = ("==", "!=", "<", ">")


def write(out: Path, *, machines: int = 40, jobs: int = 300, hours: float = 6.0, seed: int = 0,
          gz: bool = False) -> dict[str, Any]:
    """A synthetic ClusterData2011_2 trace in ``out``; returns what a reader
    must convert it to (see ``samples.google2019.expected``) and the files."""
    cell = draw(machines, jobs, hours, seed, TIERS, TIER_P, queue=False, empty=0.005, ops=len(OPERATORS),
                machine_ids=(5, 400_000), job_ids=(6_000_000_000, 3_000))
    rng = np.random.default_rng(seed + 1)
    w = _Writer(out, gz, cell, rng)
    tier_names = [TIERS[t] for t in cell.j_tier.tolist()]
    prio = np.array([int(rng.choice(_PRIORITY[t])) for t in tier_names], np.int64)
    users = [digest("user", u) for u in cell.j_user.tolist()]
    w.machines()
    w.attributes()
    w.jobs(users)
    w.tasks(prio, users)
    w.constraints()
    no_tasks = cell.j_tasks == 0  # no task events: no priority
    cons = [frozenset(f"{n} {OPERATORS[op]} {v}".rstrip() for n, op, v in c) for c in cell.j_cons]
    notes: dict[str, object] = {"task_events": int(np.sum(cell.e_time != AFTER_END)),
             "task_events_after_the_end": int(np.sum(cell.e_time == AFTER_END)),
             "jobs_without_job_events": int(cell.j_orphan.sum())}
    x = expected(cell, [DEFAULT_TIER if e else t for e, t in zip(no_tasks.tolist(), tier_names)],
                 np.where(no_tasks, -1, prio), users, cons, False, notes)
    x["files"] = w.files
    x["apart"] = int(w.apart[cell.j_tasks > 0].sum())
    return x


class _Writer:
    def __init__(self, out: Path, gz: bool, cell: Cell, rng: np.random.Generator) -> None:
        self.out, self.gz, self.cell, self.rng = out, gz, cell, rng
        self.files: list[Path] = []
        self.apart = rng.random(cell.job_ids.size) < 0.05  # jobs whose tasks must use different machines

    def _table(self, table: str, rows: list[tuple[Any, ...]] | Any, n: int, chunk: Any = None, parts: int = 1) -> None:
        folder = self.out / table
        folder.mkdir(parents=True, exist_ok=True)
        paths = [folder / f"part-{i:05d}-of-{parts:05d}.csv{'.gz' if self.gz else ''}" for i in range(parts)]
        self.files += paths
        write_sharded(paths, n, self.gz, "", chunk or (lambda a, b: csv_text(rows[a:b])))

    def machines(self) -> None:
        c = self.cell
        nan = np.isnan
        rows = [(t, int(c.machine_ids[m]), k, digest("platform", m % 5), "" if nan(cpu) else cpu, "" if nan(mem) else mem)
                for t, m, k, cpu, mem in zip(c.m_time.tolist(), c.m_machine.tolist(), c.m_kind.tolist(), c.m_cpu.tolist(),
                                             c.m_mem.tolist())]
        self._table("machine_events", rows, len(rows))

    def attributes(self) -> None:
        rows = [(0, m, digest("attribute", (i * 7 + a) % ATTRIBUTES), (i + a) % 8, 0)
                for i, m in enumerate(self.cell.machine_ids.tolist()) for a in range(3)]
        self._table("machine_attributes", rows, len(rows))

    def jobs(self, users: list[str]) -> None:
        c, H = self.cell, self.cell.horizon
        J = c.job_ids.size
        big = np.iinfo(np.int64).max
        first = np.full(J, big)
        np.minimum.at(first, c.t_job, np.where(c.x_start >= 0, c.x_start, big))
        last = np.zeros(J, np.int64)
        np.maximum.at(last, c.t_job, np.where(c.x_end >= 0, c.x_end, big))
        empty = c.j_tasks == 0
        last[empty] = c.j_submit[empty] + 60 * US
        all_fin = np.ones(J, bool)
        np.logical_and.at(all_fin, c.t_job, c.x_reason == form.FINISHED)
        ev: list[tuple[int, int, int, int]] = []  # time, step, job, 2011 code
        for j in np.flatnonzero(~c.j_orphan).tolist():
            ev.append((int(c.j_submit[j]), 0, j, 0))
            if first[j] <= H:
                ev.append((int(first[j]), 1, j, 1))
            if last[j] <= H:
                ev.append((int(last[j]), 2, j, 4 if all_fin[j] and not empty[j] else 5))
        ev.sort()
        rows = [(t, "", int(c.job_ids[j]), code, users[j] if step == 0 or self.rng.random() < 0.7 else "", j % 4,
                 digest("job", j), digest("logical", j % 97)) for t, step, j, code in ev]
        self._table("job_events", rows, len(rows), parts=shard_count(len(rows), 500_000))

    def tasks(self, prio: np.ndarray, users: list[str]) -> None:
        c, rng = self.cell, self.rng
        n = c.e_time.size
        task = c.e_task
        job = c.t_job[task]
        req = np.where(c.e_new[:, None], c.t_req2[task], c.t_req[task])
        code = CODE[c.e_code]
        assert (code >= 0).all(), "the cell was drawn with events 2011 has no code for"
        cols = {  # numpy columns, made Python values a chunk at a time
            "time": c.e_time, "job": c.job_ids[job], "index": c.t_index[task],
            "machine": np.where(c.e_machine >= 0, c.machine_ids[np.maximum(c.e_machine, 0)], -1),
            "code": code, "jix": job, "prio": prio[job], "cpu": req[:, 0], "mem": req[:, 1], "blank": c.e_blank,
            "disk": np.round(rng.uniform(0, 0.001, n), 6), "user_out": (c.e_code != SUBMIT) & (rng.random(n) < 0.3),
            "missing": np.where(rng.random(n) < 0.002, rng.integers(0, 3, n), -1),
            # the restriction: 0 or 1, left out on some events after the submission
            "apart": np.where((c.e_code != SUBMIT) & (rng.random(n) < 0.2), -1, self.apart[job].astype(int)),
        }

        def chunk(a: int, b: int) -> str:
            k = {name: v[a:b].tolist() for name, v in cols.items()}
            return csv_text((k["time"][i], "" if k["missing"][i] < 0 else k["missing"][i], k["job"][i], k["index"][i],
                             "" if k["machine"][i] < 0 else k["machine"][i], k["code"][i],
                             "" if k["user_out"][i] else users[k["jix"][i]], k["jix"][i] % 4, k["prio"][i],
                             "" if k["blank"][i] else k["cpu"][i], "" if k["blank"][i] else k["mem"][i],
                             "" if k["blank"][i] else k["disk"][i], "" if k["apart"][i] < 0 else k["apart"][i])
                            for i in range(b - a))

        self._table("task_events", None, n, chunk, parts=shard_count(n))

    def constraints(self) -> None:
        c = self.cell
        rows: list[tuple[Any, ...]] = []
        for t in np.flatnonzero(np.array([bool(c.j_cons[j]) for j in c.t_job.tolist()], bool)).tolist():
            j = int(c.t_job[t])
            rows += [(int(c.t_submit[t]), int(c.job_ids[j]), int(c.t_index[t]), op, name, "" if v is None else v)
                     for name, op, v in c.j_cons[j]]
        rows.sort(key=lambda r: (r[0], r[1], r[2]))
        self._table("task_constraints", rows, len(rows), parts=shard_count(len(rows), 1_000_000))
