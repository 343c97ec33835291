"""What an application asks for: its outstanding tasks, and YARN's view of
them as ResourceRequests.

A YARN ApplicationMaster asks in ``ResourceRequest`` rows: (priority,
resource name = a host, a rack or ``*``, capability, number of containers,
relax locality). Here an application's outstanding asks are kept as *tasks*
(each with its capability, priority and preferred nodes), which is what an
AM such as MapReduce's tracks itself; :meth:`Asks.resource_requests` and
:meth:`Asks.counts` give the equivalent rows. Allocating a task removes it,
which decrements the counts at its node, rack and ``*`` levels, as YARN's
AppSchedulingInfo does on an allocation; a task with several preferred
nodes also leaves the rows of its *other* nodes, which in YARN happens when
the AM updates its asks on its next heartbeat (the transient over-count in
between is not modelled).

Priorities: a LOWER number is a HIGHER priority (YARN's convention).
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from schedlab.schedulers.archs.yarn.locality import (
    NODE_LOCAL,
    OFF_SWITCH,
    RACK_LOCAL,
    Level,
)
from schedlab.schedulers.model.resources import BASE

ANY = "*"


def host_name(node: int) -> str:
    """The resource name of a node in ResourceRequest rows."""
    return f"host{node}"


def rack_name(rack: int) -> str:
    """The resource name of a rack (YARN rack names are paths)."""
    return f"/rack{rack}"


K = TypeVar("K", bound=Hashable)


def _unfile(index: dict[K, dict[int, None]], key: K, task_id: int) -> None:
    """Take ``task_id`` out of ``index[key]``, and the key out once it holds none."""
    d = index[key]
    del d[task_id]
    if not d:
        del index[key]


@dataclass(frozen=True)
class ResourceRequest:
    """One row of YARN's ask table."""

    priority: int
    resource_name: str  # host_name(n), rack_name(r) or ANY
    capability: tuple[float, ...]
    num_containers: int
    relax_locality: bool = True


@dataclass
class TaskAsk:
    """One outstanding container an application wants.

    ``task_id`` is unique within its application. ``preferred``: the nodes
    holding its data (empty: no preference, placeable anywhere at once).
    ``relax_locality=False`` pins it to ``preferred`` forever. ``is_am``: the
    ApplicationMaster's own container (preempted last)."""

    task_id: int
    capability: np.ndarray
    priority: int = 1
    preferred: tuple[int, ...] = ()
    relax_locality: bool = True
    is_am: bool = False
    seq: int = -1  # age: set by Asks.add, oldest first
    cap_key: tuple[float, ...] = ()  # the capability as a tuple, set by Asks.add


@dataclass(frozen=True)
class Pick:
    """The outcome of offering a node to an application.

    ``task`` and ``level``: what to allocate (``None``: nothing).
    ``declined``: the priority at which the application declined the node
    for locality only (a task there would have fit, at a level not yet
    allowed); the caller counts one missed opportunity for it. As in YARN's
    RegularContainerAllocator, such a decline ends the offer to this
    application: lower priorities do not jump ahead of a waiting higher one."""

    task: TaskAsk | None = None
    level: Level | None = None
    declined: int | None = None


@dataclass
class Asks:
    """An application's outstanding tasks, indexed for picking on a node.

    Indexes (every dict keeps insertion order = age, since tasks only ever
    get a larger ``seq``): per priority all tasks; per (priority, node) the
    tasks preferring that node; per (priority, rack) the tasks preferring a
    node on it. ``pending`` is the summed capability, kept as tasks come and
    go."""

    rack_of: np.ndarray
    _tasks: dict[int, TaskAsk] = field(default_factory=dict)
    _by_pri: dict[int, dict[int, None]] = field(default_factory=dict)
    _by_node: dict[tuple[int, int], dict[int, None]] = field(default_factory=dict)
    _by_rack: dict[tuple[int, int], dict[int, None]] = field(default_factory=dict)
    _anywhere: dict[int, dict[int, None]] = field(default_factory=dict)  # per priority: tasks without preference
    _seq: int = 0
    pending: np.ndarray = field(default_factory=lambda: np.zeros(len(BASE)))  # [R]: its width is every capability's

    def __len__(self) -> int:
        return len(self._tasks)

    def __contains__(self, task_id: int) -> bool:
        return task_id in self._tasks

    def get(self, task_id: int) -> TaskAsk:
        return self._tasks[task_id]

    def _racks(self, t: TaskAsk) -> list[int]:
        return sorted({int(self.rack_of[n]) for n in t.preferred})

    def add(self, task: TaskAsk) -> None:
        """Add an outstanding task. Raises ValueError for a duplicate id, a
        bad capability, an unknown preferred node, or ``relax_locality=False``
        without preferred nodes (it could never be placed)."""
        if task.task_id in self._tasks:
            raise ValueError(f"task {task.task_id} is already outstanding")
        cap = np.asarray(task.capability, dtype=np.float64)
        width = self.pending.shape[0]
        if cap.shape != (width,) or np.any(~np.isfinite(cap)) or np.any(cap < 0):
            raise ValueError(f"task {task.task_id}: capability must be {width} finite numbers >= 0, got {task.capability!r}")
        n_nodes = len(self.rack_of)
        preferred = tuple(dict.fromkeys(int(n) for n in task.preferred))
        if any(n < 0 or n >= n_nodes for n in preferred):
            raise ValueError(f"task {task.task_id}: preferred nodes {task.preferred!r} outside 0..{n_nodes - 1}")
        if not task.relax_locality and not preferred:
            raise ValueError(f"task {task.task_id}: relax_locality=False needs preferred nodes")
        task.capability, task.preferred, task.seq, task.cap_key = cap, preferred, self._seq, tuple(cap.tolist())
        self._seq += 1
        self._tasks[task.task_id] = task
        p = task.priority
        self._by_pri.setdefault(p, {})[task.task_id] = None
        for n in preferred:
            self._by_node.setdefault((p, n), {})[task.task_id] = None
        for r in self._racks(task):
            self._by_rack.setdefault((p, r), {})[task.task_id] = None
        if not preferred:
            self._anywhere.setdefault(p, {})[task.task_id] = None
        self.pending = self.pending + cap

    def remove(self, task_id: int) -> TaskAsk:
        """Take a task out (allocated or cancelled)."""
        t = self._tasks.pop(task_id)
        p = t.priority
        _unfile(self._by_pri, p, task_id)
        for n in t.preferred:
            _unfile(self._by_node, (p, n), task_id)
        for r in self._racks(t):
            _unfile(self._by_rack, (p, r), task_id)
        if not t.preferred:
            _unfile(self._anywhere, p, task_id)
        self.pending = np.maximum(self.pending - t.capability, 0.0) if self._tasks else np.zeros_like(self.pending)
        return t

    def priorities(self) -> list[int]:
        """Priorities with outstanding tasks, highest (lowest number) first."""
        return sorted(self._by_pri)

    def tasks(self) -> Iterator[TaskAsk]:
        """All outstanding tasks, highest priority first, oldest first."""
        for p in self.priorities():
            for tid in self._by_pri[p]:
                yield self._tasks[tid]

    # ------------------------------------------------------------ YARN's view

    def counts(self) -> dict[tuple[int, str], int]:
        """Outstanding containers per (priority, resource name): each task
        counts once at every preferred host, once at every rack holding one,
        and once at ``*``."""
        out: dict[tuple[int, str], int] = {}
        for t in self.tasks():
            names = [host_name(n) for n in t.preferred] + [rack_name(r) for r in self._racks(t)] + [ANY]
            for name in names:
                out[(t.priority, name)] = out.get((t.priority, name), 0) + 1
        return out

    def resource_requests(self) -> list[ResourceRequest]:
        """The rows an AM would send: tasks grouped by (priority, resource
        name, capability, relax), sorted by priority, then host < rack <
        ``*``, then name and capability. A pinned task (``relax_locality=False``)
        appears at its rack and ``*`` rows with ``relax_locality=False``."""
        rows: dict[tuple[int, int, str, tuple[float, ...], bool], int] = {}
        for t in self.tasks():
            cap = t.cap_key
            keys = [(t.priority, 0, host_name(n), cap, True) for n in t.preferred]
            keys += [(t.priority, 1, rack_name(r), cap, t.relax_locality) for r in self._racks(t)]
            keys.append((t.priority, 2, ANY, cap, t.relax_locality))
            for k in keys:
                rows[k] = rows.get(k, 0) + 1
        return [ResourceRequest(p, name, cap, n, relax) for (p, _, name, cap, relax), n in sorted(rows.items())]

    # ------------------------------------------------------------ picking

    def pick(self, node: int, allowed: Callable[[int], Level], fits: Callable[[np.ndarray], bool]) -> Pick:
        """Choose a task for ``node``, as YARN's allocator walks an
        application's asks on a heartbeat.

        Priorities highest first; within one: node-local tasks, then
        rack-local ones if ``allowed(priority)`` permits, then off-switch
        ones (a task without preference is off-switch but needs no delay);
        oldest first within a level. ``fits(capability)``: would it fit
        (node resources, queue and user limits). A priority whose only
        fitting tasks are not local enough is *declined* (see :class:`Pick`)
        and ends the walk; a priority where nothing fits at all is skipped.
        ``relax_locality=False`` tasks are only ever node-local."""
        rack = int(self.rack_of[node])
        memo: dict[tuple[float, ...], bool] = {}

        def ok(t: TaskAsk) -> bool:
            if t.cap_key not in memo:
                memo[t.cap_key] = bool(fits(t.capability))
            return memo[t.cap_key]

        for p in self.priorities():
            local = self._by_node.get((p, node), {})
            for tid in local:
                t = self._tasks[tid]
                if ok(t):
                    return Pick(t, NODE_LOCAL)
            level = allowed(p)
            blocked = False
            on_rack = self._by_rack.get((p, rack), {})
            for tid in on_rack:
                t = self._tasks[tid]
                if tid in local or not t.relax_locality or not ok(t):
                    continue
                if level >= RACK_LOCAL:
                    return Pick(t, RACK_LOCAL)
                blocked = True
                break
            # Off-switch: the oldest fitting task among those without a
            # preference (no delay) and, once allowed, the relaxable rest.
            free_choice = next((self._tasks[tid] for tid in self._anywhere.get(p, {}) if ok(self._tasks[tid])), None)
            far = None
            if level >= OFF_SWITCH or not blocked:
                for tid in self._by_pri[p]:
                    t = self._tasks[tid]
                    if (not t.preferred or tid in local or tid in on_rack or not t.relax_locality
                            or (free_choice is not None and t.seq > free_choice.seq) or not ok(t)):
                        continue
                    far = t
                    break
            if far is not None and level >= OFF_SWITCH:
                return Pick(far, OFF_SWITCH)
            if free_choice is not None:
                return Pick(free_choice, OFF_SWITCH)
            if blocked or far is not None:
                return Pick(declined=p)
        return Pick()
