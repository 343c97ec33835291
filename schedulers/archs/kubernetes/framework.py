"""The scheduling framework: extension points as small plugin interfaces,
a profile that orders them, and ``schedule_one``, one scheduling cycle.

One cycle, as upstream kube-scheduler runs it (``schedule_one.go``):

1. **PreFilter** per plugin, in profile order: precompute per-pod state in
   the ``CycleState``; ``Skip`` drops that plugin's Filter for this cycle;
   a rejection marks every node with that status and goes to PostFilter.
2. **Filter** over the nodes starting at a rotating start index, every
   plugin in order on each node until one rejects it, stopping once
   ``num_feasible_nodes_to_find`` feasible nodes are found
   (``percentageOfNodesToScore``). The next cycle starts where this one
   stopped (``next_start_index``), so every node gets its turn.
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

**Bind** is the live half's: a compare-and-swap write to the API store.
The result exposes the decision; when the bind fails the shell calls
``unreserve`` to undo the assumption.

Why batch forms: a plugin may offer ``filter_all(state, pod, view, nodes)``
and ``score_all(state, pod, view, nodes)`` over an int array of node rows;
the framework prefers them, so NodeResourcesFit checks hundreds of nodes
in a few numpy operations instead of one Python call each. ``filter_all``
returns either a bool array (True = passes; the framework then asks the
per-node ``filter`` for the statuses of the rejected ones) or an int array
of codes (0 = passes, c > 0 = the plugin's ``filter_reasons[c - 1]``).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum
from typing import Any, Mapping, Protocol, Sequence

import numpy as np

from .cluster_view import ClusterView
from .objects import Pod

MAX_NODE_SCORE = 100
MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


class Code(IntEnum):
    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2  # preemption might help
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3  # preemption cannot help on this node
    WAIT = 4  # Permit: hold the pod before binding
    SKIP = 5  # PreFilter / PreScore: this plugin has nothing to do for this pod


@dataclass(frozen=True)
class Status:
    """A plugin's verdict. ``plugin`` names who said it (the framework fills
    it in when a plugin leaves it empty), ``reasons`` are upstream-style
    messages ("Insufficient cpu"), counted per node in the Diagnosis."""

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""

    @property
    def ok(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)

    def by(self, plugin: str) -> "Status":
        return self if self.plugin else replace(self, plugin=plugin)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def unschedulable(*reasons: str, plugin: str = "", unresolvable: bool = False) -> Status:
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    return Status(code, reasons, plugin)


def error(message: str, plugin: str = "") -> Status:
    return Status(Code.ERROR, (message,), plugin)


class CycleState(dict):
    """Scratch for one cycle, shared by the plugins (each under its own
    keys, by convention its name), plus the plugins the cycle skips."""

    def __init__(self, profile: "Profile | None" = None) -> None:
        super().__init__()
        # The profile running the cycle: a PostFilter plugin (preemption)
        # reruns its filters with ``run_pre_filter`` / ``run_filter_plugins``.
        self.profile = profile
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        self.assumed = False  # the pod was added to the view by this cycle


# -- extension points --------------------------------------------------------
# A plugin is any object with a ``name`` and one or more of these methods;
# the profile files it under every extension point whose method it has.


class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: Pod, view: ClusterView) -> Status: ...


class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status: ...


class BatchFilterPlugin(FilterPlugin, Protocol):
    filter_reasons: Sequence[Status]

    def filter_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray: ...


@dataclass(frozen=True)
class PostFilterResult:
    status: Status
    nominated_node: int | None = None
    detail: Any = None  # e.g. the victims preemption chose


class PostFilterPlugin(Protocol):
    name: str

    def post_filter(self, state: CycleState, pod: Pod, view: ClusterView, diagnosis: "Diagnosis") -> PostFilterResult: ...


class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> Status: ...


class ScorePlugin(Protocol):
    """``score`` may be any integer; ``normalize_score`` (optional) maps the
    scores of all candidates to 0..MAX_NODE_SCORE. Without it the plugin's
    raw scores must already lie in that range."""

    name: str

    def score(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> int: ...


class BatchScorePlugin(ScorePlugin, Protocol):
    def score_all(self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray) -> np.ndarray: ...


class NormalizeScorePlugin(Protocol):
    def normalize_score(
        self, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray, scores: np.ndarray
    ) -> np.ndarray: ...


class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> Status: ...

    def unreserve(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> None: ...


class PermitPlugin(Protocol):
    """Returns a status (Success, Wait, or a rejection) and, for Wait, how
    long (emulated seconds) the shell may hold the pod before rejecting it."""

    name: str

    def permit(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> tuple[Status, float]: ...


class BindPlugin(Protocol):
    """Run by the live half, not by ``schedule_one``: the write itself."""

    name: str

    def bind(self, state: CycleState, pod: Pod, node: int) -> Status: ...


POINTS: dict[str, str] = {  # profile field -> the method that puts a plugin there
    "pre_filter": "pre_filter",
    "filter": "filter",
    "post_filter": "post_filter",
    "pre_score": "pre_score",
    "score": "score",
    "reserve": "reserve",
    "permit": "permit",
    "bind": "bind",
}


@dataclass(frozen=True)
class Profile:
    """A named scheduler: its plugins per extension point, in order, and the
    weight (a positive int) of each Score plugin. Pods pick a profile by
    ``schedulerName``. ``percentage_of_nodes_to_score``: None or 0 is
    upstream's adaptive default, 1..100 a fixed share."""

    name: str = "default-scheduler"
    pre_filter: tuple[Any, ...] = ()
    filter: tuple[Any, ...] = ()
    post_filter: tuple[Any, ...] = ()
    pre_score: tuple[Any, ...] = ()
    score: tuple[Any, ...] = ()
    reserve: tuple[Any, ...] = ()
    permit: tuple[Any, ...] = ()
    bind: tuple[Any, ...] = ()
    weights: Mapping[str, int] = field(default_factory=dict)
    percentage_of_nodes_to_score: int | None = None

    def __post_init__(self) -> None:
        for p in self.score:
            w = self.weights.get(p.name, 1)
            if isinstance(w, bool) or not isinstance(w, int) or w <= 0:
                raise ValueError(f"profile {self.name}: weight of {p.name} must be a positive integer (got {w!r})")
        pct = self.percentage_of_nodes_to_score
        if pct is not None and (isinstance(pct, bool) or not isinstance(pct, int) or not 0 <= pct <= 100):
            raise ValueError(f"profile {self.name}: percentage_of_nodes_to_score must be an integer 0..100 (got {pct!r})")

    @classmethod
    def of(
        cls,
        name: str,
        plugins: Sequence[Any],
        weights: Mapping[str, int] | None = None,
        percentage_of_nodes_to_score: int | None = None,
    ) -> "Profile":
        """File each plugin under every extension point it implements, in
        the order given (upstream's multiPoint)."""
        points = {f: tuple(p for p in plugins if callable(getattr(p, m, None))) for f, m in POINTS.items()}
        return cls(name=name, weights=dict(weights or {}), percentage_of_nodes_to_score=percentage_of_nodes_to_score, **points)

    def weight(self, plugin_name: str) -> int:
        return self.weights.get(plugin_name, 1)


def num_feasible_nodes_to_find(percentage: int | None, n_nodes: int) -> int:
    """How many feasible nodes a cycle looks for before it stops filtering.
    Small clusters (< 100 nodes) are searched whole; the adaptive default is
    50% less 1% per 125 nodes, floored at 5%; never fewer than 100."""
    if n_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return n_nodes
    pct = percentage or 0
    if pct == 0:
        pct = max(50 - n_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    return max(n_nodes * pct // 100, MIN_FEASIBLE_NODES_TO_FIND)


# -- diagnosis ---------------------------------------------------------------


@dataclass
class Diagnosis:
    """Why nodes were filtered out this cycle. ``nodes[k]`` was rejected
    with ``table[status_index[k]]``; nodes the cycle did not examine have no
    status, except that a PreFilter rejection (``absent``) applies to all."""

    n_nodes: int
    nodes: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    status_index: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    table: list[Status] = field(default_factory=list)
    absent: Status | None = None

    def status(self, node: int) -> Status | None:
        hit = np.flatnonzero(self.nodes == node)
        if hit.size:
            return self.table[int(self.status_index[hit[0]])]
        return self.absent

    def statuses(self) -> dict[int, Status]:
        """Every rejected node's status (all nodes, for a PreFilter rejection)."""
        out = {i: self.absent for i in range(self.n_nodes)} if self.absent is not None else {}
        out.update({int(n): self.table[int(s)] for n, s in zip(self.nodes, self.status_index)})
        return out

    def _per_status(self) -> list[tuple[Status, int]]:
        if self.absent is not None:
            return [(self.absent, self.n_nodes)]
        counts = np.bincount(self.status_index, minlength=len(self.table))
        return [(st, int(c)) for st, c in zip(self.table, counts) if c]

    def plugin_counts(self) -> dict[str, int]:
        """Nodes filtered out per plugin (the run's metric)."""
        out: dict[str, int] = {}
        for st, c in self._per_status():
            out[st.plugin] = out.get(st.plugin, 0) + c
        return out

    def reason_counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for st, c in self._per_status():
            for r in st.reasons:
                out[r] = out.get(r, 0) + c
        return out

    def message(self) -> str:
        """Upstream's FitError text: "0/5 nodes are available: 3 Insufficient cpu, ..."."""
        parts = sorted(f"{c} {r}" for r, c in self.reason_counts().items())
        return f"0/{self.n_nodes} nodes are available: {', '.join(parts)}."

    def preemption_candidates(self) -> np.ndarray:
        """Nodes where removing pods might help: rejected as Unschedulable,
        not UnschedulableAndUnresolvable (upstream's nodesWherePreemptionMightHelp)."""
        if self.absent is not None:
            return np.arange(self.n_nodes) if self.absent.code == Code.UNSCHEDULABLE else np.zeros(0, dtype=np.int64)
        codes = np.array([st.code for st in self.table], dtype=np.int64)
        if not codes.size:
            return np.zeros(0, dtype=np.int64)
        return np.sort(self.nodes[codes[self.status_index] == Code.UNSCHEDULABLE])


class _Table:
    """Statuses deduplicated into the Diagnosis table while filtering."""

    def __init__(self) -> None:
        self.items: list[Status] = []
        self._ix: dict[Status, int] = {}

    def index(self, st: Status) -> int:
        i = self._ix.get(st)
        if i is None:
            i = self._ix[st] = len(self.items)
            self.items.append(st)
        return i


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


def _filter_chunk(p: Any, state: CycleState, pod: Pod, view: ClusterView, nodes: np.ndarray, table: _Table) -> tuple[np.ndarray, np.ndarray]:
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
    table = _Table()
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
    (``status`` Success) or waits at Permit (``status`` Wait, up to
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
) -> ScheduleResult:
    """One scheduling cycle for ``pod`` (see module docstring).

    ``start_index``: where the Filter scan starts (carry ``next_start_index``
    from the previous result). ``rng``: breaks score ties; None breaks them
    by scan order. ``nominated_node``: a node preemption nominated earlier,
    tried alone first (as upstream). ``assume``: add the pod to the view on
    success, so the next cycle sees it (undo with ``unreserve``).
    ``context``: what the caller knows that the view does not, put in the
    cycle state for the plugins (preemption's disruption budgets, the
    nominated and terminating pods: ``plugins.default_preemption``)."""
    state = CycleState(profile)
    state.update(context or {})
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
            need = num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, n) if profile.score else min(1, n)
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
    timeout = 0.0
    waiting: Status | None = None
    for p in profile.permit:
        st, wait_s = p.permit(state, pod, view, node)
        if st.code == Code.WAIT:
            waiting, timeout = st.by(p.name), max(timeout, wait_s)
        elif not st.ok:
            unreserve(profile, state, pod, view, node)
            result.status = st.by(p.name)
            return result
    result.node = node
    if waiting is not None:
        result.status, result.permit_timeout = waiting, timeout
    return result
