"""NodeUnschedulable: a cordoned node (``Node.unschedulable``) takes no
new pods unless the pod tolerates the taint upstream puts on it,
node.kubernetes.io/unschedulable:NoSchedule. Rejection:
"node(s) were unschedulable", UnschedulableAndUnresolvable."""
from __future__ import annotations

import numpy as np

from ..cluster_view import ClusterView
from ..extension_points import CycleState
from ..objects import Pod, Taint
from ..status import SUCCESS, Status, unschedulable

NAME = "NodeUnschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
REJECTED = unschedulable("node(s) were unschedulable", plugin=NAME, unresolvable=True)


class NodeUnschedulable:
    name = NAME
    filter_reasons: tuple[Status, ...] = (REJECTED,)

    def filter_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        if any(t.tolerates(UNSCHEDULABLE_TAINT) for t in pod.tolerations):
            return np.zeros(nodes.size, dtype=np.int64)
        return view.unschedulable[nodes].astype(np.int64)

    def filter(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status:
        return REJECTED if self.filter_all(state, pod, view, np.array([node]))[0] else SUCCESS
