"""YARN's FairScheduler: hierarchical pools with weights, min and max
shares, a fairness policy deciding who is served next, and preemption for
pools starved of their min or fair share.

Heartbeat (``allocate_on_node``): from the root, children with outstanding
asks are tried in the policy's order, recursively down to a leaf pool, whose
applications are tried in the same order (an application has weight
``App.weight`` and no min share); within an application, delay scheduling
picks the task. A container is admissible when no pool on its path would
exceed its max share. One container per heartbeat unless
``assign_multiple`` (Hadoop's default), then up to ``max_assign``.

Policies (Hadoop's comparators, see :meth:`FairScheduler.sort_key`):

* ``fair`` (FairSharePolicy): memory only. Schedulables without demand
  last; *needy* ones (usage below ``min(min_share, demand)``) first, by
  usage / that min share; the rest by usage / weight.
* ``drf`` (DominantResourceFairnessPolicy): needy if the usage of its
  dominant resource is below the min share of it; the others by their
  usage shares divided by weight, compared dominant resource first.

Hadoop orders non-needy schedulables by usage / *weight*, not usage / fair
share: with equal caps the two orders agree (fair shares are proportional
to weights), and usage / weight needs no fair share computed on every
heartbeat.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from schedlab.schedulers.archs.yarn.fair_share import fair_shares
from schedlab.schedulers.archs.yarn.locality import LocalityCounters, LocalityDelay
from schedlab.schedulers.archs.yarn.queues import ROOT
from schedlab.schedulers.archs.yarn.scheduler import (
    MEM,
    App,
    ClusterState,
    Container,
    allocate_globally,
    descend,
    preemption_order,
    relevant,
    walk_apps,
)
from schedlab.schedulers.model.resources import EPS

POLICIES = ("fair", "drf")
TIE_DIGITS = 12  # ratios equal in exact arithmetic may differ in the last bits: round before comparing


@dataclass(frozen=True)
class FairPreemption:
    """Hadoop's defaults disable both timeouts (``inf``).

    A leaf pool below ``min(min_share, demand)`` for
    ``min_share_preemption_timeout`` s may take back up to that; below
    ``fair_share_preemption_threshold`` x its fair share for
    ``fair_share_preemption_timeout`` s, up to its fair share."""

    enabled: bool = False
    min_share_preemption_timeout: float = math.inf
    fair_share_preemption_timeout: float = math.inf
    fair_share_preemption_threshold: float = 0.5

    def __post_init__(self) -> None:
        for name in ("min_share_preemption_timeout", "fair_share_preemption_timeout"):
            v = getattr(self, name)
            if not v >= 0:
                raise ValueError(f"{name} must be >= 0 (inf: never), got {v!r}")
        if not 0 <= self.fair_share_preemption_threshold <= 1:
            raise ValueError(f"fair_share_preemption_threshold must be in [0, 1], got {self.fair_share_preemption_threshold!r}")


@dataclass(frozen=True)
class FairConfig:
    """``locality``: see ``LocalityDelay.from_fractions`` for Hadoop's
    thresholds (default: no delay, as Hadoop's -1). ``global_scheduling``:
    the shell should call ``allocate_global`` on a timer instead of
    ``allocate_on_node`` per heartbeat (both always work)."""

    policy: str = "fair"
    locality: LocalityDelay = field(default_factory=LocalityDelay)
    assign_multiple: bool = False
    max_assign: int = 0  # with assign_multiple: containers per heartbeat; 0 = no limit
    global_scheduling: bool = False
    preemption: FairPreemption = field(default_factory=FairPreemption)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        if self.max_assign < 0:
            raise ValueError(f"max_assign must be >= 0, got {self.max_assign}")


class FairScheduler:
    """The FairScheduler core over a :class:`ClusterState` (any queue tree;
    capacities are ignored)."""

    def __init__(self, state: ClusterState, config: FairConfig | None = None) -> None:
        self.state = state
        self.config = config or FairConfig()
        self.counters = LocalityCounters(reset_on_off_switch=True)
        self._rel = relevant("memory" if self.config.policy == "fair" else "dominant", state.width)
        self._at_min_since: dict[str, float] = {}  # last time each leaf was at its min share
        self._at_fair_since: dict[str, float] = {}  # ... at threshold x its fair share
        self._marked: dict[int, None] = {}

    # ------------------------------------------------------------ shares

    def demand(self, queue: str) -> np.ndarray:
        """Usage plus outstanding asks, capped by the max share (as Hadoop's
        ``updateDemand``)."""
        st = self.state
        return np.minimum(st.queue_used[queue] + st.queue_pending[queue], st.tree[queue].max_share)

    def fair_shares(self) -> dict[str, np.ndarray]:
        """Instantaneous fair shares of every queue (active queues only)."""
        return fair_shares(self.state.tree, self.state.total, {q: self.demand(q) for q in self.state.tree})

    def steady_fair_shares(self) -> dict[str, np.ndarray]:
        return fair_shares(self.state.tree, self.state.total)

    # ------------------------------------------------------------ ordering

    def sort_key(self, usage: np.ndarray, demand: np.ndarray, min_share: np.ndarray, weight: float,
                 tie: tuple) -> tuple:
        """The policy's comparator as a sort key (smaller: served first).
        ``tie``: Hadoop breaks ties by start time then name; callers pass
        (submission order,) for applications and (name,) for pools."""
        no_demand = not np.any(demand > EPS)
        floor = np.minimum(min_share, demand)
        if self.config.policy == "fair":
            ms = float(floor[MEM])
            if usage[MEM] < ms - EPS:
                return (no_demand, 0, (round(float(usage[MEM]) / ms, TIE_DIGITS),), tie)
            return (no_demand, 1, (round(float(usage[MEM]) / weight, TIE_DIGITS),), tie)
        total = self.state.total
        u = np.divide(usage, total, out=np.zeros(len(total)), where=total > 0)
        order = np.argsort(-u, kind="stable")
        dom = int(order[0])
        needy = usage[dom] < floor[dom] - EPS if np.any(u > 0) else bool(np.any(floor > EPS))
        if needy:
            ratios = np.divide(usage, floor, out=np.where(usage > 0, np.inf, 0.0), where=floor > 0)[order]
            return (no_demand, 0, tuple(round(float(x), TIE_DIGITS) for x in ratios), tie)
        return (no_demand, 1, tuple(round(float(x) / weight, TIE_DIGITS) for x in u[order]), tie)

    def ordered_children(self, queue: str) -> list[str]:
        """Children with outstanding asks, in policy order."""
        st = self.state
        kids = [c for c in st.tree[queue].children if np.any(st.queue_pending[c] > EPS)]
        return sorted(kids, key=lambda c: self.sort_key(st.queue_used[c], self.demand(c), st.tree[c].min_share,
                                                        st.tree[c].weight, (c,)))

    def ordered_apps(self, leaf: str) -> list[App]:
        """A leaf's applications with outstanding asks, in policy order."""
        apps = [a for a in self.state.apps_in(leaf) if len(a.asks)]
        zero = np.zeros(self.state.width)
        return sorted(apps, key=lambda a: self.sort_key(a.usage, self.state.demand(a), zero, a.weight, (a.seq,)))

    def _admissible(self, app: App, cap: np.ndarray) -> bool:
        """No pool on the path above its max share with the container.
        (Hadoop only checks that the pool is not already above it.)"""
        st = self.state
        return all(not np.any(st.queue_used[q] + cap > st.tree[q].max_share + EPS) for q in st.tree.path(app.queue)[1:])

    # ------------------------------------------------------------ allocation

    def _descend(self, queue: str, node: int, now: float, counted: set[tuple[int, int]]) -> Container | None:
        return descend(self.state, queue, node, now, children=self.ordered_children, apps=self.ordered_apps,
                       delay=self.config.locality, counters=self.counters, admissible=self._admissible, counted=counted)

    def allocate_on_node(self, node: int, now: float) -> list[Container]:
        """A heartbeat from ``node``: the containers granted on it."""
        cfg = self.config
        out: list[Container] = []
        counted: set[tuple[int, int]] = set()
        while np.any(self.state.free[node] > EPS):
            c = self._descend(ROOT, node, now, counted)
            if c is None:
                break
            out.append(c)
            if not cfg.assign_multiple or (cfg.max_assign and len(out) >= cfg.max_assign):
                break
        return out

    def _app_order(self) -> Iterator[App]:
        return walk_apps(self.state, ROOT, self.ordered_children, self.ordered_apps)

    def allocate_global(self, now: float) -> list[Container]:
        """Global scheduling: the same pool and application order, each
        chosen task on its best node anywhere (``scheduler.best_node``)."""
        return allocate_globally(self.state, lambda: self._app_order(), self._admissible, now)

    # ------------------------------------------------------------ preemption

    def preemption(self, now: float) -> list[int]:
        """Containers to take back now for starved leaf pools.

        A leaf's *deficit*: once it has been below ``min(min_share, demand)``
        for ``min_share_preemption_timeout`` s, what it lacks of that; once
        below ``threshold`` x its fair share for
        ``fair_share_preemption_timeout`` s, what it lacks of its fair share;
        the larger of the two, in the resources the policy compares. The
        times a leaf was last satisfied are kept (first sight counts as
        satisfied). Containers already chosen and not yet released count as
        gone. Victims: containers of leaves above their fair share, in
        :func:`scheduler.preemption_order` (AMs last, newest first), each
        taken only if its pool stays at or above its fair share and it
        reduces the remaining deficit.
        """
        cfg = self.config.preemption
        if not cfg.enabled:
            return []
        st, rel = self.state, self._rel
        self._marked = {c: None for c in self._marked if c in st.containers}
        used = {q: st.queue_used[q].copy() for q in st.tree.leaves()}
        for cid in self._marked:
            c = st.containers[cid]
            used[st.apps[c.app_id].queue] -= c.resources
        fair = self.fair_shares()
        deficit = np.zeros(st.width)
        for leaf in st.tree.leaves():
            q = st.tree[leaf]
            target_min = np.minimum(q.min_share, self.demand(leaf))
            below_min = bool(np.any((used[leaf] < target_min - EPS) & rel))
            below_fair = bool(np.any((used[leaf] < cfg.fair_share_preemption_threshold * fair[leaf] - EPS) & rel))
            since_min = self._at_min_since.setdefault(leaf, now)
            since_fair = self._at_fair_since.setdefault(leaf, now)
            if not below_min:
                self._at_min_since[leaf] = now
            if not below_fair:
                self._at_fair_since[leaf] = now
            lack = np.zeros(st.width)
            if below_min and now - since_min >= cfg.min_share_preemption_timeout - 1e-9:
                lack = np.maximum(lack, target_min - used[leaf])
            if below_fair and now - since_fair >= cfg.fair_share_preemption_timeout - 1e-9:
                lack = np.maximum(lack, fair[leaf] - used[leaf])
            deficit += np.where(rel, np.maximum(lack, 0.0), 0.0)
        if not np.any(deficit > EPS):
            return []
        victims = [leaf for leaf in st.tree.leaves() if np.any((used[leaf] > fair[leaf] + EPS) & rel)]
        mine = [cid for leaf in victims for a in st.apps_in(leaf) for cid in a.containers if cid not in self._marked]
        taken: list[int] = []
        for c in preemption_order(st, mine):
            if not np.any(deficit > EPS):
                break
            leaf = st.apps[c.app_id].queue
            after = used[leaf] - c.resources
            if np.any((after < fair[leaf] - EPS) & rel) or not np.any((c.resources > EPS) & (deficit > EPS)):
                continue
            taken.append(c.container_id)
            used[leaf] = after
            deficit = deficit - np.where(rel, c.resources, 0.0)
        self._marked.update(dict.fromkeys(taken))
        return taken
