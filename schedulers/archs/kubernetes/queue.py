"""kube-scheduler's scheduling queue, pure: the active queue, the backoff
queue and the unschedulable pool, with per-pod exponential backoff and the
pods nominated to nodes by preemption.

A pod's life here: ``add`` puts it in the active queue; ``pop`` hands the
highest-priority, earliest-created one to a scheduling cycle (the pod is
then *in flight*, counted as an attempt). The cycle ends in one of three
ways: bound (the framework calls ``delete``), rejected by its filters
(``unschedulable``: parked until a cluster event or five minutes), or an
error or a lost bind race (``backoff``: retried when its backoff expires).
``on_event`` (a node added or freed, a pod deleted, a label changed) moves
parked pods back, to the backoff queue if they are still backing off;
``flush`` does what upstream's two periodic goroutines do (expired backoff
to active; pods parked longer than five minutes back).

Why a three-part queue and not one list: a pod the cluster cannot place
would otherwise be retried in a hot loop, starving the pods behind it;
parking it until something changes, and spacing retries of errors
exponentially, is what keeps the scheduler's throughput for pods that can
run. Every time is an emulated second passed in; ties break on
(created, key), so the order is the same on both engines.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from schedlab.schedulers.archs.kubernetes.objects import Pod, PodKey

State = Literal["active", "backoff", "unschedulable", "in_flight"]

# The cluster events that may make a parked pod schedulable (upstream's
# ClusterEvent names). "AssignedPodDelete" is a bound pod going away (its
# node freed); "NodeAllocatableChange" a node growing.
CLUSTER_EVENTS = frozenset({
    "NodeAdd", "NodeAllocatableChange", "NodeLabelChange", "NodeTaintChange", "AssignedPodDelete",
})

# Decides, per parked pod and the plugins that rejected it, whether an event
# may help it (upstream's QueueingHint). None: every event helps every pod.
Hint = Callable[[Pod, frozenset[str]], bool]


@dataclass(frozen=True)
class QueueConfig:
    """Upstream's defaults: podInitialBackoffSeconds 1, podMaxBackoffSeconds
    10, podMaxInUnschedulablePodsDuration 5 min."""

    initial_backoff_s: float = 1.0
    max_backoff_s: float = 10.0
    max_unschedulable_s: float = 300.0

    def __post_init__(self) -> None:
        if not 0 < self.initial_backoff_s <= self.max_backoff_s:
            raise ValueError(f"need 0 < initial_backoff_s <= max_backoff_s, got {self.initial_backoff_s}, {self.max_backoff_s}")
        if self.max_unschedulable_s <= 0:
            raise ValueError(f"max_unschedulable_s must be positive, got {self.max_unschedulable_s}")


def backoff_duration(attempts: int, config: QueueConfig = QueueConfig()) -> float:
    """The backoff after ``attempts`` failed attempts: the initial duration,
    doubled per further attempt, capped (1, 2, 4, 8, 10, 10 ... s)."""
    d = config.initial_backoff_s
    for _ in range(1, attempts):
        if d > config.max_backoff_s - d:
            return config.max_backoff_s
        d += d
    return min(d, config.max_backoff_s)


@dataclass(frozen=True)
class QueueLengths:
    """Pods per sub-queue, for metrics (upstream's pending_pods by queue)."""

    active: int
    backoff: int
    unschedulable: int
    in_flight: int


@dataclass(frozen=True)
class QueuedPodInfo:
    """A snapshot of what the queue knows about one pod. ``timestamp``: when
    it last entered a sub-queue (added, or its last attempt failed), the
    start of its backoff and of its time parked. ``reasons``: the plugins
    that rejected it last."""

    pod: Pod
    state: State
    attempts: int
    added: float
    timestamp: float
    initial_attempt: float | None
    backoff_expiry: float
    reasons: frozenset[str]
    nominated_node: int | None


class _Entry:
    __slots__ = ("pod", "state", "attempts", "added", "timestamp", "initial_attempt", "cycle", "reasons")

    def __init__(self, pod: Pod, now: float) -> None:
        self.pod = pod
        self.state: State = "active"
        self.attempts = 0
        self.added = now
        self.timestamp = now
        self.initial_attempt: float | None = None
        self.cycle = 0  # the scheduling cycle that last popped it
        self.reasons: frozenset[str] = frozenset()


class _KeyedHeap:
    """A min-heap of keys by rank with removal by key (lazy: a removed or
    re-ranked key's old entry is skipped when it surfaces)."""

    def __init__(self) -> None:
        self._heap: list[tuple[tuple, PodKey]] = []
        self._rank: dict[PodKey, tuple] = {}

    def __len__(self) -> int:
        return len(self._rank)

    def push(self, key: PodKey, rank: tuple) -> None:
        self._rank[key] = rank
        heapq.heappush(self._heap, (rank, key))

    def remove(self, key: PodKey) -> None:
        self._rank.pop(key, None)

    def peek(self) -> tuple[tuple, PodKey] | None:
        h = self._heap
        while h and self._rank.get(h[0][1]) != h[0][0]:
            heapq.heappop(h)
        return h[0] if h else None

    def pop(self) -> PodKey | None:
        top = self.peek()
        if top is None:
            return None
        heapq.heappop(self._heap)
        del self._rank[top[1]]
        return top[1]


class SchedulingQueue:
    """activeQ, podBackoffQ and unschedulablePods, plus the nominator.

    Contracts: a key is held at most once (in one sub-queue, or in flight);
    ``pop`` never returns a pod from the backoff queue or the pool;
    ``unschedulable``/``backoff`` accept only a pod in flight; all ordering
    is deterministic."""

    def __init__(self, config: QueueConfig = QueueConfig()) -> None:
        self.config = config
        self._entries: dict[PodKey, _Entry] = {}
        self._active = _KeyedHeap()
        self._backoff = _KeyedHeap()
        self._unschedulable: dict[PodKey, _Entry] = {}  # insertion order: deterministic
        self._nominated: dict[PodKey, int] = {}
        self._by_node: dict[int, set[PodKey]] = {}
        self._cycle = 0  # upstream's schedulingCycle: pops so far
        self._move_request_cycle = -1  # the cycle during which the last event arrived

    # --- entering and leaving -------------------------------------------

    def add(self, pod: Pod, now: float) -> None:
        """A new pending pod, into the active queue. A key already held is
        a caller's bug (ValueError), not a silent replace."""
        if pod.key in self._entries:
            raise ValueError(f"pod {pod.key} is already in the scheduling queue")
        e = _Entry(pod, now)
        self._entries[pod.key] = e
        self._to_active(e)

    def pop(self, now: float) -> Pod | None:
        """The head of the active queue (highest priority, then earliest
        created, then key), now in flight; None if the active queue is
        empty. Each pop is one attempt and one scheduling cycle. Backoff
        pods are not flushed here: call ``flush`` first (upstream flushes
        every second)."""
        key = self._active.pop()
        if key is None:
            return None
        e = self._entries[key]
        self._cycle += 1
        e.cycle = self._cycle
        e.attempts += 1
        if e.initial_attempt is None:
            e.initial_attempt = now
        e.state = "in_flight"
        return e.pod

    def delete(self, key: PodKey) -> bool:
        """Forget a pod: bound, or deleted from the cluster. Clears its
        nomination. False if the queue did not hold it."""
        e = self._entries.pop(key, None)
        if e is None:
            return False
        self._active.remove(key)
        self._backoff.remove(key)
        self._unschedulable.pop(key, None)
        self.nominate(key, None)
        return True

    # --- a failed attempt -------------------------------------------------

    def unschedulable(self, pod: Pod, now: float, reasons: Iterable[str] = ()) -> State | None:
        """The pod's filters rejected it (``reasons``: the plugins): park it
        in the unschedulable pool until an event or the pool's timeout.
        If an event arrived while it was in flight, that event may already
        have made it schedulable, so it goes to the backoff queue instead
        (upstream's moveRequestCycle). Returns where it went, or None if
        the pod was deleted while in flight. ``pod`` may be an updated
        object for the same key."""
        e = self._failed(pod, now)
        if e is None:
            return None
        e.reasons = frozenset(reasons)
        if self._move_request_cycle >= e.cycle:
            return self._requeue(e, now)
        e.state = "unschedulable"
        self._unschedulable[e.pod.key] = e
        return e.state

    def backoff(self, pod: Pod, now: float) -> State | None:
        """An error or a lost bind race: retry after the pod's backoff
        (``backoff_duration(attempts)`` from ``now``). Returns where it
        went, or None if it was deleted while in flight."""
        e = self._failed(pod, now)
        if e is None:
            return None
        e.reasons = frozenset()
        return self._requeue(e, now)

    def _failed(self, pod: Pod, now: float) -> _Entry | None:
        e = self._entries.get(pod.key)
        if e is None:
            return None
        if e.state != "in_flight":
            raise ValueError(f"pod {pod.key} is {e.state}, not in flight: only a popped pod can fail")
        e.pod = pod
        e.timestamp = now
        return e

    # --- moving pods back -------------------------------------------------

    def flush(self, now: float) -> int:
        """Backoff pods whose backoff expired (expiry <= now) to active;
        pods parked for at least ``max_unschedulable_s`` to active or
        backoff. Returns how many pods moved."""
        moved = 0
        while (top := self._backoff.peek()) is not None and top[0][0] <= now:
            self._backoff.pop()
            self._to_active(self._entries[top[1]])
            moved += 1
        limit = self.config.max_unschedulable_s
        stale = [e for e in self._unschedulable.values() if now - e.timestamp >= limit]
        for e in stale:
            del self._unschedulable[e.pod.key]
            self._requeue(e, now)
        return moved + len(stale)

    def on_event(self, kind: str, now: float, hint: Hint | None = None) -> int:
        """A cluster event that may make parked pods schedulable: move each
        (every one, or those ``hint`` says it may help) to active, or to
        backoff if its backoff has not expired (upstream's
        MoveAllToActiveOrBackoffQueue). Also remembered for pods in flight
        (see ``unschedulable``). Returns how many pods moved."""
        if kind not in CLUSTER_EVENTS:
            raise ValueError(f"unknown cluster event {kind!r}; known: {sorted(CLUSTER_EVENTS)}")
        self._move_request_cycle = self._cycle
        movers = [e for e in self._unschedulable.values() if hint is None or hint(e.pod, e.reasons)]
        for e in movers:
            del self._unschedulable[e.pod.key]
            self._requeue(e, now)
        return len(movers)

    def next_flush_at(self) -> float | None:
        """The earliest time a ``flush`` would move a pod (a backoff expiry
        or a parked pod's timeout), so a shell can set one timer instead of
        polling; None if nothing waits on time."""
        times = [self._unschedulable[k].timestamp + self.config.max_unschedulable_s
                 for k in self._unschedulable]
        top = self._backoff.peek()
        if top is not None:
            times.append(top[0][0])
        return min(times, default=None)

    def _expiry(self, e: _Entry) -> float:
        return e.timestamp + backoff_duration(e.attempts, self.config)

    def _requeue(self, e: _Entry, now: float) -> State:
        """To backoff while the pod is backing off (expiry > now), else to
        active (upstream's isPodBackingoff)."""
        expiry = self._expiry(e)
        if expiry > now:
            e.state = "backoff"
            self._backoff.push(e.pod.key, (expiry, e.pod.created, e.pod.key))
        else:
            self._to_active(e)
        return e.state

    def _to_active(self, e: _Entry) -> None:
        e.state = "active"
        p = e.pod
        self._active.push(p.key, (-p.priority, p.created, p.key))

    # --- nominated pods ---------------------------------------------------

    def nominate(self, key: PodKey, node: int | None) -> None:
        """Record that preemption made room for ``key`` on ``node``
        (status.nominatedNodeName); None clears it. The framework counts
        nominated pods of equal or higher priority as already on the node
        when filtering others, so the room is not taken by them."""
        old = self._nominated.pop(key, None)
        if old is not None:
            self._by_node[old].discard(key)
            if not self._by_node[old]:
                del self._by_node[old]
        if node is None:
            return
        if key not in self._entries:
            raise KeyError(f"pod {key} is not in the scheduling queue")
        self._nominated[key] = node
        self._by_node.setdefault(node, set()).add(key)

    def nominated_node(self, key: PodKey) -> int | None:
        return self._nominated.get(key)

    def nominated_on(self, node: int) -> tuple[Pod, ...]:
        """The pods nominated to ``node``, highest priority first (then
        created, key)."""
        pods = [self._entries[k].pod for k in self._by_node.get(node, ())]
        return tuple(sorted(pods, key=lambda p: (-p.priority, p.created, p.key)))

    # --- reading ------------------------------------------------------------

    def __len__(self) -> int:
        """Every pod the queue holds, in flight included."""
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def lengths(self) -> QueueLengths:
        n = len(self._entries)
        a, b, u = len(self._active), len(self._backoff), len(self._unschedulable)
        return QueueLengths(active=a, backoff=b, unschedulable=u, in_flight=n - a - b - u)

    def info(self, key: PodKey) -> QueuedPodInfo:
        """What the queue knows about ``key`` (KeyError if not held)."""
        e = self._entries[key]
        return QueuedPodInfo(
            pod=e.pod, state=e.state, attempts=e.attempts, added=e.added, timestamp=e.timestamp,
            initial_attempt=e.initial_attempt, backoff_expiry=self._expiry(e), reasons=e.reasons,
            nominated_node=self._nominated.get(key),
        )
