"""The snapshot the scheduling plugins read: nodes, what is requested on
each, the pods bound there, and each node's domain per topology key.

Contract:

* A node's row is its ``Node.index``; the view holds rows 0..N-1 (a new
  node is appended with ``set_node`` at index N, an existing one replaced).
* ``requested[i]`` is the sum of the requests of the pods bound (or
  assumed) on node i (``free[i]`` = ``capacity[i]`` - ``requested[i]``),
  kept by ``add_pod`` / ``remove_pod``. Both are O(1) plus O(number of
  selectors counted so far): the preemption code removes and re-adds
  victims with them to ask "would the pod fit without these?".
* ``match_counts(selector)`` is the number of pods matching a label
  selector on every node, an int array [N]. The first call for a selector
  walks all pods once; afterwards ``add_pod`` / ``remove_pod`` keep it
  current, so PodTopologySpread and InterPodAffinity pay O(N) numpy work
  per cycle, not O(all pods) per node.
* ``domains(key)`` gives each node's domain id for a topology key (-1 where
  the node lacks the label), ``domain_names(key)`` the label values by id.

Why a class of arrays rather than a list of NodeInfo objects as upstream:
the framework filters and scores candidate nodes as array operations
(``framework.schedule_one``), which is what lets one cycle over thousands
of nodes stay well under a millisecond.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Hashable, Iterable, Sequence

import numpy as np

from .objects import Labels, Node, Pod, PodKey, Selector, label_dict
from schedlab.schedulers.model.resources import DEFAULT


_MAX_SELECTORS = 512  # counted selectors kept current; the least recently asked is dropped
_MAX_MATCH_MEMO = 200_000


def by_domain(per_domain: np.ndarray, dom: np.ndarray) -> np.ndarray:
    """``per_domain[dom]`` per node, 0 where the node lacks the key (dom < 0)
    or no node has it (``per_domain`` empty)."""
    if not per_domain.size:
        return np.zeros(dom.shape, dtype=per_domain.dtype)
    return np.where(dom >= 0, per_domain[np.maximum(dom, 0)], 0)


class ClusterView:
    """Mutable snapshot of the cell for one scheduler (see module docstring)."""

    def __init__(self, nodes: Sequence[Node], pods: Iterable[tuple[Pod, int]] = (), resources: tuple[str, ...] = DEFAULT) -> None:
        """``resources``: the names of the capacity columns (the cell's)."""
        bad = [node.index for i, node in enumerate(nodes) if node.index != i]
        if bad:
            raise ValueError(f"node indices must be 0..{len(nodes) - 1} in order (first out of place: {bad[0]})")
        n = len(nodes)
        self.nodes: list[Node] = list(nodes)
        self.resources = tuple(resources)
        width = len(nodes[0].capacity) if nodes else 0
        self.capacity = np.array([node.capacity for node in nodes], dtype=float).reshape(n, width)
        self.requested = np.zeros((n, width))
        self.free = self.capacity.copy()  # capacity - requested, kept with it
        self.unschedulable = np.zeros(n, dtype=bool)
        self.hard_tainted = np.zeros(n, dtype=bool)  # has a NoSchedule or NoExecute taint
        self.soft_taints = np.zeros(n, dtype=np.int64)  # PreferNoSchedule taints per node
        self.pods_on: list[dict[PodKey, Pod]] = [{} for _ in nodes]
        self.of_job: dict[int, int] = {}  # pods bound or assumed per job (a PodGroup's members placed)
        self.node_of: dict[PodKey, int] = {}
        self.pods: dict[PodKey, Pod] = {}
        # Pods carrying inter-pod terms: InterPodAffinity walks only these.
        self.with_affinity: dict[PodKey, Pod] = {}
        self.with_required_anti: dict[PodKey, Pod] = {}
        self._labels: list[dict[str, str]] = [label_dict(node.labels) for node in nodes]
        self._domains: dict[str, tuple[np.ndarray, list[str]]] = {}
        self._per_node: dict[Hashable, np.ndarray] = {}
        self._counts: OrderedDict[Selector, np.ndarray] = OrderedDict()
        self._memo: dict[tuple[Selector, Labels], bool] = {}
        for node in nodes:
            self._set_flags(node)
        for pod, node_index in pods:
            self.add_pod(pod, node_index)

    # -- nodes --------------------------------------------------------------

    @property
    def n(self) -> int:
        return len(self.nodes)

    def set_node(self, node: Node) -> None:
        """Add a node (``node.index == n``) or replace one (cordon, taints,
        labels, capacity). Its bound pods stay."""
        i = node.index
        if i == self.n:
            self.nodes.append(node)
            self._labels.append(label_dict(node.labels))
            self.pods_on.append({})
            self.capacity = np.vstack([self.capacity, np.asarray(node.capacity, dtype=float)[None, :]])
            self.requested = np.vstack([self.requested, np.zeros((1, self.capacity.shape[1]))])
            self.free = np.vstack([self.free, self.capacity[-1:]])
            self.unschedulable = np.append(self.unschedulable, False)
            self.hard_tainted = np.append(self.hard_tainted, False)
            self.soft_taints = np.append(self.soft_taints, 0)
            for sel, counts in self._counts.items():
                self._counts[sel] = np.append(counts, 0)
        elif 0 <= i < self.n:
            self.nodes[i] = node
            self._labels[i] = label_dict(node.labels)
            self.capacity[i] = node.capacity
            self.free[i] = self.capacity[i] - self.requested[i]
        else:
            raise ValueError(f"node index {i} out of range: the view has rows 0..{self.n - 1}; append at {self.n}")
        self._set_flags(node)
        self._domains.clear()
        self._per_node.clear()

    def _set_flags(self, node: Node) -> None:
        i = node.index
        self.unschedulable[i] = node.unschedulable
        self.hard_tainted[i] = any(t.effect != "PreferNoSchedule" for t in node.taints)
        self.soft_taints[i] = sum(t.effect == "PreferNoSchedule" for t in node.taints)

    def labels_of(self, i: int) -> dict[str, str]:
        """Node i's labels as a dict (shared: do not mutate)."""
        return self._labels[i]

    def domains(self, key: str) -> np.ndarray:
        """Domain id per node for topology ``key``; -1 where the node lacks it.
        Ids number the values in order of first appearance by node row."""
        return self._domain_table(key)[0]

    def domain_names(self, key: str) -> list[str]:
        return self._domain_table(key)[1]

    def _domain_table(self, key: str) -> tuple[np.ndarray, list[str]]:
        hit = self._domains.get(key)
        if hit is None:
            ids: dict[str, int] = {}
            dom = np.full(self.n, -1, dtype=np.int64)
            for i, ls in enumerate(self._labels):
                v = ls.get(key)
                if v is not None:
                    dom[i] = ids.setdefault(v, len(ids))
            hit = self._domains[key] = (dom, list(ids))
        return hit

    def node_values(self, key: Hashable, fn: Callable[[int], Any], dtype: Any = bool) -> np.ndarray:
        """``fn(row)`` for every node, cached under ``key`` until a node
        changes. Why: a pod's node selector or tolerations are usually
        shared by its whole workload, so the per-node Python check runs
        once per workload, not once per pod per node. Read-only."""
        hit = self._per_node.get(key)
        if hit is None:
            if len(self._per_node) >= _MAX_SELECTORS:
                self._per_node.clear()
            hit = self._per_node[key] = np.fromiter((fn(i) for i in range(self.n)), dtype=dtype, count=self.n)
        return hit

    # -- pods ---------------------------------------------------------------

    def add_pod(self, pod: Pod, node: int) -> None:
        """Bind (or assume) ``pod`` on node row ``node``."""
        if pod.key in self.node_of:
            raise ValueError(f"pod {pod.key} is already on node {self.node_of[pod.key]}")
        self.node_of[pod.key] = node
        self.pods[pod.key] = pod
        self.pods_on[node][pod.key] = pod
        self.of_job[pod.key[0]] = self.of_job.get(pod.key[0], 0) + 1
        self.requested[node] += pod.requests
        self.free[node] -= pod.requests
        if pod.pod_affinity or pod.preferred_pod_affinity:
            self.with_affinity[pod.key] = pod
            if any(t.anti for t in pod.pod_affinity):
                self.with_required_anti[pod.key] = pod
        self._count(pod, node, +1)

    def remove_pod(self, key: PodKey) -> tuple[Pod, int]:
        """Unbind a pod; returns it and the node it was on (to re-add)."""
        node = self.node_of.pop(key)
        pod = self.pods.pop(key)
        del self.pods_on[node][key]
        if self.of_job[key[0]] > 1:
            self.of_job[key[0]] -= 1
        else:
            del self.of_job[key[0]]
        self.requested[node] -= pod.requests
        self.free[node] += pod.requests
        self.with_affinity.pop(key, None)
        self.with_required_anti.pop(key, None)
        self._count(pod, node, -1)
        return pod, node

    def _count(self, pod: Pod, node: int, delta: int) -> None:
        for sel, counts in self._counts.items():
            if self.matches(sel, pod.labels):
                counts[node] += delta

    # -- selectors ----------------------------------------------------------

    def matches(self, selector: Selector, ls: Labels) -> bool:
        """``selector`` against a pod's label tuple, memoised: pods of one
        workload share labels, so the memo stays small and hot."""
        k = (selector, ls)
        hit = self._memo.get(k)
        if hit is None:
            if len(self._memo) >= _MAX_MATCH_MEMO:
                self._memo.clear()
            hit = self._memo[k] = selector.matches(dict(ls))
        return hit

    def match_counts(self, selector: Selector) -> np.ndarray:
        """Pods matching ``selector`` per node, int [N] (kept current; read-only)."""
        counts = self._counts.get(selector)
        if counts is not None:
            self._counts.move_to_end(selector)
            return counts
        counts = np.zeros(self.n, dtype=np.int64)
        for key, pod in self.pods.items():
            if self.matches(selector, pod.labels):
                counts[self.node_of[key]] += 1
        self._counts[selector] = counts
        if len(self._counts) > _MAX_SELECTORS:
            self._counts.popitem(last=False)
        return counts

    def domain_counts(self, selector: Selector, key: str, eligible: np.ndarray | None = None) -> np.ndarray:
        """Pods matching ``selector`` per domain of ``key`` (indexed by domain
        id), counting only nodes where ``eligible`` (bool [N]) holds."""
        dom = self.domains(key)
        use = dom >= 0 if eligible is None else (dom >= 0) & eligible
        counts = self.match_counts(selector)
        return np.bincount(dom[use], weights=counts[use], minlength=len(self.domain_names(key))).astype(np.int64)
