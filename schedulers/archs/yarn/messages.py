"""What the ResourceManager, the ApplicationMasters and the NodeManagers
tell each other: application records and the replies of
:class:`~schedlab.schedulers.archs.yarn.rm_state.RMState`.

Plain frozen data, so a shell can send them as they are (or flatten them),
and both pure halves (``rm_state``, ``app_master``) import the same names.

Launches use the machine hosts' wire shape
``[app_id, task, node, request, duration, start, owner]`` with the
container id in ``owner`` (:func:`container_owner`): a host keeps the owner
of every running task and reports it when it registers again, which is how
a restarted ResourceManager learns the container ids back.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from schedlab.schedulers.archs.yarn.requests import TaskAsk
from schedlab.schedulers.model.resources import BASE

AM_TASK = -1  # the task id of an application's master container
AM_PRIORITY = 0  # the AM ask's priority: above every task's (lower number = higher priority)
OWNER_PREFIX = "container_"

# Completion states an AM hears about its containers (ContainerExitStatus, simplified).
FINISHED = "finished"  # the task ran to its end
PREEMPTED = "preempted"  # taken back by the scheduler's preemption
LOST = "lost"  # its node was lost, or it did not survive a ResourceManager restart
COMPLETION_STATES = (FINISHED, PREEMPTED, LOST)

# Answers to an AM's allocate call.
OK = "ok"
RESYNC = "resync"  # the RM does not know this application attempt's state: resync (recover_app)
STALE = "stale"  # an older attempt of the application: this AM must stop
GONE = "gone"  # the application finished, failed or was never admitted


def container_owner(container_id: int) -> str:
    """The ``owner`` field of a launch: names the container."""
    return f"{OWNER_PREFIX}{int(container_id)}"


def owner_container(owner: str) -> int | None:
    """The container id in a launch's ``owner`` (None: not a YARN container)."""
    if not owner.startswith(OWNER_PREFIX):
        return None
    try:
        return int(owner[len(OWNER_PREFIX):])
    except ValueError:
        return None


def _vector(name: str, value: tuple[float, ...]) -> tuple[float, ...]:
    v = tuple(float(x) for x in value)
    if len(v) < len(BASE) or any(not math.isfinite(x) or x < 0 for x in v):
        raise ValueError(f"{name} must be {len(BASE)} or more finite numbers >= 0 (one per resource), got {value!r}")
    return v


@dataclass(frozen=True)
class TaskSpec:
    """One task of an application: what its container needs, how long it
    runs, the nodes holding its input (data replicas: its preferred nodes)
    and its priority (>= 1; 0 is the AM's)."""

    task_id: int
    capability: tuple[float, ...]
    duration: float
    preferred: tuple[int, ...] = ()
    priority: int = 1

    def __post_init__(self) -> None:
        if self.task_id < 0:
            raise ValueError(f"task ids are >= 0 (-1 is the AM's), got {self.task_id}")
        object.__setattr__(self, "capability", _vector(f"task {self.task_id} capability", self.capability))
        object.__setattr__(self, "preferred", tuple(int(n) for n in self.preferred))
        if not (self.duration > 0):
            raise ValueError(f"task {self.task_id}: duration must be > 0, got {self.duration!r}")
        if self.priority <= AM_PRIORITY:
            raise ValueError(f"task {self.task_id}: priority must be > {AM_PRIORITY} (the AM's), got {self.priority}")


@dataclass(frozen=True)
class AppRecord:
    """An admitted application as the ApplicationsManager records it (and
    the coordinator replicates it): what a restarted ResourceManager needs
    to know the application again. ``queue``: a leaf's full or unique short
    name. ``submitted_at``: for the AM launch delay."""

    app_id: int
    queue: str
    user: str
    tasks: tuple[TaskSpec, ...]
    am_resources: tuple[float, ...]
    submitted_at: float = 0.0
    weight: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "am_resources", _vector(f"app {self.app_id} am_resources", self.am_resources))
        object.__setattr__(self, "tasks", tuple(self.tasks))
        ids = [t.task_id for t in self.tasks]
        if len(set(ids)) != len(ids):
            raise ValueError(f"app {self.app_id}: duplicate task ids")

    def task(self, task_id: int) -> TaskSpec:
        """The task with this id (KeyError if none)."""
        for t in self.tasks:
            if t.task_id == task_id:
                return t
        raise KeyError(task_id)

    def task_map(self) -> dict[int, TaskSpec]:
        return {t.task_id: t for t in self.tasks}


@dataclass(frozen=True)
class Admission:
    """``submit``'s answer: admitted, or rejected with the reason."""

    app_id: int
    accepted: bool
    reason: str = ""
    queue: str = ""  # the leaf's full name when accepted


@dataclass(frozen=True)
class Allocation:
    """A container newly allocated to an AM; it names the task it was asked for."""

    container_id: int
    task_id: int
    node: int
    resources: tuple[float, ...]
    locality: str  # "node_local", "rack_local" or "off_switch"


@dataclass(frozen=True)
class ContainerStatus:
    """How one of an AM's containers ended (one of ``COMPLETION_STATES``);
    ``node`` -1: unknown (a container a restarted RM never heard of)."""

    container_id: int
    task_id: int
    node: int
    state: str
    at: float


@dataclass(frozen=True)
class AllocateReply:
    """The answer to an AM's allocate call. ``status``: OK, RESYNC, STALE
    or GONE (then the lists are empty). ``allocated`` and ``completed``:
    everything since the AM's previous call. ``refused_starts``: start
    requests the RM refused (the container was released; see
    ``RMState.am_allocate``); ``refused_asks``: asks it ignored."""

    status: str
    attempt: int = 0
    allocated: tuple[Allocation, ...] = ()
    completed: tuple[ContainerStatus, ...] = ()
    refused_starts: tuple[int, ...] = ()
    refused_asks: tuple[int, ...] = ()


@dataclass(frozen=True)
class NodeReply:
    """What a node must do after its heartbeat: stop ``kills``
    (``[app_id, task]``) first, then start ``launches`` (the hosts' launch
    shape). ``reset``: the node had been declared lost; it must stop
    everything and start empty (its containers were written off).
    ``resync``: a restarted RM does not know this node; it must re-register
    with what it runs (``RMState.recover_node``). ``am_started``:
    (app_id, attempt) of AM containers in ``launches`` (the shell starts
    those AMs)."""

    launches: list[list] = field(default_factory=list)
    kills: list[list[int]] = field(default_factory=list)
    reset: bool = False
    resync: bool = False
    am_started: list[tuple[int, int]] = field(default_factory=list)

    def wire(self) -> tuple[list[list], list[list[int]]] | dict:
        """As a machine host's ``exchange`` answer: ``(launches, kills)``,
        or ``{"reset": True, "launches": (launches, kills)}`` after a reset."""
        if self.reset:
            return {"reset": True, "launches": (self.launches, self.kills)}
        return self.launches, self.kills


@dataclass(frozen=True)
class RunningReport:
    """A container a NodeManager reports as running when it registers with
    a restarted RM. ``start``: when it started, if the node knows."""

    container_id: int
    app_id: int
    task_id: int
    resources: tuple[float, ...]
    start: float | None = None

    @classmethod
    def from_host_row(cls, row: list) -> RunningReport | None:
        """From a machine host's ``agent_report`` row ``[job, task, machine,
        request, owner]``; None if the owner names no container."""
        cid = owner_container(str(row[4]))
        if cid is None:
            return None
        return cls(cid, int(row[0]), int(row[1]), tuple(float(x) for x in row[3]))


@dataclass(frozen=True)
class AMResync:
    """What an AM re-sends a restarted RM (``RMState.recover_app``): its
    attempt, its outstanding asks, the containers it believes it holds
    (container id -> task id) and the tasks it knows finished (its job
    history)."""

    attempt: int
    asks: tuple[TaskAsk, ...]
    containers: dict[int, int]
    finished: tuple[int, ...]


def as_vector(v: tuple[float, ...]) -> np.ndarray:
    return np.asarray(v, dtype=np.float64)
