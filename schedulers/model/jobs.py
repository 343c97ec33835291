"""Jobs, tasks and the task life cycle."""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np


class JobKind(str, enum.Enum):
    BATCH = "batch"
    SERVICE = "service"


class TaskState(str, enum.Enum):
    """Life cycle: PENDING -> RUNNING -> (COMPLETED | LOST); a LOST task goes
    back to PENDING when its job is retried. Service tasks stay RUNNING until
    the run ends."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    LOST = "lost"


ALLOWED_TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    TaskState.PENDING: frozenset({TaskState.RUNNING}),
    TaskState.RUNNING: frozenset({TaskState.COMPLETED, TaskState.LOST}),
    TaskState.LOST: frozenset({TaskState.PENDING}),
    TaskState.COMPLETED: frozenset(),
}


def transition(current: TaskState, new: TaskState) -> TaskState:
    """Return ``new`` if the life cycle allows it, else raise ValueError."""
    if new not in ALLOWED_TRANSITIONS[current]:
        raise ValueError(f"illegal task transition {current.value} -> {new.value}")
    return new


@dataclass(frozen=True)
class Job:
    """One job: ``tasks`` identical requests, each with its own duration.

    Durations are emulated seconds; ``math.inf`` means the task runs until the
    end of the run (service jobs)."""

    job_id: int
    job_class: str
    kind: JobKind
    priority: int
    submit_time: float
    request: tuple[float, ...]  # per task, one per resource the cell declares
    durations: tuple[float, ...]  # one per task
    # The user's estimate of its run time (a batch system's requested time
    # limit, as an SWF trace records it); None: the user gave none.
    estimate: float | None = None
    # The device models its tasks may run on, in a cell with devices (empty: any).
    models: tuple[str, ...] = ()
    # A gang: its tasks start together or not at all; an architecture that
    # holds part of a gang while it gathers the rest lets go after
    # ``gang_timeout`` emulated seconds (None: not a gang).
    gang_timeout: float | None = None

    @property
    def gang(self) -> bool:
        return self.gang_timeout is not None

    @property
    def tasks(self) -> int:
        return len(self.durations)

    def request_vector(self) -> np.ndarray:
        return np.asarray(self.request, dtype=np.float64)

    def to_wire(self) -> dict:
        """Plain-data form for messages and events (inf becomes -1)."""
        return {
            "job_id": self.job_id,
            "job_class": self.job_class,
            "kind": self.kind.value,
            "priority": self.priority,
            "submit_time": self.submit_time,
            "request": list(self.request),
            "durations": [-1.0 if math.isinf(d) else d for d in self.durations],
            **({} if self.estimate is None else {"estimate": self.estimate}),
            **({"models": list(self.models)} if self.models else {}),
            **({"gang_timeout": self.gang_timeout} if self.gang_timeout is not None else {}),
        }

    @staticmethod
    def from_wire(d: dict) -> Job:
        return Job(
            job_id=int(d["job_id"]),
            job_class=d["job_class"],
            kind=JobKind(d["kind"]),
            priority=int(d["priority"]),
            submit_time=float(d["submit_time"]),
            request=tuple(d["request"]),
            durations=tuple(math.inf if x < 0 else float(x) for x in d["durations"]),
            estimate=None if d.get("estimate") is None else float(d["estimate"]),
            models=tuple(d.get("models", ())),
            gang_timeout=None if d.get("gang_timeout") is None else float(d["gang_timeout"]),
        )
