"""DefaultPreemption, kube-scheduler's PostFilter, pure: when a pod fits no
node, which lower-priority pods to evict, and on which node.

Per candidate node (``select_victims``): treat every pod of lower priority
than the preemptor as gone; if the preemptor still does not fit, the node
cannot help. Otherwise give back ("reprieve") as many of those pods as
possible, most important first, the ones whose eviction would break a
PodDisruptionBudget before the others: what is left are the victims, a set
from which no single pod can be spared. Among the candidates
(``pick_one``) the node whose eviction hurts least wins, by upstream's
ordered criteria: fewest budget violations, then the lowest highest victim
priority, the smallest sum of victim priorities, the fewest victims, and
the latest start among the highest-priority victims.

Why the feasibility test is a callback: "fits with these pods removed" is
the framework's whole filter chain (resources, affinity, spread ...), which
lives elsewhere; preemption only decides what to remove. Randomness (the
offset where the dry run starts) comes only from a Generator passed in.
"""
from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.archs.kubernetes.objects import Pod, PodKey


# fits(node_index, pod, removed): does ``pod`` pass the filters on that node
# if the pods whose keys are in ``removed`` were gone? For the victims to be
# minimal it must be monotone: removing more never makes a fit fail.
Fits = Callable[[int, Pod, frozenset[PodKey]], bool]
StartTime = Callable[[Pod], float]

_PRIORITY_SHIFT = 2**31  # upstream adds MaxInt32+1 so negative priorities do not reward more victims


def _created(p: Pod) -> float:
    return p.created


@dataclass(frozen=True)
class PreemptionConfig:
    """DefaultPreemptionArgs: the dry run stops once it has
    max(nodes × percentage / 100, absolute) candidates (capped at the
    nodes), at least one of them without budget violations."""

    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    def __post_init__(self) -> None:
        if not 0 <= self.min_candidate_nodes_percentage <= 100:
            raise ValueError(f"min_candidate_nodes_percentage must be in [0, 100], got {self.min_candidate_nodes_percentage}")
        if self.min_candidate_nodes_absolute < 0:
            raise ValueError(f"min_candidate_nodes_absolute must be >= 0, got {self.min_candidate_nodes_absolute}")
        if self.min_candidate_nodes_percentage == 0 and self.min_candidate_nodes_absolute == 0:
            raise ValueError("min_candidate_nodes_percentage and min_candidate_nodes_absolute cannot both be 0")


@dataclass(frozen=True)
class Candidate:
    """One node preemption would work on: its victims, most important
    first, and how many of them break a disruption budget."""

    node: int
    victims: tuple[Pod, ...]
    pdb_violations: int


@dataclass(frozen=True)
class PreemptionResult:
    """``node`` None: no preemption (``reason`` says why). Otherwise evict
    ``victims`` from ``node`` and nominate the preemptor there.
    ``candidates``: how many nodes the dry run found workable."""

    node: int | None
    victims: tuple[Pod, ...] = ()
    pdb_violations: int = 0
    candidates: int = 0
    reason: str = ""


def num_candidates(n_nodes: int, config: PreemptionConfig = PreemptionConfig()) -> int:
    """How many candidates the dry run looks for among ``n_nodes``."""
    n = n_nodes * config.min_candidate_nodes_percentage // 100
    return min(max(n, config.min_candidate_nodes_absolute), n_nodes)


def ineligibility(preemptor: Pod, nominated_pods: Sequence[Pod] = (),
                  terminating: Collection[PodKey] = frozenset()) -> str | None:
    """Why ``preemptor`` may not preempt now, or None if it may. Policy
    Never never preempts. A pod already nominated to a node
    (``nominated_pods``: the pods bound there) waits while lower-priority
    pods there are still terminating: its earlier preemption is under way,
    and preempting again would evict more than needed."""
    if preemptor.preemption_policy == "Never":
        return "preemptionPolicy is Never"
    if any(p.key in terminating and p.priority < preemptor.priority for p in nominated_pods):
        return "victims on the nominated node are still terminating"
    return None


def _importance(start_time: StartTime) -> Callable[[Pod], tuple]:
    """Most important first: higher priority, then the earlier started."""
    return lambda p: (-p.priority, start_time(p), p.key)


def select_victims(preemptor: Pod, node: int, pods: Sequence[Pod], fits: Fits,
                   pdb_allowed: Mapping[str, int] | None = None,
                   start_time: StartTime = _created) -> Candidate | None:
    """The victims on one node (upstream's selectVictimsOnNode), or None if
    evicting every lower-priority pod would not make room, or if none need
    evicting. ``pdb_allowed``: owner -> how many of its pods may be
    disrupted now; a pod whose owner has no entry has no budget.

    The budget is spent most important pod first over all the candidates
    for eviction, before any is reprieved (as upstream does): a pod counts
    as violating if the more important pods of its owner used the budget up,
    even if those are reprieved later."""
    order = _importance(start_time)
    potential = sorted((p for p in pods if p.priority < preemptor.priority), key=order)
    removed = {p.key for p in potential}
    if not fits(node, preemptor, frozenset(removed)):
        return None
    allowed = dict(pdb_allowed or {})
    violating: list[Pod] = []
    sparing: list[Pod] = []
    for p in potential:
        if p.owner and p.owner in allowed:
            if allowed[p.owner] <= 0:
                violating.append(p)
                continue
            allowed[p.owner] -= 1
        sparing.append(p)
    victims: list[Pod] = []
    violations = 0
    for group, breaks_budget in ((violating, True), (sparing, False)):
        for p in group:  # reprieve: give it back unless the preemptor then fails
            removed.discard(p.key)
            if fits(node, preemptor, frozenset(removed)):
                continue
            removed.add(p.key)
            victims.append(p)
            violations += breaks_budget
    if not victims:
        return None  # it fits without evicting anything: not a preemption
    return Candidate(node=node, victims=tuple(sorted(victims, key=order)), pdb_violations=violations)


def preference(c: Candidate, start_time: StartTime = _created) -> tuple:
    """The candidate's rank, smaller preferred (pickOneNodeForPreemption's
    criteria, in order)."""
    highest = c.victims[0].priority
    earliest_top = min(start_time(p) for p in c.victims if p.priority == highest)
    return (
        c.pdb_violations,
        highest,
        sum(p.priority + _PRIORITY_SHIFT for p in c.victims),
        len(c.victims),
        -earliest_top,
    )


def pick_one(candidates: Sequence[Candidate], start_time: StartTime = _created) -> Candidate:
    """The preferred candidate; on a full tie, the first in order."""
    return min(candidates, key=lambda c: preference(c, start_time))


def preempt(preemptor: Pod, nodes: Mapping[int, Sequence[Pod]], fits: Fits, *,
            pdb_allowed: Mapping[str, int] | None = None,
            config: PreemptionConfig = PreemptionConfig(),
            rng: np.random.Generator | None = None,
            start_time: StartTime = _created,
            nominated_pods: Sequence[Pod] = (),
            terminating: Collection[PodKey] = frozenset()) -> PreemptionResult:
    """Choose a node and its victims for ``preemptor``.

    ``nodes``: the nodes where the filters failed in a way removing pods
    might fix, each with the pods bound there. The dry run visits them in
    index order starting at an offset drawn from ``rng`` (0 without one),
    and stops once it has ``num_candidates`` candidates of which at least
    one breaks no budget; so a choice without violations is taken whenever
    one exists. ``nominated_pods``/``terminating``: see ``ineligibility``.
    ``start_time``: when a bound pod started (default: its ``created``).
    Never returns a victim of priority >= the preemptor's."""
    why = ineligibility(preemptor, nominated_pods, terminating)
    if why is not None:
        return PreemptionResult(node=None, reason=why)
    order = sorted(nodes)
    if not order:
        return PreemptionResult(node=None, reason="no node where preemption might help")
    want = num_candidates(len(order), config)
    offset = int(rng.integers(len(order))) if rng is not None else 0
    clean: list[Candidate] = []
    violating: list[Candidate] = []
    for i in range(len(order)):
        node = order[(offset + i) % len(order)]
        c = select_victims(preemptor, node, nodes[node], fits, pdb_allowed, start_time)
        if c is None:
            continue
        (violating if c.pdb_violations else clean).append(c)
        if clean and len(clean) + len(violating) >= want:
            break
    found = clean + violating
    if not found:
        return PreemptionResult(node=None, reason="preemption is not helpful for scheduling")
    best = pick_one(found, start_time)
    return PreemptionResult(node=best.node, victims=best.victims, pdb_violations=best.pdb_violations,
                            candidates=len(found))


def lower_priority_nominated(preemptor: Pod, nominated: Iterable[Pod]) -> tuple[Pod, ...]:
    """The pods nominated to the chosen node that rank below the preemptor:
    their room is being taken, so the framework clears their nomination."""
    return tuple(p for p in nominated if p.priority < preemptor.priority)


class DefaultPreemption:
    """The PostFilter plugin's core: ``preempt`` with its configuration,
    Generator and start-time source fixed at construction. Not registered
    yet: the framework's PostFilter signature (state, pod, view, diagnosis)
    is adapted to ``choose`` (nodes from the view's Unschedulable
    statuses, ``fits`` from its filters) when the two are joined."""

    name = "DefaultPreemption"

    def __init__(self, config: PreemptionConfig = PreemptionConfig(), *,
                 rng: np.random.Generator | None = None, start_time: StartTime = _created) -> None:
        self.config = config
        self.rng = rng
        self.start_time = start_time

    def choose(self, preemptor: Pod, nodes: Mapping[int, Sequence[Pod]], fits: Fits, *,
               pdb_allowed: Mapping[str, int] | None = None,
               nominated_pods: Sequence[Pod] = (),
               terminating: Collection[PodKey] = frozenset()) -> PreemptionResult:
        return preempt(preemptor, nodes, fits, pdb_allowed=pdb_allowed, config=self.config, rng=self.rng,
                       start_time=self.start_time, nominated_pods=nominated_pods, terminating=terminating)
