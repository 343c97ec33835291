"""NodeResourcesFit: does the pod's request fit what the node has left,
and how full would the node be with it (the scoring strategy).

Filter: for every resource the pod requests (> 0), request <= allocatable
- requested, else "Insufficient <resource>" (Unschedulable: evicting pods
could help). Code c in ``filter_all`` is the bitmask of short resources.

Score, over "requested" = the node's bound requests plus this pod's, per
resource with allocatable > 0, then the weighted mean over resources:

* LeastAllocated (upstream default; spreads): (alloc - req) * 100 / alloc,
  0 if req > alloc; integer mean.
* MostAllocated (bin packing): min(req, alloc) * 100 / alloc; integer mean.
* RequestedToCapacityRatio: utilisation req * 100 / alloc (100 if over)
  through a broken-linear ``shape`` of (utilisation 0..100, score 0..10)
  points, scores scaled by 10; rounded mean.
"""
from __future__ import annotations

from typing import Literal, Mapping, Sequence

import numpy as np

from schedlab.schedulers.model.resources import BASE, EPS
from ..cluster_view import ClusterView
from ..extension_points import MAX_NODE_SCORE, CycleState
from ..objects import Pod
from ..status import SUCCESS, Status, unschedulable
from .normalize import floor_int

Strategy = Literal["LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"]
STRATEGIES: tuple[str, ...] = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
MAX_CUSTOM_PRIORITY_SCORE = 10  # shape scores are 0..10, scaled to 0..MAX_NODE_SCORE

# A bin-packing shape (empty 0, full 10) when RequestedToCapacityRatio is
# chosen without one; upstream requires it to be given.
DEFAULT_SHAPE: tuple[tuple[int, int], ...] = ((0, 0), (100, 10))


def check_weights(resources: Mapping[str, int] | None) -> dict[str, int] | None:
    """The scoring strategy's ``resources`` (name -> weight), checked; the
    names are checked against the cell's when the plugin first sees it."""
    if resources is None:
        return None
    for r, w in resources.items():
        if isinstance(w, bool) or not isinstance(w, int) or w <= 0:
            raise ValueError(f"weight of resource {r} must be a positive integer (got {w!r})")
    return dict(resources)


def resource_weights(resources: Mapping[str, int] | None, names: tuple[str, ...]) -> np.ndarray:
    """Weight per resource of the cell (``names``; missing = 0, not
    scored). Default: cpu 1, mem 1 and no other, upstream's
    (NodeResourcesFitArgs scores cpu and memory unless told otherwise: an
    extended resource such as a GPU is filtered on, not scored)."""
    if resources is None:
        return np.array([1 if r in BASE else 0 for r in names], dtype=np.int64)
    unknown = sorted(set(resources) - set(names))
    if unknown:
        raise ValueError(f"unknown resource(s) {unknown}: expected some of {list(names)}")
    return np.array([resources.get(r, 0) for r in names], dtype=np.int64)


_GATHERED = "resources/gathered"


def requested_with(
    state: CycleState, view: ClusterView, pod_request: np.ndarray, nodes: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Per resource over ``nodes``: (requested including the pod,
    allocatable). One resource column at a time because gathering 1-D
    columns is several times faster than gathering rows of [N, R]; cached
    in the cycle state for this candidate array, which NodeResourcesFit
    and NodeResourcesBalancedAllocation both score."""
    hit = state.get(_GATHERED)
    if hit is not None and hit[0] is nodes and hit[1] is pod_request:
        return hit[2], hit[3]
    req = [view.requested[:, r][nodes] + pod_request[r] for r in range(len(pod_request))]
    alloc = [view.capacity[:, r][nodes] for r in range(len(pod_request))]
    state[_GATHERED] = (nodes, pod_request, req, alloc)
    return req, alloc


def weighted_mean(per_resource: list[np.ndarray], alloc: list[np.ndarray], weights: np.ndarray, rounded: bool = False) -> np.ndarray:
    """Mean of int per-resource scores over resources with allocatable > 0,
    weighted; integer division (or rounded, for RequestedToCapacityRatio).
    Nodes with nothing to weigh score 0."""
    num: np.ndarray | int = 0
    den: np.ndarray | int = 0
    for s, a, w in zip(per_resource, alloc, weights):
        if w:
            wa = (a > 0) * int(w)
            num = num + s * wa
            den = den + wa
    n = alloc[0].size if alloc else 0
    num, den = np.broadcast_to(num, n), np.broadcast_to(den, n)
    safe = np.maximum(den, 1)
    out = np.floor(num / safe + 0.5).astype(np.int64) if rounded else num // safe
    return np.where(den > 0, out, 0)


def broken_linear(shape: Sequence[tuple[int, int]], x: np.ndarray) -> np.ndarray:
    """The piecewise-linear function through ``shape`` at integer ``x``,
    flat beyond its ends; integer arithmetic truncating toward zero as
    upstream's Go does."""
    xs = np.array([u for u, _ in shape], dtype=np.int64)
    ys = np.array([s for _, s in shape], dtype=np.int64)
    k = np.clip(np.searchsorted(xs, x, side="left"), 1, len(xs) - 1)
    x0, x1, y0, y1 = xs[k - 1], xs[k], ys[k - 1], ys[k]
    inner = y0 + np.trunc((y1 - y0) * (x - x0) / np.maximum(x1 - x0, 1)).astype(np.int64)
    return np.where(x <= xs[0], ys[0], np.where(x >= xs[-1], ys[-1], inner))


def validate_shape(shape: Sequence[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    pts = tuple((int(u), int(s)) for u, s in shape)
    if not pts:
        raise ValueError("RequestedToCapacityRatio shape needs at least one point")
    us = [u for u, _ in pts]
    if any(not 0 <= u <= 100 for u in us) or any(b <= a for a, b in zip(us, us[1:])):
        raise ValueError(f"shape utilizations must increase strictly within 0..100 (got {us})")
    if any(not 0 <= s <= MAX_CUSTOM_PRIORITY_SCORE for _, s in pts):
        raise ValueError(f"shape scores must lie within 0..{MAX_CUSTOM_PRIORITY_SCORE}")
    return pts


class _Reasons(Sequence[Status]):
    """Upstream's "Insufficient <resource>" for each set of short resources:
    ``[code - 1]`` for the bit mask ``code``, made when first asked for
    (2^R - 1 of them exist; a cycle meets a handful)."""

    def __init__(self, names: tuple[str, ...], plugin: str) -> None:
        self.names, self.plugin = names, plugin
        self._made: dict[int, Status] = {}

    def __len__(self) -> int:
        return (1 << len(self.names)) - 1

    def __getitem__(self, i: int) -> Status:  # type: ignore[override]
        if not 0 <= i < len(self):
            raise IndexError(i)
        got = self._made.get(i)
        if got is None:
            code = i + 1
            got = self._made[i] = unschedulable(*(f"Insufficient {r}" for j, r in enumerate(self.names) if code >> j & 1),
                                                plugin=self.plugin)
        return got


class NodeResourcesFit:
    name = "NodeResourcesFit"

    def __init__(
        self,
        strategy: Strategy = "LeastAllocated",
        resources: Mapping[str, int] | None = None,
        shape: Sequence[tuple[int, int]] | None = None,
    ) -> None:
        if strategy not in STRATEGIES:
            raise ValueError(f"NodeResourcesFit: unknown scoring strategy {strategy!r} (one of {', '.join(STRATEGIES)})")
        self.strategy = strategy
        self.resources = check_weights(resources)
        self.shape = validate_shape(shape if shape is not None else DEFAULT_SHAPE)
        self._scaled = tuple((u, s * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for u, s in self.shape)
        self._names: tuple[str, ...] = ()
        self.weights = np.zeros(0, dtype=np.int64)
        self._bits = np.zeros(0, dtype=np.int64)
        self.filter_reasons: Sequence[Status] = ()

    def _cell(self, view: ClusterView) -> None:
        """The weights, and upstream's "Insufficient <resource>" for each
        set of short resources (code c: ``filter_reasons[c - 1]``), for
        the cell's resources: resolved once per cell, whose names the
        plugin learns from the view (a profile is built before it)."""
        if view.resources != self._names:
            names = self._names = view.resources
            self.weights = resource_weights(self.resources, names)
            self._bits = 1 << np.arange(len(names))
            self.filter_reasons = _Reasons(names, self.name)

    def _request(self, state: CycleState, pod: Pod) -> np.ndarray:
        req = state.get(self.name)
        if req is None:
            req = state[self.name] = np.asarray(pod.requests, dtype=float)
        return req

    def pre_filter(self, state: CycleState, pod: Pod, view: ClusterView) -> Status:
        self._request(state, pod)
        return SUCCESS

    def filter_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        self._cell(view)
        req = self._request(state, pod)
        code = np.zeros(nodes.size, dtype=np.int64)
        for r, bit in enumerate(self._bits):
            if req[r] > 0:
                code += (view.free[:, r][nodes] + EPS < req[r]) * int(bit)
        return code

    def filter(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status:
        code = int(self.filter_all(state, pod, view, np.array([node]))[0])
        return self.filter_reasons[code - 1] if code else SUCCESS

    def score_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray:
        self._cell(view)
        reqs, allocs = requested_with(state, view, self._request(state, pod), nodes)
        per = []
        for req, alloc in zip(reqs, allocs):
            safe = np.where(alloc > 0, alloc, 1.0)
            over = req > alloc + EPS
            if self.strategy == "LeastAllocated":
                per.append(np.where(over, 0, floor_int((alloc - req) * MAX_NODE_SCORE / safe)))
            elif self.strategy == "MostAllocated":
                per.append(floor_int(np.minimum(req, alloc) * MAX_NODE_SCORE / safe))
            else:
                util = np.where(over, 100, floor_int(req * 100 / safe))
                per.append(broken_linear(self._scaled, util))
        return weighted_mean(per, allocs, self.weights, rounded=self.strategy == "RequestedToCapacityRatio")

    def score(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> int:
        return int(self.score_all(state, pod, view, np.array([node]))[0])
