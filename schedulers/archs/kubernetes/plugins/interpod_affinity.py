"""InterPodAffinity: place a pod near (affinity) or away from
(anti-affinity) pods matching a label selector, within a topology domain.

Filter, checked in upstream's order, first failure wins:

1. the pod's required affinity terms: the node must carry every term's key
   and each term's domain must hold a matching pod. Exception (the first
   pod of a group with affinity to itself): when no pod anywhere matches
   any term and the pod matches all its own terms, any node carrying the
   keys passes. Else "node(s) didn't match pod affinity rules",
   UnschedulableAndUnresolvable.
2. the pod's required anti-affinity terms: no matching pod in the node's
   domain of the term's key. Else "node(s) didn't match pod anti-affinity
   rules", Unschedulable.
3. existing pods' required anti-affinity terms that match this pod: the
   node must not share the term's domain with such a pod. Else "node(s)
   didn't satisfy existing pods anti-affinity rules", Unschedulable.

Score: per domain, + weight for each matching pod of each preferred
affinity term of the pod (- for anti-affinity), and symmetrically for
existing pods whose preferred terms match this pod (their required
affinity terms count with HARD_POD_AFFINITY_WEIGHT); a node sums its
domains' values; min-max normalised to 0..100.

Counting goes through the view's per-selector counts (O(N) per term per
cycle) and walks only the pods that carry terms, not all pods.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from ..cluster_view import ClusterView, by_domain
from ..extension_points import CycleState
from ..objects import Pod
from ..status import SKIP, SUCCESS, Status, unschedulable
from .normalize import min_max_normalize

NAME = "InterPodAffinity"
AFFINITY = unschedulable("node(s) didn't match pod affinity rules", plugin=NAME, unresolvable=True)
ANTI = unschedulable("node(s) didn't match pod anti-affinity rules", plugin=NAME)
EXISTING_ANTI = unschedulable("node(s) didn't satisfy existing pods anti-affinity rules", plugin=NAME)
HARD_POD_AFFINITY_WEIGHT = 1  # upstream's InterPodAffinityArgs default


class InterPodAffinity:
    name = NAME
    filter_reasons: tuple[Status, ...] = (AFFINITY, ANTI, EXISTING_ANTI)

    def __init__(self, hard_pod_affinity_weight: int = HARD_POD_AFFINITY_WEIGHT) -> None:
        if isinstance(hard_pod_affinity_weight, bool) or not isinstance(hard_pod_affinity_weight, int) or not 0 <= hard_pod_affinity_weight <= 100:
            raise ValueError(f"InterPodAffinity: hard_pod_affinity_weight must be an integer 0..100 (got {hard_pod_affinity_weight!r})")
        self.hard_weight = hard_pod_affinity_weight

    def pre_filter(self, state: CycleState, pod: Pod, view: ClusterView) -> Status:
        forbidden: dict[str, set[int]] = defaultdict(set)  # key -> domains an existing pod's anti-affinity rules out
        for key, other in view.with_required_anti.items():
            node = view.node_of[key]
            for t in other.pod_affinity:
                if t.anti and view.matches(t.selector, pod.labels):
                    d = int(view.domains(t.topology_key)[node])
                    if d >= 0:
                        forbidden[t.topology_key].add(d)
        if not pod.pod_affinity and not forbidden:
            return SKIP
        affinity = [(t.topology_key, view.domain_counts(t.selector, t.topology_key)) for t in pod.pod_affinity if not t.anti]
        anti = [(t.topology_key, view.domain_counts(t.selector, t.topology_key)) for t in pod.pod_affinity if t.anti]
        nobody = all(not c.any() for _, c in affinity)
        self_match = all(view.matches(t.selector, pod.labels) for t in pod.pod_affinity if not t.anti)
        state[self.name] = (affinity, anti, dict(forbidden), nobody and self_match)
        return SUCCESS

    def filter_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        affinity, anti, forbidden, first_of_group = state[self.name]
        code = np.zeros(nodes.size, dtype=np.int64)
        for key, ds in forbidden.items():  # checked last upstream: lowest precedence, so written first
            dom = view.domains(key)[nodes]
            code[(dom >= 0) & np.isin(dom, list(ds))] = 3
        for key, per_domain in anti:
            code[by_domain(per_domain, view.domains(key)[nodes]) > 0] = 2
        if affinity:
            has_keys = np.ones(nodes.size, dtype=bool)
            exist = np.ones(nodes.size, dtype=bool)
            for key, per_domain in affinity:
                dom = view.domains(key)[nodes]
                has_keys &= dom >= 0
                exist &= by_domain(per_domain, dom) > 0
            code[~(has_keys & (exist | first_of_group))] = 1
        return code

    def filter(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status:
        code = int(self.filter_all(state, pod, view, np.array([node]))[0])
        return self.filter_reasons[code - 1] if code else SUCCESS

    def pre_score(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> Status:
        if not pod.preferred_pod_affinity and not view.with_affinity:
            return SKIP
        scores: dict[str, np.ndarray] = {}

        def add(key: str, values: np.ndarray) -> None:
            prev = scores.get(key)
            scores[key] = values if prev is None else prev + values

        for weight, t in pod.preferred_pod_affinity:
            add(t.topology_key, (-weight if t.anti else weight) * view.domain_counts(t.selector, t.topology_key))
        for key, other in view.with_affinity.items():
            node = view.node_of[key]
            terms = [(self.hard_weight, t) for t in other.pod_affinity if not t.anti]
            terms += [(-w if t.anti else w, t) for w, t in other.preferred_pod_affinity]
            for w, t in terms:
                d = int(view.domains(t.topology_key)[node])
                if w and d >= 0 and view.matches(t.selector, pod.labels):
                    one = np.zeros(len(view.domain_names(t.topology_key)), dtype=np.int64)
                    one[d] = w
                    add(t.topology_key, one)
        state[self.name + "/score"] = scores
        return SUCCESS

    def score_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        total = np.zeros(nodes.size, dtype=np.int64)
        for key, per_domain in state[self.name + "/score"].items():
            total += by_domain(per_domain, view.domains(key)[nodes])
        return total

    def score(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> int:
        return int(self.score_all(state, pod, view, np.array([node]))[0])

    def normalize_score(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray, scores: np.ndarray) -> np.ndarray:
        return min_max_normalize(scores)
