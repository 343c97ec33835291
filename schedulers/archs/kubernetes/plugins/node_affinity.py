"""NodeAffinity: the pod's nodeSelector and required node-affinity terms
as a filter, its preferred terms as a score.

Filter: every nodeSelector label must be on the node, and, when required
terms exist, at least one term must match (terms ORed, requirements within
a term ANDed; a term with no requirements matches no node, as upstream).
Rejection: "node(s) didn't match Pod's node affinity/selector",
UnschedulableAndUnresolvable (evicting pods cannot change labels).

Score: the sum of the weights of the preferred terms the node matches,
scaled so the best candidate gets 100. Pods with nothing to check are
skipped at PreFilter / PreScore, so they cost nothing per node.
"""
from __future__ import annotations

import numpy as np

from ..cluster_view import ClusterView
from ..extension_points import CycleState
from ..objects import Pod, Selector
from ..status import SKIP, SUCCESS, Status, unschedulable
from .normalize import default_normalize

NAME = "NodeAffinity"
REJECTED = unschedulable("node(s) didn't match Pod's node affinity/selector", plugin=NAME, unresolvable=True)


def _term_matches(term: Selector, ls: dict[str, str]) -> bool:
    return bool(term.requirements) and term.matches(ls)


def has_required(pod: Pod) -> bool:
    return bool(pod.node_selector or pod.affinity.required)


def required_mask(view: ClusterView, pod: Pod) -> np.ndarray:
    """Bool [N]: nodes the pod's nodeSelector and required terms allow
    (cached per distinct selector in the view). Also PodTopologySpread's
    node-inclusion rule (nodeAffinityPolicy Honor)."""
    sel, terms = pod.node_selector, pod.affinity.required

    def ok(i: int) -> bool:
        ls = view.labels_of(i)
        if any(ls.get(k) != v for k, v in sel):
            return False
        return not terms or any(_term_matches(t, ls) for t in terms)

    return view.node_values((NAME, sel, terms), ok)


class NodeAffinity:
    name = NAME
    filter_reasons: tuple[Status, ...] = (REJECTED,)

    def pre_filter(self, state: CycleState, pod: Pod, view: ClusterView) -> Status:
        if not has_required(pod):
            return SKIP
        state[self.name] = required_mask(view, pod)
        return SUCCESS

    def filter_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        return (~state[self.name][nodes]).astype(np.int64)

    def filter(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status:
        return SUCCESS if state[self.name][node] else REJECTED

    def pre_score(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> Status:
        return SUCCESS if pod.affinity.preferred else SKIP

    def score_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        total = np.zeros(nodes.size, dtype=np.int64)
        for weight, term in pod.affinity.preferred:
            hit = view.node_values((NAME, "preferred", term), lambda i: _term_matches(term, view.labels_of(i)))  # called at once
            total += weight * hit[nodes]
        return total

    def score(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> int:
        return int(self.score_all(state, pod, view, np.array([node]))[0])

    def normalize_score(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores)
