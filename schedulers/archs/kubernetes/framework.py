"""The scheduling cycle: ``schedule_one`` and the ``run_*`` steps it is
made of, which a PostFilter plugin (preemption) may rerun on its own.

The pieces the cycle runs live beside it: ``status`` (a plugin's verdict),
``extension_points`` (``CycleState``, the plugin protocols and their batch
forms), ``profile`` (``Profile``, ``num_feasible_nodes_to_find``) and
``diagnosis`` (why nodes were filtered out). The names the tests and older
callers import from here are re-exported (``__all__``); in-package code
imports them from their own modules.

One cycle, as upstream kube-scheduler runs it (``schedule_one.go``):

1. **PreFilter** per plugin, in profile order: precompute per-pod state in
   the ``CycleState``; ``Skip`` drops that plugin's Filter for this cycle;
   a rejection marks every node with that status and goes to PostFilter.
2. **Filter** over the nodes starting at a rotating start index, every
   plugin in order on each node until one rejects it, stopping once
   ``num_feasible_nodes_to_find`` feasible nodes are found
   (``percentageOfNodesToScore``). The next cycle starts where this one
   stopped (``next_start_index``), so every node gets its turn. Batch forms
   (``filter_all``, ``score_all``: see ``extension_points``) are preferred.
3. No feasible node: **PostFilter** plugins in order (preemption) with the
   per-node statuses (``Diagnosis``) until one succeeds.
4. One feasible node: chosen without scoring (as upstream).
5. **PreScore**, **Score** per plugin, **NormalizeScore** to 0..100
   (``MAX_NODE_SCORE``), times the profile's weight, summed; the highest
   total wins, ties broken uniformly by the Generator passed in (the same
   distribution as upstream's reservoir sampling over ties) or, without one,
   by rotation order.
6. The pod is **assumed** on the node in the view, then **Reserve** and
   **Permit**; a rejection unreserves (in reverse order) and forgets it.
   A Wait keeps the pod assumed and reports each waiting plugin's timeout
   (capped at 15 min, as upstream); the scheduler core holds it among its
   waiting pods (``waiting_pods``) until it is allowed, rejected or timed
   out.

The binding cycle's **Bind** is ``run_bind``: the profile's Bind plugins
in order, each Success (it binds), Skip (the next one decides) or a
failure; the scheduler core runs it once a pod may bind, and the shell
writes the binding to the API store (the write DefaultBinder stands for).
When the bind fails, ``unreserve`` undoes Reserve and the assumption.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from .cluster_view import ClusterView
from .diagnosis import Diagnosis, StatusTable
from .extension_points import MAX_NODE_SCORE, CycleState, PostFilterResult
from .objects import Pod
from .profile import Profile, num_feasible_nodes_to_find
from .status import SKIP, SUCCESS, Code, Status, error, unschedulable
from .waiting_pods import MAX_PERMIT_TIMEOUT_S, WaitingPods

__all__ = [
    # the cycle
    "CycleError",
    "ScheduleResult",
    "find_feasible",
    "run_filter_plugins",
    "run_bind",
    "run_post_filter",
    "run_pre_filter",
    "schedule_one",
    "score_nodes",
    "select_host",
    "unreserve",
    # re-exported for the tests and callers outside the package
    "SKIP",
    "SUCCESS",
    "Code",
    "CycleState",
    "PostFilterResult",
    "Profile",
    "Status",
    "num_feasible_nodes_to_find",
    "unschedulable",
]


class CycleError(Exception):
    """A plugin returned Error: the cycle ends, the pod is retried later."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message)
        self.status = status


# -- running extension points ------------------------------------------------


def run_pre_filter(profile: Profile, state: CycleState, pod: Pod, view: ClusterView) -> Status:
    """Every PreFilter plugin in order; the first rejection or error ends it.
    Also the way to refresh per-pod state after the view changed (preemption
    removing victims): it resets the skip set and recomputes."""
    state.skip_filter.clear()
    for p in profile.pre_filter:
        st = p.pre_filter(state, pod, view)
        if st.code == Code.SKIP:
            state.skip_filter.add(p.name)
        elif not st.ok:
            return st.by(p.name)
    return SUCCESS


def run_filter_plugins(profile: Profile, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status:
    """All Filter plugins on one node (after ``run_pre_filter``); the first
    non-success status, or Success."""
    for p in profile.filter:
        if p.name in state.skip_filter:
            continue
        st = p.filter(state, pod, view, node)
        if not st.ok:
            return st.by(p.name)
    return SUCCESS


def _filter_chunk(p: Any, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray, table: StatusTable) -> tuple[np.ndarray, np.ndarray]:
    """One plugin over ``nodes``: (pass mask, table index per rejected node)."""
    batch = getattr(p, "filter_all", None)
    if batch is None:
        sts = [p.filter(state, pod, view, int(n)) for n in nodes]
        passes = np.fromiter((s.ok for s in sts), dtype=bool, count=len(sts))
        rejected = [s for s in sts if not s.ok]
    else:
        out = np.asarray(batch(state, pod, view, nodes))
        if out.dtype == bool:
            passes = out
            rejected = [p.filter(state, pod, view, int(n)) for n in nodes[~passes]]
        else:
            passes = out == 0
            if passes.all():
                return passes, np.zeros(0, dtype=np.int64)
            codes = out[~passes]
            lut = np.zeros(int(codes.max()) + 1, dtype=np.int64)
            for c in np.unique(codes):
                lut[c] = table.index(p.filter_reasons[c - 1].by(p.name))
            return passes, lut[codes]
    for s in rejected:
        if s.code == Code.ERROR:
            raise CycleError(s.by(p.name))
    return passes, np.array([table.index(s.by(p.name)) for s in rejected], dtype=np.int64)


def find_feasible(
    profile: Profile, state: CycleState, pod: Pod, view: ClusterView, order: np.ndarray, need: int
) -> tuple[np.ndarray, Diagnosis, int]:
    """Filter nodes in ``order`` until ``need`` pass: (feasible rows in
    order, diagnosis of the rejected ones, nodes processed). Works in chunks
    so the batch plugins see many nodes per call; nodes after the last one
    kept count as not processed, exactly as a node-by-node scan."""
    table = StatusTable()
    filters = [p for p in profile.filter if p.name not in state.skip_filter]
    if not filters:
        return order[:need], Diagnosis(view.n), min(need, order.size)
    found: list[np.ndarray] = []
    bad_nodes: list[np.ndarray] = []
    bad_status: list[np.ndarray] = []
    n_found, pos, processed = 0, 0, 0
    chunk = max(need, 64)
    while pos < order.size and n_found < need:
        idx = order[pos : pos + chunk]
        alive = np.arange(idx.size)
        rejected_at: list[np.ndarray] = []
        rejected_st: list[np.ndarray] = []
        for p in filters:
            passes, st = _filter_chunk(p, state, pod, view, idx[alive], table)
            if st.size:
                rejected_at.append(alive[~passes])
                rejected_st.append(st)
                alive = alive[passes]
            if not alive.size:
                break
        cut = idx.size
        if n_found + alive.size >= need:
            alive = alive[: need - n_found]
            cut = int(alive[-1]) + 1
        for at, st in zip(rejected_at, rejected_st):
            keep = at < cut
            bad_nodes.append(idx[at[keep]])
            bad_status.append(st[keep])
        found.append(idx[alive])
        n_found += alive.size
        processed += cut
        pos += idx.size
        # The next chunk: twice what is still missing, so a mostly-full
        # cluster converges in a few rounds without scanning everything at once.
        chunk = max(2 * (need - n_found), 64)
    feasible = np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
    diag = Diagnosis(view.n, table=table.items)
    if bad_nodes:
        nodes, sts = np.concatenate(bad_nodes), np.concatenate(bad_status)
        order_of = np.argsort(_positions(nodes, order), kind="stable")  # report in scan order
        diag.nodes, diag.status_index = nodes[order_of], sts[order_of]
    return feasible, diag, processed


def _positions(nodes: np.ndarray, order: np.ndarray) -> np.ndarray:
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank[nodes]


def score_nodes(
    profile: Profile, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """PreScore, Score, NormalizeScore and weights over ``nodes``: (weighted
    totals, normalised unweighted scores per plugin)."""
    state.skip_score.clear()
    for p in profile.pre_score:
        st = p.pre_score(state, pod, view, nodes)
        if st.code == Code.SKIP:
            state.skip_score.add(p.name)
        elif not st.ok:
            raise CycleError(st.by(p.name))
    if not profile.score:
        return np.ones(nodes.size, dtype=np.int64), {}
    totals = np.zeros(nodes.size, dtype=np.int64)
    per_plugin: dict[str, np.ndarray] = {}
    for p in profile.score:
        if p.name in state.skip_score:
            continue
        batch = getattr(p, "score_all", None)
        if batch is not None:
            s = np.asarray(batch(state, pod, view, nodes), dtype=np.int64)
        else:
            s = np.fromiter((p.score(state, pod, view, int(n)) for n in nodes), dtype=np.int64, count=nodes.size)
        norm = getattr(p, "normalize_score", None)
        if norm is not None:
            s = np.asarray(norm(state, pod, view, nodes, s), dtype=np.int64)
        if s.size and (s.min() < 0 or s.max() > MAX_NODE_SCORE):
            raise CycleError(error(f"plugin {p.name} returned a score outside 0..{MAX_NODE_SCORE}", p.name))
        per_plugin[p.name] = s
        totals += s * profile.weight(p.name)
    return totals, per_plugin


def select_host(nodes: np.ndarray, totals: np.ndarray, rng: np.random.Generator | None) -> int:
    """The highest total; among ties, uniform by ``rng`` (what upstream's
    reservoir sampling over ties amounts to), else the first in scan order."""
    ties = np.flatnonzero(totals == totals.max())
    k = int(rng.integers(ties.size)) if rng is not None and ties.size > 1 else 0
    return int(nodes[ties[k]])


# -- the cycle ---------------------------------------------------------------


@dataclass
class ScheduleResult:
    """The decision of one cycle. ``node`` is set when the pod may be bound
    (``status`` Success) or waits at Permit (``status`` Wait: each waiting
    plugin's timeout in ``permit_waits``, the first to fire in
    ``permit_timeout``); otherwise ``status`` says why not and
    ``nominated_node`` what PostFilter (preemption) proposed."""

    pod: Pod
    node: int | None
    status: Status
    state: CycleState
    diagnosis: Diagnosis
    evaluated_nodes: int = 0
    feasible_nodes: int = 0
    next_start_index: int = 0
    candidates: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    scores: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    plugin_scores: dict[str, np.ndarray] = field(default_factory=dict)
    post_filter: PostFilterResult | None = None
    permit_timeout: float = 0.0
    permit_waits: dict[str, float] = field(default_factory=dict)

    @property
    def scheduled(self) -> bool:
        return self.node is not None and self.status.code in (Code.SUCCESS, Code.WAIT)

    @property
    def nominated_node(self) -> int | None:
        return self.post_filter.nominated_node if self.post_filter is not None else None


def run_post_filter(profile: Profile, state: CycleState, pod: Pod, view: ClusterView, diagnosis: Diagnosis) -> PostFilterResult | None:
    """PostFilter plugins in order until one succeeds or errs."""
    last: PostFilterResult | None = None
    for p in profile.post_filter:
        last = p.post_filter(state, pod, view, diagnosis)
        if last.status.ok or last.status.code == Code.ERROR:
            return last
    return last


def unreserve(profile: Profile, state: CycleState, pod: Pod, view: ClusterView, node: int) -> None:
    """Undo Reserve (every Reserve plugin, in reverse order) and the
    assumption: for a Permit rejection, a Wait that timed out, a failed bind."""
    for p in reversed(profile.reserve):
        p.unreserve(state, pod, view, node)
    if state.assumed and view.node_of.get(pod.key) == node:
        view.remove_pod(pod.key)
        state.assumed = False


def schedule_one(
    profile: Profile,
    pod: Pod,
    view: ClusterView,
    *,
    start_index: int = 0,
    rng: np.random.Generator | None = None,
    nominated_node: int | None = None,
    assume: bool = True,
    context: Mapping[str, Any] | None = None,
    waiting_pods: WaitingPods | None = None,
) -> ScheduleResult:
    """One scheduling cycle for ``pod`` (see module docstring).

    ``start_index``: where the Filter scan starts (carry ``next_start_index``
    from the previous result). ``rng``: breaks score ties; None breaks them
    by scan order. ``nominated_node``: a node preemption nominated earlier,
    tried alone first (as upstream). ``assume``: add the pod to the view on
    success, so the next cycle sees it (undo with ``unreserve``).
    ``context``: what the caller knows that the view does not, put in the
    cycle state for the plugins (preemption's disruption budgets, the
    nominated and terminating pods: ``plugins.default_preemption``).
    ``waiting_pods``: the scheduler's pods held at Permit, for the plugins
    (``state.waiting_pods``: allow or reject them, as upstream's handle)."""
    state = CycleState(profile)
    state.update(context or {})
    state.waiting_pods = waiting_pods
    n = view.n
    start = start_index % n if n else 0
    result = ScheduleResult(pod, None, SUCCESS, state, Diagnosis(n), next_start_index=start)
    try:
        st = run_pre_filter(profile, state, pod, view)
        if st.code == Code.ERROR:
            result.status = st
            return result
        if st.rejected:
            result.diagnosis.absent = st
            return _no_fit(profile, result, view)
        if nominated_node is not None and run_filter_plugins(profile, state, pod, view, nominated_node).ok:
            feasible = np.array([nominated_node], dtype=np.int64)
            result.evaluated_nodes = 1
        else:
            need = profile.feasible_to_find(n) if profile.score else min(1, n)
            order = np.arange(start, start + n, dtype=np.int64) % n if n else np.zeros(0, dtype=np.int64)
            feasible, result.diagnosis, processed = find_feasible(profile, state, pod, view, order, need)
            result.evaluated_nodes = processed
            result.next_start_index = (start + processed) % n if n else 0
        result.feasible_nodes = feasible.size
        if not feasible.size:
            return _no_fit(profile, result, view)
        if feasible.size == 1:
            node = int(feasible[0])
        else:
            totals, result.plugin_scores = score_nodes(profile, state, pod, view, feasible)
            result.candidates, result.scores = feasible, totals
            node = select_host(feasible, totals, rng)
    except CycleError as e:
        result.status = e.status
        return result
    return _reserve_and_permit(profile, result, view, node, assume)


def _no_fit(profile: Profile, result: ScheduleResult, view: ClusterView) -> ScheduleResult:
    d = result.diagnosis
    result.post_filter = run_post_filter(profile, result.state, result.pod, view, d)
    first = d.absent or (d.table[0] if d.table else None)
    code = first.code if first is not None else Code.UNSCHEDULABLE
    if d.table and any(s.code == Code.UNSCHEDULABLE for s in d.table):
        code = Code.UNSCHEDULABLE
    result.status = Status(code, (d.message(),), first.plugin if first is not None else "")
    return result


def _reserve_and_permit(profile: Profile, result: ScheduleResult, view: ClusterView, node: int, assume: bool) -> ScheduleResult:
    state, pod = result.state, result.pod
    if assume:
        view.add_pod(pod, node)
        state.assumed = True
    for p in profile.reserve:
        st = p.reserve(state, pod, view, node)
        if not st.ok:
            unreserve(profile, state, pod, view, node)
            result.status = st.by(p.name)
            return result
    waits: dict[str, float] = {}
    waiting: Status | None = None
    for p in profile.permit:
        st, wait_s = p.permit(state, pod, view, node)
        if st.code == Code.WAIT:
            waiting = waiting or st.by(p.name)
            waits[p.name] = min(max(float(wait_s), 0.0), MAX_PERMIT_TIMEOUT_S)
        elif not st.ok:
            unreserve(profile, state, pod, view, node)
            result.status = st.by(p.name)
            return result
    result.node = node
    if waiting is not None:
        result.status, result.permit_waits = waiting, waits
        result.permit_timeout = min(waits.values())
    return result


def run_bind(profile: Profile, state: CycleState, pod: Pod, node: int) -> Status:
    """The Bind plugins in order (upstream's RunBindPlugins): the first
    that does not Skip decides; its Success names it (``status.plugin``),
    its rejection or error fails the bind. Every plugin skipping (or none
    at all) fails it too: nobody bound the pod."""
    for p in profile.bind:
        st = p.bind(state, pod, node)
        if st.code == Code.SKIP:
            continue
        if st.ok:
            return Status(Code.SUCCESS, (), p.name)
        return st.by(p.name)
    return error("no Bind plugin bound the pod (every one skipped)", "")
