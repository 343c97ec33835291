"""DeviceShare: GPUs as devices in the kube-scheduler, as GPU-sharing
schedulers on Kubernetes do it (Alibaba's gpushare scheduler extender; the
FGD paper's scheduler, built as Filter and Score plugins).

The node rows of a cell with devices carry a column per device slot
(``cluster.with_devices``): each device's free share. For a pod asking for
devices (whole ones, or a share of one, on the models it allows):

- **Filter**: the node's devices can hold the ask on a model it allows (a
  share on one device alone; k whole devices);
- **Score**: the device policy's score of each feasible node (``fgd``:
  minus the least fragmentation growth over the node's device choices;
  ``best_fit``, ``dot_product``, ``gpu_packing``, ``random_fit``), spread
  over 0..100;
- **Reserve**: the devices the policy takes on the chosen node are written
  into the pod's request in the scheduler's view (its device columns), and
  the binding carries that request to the API store, as gpushare writes
  the GPU index into the pod's annotations at bind: the store's room check,
  the kubelet's accounting and the invariants then see each device.

A pod asking for no device passes every node and scores 0 here.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ..cluster_view import ClusterView
from ..extension_points import CycleState
from ..objects import Pod
from ..status import SUCCESS, Code, Status
from schedlab.schedulers.model.devices import device_fits, model_ok
from schedlab.schedulers.placement.device_claims import DeviceView
from schedlab.schedulers.placement.device_policies import node_choices
from schedlab.schedulers.placement.fragmentation import DeviceCell, Shape

NAME = "DeviceShare"
INSUFFICIENT = Status(Code.UNSCHEDULABLE, ("Insufficient devices",))
_CHOSEN = "DeviceShare/chosen"  # CycleState key: node -> the devices the policy would take there


class DeviceShare:
    name = NAME
    filter_reasons = (INSUFFICIENT,)

    def __init__(self, view: DeviceView, seed: int = 0) -> None:
        self.dv = view
        self.rng = np.random.default_rng(seed)

    def _shape(self, pod: Pod) -> Shape:
        return Shape(tuple(float(x) for x in pod.requests[:self.dv.declared]), self.dv.allowed(pod.models))

    def _cell(self, view: ClusterView) -> DeviceCell:
        r = self.dv.declared
        return DeviceCell(view.free[:, :r], self.dv.capacity, view.free[:, r:], self.dv.model, self.dv.column)

    def _asks(self, pod: Pod) -> bool:
        return float(pod.requests[self.dv.column]) > 0

    def filter_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        if not self._asks(pod):
            return np.zeros(nodes.size, dtype=np.int64)
        ask = self._shape(pod).ask(self.dv.column)
        ok = device_fits(view.free[nodes, self.dv.declared:], ask) & model_ok(self.dv.model[nodes], ask)
        return (~ok).astype(np.int64)

    def filter(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status:
        return INSUFFICIENT if self.filter_all(state, pod, view, np.array([node]))[0] else SUCCESS

    def score_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        if not self._asks(pod) or nodes.size == 0:
            return np.zeros(nodes.size, dtype=np.int64)
        order = np.argsort(nodes, kind="stable")
        ok = nodes[order]
        scores, took = node_choices(self.dv.policy, self._cell(view), self._shape(pod), ok, self.rng, self.dv.workload)
        state[_CHOSEN] = {int(m): d for m, d in zip(ok.tolist(), took)}
        lo, hi = float(scores.min()), float(scores.max())
        spread = np.zeros(ok.size) if hi - lo < 1e-12 else (scores - lo) / (hi - lo) * 100.0
        out = np.empty(nodes.size, dtype=np.int64)
        out[order] = np.rint(spread).astype(np.int64)
        return out

    def score(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> int:
        return int(self.score_all(state, pod, view, np.array([node]))[0])

    def reserve(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status:
        if not self._asks(pod):
            return SUCCESS
        devices = state.get(_CHOSEN, {}).get(int(node))
        if devices is None:  # scored elsewhere (a nominated node, a single candidate): choose now
            _, took = node_choices(self.dv.policy, self._cell(view), self._shape(pod), np.array([node]), self.rng,
                                   self.dv.workload)
            devices = took[0]
        if len(devices) == 0:
            return Status(Code.UNSCHEDULABLE, ("no devices left on the node",))
        ask = self._shape(pod).ask(self.dv.column)
        req = np.asarray(pod.requests, dtype=np.float64)
        req[self.dv.declared + np.asarray(devices, dtype=np.int64)] = ask.per_device
        if state.assumed and view.node_of.get(pod.key) == node:
            view.remove_pod(pod.key)
            view.add_pod(dataclasses.replace(pod, requests=tuple(float(x) for x in req)), node)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> None:
        return None  # the assumed pod (with its devices) leaves the view with the framework's unreserve
