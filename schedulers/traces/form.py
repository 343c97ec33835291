"""The one canonical form every trace reader writes and every architecture
replays: machines with their add/remove/update events, jobs, and tasks, as
NumPy columns in one ``.npz`` file.

Why NumPy and not Parquet: NumPy is a core dependency, so a converted trace
loads on every install (pyarrow is an optional extra); every column is a
fixed-width number (strings, such as tiers, users and constraints, are
small tables the columns index), so ``np.load`` reads a converted cell-day
in about a second. Measured in docs/how-to/traces.md.

Times are seconds from the trace's window start (``Trace.origin`` says where
that was in the trace's own clock). Amounts are in the trace's own units
(``Trace.units``: Google's are fractions of its largest machine);
a scenario may scale them (``[workload.trace] units``).

What a task row keeps of a task's life (its events folded by
``schedulers.traces.task_events``): when it was first submitted, first and
last started, when and why it last ended (``END_REASONS``; ``NONE``: it was
still running, or still waiting, at the window's end), where it first ran,
and how many times it was started. A replay runs it for its last attempt's
run time (``Trace.run_times``); a task that never ran is not replayed.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np

FORMAT_VERSION = 1

# Machine events.
ADD, REMOVE, UPDATE = 0, 1, 2

# How a task's last attempt ended.
NONE, FINISHED, KILLED, EVICTED, FAILED, LOST = 0, 1, 2, 3, 4, 5
END_REASONS = ("none", "finished", "killed", "evicted", "failed", "lost")


class TraceError(ValueError):
    """Bad trace input; str() is one line naming the file, the line (or
    row) and column where known, and the problem."""

    @staticmethod
    def at(source: str, line: int | None, column: str | None, problem: str) -> TraceError:
        where = source + (f": line {line}" if line is not None else "") + (f": column {column!r}" if column else "")
        return TraceError(f"{where}: {problem}")


@dataclass(frozen=True)
class Trace:
    """A converted trace. Arrays are columns; rows are sorted (machine
    events by time, jobs by submit time, tasks by job then index)."""

    format: str  # the reader that wrote it (google2019, ...)
    sources: tuple[str, ...]  # what it was converted from
    resources: tuple[str, ...]  # the columns of capacities and requests (cpu, mem, ...)
    units: tuple[str, ...]  # what one unit of each is, in words
    origin: float  # the window's start, in the trace's own clock (s)
    span: float  # the window's length (s): events lie in [0, span]
    recorded: bool  # tasks carry the trace's own start times and machines (a reference for a replay)
    tiers: tuple[str, ...]  # job_tier indexes these
    service_tiers: tuple[str, ...]  # the tiers whose jobs are long-running services (the rest: batch)
    users: tuple[str, ...]  # job_user indexes these
    constraints: tuple[str, ...]  # job_constraint indexes these ("attribute op value")
    # Machines: one id per machine (dense), its events over time.
    machine_source: np.ndarray  # [M] int64: the trace's own machine id
    machine_time: np.ndarray  # [E] float64
    machine_id: np.ndarray  # [E] int32
    machine_event: np.ndarray  # [E] int8: ADD, REMOVE, UPDATE
    machine_capacity: np.ndarray  # [E, R] float32 (a REMOVE's row is zeros)
    # Jobs.
    job_source: np.ndarray  # [J] int64: the trace's own job id
    job_submit: np.ndarray  # [J] float64
    job_tier: np.ndarray  # [J] int16
    job_priority: np.ndarray  # [J] int32
    job_user: np.ndarray  # [J] int32
    job_parent: np.ndarray  # [J] int32: a job index, -1 none
    job_after_ptr: np.ndarray  # [J + 1] int64: job i starts after job_after[ptr[i]:ptr[i+1]]
    job_after: np.ndarray  # int32 job indices
    job_constraint_ptr: np.ndarray  # [J + 1] int64
    job_constraint: np.ndarray  # int32 indices into constraints
    # Tasks.
    task_job: np.ndarray  # [T] int32 job index
    task_index: np.ndarray  # [T] int32: its index within its job
    task_request: np.ndarray  # [T, R] float32
    task_submit: np.ndarray  # [T] float64
    task_start: np.ndarray  # [T] float64: first start (nan: never started)
    task_last_start: np.ndarray  # [T] float64: its last attempt's start (nan: never)
    task_end: np.ndarray  # [T] float64: its last attempt's end (nan: did not end in the window)
    task_end_reason: np.ndarray  # [T] int8: END_REASONS
    task_machine: np.ndarray  # [T] int32: machine id it first ran on (-1: unknown, never)
    task_attempts: np.ndarray  # [T] int16: times started
    meta: dict = field(default_factory=dict)  # reader notes (approximations made, rows skipped)

    @property
    def machines(self) -> int:
        return int(self.machine_source.size)

    @property
    def jobs(self) -> int:
        return int(self.job_source.size)

    @property
    def tasks(self) -> int:
        return int(self.task_job.size)

    def run_times(self) -> np.ndarray:
        """[T] each task's last attempt's run time: end - last start; inf
        when it was still running at the window's end; nan when it never ran."""
        out = self.task_end - self.task_last_start
        out[np.isnan(self.task_end) & ~np.isnan(self.task_last_start)] = np.inf
        return out

    def machines_at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(machine ids, capacities [n, R]) of the machines present at ``t``
        (their last event at or before ``t`` not a REMOVE)."""
        upto = self.machine_time <= t
        ids, ev, cap = self.machine_id[upto], self.machine_event[upto], self.machine_capacity[upto]
        last = np.full(self.machines, -1, dtype=np.int64)
        last[ids] = np.arange(ids.size)  # rows are time-sorted: the last write wins
        present = np.flatnonzero(last >= 0)
        present = present[ev[last[present]] != REMOVE]
        return present, cap[last[present]].astype(np.float64)

    def save(self, path: str | Path) -> None:
        arrays = {f.name: getattr(self, f.name) for f in fields(self) if isinstance(getattr(self, f.name), np.ndarray)}
        head = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in arrays}
        head["version"] = FORMAT_VERSION
        with open(path, "wb") as fh:  # np.savez would append .npz to a name without it
            np.savez(fh, header=np.frombuffer(json.dumps(head).encode(), dtype=np.uint8), **arrays)

    @staticmethod
    def load(path: str | Path) -> Trace:
        """The trace at ``path``, or TraceError naming it and the problem."""
        try:
            with np.load(path, allow_pickle=False) as z:
                head = json.loads(bytes(z["header"]).decode())
                arrays = {k: z[k] for k in z.files if k != "header"}
        except FileNotFoundError:
            raise TraceError(f"{path}: no such file") from None
        except (OSError, ValueError, KeyError, json.JSONDecodeError) as e:
            raise TraceError(f"{path}: not a converted trace (schedlab trace convert writes one): {e}") from None
        if head.pop("version", None) != FORMAT_VERSION:
            raise TraceError(f"{path}: written by another version of schedlab's trace form: convert it again")
        names = {f.name for f in fields(Trace)}
        missing = names - set(head) - set(arrays)
        if missing:
            raise TraceError(f"{path}: missing {sorted(missing)[0]!r}: convert it again")
        for k in ("sources", "resources", "units", "tiers", "service_tiers", "users", "constraints"):
            head[k] = tuple(head[k])
        return Trace(**{k: v for k, v in head.items() if k in names}, **{k: v for k, v in arrays.items() if k in names})
