"""LeastPods: the node running the fewest pods scores highest. Not an
upstream plugin: Docker Swarm's "spread" strategy, which ranks nodes by
their task count (resources only filter), for the swarm scenario built
from these parts."""
from __future__ import annotations

import numpy as np

from ..cluster_view import ClusterView
from ..extension_points import CycleState
from ..objects import Pod
from .normalize import default_normalize

NAME = "LeastPods"


class LeastPods:
    name = NAME

    def score_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        return np.array([len(view.pods_on[int(i)]) for i in nodes], dtype=np.int64)

    def score(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> int:
        return len(view.pods_on[node])

    def normalize_score(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray,
                        scores: np.ndarray) -> np.ndarray:
        return default_normalize(scores, reverse=True)  # fewer pods, higher score
