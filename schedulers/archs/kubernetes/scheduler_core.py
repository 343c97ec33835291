"""One kube-scheduler (one profile), pure: what it knows from its watch of
the API store (a ``ClusterView`` and a ``SchedulingQueue``), the cycle it
runs per pod, and what it does with the store's answer to its binds.

The actor (``actors/archs/kubernetes/scheduler.py``) only keeps the
timers, asks the store and logs: it feeds ``watched`` / ``relisted`` with
the store's events, calls ``next_cycle`` while pods wait, sends the binds
and evictions it returns, and hands the answers to ``bound``.

A scheduler's pods are the unbound pods whose template names its profile;
every bound pod (anyone's) is in its view, as the scheduler cache holds
them. A pod it binds is assumed at once (in the view before the store
says so), as upstream's scheduler cache assumes pods: the next cycle does
not place onto room this one took. A bind the store refuses (another
profile took the room, the pod changed) is forgotten and the pod backs off.

The binding cycle: a pod whose Permit said Wait stays assumed among the
waiting pods (``waiting_pods``) until its plugins allow it (a later
cycle's plugin, through ``CycleState.waiting_pods``), one rejects it, or
a timeout fires; each ``next_cycle`` first settles them. A rejected pod
is unreserved, un-assumed, and backs off (the room it held is an
AssignedPodDelete for the parked pods, as upstream's
handleBindingCycleError). A pod that may bind runs the Bind plugins
(``framework.run_bind``); a Bind failure is handled as a rejection. A
preemption victim still waiting at Permit is rejected there, not evicted
(it was never bound).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import collections
from typing import Mapping

import numpy as np

from schedlab.schedulers.archs.kubernetes.cluster_view import ClusterView
from schedlab.schedulers.archs.kubernetes.framework import Profile, ScheduleResult, run_bind, schedule_one, unreserve
from schedlab.schedulers.archs.kubernetes.objects import Node, Pod, PodKey
from schedlab.schedulers.archs.kubernetes.plugins.default_preemption import (
    NOMINATED_NODE,
    PDB_ALLOWED,
    TERMINATING,
    victims_of,
)
from schedlab.schedulers.archs.kubernetes.queue import SchedulingQueue
from schedlab.schedulers.archs.kubernetes.status import Code, Status
from schedlab.schedulers.archs.kubernetes.waiting_pods import WaitingPod, WaitingPods
from schedlab.schedulers.model.resources import DEFAULT

PodOf = Callable[[dict], Pod]  # a store pod value -> its Pod (the template's fields filled in)


@dataclass
class Cycle:
    """One cycle's outcome: ``node`` to bind to (with the pod's store
    version; ``binder`` the Bind plugin that bound it), or ``victims`` to
    evict and the node nominated, or ``waiting`` (held at Permit: nothing
    to send), or none of these (unschedulable, or its bind or Permit
    failed; ``reasons`` per plugin). ``released``: not a new cycle but a
    waiting pod now allowed (no thinking time)."""

    pod: Pod
    node: int | None = None
    version: int | None = None
    victims: tuple[Pod, ...] = ()
    nominated: int | None = None
    reasons: dict[str, int] = field(default_factory=dict)
    first: bool = False  # the first cycle of its job
    state: Any = None  # the cycle's state (a failed bind's unreserve needs it)
    waiting: bool = False
    released: bool = False
    binder: str = ""
    status: Status | None = None  # why it was not placed, when a plugin said so


class KubeSchedulerCore:
    def __init__(self, profile: Profile, nodes: list[Node], pod_of: PodOf, seed: int,
                 budgets: Mapping[str, int] | None = None, share: tuple[int, int] = (0, 1),
                 resources: tuple[str, ...] = DEFAULT) -> None:
        """``budgets``: job class -> the PodDisruptionBudget's maxUnavailable
        over each of its workloads (preemption leaves a workload at most
        that many pods short, counting the pods it already waits for).
        ``share``: (i, n): this is worker i of the profile's n, and takes the
        pods of jobs whose id is i mod n (as Nomad's workers each dequeue
        their own evaluations). ``resources``: the cell's resource names."""
        self.profile = profile
        self.share = share
        self.budgets = dict(budgets or {})
        self.budgeted: dict[str, str] = {}  # owner (a workload) -> its class, for classes with a budget
        self.unbound_of: collections.Counter[str] = collections.Counter()  # owner -> its pods waiting (any profile)
        self.waiting_owner: dict[PodKey, str] = {}
        self.base_nodes = list(nodes)
        self.pod_of = pod_of
        self.resources = tuple(resources)
        self.view = ClusterView(nodes, resources=self.resources)
        self.queue = SchedulingQueue()
        self.rng = np.random.default_rng(seed)
        self.start = 0
        self.versions: dict[PodKey, int] = {}  # my unbound pods -> their store version
        self.assumed: dict[PodKey, int] = {}  # bound by me, the store's answer not back
        self.tried: set[int] = set()  # jobs with a first cycle
        self.ready = np.ones(len(nodes), dtype=bool)
        self.attempts = 0
        self.nominated: set[PodKey] = set()
        self.terminating: set[PodKey] = set()  # bound pods whose eviction is under way
        self.job_tasks: dict[int, int] = {}  # job -> its tasks (from its pods' values)
        self.filtered: dict[str, int] = {}  # plugin -> nodes it filtered out, over the run
        self.waiting = WaitingPods()  # pods held at Permit (assumed in the view)
        self.to_bind: dict[PodKey, WaitingPod] = {}  # allowed at Permit, to bind at the next calls
        self.permit_rejected = 0  # waiting pods rejected or timed out, over the run
        self.gang_released: dict[int, int] = {}  # job -> gang members let go at Permit since the shell last took them
        self.bind_failed = 0  # pods whose Bind plugins failed them, over the run

    # ------------------------------------------------------------ the watch

    def relisted(self, pods: list[tuple[str, dict, int]], nodes: list[tuple[str, dict, int]], now: float) -> None:
        """A fresh list (start, or the watch fell behind the compaction)."""
        for wp in [*self.waiting, *self.to_bind.values()]:  # Reserve undone; the list brings them back unbound
            self.waiting.remove(wp.key)
            unreserve(self.profile, wp.state, wp.pod, self.view, wp.node)
        self.to_bind.clear()
        self.view = ClusterView(self.base_nodes, resources=self.resources)
        self.queue = SchedulingQueue()
        self.versions.clear()
        self.assumed.clear()
        self.unbound_of.clear()
        self.waiting_owner.clear()
        self.nominated.clear()
        for _name, value, _v in nodes:
            self._node(value, now)
        for _name, value, version in pods:
            self._pod("ADDED", value, version, now)

    def watched(self, events: list, now: float) -> None:
        """The store's change events ``(revision, type, kind, name, value)``."""
        for _rev, kind_of_change, kind, _name, value in events:
            if kind == "nodes":
                self._node(value, now)
            else:
                self._pod(kind_of_change, value, _rev, now)

    def _node(self, value: dict, now: float) -> None:
        i = int(value["i"])
        ready = bool(value["ready"])
        if ready != self.ready[i]:
            self.ready[i] = ready
            base = self.base_nodes[i]
            self.view.set_node(Node(base.index, base.name, base.capacity, base.labels, base.taints,
                                    unschedulable=not ready))
            if ready:
                self.queue.on_event("NodeAdd", now)

    def _pod(self, change: str, value: dict, version: int, now: float) -> None:
        key = (int(value["j"]), int(value["t"]))
        self._count_waiting(key, value, waiting=change != "DELETED" and value["node"] is None)
        if change == "DELETED" or value.get("phase") != "Terminating":
            self.terminating.discard(key)
        else:
            self.terminating.add(key)
        wp = self.waiting.get(key) or self.to_bind.get(key)
        if wp is not None and (change == "DELETED" or value["node"] is not None):
            # Deleted (or bound by someone else) in its binding cycle: upstream rejects it.
            self.waiting.remove(key)
            self.to_bind.pop(key, None)
            unreserve(self.profile, wp.state, wp.pod, self.view, wp.node)
        if change == "DELETED":
            self.versions.pop(key, None)
            self.nominated.discard(key)
            self.queue.delete(key)
            self.assumed.pop(key, None)
            if key in self.view.node_of:
                self.view.remove_pod(key)
                self.queue.on_event("AssignedPodDelete", now)
            return
        node = value["node"]
        self.job_tasks.setdefault(key[0], int(value.get("n", 1)))
        if node is None:
            pod = self.pod_of(value)
            if pod.scheduler_name != self.profile.name or key[0] % self.share[1] != self.share[0]:
                return
            self.versions[key] = int(version)
            if key not in self.queue and key not in self.assumed:
                self.queue.add(pod, now)
            return
        # Bound (by me or by another scheduler): in the view, out of my queue.
        self.versions.pop(key, None)
        self.assumed.pop(key, None)
        self.nominated.discard(key)
        self.queue.delete(key)
        if self.view.node_of.get(key) != int(node):
            if key in self.view.node_of:
                self.view.remove_pod(key)
            self.view.add_pod(self.pod_of(value), int(node))

    def _count_waiting(self, key: PodKey, value: dict, waiting: bool) -> None:
        """Keep each budgeted workload's count of pods not running."""
        cls = value.get("cls") or ""
        if cls not in self.budgets:
            return
        owner = f"{cls}/{value['j']}"
        self.budgeted.setdefault(owner, cls)
        if waiting and key not in self.waiting_owner:
            self.waiting_owner[key] = owner
            self.unbound_of[owner] += 1
        elif not waiting and key in self.waiting_owner:
            self.unbound_of[self.waiting_owner.pop(key)] -= 1

    def budgets_now(self) -> dict[str, int]:
        """Owner -> disruptions its budget allows now."""
        return {o: max(0, self.budgets[c] - self.unbound_of[o]) for o, c in self.budgeted.items()}

    # ------------------------------------------------------------ cycles

    def next_cycle(self, now: float, context: dict[str, Any] | None = None) -> Cycle | None:
        """Settle the waiting pods (one allowed pod comes out as a Cycle to
        bind), then pop the next pod and run one scheduling cycle for it, or
        None if no pod is ready. A pod placed is assumed in the view."""
        released = self._release(now)
        if released is not None:
            return released
        self.queue.flush(now)
        pod = self.queue.pop(now)
        if pod is None:
            return None
        self.attempts += 1
        first = pod.key[0] not in self.tried
        self.tried.add(pod.key[0])
        nominated = self.queue.nominated_node(pod.key)
        self.nominated &= {k for k in self.nominated if k in self.queue}
        others = [self.queue.info(k).pod for k in sorted(self.nominated)]
        ctx = {NOMINATED_NODE: nominated, TERMINATING: frozenset(self.terminating),
               **({PDB_ALLOWED: self.budgets_now()} if self.budgeted else {}), **(context or {})}
        # Room preemption freed for a pod is kept for it: pods nominated to
        # a node with at least this pod's priority count as already there
        # (upstream's filters run with nominated pods added), or the
        # victims' own controllers' new pods would take it back.
        held = [(q, n) for q in others if q.key != pod.key and q.priority >= pod.priority
                and (n := self.queue.nominated_node(q.key)) is not None and q.key not in self.view.node_of]
        for q, n in held:
            self.view.add_pod(q, n)
        try:
            r: ScheduleResult = schedule_one(self.profile, pod, self.view, start_index=self.start, rng=self.rng,
                                             nominated_node=nominated, context=ctx, waiting_pods=self.waiting)
        finally:
            for q, _n in held:
                self.view.remove_pod(q.key)
        self.start = r.next_start_index
        if r.node is not None and r.status.code == Code.WAIT:
            # Assumed, Reserve done: it waits for its Permit plugins.
            self.waiting.add(WaitingPod(r.pod, r.node, r.state, {p: now + t for p, t in r.permit_waits.items()},
                                        since=now, first=first))
            return Cycle(pod, waiting=True, first=first, state=r.state, status=r.status)
        if r.node is not None and r.status.ok:
            return self._bind(pod, r.node, r.state, now, first)
        counts = r.diagnosis.plugin_counts()
        for plugin, n in counts.items():
            self.filtered[plugin] = self.filtered.get(plugin, 0) + n
        victims = victims_of(r.post_filter)
        unbound: set[PodKey] = set()
        if victims:
            self.queue.nominate(pod.key, r.nominated_node)
            self.nominated.add(pod.key)
            # A victim still in its binding cycle (waiting at Permit, or
            # allowed and not yet bound) is not in the store: rejected here
            # (upstream's preemption rejects waiting victims), not evicted.
            for v in victims:
                wp = self.waiting.get(v.key) or self.to_bind.pop(v.key, None)
                if wp is not None:
                    unbound.add(v.key)
                    wp.reject("DefaultPreemption", "preempted")
                    if v.key not in self.waiting:
                        self.permit_rejected += 1
                        self._undo(wp.pod, wp.node, wp.state, now)
            self._settle_waiting(now)
        self.queue.unschedulable(pod, now, tuple(counts))
        return Cycle(pod, victims=tuple(v for v in victims if v.key not in unbound),
                     nominated=r.nominated_node if victims else None, reasons=counts, first=first, status=r.status)

    def _settle_waiting(self, now: float) -> None:
        """Fire due Permit timers; undo the rejected pods; queue the allowed
        ones to bind (one per ``next_cycle``)."""
        allowed, rejected = self.waiting.settle(now)
        for wp in rejected:
            self.permit_rejected += 1
            if wp.pod.min_member:
                self.gang_released[wp.key[0]] = self.gang_released.get(wp.key[0], 0) + 1
            self._undo(wp.pod, wp.node, wp.state, now)
        for wp in allowed:
            self.to_bind[wp.key] = wp

    def _release(self, now: float) -> Cycle | None:
        """The next waiting pod now allowed, through Bind: a Cycle to send."""
        self._settle_waiting(now)
        if not self.to_bind:
            return None
        wp = self.to_bind.pop(next(iter(self.to_bind)))
        c = self._bind(wp.pod, wp.node, wp.state, now, first=False)
        c.released = True
        return c

    def _undo(self, pod: Pod, node: int, state: Any, now: float) -> None:
        """A binding cycle that failed (Permit rejected or timed out, Bind
        failed): Unreserve, forget the assumption, back off; the room it
        held may let parked pods in."""
        unreserve(self.profile, state, pod, self.view, node)
        if pod.key in self.queue:
            self.queue.backoff(pod, now)
        self.queue.on_event("AssignedPodDelete", now)

    def _bind(self, pod: Pod, node: int, state: Any, now: float, first: bool) -> Cycle:
        """The Bind plugins for a pod that may bind: a Cycle to send, or,
        if they failed it, the pod undone and a Cycle saying why. The Cycle
        carries the pod as Reserve left it in the view (a device plugin
        fills in the devices it takes)."""
        pod = self.view.pods.get(pod.key, pod)
        st = run_bind(self.profile, state, pod, node)
        if not st.ok:
            self.bind_failed += 1
            self._undo(pod, node, state, now)
            return Cycle(pod, first=first, status=st)  # no node was filtered out: ``status`` says who
        self.assumed[pod.key] = node
        return Cycle(pod, node=node, version=self.versions.get(pod.key), first=first, state=state, binder=st.plugin)

    def bound(self, cycle: Cycle, status: str, now: float) -> None:
        """The store's answer to a bind: ``ok`` keeps the assumption (the
        watch confirms it); anything else undoes it and the pod backs off
        (``gone``: it was deleted meanwhile, nothing to retry)."""
        key = cycle.pod.key
        if status == "ok":
            self.versions.pop(key, None)
            if key in self.queue:
                self.queue.delete(key)
            return
        node = self.assumed.pop(key, None)
        if node is not None and cycle.state is not None:
            unreserve(self.profile, cycle.state, cycle.pod, self.view, node)
        if key not in self.queue:
            return  # the watch saw it bound or deleted meanwhile
        if status in ("conflict", "no_room", "not_ready") and key in self.versions:
            self.queue.backoff(cycle.pod, now)
        else:
            self.queue.delete(key)  # bound elsewhere, or gone

    def pending(self) -> set[int]:
        """Jobs with a pod still waiting in this scheduler."""
        return {k[0] for k in self.versions}
