"""YARN's CapacityScheduler: guaranteed capacities on a queue tree, elastic
up to each queue's maximum, user limits inside a leaf, and the
ProportionalCapacityPreemptionPolicy taking capacity back.

Heartbeat (``allocate_on_node``): walk from the root; at each parent the
children with outstanding asks are tried most under-served first (used /
guaranteed capacity ascending, as PriorityUtilizationQueueOrderingPolicy
without queue priorities; a queue with a zero guarantee after every queue
with one; ties by name). In a leaf, applications in FIFO order (the default
ordering policy). A container is admissible when neither its leaf nor any
ancestor would exceed its absolute maximum capacity (every resource) and
its user stays within the user limit (:meth:`CapacityScheduler.user_limit`).
Within the application, delay scheduling picks the task. After a grant the
walk starts again from the root (usages changed), up to ``max_assign``
containers and ``max_off_switch_per_heartbeat`` off-switch ones per
heartbeat (``yarn.scheduler.capacity.per-node-heartbeat.*``).

Preemption (``preemption``): see :meth:`CapacityScheduler.preemption`.
"""
from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from schedlab.schedulers.allocation.fairness import weighted_fair_share
from schedlab.schedulers.archs.yarn.locality import (
    OFF_SWITCH,
    LocalityCounters,
    LocalityDelay,
)
from schedlab.schedulers.archs.yarn.queues import ROOT
from schedlab.schedulers.archs.yarn.scheduler import (
    CALCULATORS,
    App,
    ClusterState,
    Container,
    allocate_globally,
    descend,
    preemption_order,
    relevant,
    share,
    walk_apps,
)
from schedlab.schedulers.model.resources import EPS


@dataclass(frozen=True)
class CapacityPreemption:
    """ProportionalCapacityPreemptionPolicy's knobs (YARN's defaults).

    ``max_wait_before_kill``: seconds a queue must have been starved before
    containers are taken for it. ``total_preemption_per_round``: at most
    this fraction of the cluster (every resource) per call.
    ``max_ignored_over_capacity``: a queue is only a victim when above
    ``ideal * (1 + this)`` (a dead zone against oscillation).
    ``natural_termination_factor``: each call takes this fraction of a
    victim's excess (at least one container), expecting containers to end
    by themselves too."""

    enabled: bool = False
    max_wait_before_kill: float = 15.0
    total_preemption_per_round: float = 0.1
    max_ignored_over_capacity: float = 0.1
    natural_termination_factor: float = 0.2

    def __post_init__(self) -> None:
        if not (self.max_wait_before_kill >= 0 and math.isfinite(self.max_wait_before_kill)):
            raise ValueError(f"max_wait_before_kill must be >= 0, got {self.max_wait_before_kill!r}")
        for name in ("total_preemption_per_round", "natural_termination_factor"):
            v = getattr(self, name)
            if not 0 < v <= 1:
                raise ValueError(f"{name} must be in (0, 1], got {v!r}")
        if not (self.max_ignored_over_capacity >= 0 and math.isfinite(self.max_ignored_over_capacity)):
            raise ValueError(f"max_ignored_over_capacity must be >= 0, got {self.max_ignored_over_capacity!r}")


@dataclass(frozen=True)
class CapacityConfig:
    """``locality``: node-locality-delay (40) and rack-locality-additional-delay,
    both capped at the cluster size. ``resource_calculator``: ``memory``
    (YARN's default: queue and user limits compare memory) or ``dominant``;
    node fit always checks every resource. ``global_scheduling``: the shell
    should call ``allocate_global`` on a timer instead of
    ``allocate_on_node`` per heartbeat (both always work)."""

    locality: LocalityDelay = field(default_factory=lambda: LocalityDelay(node=40))
    resource_calculator: str = "memory"
    assign_multiple: bool = True
    max_assign: int = 0  # containers per heartbeat; 0 = no limit
    max_off_switch_per_heartbeat: int = 1  # 0 = no limit
    global_scheduling: bool = False
    preemption: CapacityPreemption = field(default_factory=CapacityPreemption)

    def __post_init__(self) -> None:
        if self.resource_calculator not in CALCULATORS:
            raise ValueError(f"resource_calculator must be one of {CALCULATORS}, got {self.resource_calculator!r}")
        if self.max_assign < 0 or self.max_off_switch_per_heartbeat < 0:
            raise ValueError("max_assign and max_off_switch_per_heartbeat must be >= 0")


class CapacityScheduler:
    """The CapacityScheduler core over a :class:`ClusterState` whose tree was
    built with ``check_capacity=True``."""

    def __init__(self, state: ClusterState, config: CapacityConfig | None = None) -> None:
        if not state.tree.capacity_checked:
            raise ValueError("the Capacity scheduler needs a queue tree built with check_capacity=True")
        self.state = state
        self.config = config or CapacityConfig()
        self.calc = self.config.resource_calculator
        self.delay = self.config.locality.capped(state.n_nodes)
        self.counters = LocalityCounters(reset_on_off_switch=False)
        self._rel = relevant(self.calc, state.width)
        self._starved_since: dict[str, float] = {}
        self._marked: dict[int, None] = {}  # containers chosen for preemption, not yet released

    # ------------------------------------------------------------ limits

    def used_capacity(self, queue: str) -> float:
        """Used over guaranteed capacity, under the resource calculator
        (for a zero guarantee: the used fraction of the cluster)."""
        q = self.state.tree[queue]
        used = share(self.state.queue_used[queue], self.state.total, self.calc)
        return used / q.abs_capacity if q.abs_capacity > 0 else used

    def user_limit(self, leaf: str, required: np.ndarray) -> np.ndarray:
        """The most a user of ``leaf`` may hold when asking for ``required``,
        as LeafQueue/UsersManager compute it (without the rounding to
        minimum allocations)::

            queue_cap = max(guarantee, required)
            current   = queue_cap if queue used + required <= queue_cap else queue used + required
            limit     = max(current / active users, current * minimum-user-limit-percent / 100)
            limit     = min(limit, queue_cap * user-limit-factor)

        So while the queue is within its guarantee every active user may
        grow to an equal share of it (all of it when alone); beyond it the
        queue's growth is shared the same way, and no user ever gets more
        than ``user_limit_factor`` times the guarantee (with the default 1,
        a lone user cannot take the queue past its guarantee: YARN's
        behaviour). ``max``/``min`` pick a whole vector by the calculator's
        comparison, as YARN's ``Resources.max`` does."""
        st, calc = self.state, self.calc
        q = st.tree[leaf]
        guarantee = q.abs_capacity * st.total
        queue_cap = guarantee if share(guarantee, st.total, calc) >= share(required, st.total, calc) else required
        consumed = st.queue_used[leaf]
        # YARN compares the queue's usage *before* the container (and then
        # the user's usage before it, letting a user overshoot by one
        # container); here both are taken with the container, which the
        # limit must then count too: a user just below the guarantee would
        # otherwise never be let past it, whatever the user-limit factor.
        grown = consumed + required
        current = queue_cap if share(grown, st.total, calc) <= share(queue_cap, st.total, calc) + EPS else grown
        active = max(1, len(st.active_users(leaf)))
        a, b = current / active, current * q.minimum_user_limit_percent / 100.0
        limit = a if share(a, st.total, calc) >= share(b, st.total, calc) else b
        cap = queue_cap * q.user_limit_factor
        return limit if share(limit, st.total, calc) <= share(cap, st.total, calc) else cap

    def _admissible(self, app: App, cap: np.ndarray) -> bool:
        """Within every maximum capacity on the path, and the user limit.

        YARN checks the user's usage *before* the container against the
        limit (a user may overshoot by one container); here the usage after
        it is checked, so the limit is never exceeded."""
        st = self.state
        for q in st.tree.path(app.queue)[1:]:
            if np.any(st.queue_used[q] + cap > st.tree[q].abs_max_capacity * st.total + EPS):
                return False
        limit = self.user_limit(app.queue, cap)
        after = st.user_used[(app.queue, app.user)] + cap
        return share(after, st.total, self.calc) <= share(limit, st.total, self.calc) + EPS

    # ------------------------------------------------------------ allocation

    def ordered_children(self, queue: str) -> list[str]:
        """Children with outstanding asks, most under-served first."""
        st = self.state
        kids = [c for c in st.tree[queue].children if np.any(st.queue_pending[c] > EPS)]
        return sorted(kids, key=lambda c: (st.tree[c].abs_capacity <= 0, self.used_capacity(c), c))

    def _descend(self, queue: str, node: int, now: float, counted: set[tuple[int, int]]) -> Container | None:
        # A leaf's applications in submission order (LeafQueue's FIFO ordering policy).
        return descend(self.state, queue, node, now, children=self.ordered_children, apps=self.state.apps_in,
                       delay=self.delay, counters=self.counters, admissible=self._admissible, counted=counted)

    def allocate_on_node(self, node: int, now: float) -> list[Container]:
        """A heartbeat from ``node``: the containers granted on it."""
        cfg = self.config
        out: list[Container] = []
        counted: set[tuple[int, int]] = set()
        off_switch = 0
        while not (cfg.max_assign and len(out) >= cfg.max_assign):
            if not np.any(self.state.free[node] > EPS):
                break
            c = self._descend(ROOT, node, now, counted)
            if c is None:
                break
            out.append(c)
            if c.locality == OFF_SWITCH:
                off_switch += 1
                if cfg.max_off_switch_per_heartbeat and off_switch >= cfg.max_off_switch_per_heartbeat:
                    break
            if not cfg.assign_multiple:
                break
        return out

    def _app_order(self) -> Iterator[App]:
        return walk_apps(self.state, ROOT, self.ordered_children,
                         lambda leaf: (a for a in self.state.apps_in(leaf) if len(a.asks)))

    def allocate_global(self, now: float) -> list[Container]:
        """Global scheduling: the same queue and application order, each
        chosen task on its best node anywhere (``scheduler.best_node``)."""
        return allocate_globally(self.state, lambda: self._app_order(), self._admissible, now)

    # ------------------------------------------------------------ preemption

    def ideal_assignment(self, used: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
        """Each queue's ideal share of the cluster, as the preemption policy
        computes it: top-down, a parent's ideal is water-filled among its
        children in proportion to their guarantees, each capped at its
        demand (used + pending) and its maximum capacity; so every queue gets
        at least min(demand, guarantee) and idle guaranteed capacity goes to
        queues that want more, in proportion to their guarantees. Queues
        with a zero guarantee share what is left after the others are
        satisfied (equally). Computed per resource. ``used``: defaults to
        the state's (the policy passes usage net of pending preemptions)."""
        st = self.state
        used = st.queue_used if used is None else used
        ideal = {ROOT: st.total.copy()}
        for parent in st.tree:  # tree order: a parent before its children
            kids = st.tree[parent].children
            if not kids:
                continue
            whole = ideal[parent]
            demand = np.array([np.minimum(used[c] + st.queue_pending[c], st.tree[c].abs_max_capacity * st.total)
                               for c in kids])
            g = np.array([st.tree[c].abs_capacity for c in kids])
            pos, zero = np.flatnonzero(g > 0), np.flatnonzero(g <= 0)
            alloc = np.zeros((len(kids), st.width))
            for r in range(st.width):
                if pos.size:
                    alloc[pos, r] = weighted_fair_share(whole[r], demand[pos, r], g[pos])
                left = max(whole[r] - alloc[pos, r].sum(), 0.0)
                if zero.size:
                    alloc[zero, r] = weighted_fair_share(left, demand[zero, r], np.ones(zero.size))
            for i, c in enumerate(kids):
                ideal[c] = alloc[i]
        return ideal

    def _net_used(self) -> dict[str, np.ndarray]:
        """Queue usage minus containers already chosen for preemption."""
        st = self.state
        self._marked = {c: None for c in self._marked if c in st.containers}
        used = {q: v.copy() for q, v in st.queue_used.items()}
        for cid in self._marked:
            c = st.containers[cid]
            for q in st.tree.path(st.apps[c.app_id].queue):
                used[q] = used[q] - c.resources
        return used

    def preemption(self, now: float) -> list[int]:
        """Containers to take back now (ProportionalCapacityPreemptionPolicy
        in essence).

        1. Ideal assignment per queue (:meth:`ideal_assignment`), on usage
           net of containers already chosen and not yet released.
        2. A leaf with outstanding asks below its ideal (in a resource the
           calculator compares) is *starved*; the time it became so is kept
           and forgotten once it is not. Nothing is taken until some starved
           leaf has waited ``max_wait_before_kill`` (YARN waits that long
           between asking an AM to give containers back and killing them;
           our AMs never give back, so the wait is spent up front).
        3. Victims: leaves above ``ideal * (1 + max_ignored_over_capacity)``.
           Each is asked for its excess, scaled so the total does not exceed
           what the ripe starved leaves lack nor ``total_preemption_per_round``
           of the cluster, times ``natural_termination_factor``.
        4. From each victim (largest excess first, ties by name) containers
           in :func:`scheduler.preemption_order` (AMs last) while its request
           is unmet; a container is skipped if it would take the call past
           the per-round budget in any resource.
        """
        cfg = self.config.preemption
        if not cfg.enabled:
            return []
        st, rel = self.state, self._rel
        used = self._net_used()
        ideal = self.ideal_assignment(used)
        ripe: list[str] = []
        for leaf in st.tree.leaves():
            gap = (ideal[leaf] - used[leaf])[rel]
            if np.any(st.queue_pending[leaf][rel] > EPS) and np.any(gap > EPS):
                since = self._starved_since.setdefault(leaf, now)
                if now - since >= cfg.max_wait_before_kill - 1e-9:
                    ripe.append(leaf)
            else:
                self._starved_since.pop(leaf, None)
        if not ripe:
            return []
        need = np.where(rel, sum(np.maximum(ideal[q] - used[q], 0.0) for q in ripe), 0.0)
        over = {}
        for leaf in st.tree.leaves():
            if np.any((used[leaf] > ideal[leaf] * (1 + cfg.max_ignored_over_capacity) + EPS) & rel):
                over[leaf] = np.where(rel, np.maximum(used[leaf] - ideal[leaf], 0.0), 0.0)
        if not over:
            return []
        total_over = sum(over.values(), np.zeros(st.width))
        budget = cfg.total_preemption_per_round * st.total
        factor = np.ones(st.width)
        pos = total_over > EPS
        factor[pos] = np.minimum(1.0, np.minimum(need[pos], budget[pos]) / total_over[pos])
        factor *= cfg.natural_termination_factor
        left = budget.copy()
        taken: list[int] = []
        for leaf in sorted(over, key=lambda q: (-share(over[q], st.total, self.calc), q)):
            want = over[leaf] * factor
            mine = [cid for a in st.apps_in(leaf) for cid in a.containers if cid not in self._marked]
            for c in preemption_order(st, mine):
                if not np.any(want > EPS):
                    break
                if not np.any((c.resources > EPS) & (want > EPS)) or np.any(c.resources > left + EPS):
                    continue
                taken.append(c.container_id)
                want = want - c.resources
                left = left - c.resources
        self._marked.update(dict.fromkeys(taken))
        return taken
