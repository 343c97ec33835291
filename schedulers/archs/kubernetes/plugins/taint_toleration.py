"""TaintToleration: a node's NoSchedule and NoExecute taints keep out pods
that do not tolerate them (filter); its PreferNoSchedule taints make it
less attractive (score).

Filter: the first hard taint no toleration matches rejects the node with
"node(s) had untolerated taint {key: value}", UnschedulableAndUnresolvable.
Score: the number of PreferNoSchedule taints not tolerated by the pod's
tolerations whose effect is PreferNoSchedule or empty; normalised in
reverse, so the node with the fewest gets 100 and the most 0.
"""
from __future__ import annotations

import numpy as np

from ..cluster_view import ClusterView
from ..extension_points import CycleState
from ..objects import Pod, Taint, Toleration
from ..status import SUCCESS, Status, unschedulable
from .normalize import default_normalize

NAME = "TaintToleration"


def untolerated(taints: tuple[Taint, ...], tolerations: tuple[Toleration, ...], effects: tuple[str, ...]) -> list[Taint]:
    """Taints with one of ``effects`` that no toleration tolerates."""
    return [t for t in taints if t.effect in effects and not any(tol.tolerates(t) for tol in tolerations)]


class TaintToleration:
    name = NAME

    def filter_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        """Bool (True passes): only nodes with hard taints need a look, and
        the answer per node is cached per distinct toleration list."""
        tols = pod.tolerations
        ok = view.node_values(
            (NAME, "filter", tols),
            lambda i: not untolerated(view.nodes[i].taints, tols, ("NoSchedule", "NoExecute")),
        )
        return ok[nodes]

    def filter(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status:
        bad = untolerated(view.nodes[node].taints, pod.tolerations, ("NoSchedule", "NoExecute"))
        if not bad:
            return SUCCESS
        return unschedulable(f"node(s) had untolerated taint {{{bad[0].key}: {bad[0].value}}}", plugin=NAME, unresolvable=True)

    def score_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        soft = tuple(t for t in pod.tolerations if t.effect in ("", "PreferNoSchedule"))
        if not soft:
            return view.soft_taints[nodes].copy()
        counts = view.node_values(
            (NAME, "score", soft),
            lambda i: len(untolerated(view.nodes[i].taints, soft, ("PreferNoSchedule",))),
            dtype=np.int64,
        )
        return counts[nodes]

    def score(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> int:
        return int(self.score_all(state, pod, view, np.array([node]))[0])

    def normalize_score(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray, scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=True)
