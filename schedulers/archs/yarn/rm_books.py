"""The ResourceManager's bookkeeping types: application and container
phases, per-application and per-container books, queue samples
(:mod:`rm_state` decides with them; :mod:`rm_recovery` rebuilds them)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from schedlab.schedulers.archs.yarn.messages import (
    Allocation,
    AppRecord,
    ContainerStatus,
    TaskSpec,
)

EPOCH_SHIFT = 32  # container ids of RM epoch e start at e << EPOCH_SHIFT

# Application states.
ACCEPTED = "accepted"  # admitted, its (current attempt's) AM not started yet
RUNNING = "running"  # its AM container was handed to its node
APP_FINISHED = "finished"
APP_FAILED = "failed"
APP_KILLED = "killed"
TERMINAL = (APP_FINISHED, APP_FAILED, APP_KILLED)

# A container's phase in the RM's books.
ALLOCATED = "allocated"  # granted to the AM, no start asked yet
QUEUED = "queued"  # to start: waiting for its node's heartbeat to pull it
STARTED = "started"  # handed to its node


@dataclass(frozen=True)
class RMConfig:
    """``max_am_attempts``: YARN's ``yarn.resourcemanager.am.max-attempts``
    (2). ``lost_am_counts``: an AM lost with its node counts as a failed
    attempt (the brief's rule; YARN >= 2.8 counts such ABORTED exits as
    not the AM's fault). A preempted AM never counts (as YARN).
    ``global_scheduling``: None follows the scheduler's config."""

    max_am_attempts: int = 2
    lost_am_counts: bool = True
    global_scheduling: bool | None = None

    def __post_init__(self) -> None:
        if self.max_am_attempts < 1:
            raise ValueError(f"max_am_attempts must be >= 1, got {self.max_am_attempts}")


@dataclass
class Held:
    """The RM's book of one container beside the scheduler's ``Container``."""

    app_id: int
    task_id: int
    node: int
    phase: str


@dataclass
class AppBook:
    """One admitted application: its record, attempt, state and what its
    AM has not heard yet. ``synced``: False after an RM restart until its AM
    resyncs. ``believed``: the containers its AM said it holds on resync,
    kept until the recovery window closes."""

    record: AppRecord
    leaf: str
    tasks: dict[int, TaskSpec]
    attempt: int = 1
    failures: int = 0
    state: str = ACCEPTED
    am_container: int | None = None
    finished: dict[int, None] = field(default_factory=dict)
    allocated: list[Allocation] = field(default_factory=list)
    completed: list[ContainerStatus] = field(default_factory=list)
    asked_at: dict[int, float] = field(default_factory=dict)
    synced: bool = True
    am_launched_before: bool = False
    believed: dict[int, int] | None = None
    attempt_known: bool = True  # False: restored without its attempt; the AM's resync tells it
    calls: int = 0  # allocate (and resync) calls of the current attempt answered: its AM counts the same


@dataclass(frozen=True)
class QueueSample:
    """One queue's usage for sampling: ``used`` and ``pending`` vectors and
    ``entitlement`` (the Fair scheduler's instantaneous fair share, else the
    guaranteed capacity), with its preemptions so far."""

    queue: str
    used: tuple[float, ...]
    pending: tuple[float, ...]
    entitlement: tuple[float, ...]
    preemptions: int


def _t(v: np.ndarray) -> tuple[float, ...]:
    return tuple(round(float(x), 9) for x in v)
