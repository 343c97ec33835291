"""The state YARN's schedulers share, and the protocol they implement.

Pure: no clock (every call takes ``now``), no I/O, no randomness. The
ResourceManager shell owns one :class:`ClusterState` and one scheduler over
it; it feeds node heartbeats (``allocate_on_node``) or, in global mode,
periodic ``allocate_global`` calls, and calls ``preemption`` on the
preemption monitor's interval, killing what it returns and then calling
:meth:`ClusterState.release`.

Accounting: a container's resources count against its node (``free``), its
application, its user within its leaf queue, and its leaf queue and every
ancestor (``queue_used``), from allocation until release. Outstanding asks
count as ``pending`` along the same path. Both are running totals kept by
:meth:`ClusterState.allocate` and :meth:`ClusterState.release`, so a
heartbeat never sums the cluster.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from schedlab.schedulers.placement.device_claims import DeviceView, place_counted
from schedlab.schedulers.archs.yarn.locality import (
    NODE_LOCAL,
    OFF_SWITCH,
    RACK_LOCAL,
    Level,
    LocalityCounters,
    LocalityDelay,
)
from schedlab.schedulers.archs.yarn.queues import ROOT, QueueTree
from schedlab.schedulers.archs.yarn.requests import Asks, TaskAsk
from schedlab.schedulers.model.resources import BASE, EPS, fits

MEM = BASE.index("mem")
CALCULATORS = ("memory", "dominant")


def share(amount: np.ndarray, total: np.ndarray, calculator: str) -> float:
    """``amount`` as a fraction of ``total`` under a YARN resource calculator:
    ``memory`` (DefaultResourceCalculator: memory only) or ``dominant``
    (DominantResourceCalculator: the largest fraction over resources).
    A resource with zero total counts as 0."""
    frac = np.divide(amount, total, out=np.zeros(len(total)), where=total > 0)
    return float(frac[MEM]) if calculator == "memory" else float(frac.max(initial=0.0))


def relevant(calculator: str, width: int) -> np.ndarray:
    """Boolean mask of the ``width`` resources a calculator compares."""
    mask = np.zeros(width, dtype=bool)
    if calculator == "memory":
        mask[MEM] = True
    else:
        mask[:] = True
    return mask


@dataclass
class Container:
    """A granted container: ``resources`` on ``node`` for ``app_id`` since
    ``start``, for its task ``task_id`` (at ``priority``, placed at
    ``locality``). ``is_am``: the application's master."""

    container_id: int
    app_id: int
    node: int
    resources: np.ndarray
    start: float
    task_id: int
    priority: int
    locality: Level
    is_am: bool = False


@dataclass
class App:
    """A running application: its leaf queue (full name), user, submission
    order ``seq``, current ``usage`` and outstanding ``asks``."""

    app_id: int
    queue: str
    user: str
    seq: int
    asks: Asks
    usage: np.ndarray = field(default_factory=lambda: np.zeros(len(BASE)))  # [R]: the cell's width, given
    containers: dict[int, None] = field(default_factory=dict)  # ids, oldest first
    weight: float = 1.0


class ClusterState:
    """Nodes, applications, containers and the running totals over them.

    ``capacity`` [M, R] per node, ``rack_of`` [M] ints. ``apps`` keeps
    submission order. ``queue_used`` / ``queue_pending``: every queue of
    ``tree`` (root included) -> [R]. ``user_used``: (leaf, user) -> [R]."""

    def __init__(self, capacity: np.ndarray, rack_of: np.ndarray, tree: QueueTree) -> None:
        cap = np.asarray(capacity, dtype=np.float64)
        if cap.ndim != 2 or cap.shape[1] < len(BASE) or np.any(~np.isfinite(cap)) or np.any(cap < 0):
            raise ValueError(f"capacity must be [M, R >= {len(BASE)}] finite and >= 0, got shape {cap.shape}")
        racks = np.asarray(rack_of, dtype=np.int64)
        if racks.shape != (cap.shape[0],):
            raise ValueError(f"rack_of must be [{cap.shape[0]}], got shape {racks.shape}")
        self.capacity = cap
        self.width = int(cap.shape[1])
        # Global scheduling's node for a container asking for devices (None: least loaded), with
        # its own seeded generator: every replica of a replicated RM draws the same ties.
        self.devices: DeviceView | None = None
        self.rng = np.random.default_rng(0)
        self.free = cap.copy()
        self.rack_of = racks
        self._total: np.ndarray | None = None
        self.tree = tree
        self.apps: dict[int, App] = {}
        self.containers: dict[int, Container] = {}
        self.queue_used = {q: np.zeros(self.width) for q in tree}
        self.queue_pending = {q: np.zeros(self.width) for q in tree}
        self.user_used: dict[tuple[str, str], np.ndarray] = {}
        self._leaf_apps: dict[str, dict[int, None]] = {q: {} for q in tree.leaves()}
        self._paths = {q: tree.path(q) for q in tree}
        self._seq = 0
        self._next_container = 1

    def has_pending(self) -> bool:
        """Any outstanding ask anywhere (the root's pending demand: the walk
        skips every queue whose pending demand is nil, so with none at the
        root a node's heartbeat would allocate nothing)."""
        return bool(np.any(self.queue_pending[ROOT] > EPS))

    @property
    def n_nodes(self) -> int:
        return self.capacity.shape[0]

    @property
    def total(self) -> np.ndarray:
        """The cluster's capacity, summed over its nodes when first read
        after a change: a restarted RM sets the capacity of every node it
        hears (10,000 at a time), and a sum per set would make that
        quadratic in the nodes. The same numbers as summing at every set."""
        if self._total is None:
            self._total = self.capacity.sum(axis=0)
        return self._total

    # ------------------------------------------------------------ apps and asks

    def submit(self, app_id: int, queue: str, user: str, *, weight: float = 1.0) -> App:
        """Admit an application to a leaf queue (a full path or a unique
        short name; ``QueueError`` otherwise)."""
        if app_id in self.apps:
            raise ValueError(f"application {app_id} is already running")
        if not (weight > 0 and np.isfinite(weight)):
            raise ValueError(f"application weight must be > 0, got {weight!r}")
        leaf = self.tree.leaf(queue)
        app = App(app_id, leaf, user, self._seq, Asks(self.rack_of, pending=np.zeros(self.width)), np.zeros(self.width),
                  weight=float(weight))
        self._seq += 1
        self.apps[app_id] = app
        self._leaf_apps[leaf][app_id] = None
        self.user_used.setdefault((leaf, user), np.zeros(self.width))
        return app

    def _add_pending(self, leaf: str, amount: np.ndarray) -> None:
        for q in self._paths[leaf]:
            self.queue_pending[q] = np.maximum(self.queue_pending[q] + amount, 0.0)

    def add_tasks(self, app_id: int, tasks: Iterable[TaskAsk]) -> None:
        """More outstanding asks for an application."""
        app = self.apps[app_id]
        for t in tasks:
            app.asks.add(t)
            self._add_pending(app.queue, t.capability)

    def cancel_tasks(self, app_id: int, task_ids: Iterable[int]) -> None:
        """The application no longer wants these (unknown ids ignored)."""
        app = self.apps[app_id]
        for tid in task_ids:
            if tid in app.asks:
                self._add_pending(app.queue, -app.asks.remove(tid).capability)

    def finish(self, app_id: int) -> list[Container]:
        """The application ended: its asks are dropped and its containers
        released (returned, for the caller to stop)."""
        app = self.apps[app_id]
        self.cancel_tasks(app_id, [t.task_id for t in list(app.asks.tasks())])
        gone = [c for cid in list(app.containers) if (c := self.release(cid)) is not None]
        del self.apps[app_id]
        del self._leaf_apps[app.queue][app_id]
        return gone

    def apps_in(self, leaf: str) -> list[App]:
        """A leaf's applications in submission order."""
        return [self.apps[a] for a in self._leaf_apps[leaf]]

    def active_users(self, leaf: str) -> list[str]:
        """Users with outstanding asks in ``leaf`` (sorted): the ones the
        Capacity scheduler's user limit divides the queue among."""
        return sorted({a.user for a in self.apps_in(leaf) if len(a.asks)})

    def demand(self, app: App) -> np.ndarray:
        """Usage plus outstanding asks (the Fair scheduler's demand)."""
        return app.usage + app.asks.pending

    # ------------------------------------------------------------ containers

    def allocate(self, app_id: int, task_id: int, node: int, now: float, level: Level) -> Container:
        """Grant the task a container on ``node``. Raises ValueError if it
        does not fit (a scheduler bug: callers check first)."""
        app = self.apps[app_id]
        task = app.asks.get(task_id)
        if not fits(self.free[node], task.capability):
            raise ValueError(f"task {task_id} of app {app_id} does not fit on node {node}")
        app.asks.remove(task_id)
        self._add_pending(app.queue, -task.capability)
        c = Container(self._next_container, app_id, int(node), task.capability.copy(), float(now), task_id,
                      task.priority, Level(level), task.is_am)
        self._next_container += 1
        self.containers[c.container_id] = c
        app.containers[c.container_id] = None
        self._charge(app, c.node, c.resources)
        return c

    def _charge(self, app: App, node: int, amount: np.ndarray) -> None:
        self.free[node] -= amount
        app.usage = np.maximum(app.usage + amount, 0.0)
        for q in self._paths[app.queue]:
            self.queue_used[q] = np.maximum(self.queue_used[q] + amount, 0.0)
        key = (app.queue, app.user)
        self.user_used[key] = np.maximum(self.user_used[key] + amount, 0.0)

    def adopt(self, c: Container) -> Container:
        """Take over a container already running (its NodeManager reported
        it to a restarted ResourceManager): charged exactly like an
        allocation, but no ask is consumed and its id is kept. Later ids are
        above it, so a new container never reuses a recovered id. Raises
        ValueError for an unknown application or a duplicate id; a node over
        capacity after adoption is a fact of the report, not refused."""
        if c.app_id not in self.apps:
            raise ValueError(f"container {c.container_id}: application {c.app_id} is not running")
        if c.container_id in self.containers:
            raise ValueError(f"container {c.container_id} is already known")
        app = self.apps[c.app_id]
        self.containers[c.container_id] = c
        app.containers[c.container_id] = None
        self._charge(app, c.node, c.resources)
        self._next_container = max(self._next_container, c.container_id + 1)
        return c

    def reserve_ids(self, first: int) -> None:
        """New container ids are at least ``first`` from now on: a
        restarted ResourceManager starts its epoch's id range above every
        id an earlier epoch could have handed out (YARN puts the epoch in
        the container id for the same reason)."""
        self._next_container = max(self._next_container, int(first))

    def set_node_capacity(self, node: int, capacity: np.ndarray) -> None:
        """A node joins (its capacity) or leaves (zeros) the cluster; the
        cluster total follows, so shares and guarantees shrink with lost
        nodes as YARN's do. The containers still charged to the node keep
        their share: raises ValueError if they would no longer fit."""
        self.set_node_capacities([node], [capacity])

    def set_node_capacities(self, nodes: Any, capacities: Any) -> None:
        """``set_node_capacity`` for many nodes at once (``nodes`` [K],
        distinct; ``capacities`` [K, R]): what a restarted RM does for every
        node it hears, in one step instead of K. Nothing changes if any
        node's capacity is refused."""
        idx = np.asarray(nodes, dtype=np.int64).reshape(-1)
        w = self.width
        cap = np.asarray(capacities, dtype=np.float64).reshape(idx.shape[0], -1) if idx.size else np.zeros((0, w))
        if cap.shape[1] != w or np.any(~np.isfinite(cap)) or np.any(cap < 0):
            bad = next((i for i in range(len(idx)) if cap.shape[1] != w or np.any(~np.isfinite(cap[i])) or np.any(cap[i] < 0)), 0)
            raise ValueError(f"node capacity must be {w} finite numbers >= 0, got {np.asarray(capacities)[bad]!r}")
        used = self.capacity[idx] - self.free[idx]
        over = np.any(used > cap + EPS, axis=1)
        if np.any(over):
            i = int(np.argmax(over))
            raise ValueError(f"node {int(idx[i])} holds {used[i].tolist()}, more than the new capacity {cap[i].tolist()}")
        self.capacity[idx] = cap
        self.free[idx] = np.maximum(cap - used, 0.0)
        self._total = None

    def release(self, container_id: int) -> Container | None:
        """A container ended (finished, killed, preempted). Unknown ids are
        ignored (a second report of the same end)."""
        c = self.containers.pop(container_id, None)
        if c is None:
            return None
        app = self.apps[c.app_id]
        del app.containers[container_id]
        self._charge(app, c.node, -c.resources)
        self.free[c.node] = np.minimum(self.free[c.node], self.capacity[c.node])
        return c


class YarnScheduler(Protocol):
    """What every YARN scheduler core offers the ResourceManager shell."""

    state: ClusterState
    counters: LocalityCounters  # the ResourceManager forgets a finished application's

    def allocate_on_node(self, node: int, now: float) -> list[Container]:
        """A node heartbeat: the containers granted on ``node``."""
        ...

    def allocate_global(self, now: float) -> list[Container]:
        """Global scheduling: containers granted anywhere in the cluster."""
        ...

    def preemption(self, now: float) -> list[int]:
        """Container ids to preempt now (the shell kills, then releases them)."""
        ...


# ------------------------------------------------------------ shared steps

Admissible = Callable[[App, np.ndarray], bool]


def offer_node(state: ClusterState, app: App, node: int, now: float, delay: LocalityDelay,
               counters: LocalityCounters, admissible: Admissible, counted: set[tuple[int, int]]) -> Container | None:
    """Offer ``node`` to ``app`` under delay scheduling; allocate what it
    picks. ``admissible(app, capability)``: queue and user limits allow it.
    A decline for locality counts one missed opportunity, at most once per
    (app, priority) per heartbeat (``counted`` is the heartbeat's record):
    assigning several containers on one heartbeat re-offers the node, and
    that is still one opportunity."""
    if not len(app.asks):
        return None
    free = state.free[node]
    pick = app.asks.pick(
        node,
        lambda p: delay.allowed_level(counters.missed(app.app_id, p)),
        lambda cap: bool(np.all(free + EPS >= cap)) and admissible(app, cap),
    )
    if pick.task is not None:
        assert pick.level is not None
        counters.allocated(app.app_id, pick.task.priority, pick.level)
        return state.allocate(app.app_id, pick.task.task_id, node, now, pick.level)
    if pick.declined is not None and (app.app_id, pick.declined) not in counted:
        counted.add((app.app_id, pick.declined))
        counters.miss(app.app_id, pick.declined)
    return None


def walk_apps(state: ClusterState, queue: str, children: Callable[[str], list[str]],
              apps: Callable[[str], Iterable[App]]) -> Iterator[App]:
    """The applications under ``queue`` in the scheduler's order: children
    in ``children``'s order (asked afresh as the walk reaches each parent),
    and in a leaf its applications in ``apps``' order. Capacity and Fair
    differ only in those two orders; the walk is YARN's, shared by the
    node-by-node and the global allocation."""
    if state.tree[queue].is_leaf:
        yield from apps(queue)
        return
    for child in children(queue):
        yield from walk_apps(state, child, children, apps)


def descend(state: ClusterState, queue: str, node: int, now: float, *, children: Callable[[str], list[str]],
            apps: Callable[[str], Iterable[App]], delay: LocalityDelay, counters: LocalityCounters,
            admissible: Admissible, counted: set[tuple[int, int]]) -> Container | None:
    """One container on ``node``: the first application in ``walk_apps``
    order that takes it under ``offer_node``'s rules (its limits in
    ``admissible``)."""
    for app in walk_apps(state, queue, children, apps):
        c = offer_node(state, app, node, now, delay, counters, admissible, counted)
        if c is not None:
            return c
    return None


def best_node(state: ClusterState, task: TaskAsk) -> tuple[int, Level] | None:
    """Where global scheduling puts a task: a preferred node if one fits,
    else (if it may relax) a node on a preferred node's rack, else any node;
    within a level the least loaded node (lowest utilization in its most
    used resource, as YARN's ResourceUsageMultiNodeLookupPolicy prefers
    emptier nodes), ties to the lowest index. ``None``: fits nowhere."""
    ok = fits(state.free, task.capability)
    if not ok.any():
        return None
    dv = state.devices
    if dv is not None and not task.preferred and dv.asks(np.asarray(task.capability, dtype=np.float64)):
        # A device policy over the nodes' free whole devices (a multi-node sorting policy for GPUs);
        # a container with node preferences keeps the locality levels below.
        room = np.where(ok[:, None], state.free, 0.0)
        node = int(place_counted(dv, room, np.asarray(task.capability, dtype=np.float64), 1, state.rng)[0])
        if node >= 0:
            return node, OFF_SWITCH

    def least_loaded(cand: np.ndarray) -> int:
        used = state.capacity[cand] - state.free[cand]
        util = np.divide(used, state.capacity[cand], out=np.zeros_like(used), where=state.capacity[cand] > 0).max(axis=1)
        return int(cand[int(np.argmin(util))])

    if task.preferred:
        pref = np.array(sorted(task.preferred), dtype=np.int64)
        cand = pref[ok[pref]]
        if cand.size:
            return least_loaded(cand), NODE_LOCAL
        if not task.relax_locality:
            return None
        cand = np.flatnonzero(ok & np.isin(state.rack_of, state.rack_of[pref]))
        if cand.size:
            return least_loaded(cand), RACK_LOCAL
    return least_loaded(np.flatnonzero(ok)), OFF_SWITCH


def allocate_globally(state: ClusterState, order: Callable[[], Iterable[App]], admissible: Admissible,
                      now: float) -> list[Container]:
    """Global scheduling's loop: take applications in the scheduler's order
    (``order()`` is re-evaluated after every grant, since usage changed),
    each application's tasks highest priority and oldest first, and place
    the first admissible task that fits somewhere on its :func:`best_node`.
    Stops when no task of any application can be placed. No delay
    scheduling: seeing every node, the scheduler need not wait for one.

    A task that fitted on no node stays unplaceable for the rest of the
    call (free resources only shrink here), so it is not retried."""
    out: list[Container] = []
    nowhere: set[tuple[int, int]] = set()
    while True:
        granted = None
        for app in order():
            for task in app.asks.tasks():
                if (app.app_id, task.task_id) in nowhere or not admissible(app, task.capability):
                    continue
                found = best_node(state, task)
                if found is None:
                    nowhere.add((app.app_id, task.task_id))
                    continue
                granted = state.allocate(app.app_id, task.task_id, found[0], now, found[1])
                break
            if granted is not None:
                break
        if granted is None:
            return out
        out.append(granted)


def preemption_order(state: ClusterState, container_ids: Iterable[int]) -> list[Container]:
    """Victims in the order both preemption policies take them: non-AM
    containers before AM ones (killing a master loses its whole
    application's progress), then the most recently submitted application
    first, then the newest container first (least work lost)."""
    cs = [state.containers[c] for c in container_ids]
    return sorted(cs, key=lambda c: (c.is_am, -state.apps[c.app_id].seq, -c.start, -c.container_id))
