"""DefaultPreemption as a PostFilter plugin: the adapter between the
framework's ``post_filter(state, pod, view, diagnosis)`` and the pure
victim choice in ``preemption.py``.

Candidates are the nodes the diagnosis says preemption might help
(rejected as Unschedulable, not UnschedulableAndUnresolvable); a node
"fits" with some pods removed when the profile's PreFilter and Filter
plugins pass on it with those pods taken out of the view (put back
before the answer returns, so the view is unchanged). Monotone as
``preemption.Fits`` requires for every built-in filter: removing pods only
frees resources, lowers spread counts and drops anti-affinity matches.

What the live scheduler knows and the view does not comes through the
cycle state: ``PDB_ALLOWED`` (owner -> disruptions allowed now),
``NOMINATED_NODE`` (the node an earlier preemption nominated this pod to,
if any) and ``TERMINATING`` (keys of pods whose eviction is under way):
a pod whose victims on its nominated node are still terminating does not
preempt again.
"""
from __future__ import annotations

from typing import Any, Collection, Mapping, Sequence

from ..cluster_view import ClusterView
from ..diagnosis import Diagnosis
from ..extension_points import CycleState, PostFilterResult
from ..framework import run_filter_plugins, run_pre_filter
from ..objects import Pod
from ..preemption import PodKey, PreemptionConfig, PreemptionResult, preempt
from ..status import Status, unschedulable

PDB_ALLOWED = "DefaultPreemption/pdb_allowed"
NOMINATED_NODE = "DefaultPreemption/nominated_node"
TERMINATING = "DefaultPreemption/terminating"


class DefaultPreemption:
    name = "DefaultPreemption"

    def __init__(self, min_candidate_nodes_percentage: int = 10, min_candidate_nodes_absolute: int = 100) -> None:
        self.config = PreemptionConfig(min_candidate_nodes_percentage, min_candidate_nodes_absolute)

    def post_filter(self, state: CycleState, pod: Pod, view: ClusterView, diagnosis: Diagnosis) -> PostFilterResult:
        profile = state.profile
        if profile is None:
            return PostFilterResult(unschedulable("no profile to rerun the filters with", plugin=self.name))
        nodes = {int(n): list(view.pods_on[int(n)].values()) for n in diagnosis.preemption_candidates()}

        def fits(node: int, p: Pod, removed: frozenset[PodKey]) -> bool:
            taken = [view.remove_pod(k) for k in sorted(removed)]
            try:
                trial = CycleState(profile)
                return run_pre_filter(profile, trial, p, view).ok and run_filter_plugins(profile, trial, p, view, node).ok
            finally:
                for q, n in taken:
                    view.add_pod(q, n)

        pdb: Mapping[str, int] | None = state.get(PDB_ALLOWED)
        at = state.get(NOMINATED_NODE)
        nominated: Sequence[Pod] = list(view.pods_on[int(at)].values()) if at is not None else ()
        terminating: Collection[PodKey] = state.get(TERMINATING, frozenset())
        r: PreemptionResult = preempt(pod, nodes, fits, pdb_allowed=pdb, config=self.config,
                                      nominated_pods=nominated, terminating=terminating)
        if r.node is None:
            return PostFilterResult(unschedulable(r.reason, plugin=self.name))
        return PostFilterResult(Status(), nominated_node=r.node, detail=r)


def victims_of(result: Any) -> tuple[Pod, ...]:
    """The victims a PostFilter result carries (none if it is not preemption's)."""
    detail = getattr(result, "detail", None)
    return tuple(detail.victims) if isinstance(detail, PreemptionResult) else ()
