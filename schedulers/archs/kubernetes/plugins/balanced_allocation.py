"""NodeResourcesBalancedAllocation: prefer nodes whose resources would be
used evenly with the pod on them.

Score = (1 - std) * 100, truncated, where std is the population standard
deviation of the per-resource fractions requested / allocatable (capped at
1, resources with allocatable 0 left out). A pod requesting nothing is
skipped (PreScore Skip), as upstream skips best-effort pods.
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from ..cluster_view import ClusterView
from ..extension_points import MAX_NODE_SCORE, CycleState
from ..objects import Pod
from ..status import SKIP, SUCCESS, Status
from .resources_fit import check_weights, requested_with, resource_weights


class NodeResourcesBalancedAllocation:
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, resources: Mapping[str, int] | None = None) -> None:
        self.resources = check_weights(resources)
        self._names: tuple[str, ...] = ()
        self.use = np.zeros(0, dtype=bool)  # which of the cell's resources count; their weights do not

    def pre_score(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> Status:
        if view.resources != self._names:
            self._names = view.resources
            self.use = resource_weights(self.resources, self._names) > 0
        req = state.get("NodeResourcesFit")  # share the request array, and so the gathered columns
        if req is None:
            req = np.asarray(pod.requests, dtype=float)
        if not (req[self.use] > 0).any():
            return SKIP
        state[self.name] = req
        return SUCCESS

    def score_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        reqs, allocs = requested_with(state, view, state[self.name], nodes)
        fracs, valids = [], []
        for req, alloc, use in zip(reqs, allocs, self.use):
            if use:
                valid = alloc > 0
                fracs.append(np.where(valid, np.minimum(req / np.where(valid, alloc, 1.0), 1.0), 0.0))
                valids.append(valid)
        if len(fracs) == 2 and valids[0].all() and valids[1].all():
            std = np.abs(fracs[0] - fracs[1]) / 2  # upstream's two-resource form
        else:
            cnt = np.maximum(np.sum(valids, axis=0), 1)
            mean = np.sum(fracs, axis=0) / cnt
            dev = [np.where(v, f - mean, 0.0) for f, v in zip(fracs, valids)]
            std = np.sqrt(np.sum([d * d for d in dev], axis=0) / cnt)
        return ((1 - std) * MAX_NODE_SCORE).astype(np.int64)

    def score(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> int:
        return int(self.score_all(state, pod, view, np.array([node]))[0])
