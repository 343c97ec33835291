"""PodTopologySpread: spread pods matching a selector over the domains of
a topology key (zones, racks, hosts).

Eligible nodes: those the pod's nodeSelector / required node affinity
allow (upstream's nodeAffinityPolicy Honor) that carry every topology key
of the pod's constraints of that kind; only their pods are counted and
only their domains take part. A node lacking a key is never eligible.

Filter (DoNotSchedule): for each constraint, with matchNum the matching
pods in the node's domain, selfMatch 1 if the pod matches its own
selector, and minMatch the least matchNum over eligible domains:
matchNum + selfMatch - minMatch <= maxSkew. A node without the key:
"... (missing required label)", UnschedulableAndUnresolvable; a skew too
large: "node(s) didn't match pod topology spread constraints",
Unschedulable (evicting pods could lower it).

Score (ScheduleAnyway): per constraint cnt * log(domains + 2) + (maxSkew -
1), summed and rounded, where cnt counts matching pods in the node's domain
(for the hostname key, on the node itself) and domains is how many distinct
domains the candidates span (for hostname, the candidates). Fewer is
better: normalised to 100 * (max + min - s) / max; candidates lacking a
key are ignored and get 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..cluster_view import ClusterView, by_domain
from ..extension_points import MAX_NODE_SCORE, CycleState
from ..objects import HOSTNAME, Pod, SpreadConstraint
from ..status import SKIP, SUCCESS, Status, unschedulable
from .node_affinity import has_required, required_mask

NAME = "PodTopologySpread"
MISSING_LABEL = unschedulable(
    "node(s) didn't match pod topology spread constraints (missing required label)", plugin=NAME, unresolvable=True
)
SKEWED = unschedulable("node(s) didn't match pod topology spread constraints", plugin=NAME)
_NO_DOMAIN = np.iinfo(np.int64).max // 2  # minMatch when no domain is eligible: no node is skewed


@dataclass
class _Counted:
    """One constraint, counted: the domain of every node and the matching
    pods per domain (eligible nodes only)."""

    c: SpreadConstraint
    dom: np.ndarray
    per_domain: np.ndarray


def _eligible(view: ClusterView, pod: Pod, constraints: list[SpreadConstraint]) -> np.ndarray:
    ok = required_mask(view, pod).copy() if has_required(pod) else np.ones(view.n, dtype=bool)
    for c in constraints:
        ok &= view.domains(c.topology_key) >= 0
    return ok


def _count(view: ClusterView, constraints: list[SpreadConstraint], eligible: np.ndarray) -> list[_Counted]:
    return [
        _Counted(c, view.domains(c.topology_key), view.domain_counts(c.selector, c.topology_key, eligible))
        for c in constraints
    ]


class PodTopologySpread:
    name = NAME
    filter_reasons: tuple[Status, ...] = (MISSING_LABEL, SKEWED)

    def pre_filter(self, state: CycleState, pod: Pod, view: ClusterView) -> Status:
        hard = [c for c in pod.spread if c.when_unsatisfiable == "DoNotSchedule"]
        if not hard:
            return SKIP
        eligible = _eligible(view, pod, hard)
        rows = []
        for k in _count(view, hard, eligible):
            present = np.unique(k.dom[eligible])
            min_match = int(k.per_domain[present].min()) if present.size else _NO_DOMAIN
            self_match = int(view.matches(k.c.selector, pod.labels))
            rows.append((k, min_match, self_match))
        state[self.name] = rows
        return SUCCESS

    def filter_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        code = np.zeros(nodes.size, dtype=np.int64)
        for k, min_match, self_match in state[self.name]:
            d = k.dom[nodes]
            missing = d < 0
            match = by_domain(k.per_domain, d)
            skewed = ~missing & (match + self_match - min_match > k.c.max_skew)
            code = np.where(code == 0, np.where(missing, 1, np.where(skewed, 2, 0)), code)
        return code

    def filter(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status:
        code = int(self.filter_all(state, pod, view, np.array([node]))[0])
        return self.filter_reasons[code - 1] if code else SUCCESS

    def pre_score(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> Status:
        soft = [c for c in pod.spread if c.when_unsatisfiable == "ScheduleAnyway"]
        if not soft or not view.n:
            return SKIP
        eligible = _eligible(view, pod, soft)
        scored = eligible[nodes]  # candidates lacking a key are ignored
        rows = []
        for k in _count(view, soft, eligible):
            if k.c.topology_key == HOSTNAME:
                size = int(scored.sum())
            else:
                size = np.unique(k.dom[nodes[scored]]).size
            rows.append((k, math.log(size + 2)))
        state[self.name + "/score"] = (rows, eligible)
        return SUCCESS

    def score_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        rows, eligible = state[self.name + "/score"]
        scored = eligible[nodes]
        total = np.zeros(nodes.size)
        for k, weight in rows:
            if k.c.topology_key == HOSTNAME:
                cnt = view.match_counts(k.c.selector)[nodes]
            else:
                cnt = by_domain(k.per_domain, k.dom[nodes])
            total += cnt * weight + (k.c.max_skew - 1)
        return np.where(scored, np.floor(total + 0.5), 0).astype(np.int64)

    def score(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> int:
        return int(self.score_all(state, pod, view, np.array([node]))[0])

    def normalize_score(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray, scores: np.ndarray) -> np.ndarray:
        scored = state[self.name + "/score"][1][nodes]
        if not scored.any():
            return np.zeros_like(scores)
        lo, hi = int(scores[scored].min()), int(scores[scored].max())
        if hi == 0:
            return np.where(scored, MAX_NODE_SCORE, 0).astype(np.int64)
        return np.where(scored, MAX_NODE_SCORE * (hi + lo - scores) // hi, 0).astype(np.int64)
