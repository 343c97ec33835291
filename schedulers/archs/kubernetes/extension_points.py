"""The extension points as small plugin interfaces: the ``CycleState`` they
share, one ``Protocol`` per point, and ``PostFilterResult``.

A plugin is any object with a ``name`` and one or more of these methods;
``Profile.of`` files it under every extension point whose method it has.
The protocols document the signatures the framework calls; nothing checks
them at run time.

Why batch forms: a plugin may offer ``filter_all(state, pod, view, nodes)``
and ``score_all(state, pod, view, nodes)`` over an int array of node rows;
the framework prefers them, so NodeResourcesFit checks hundreds of nodes
in a few numpy operations instead of one Python call each. ``filter_all``
returns either a bool array (True = passes; the framework then asks the
per-node ``filter`` for the statuses of the rejected ones) or an int array
of codes (0 = passes, c > 0 = the plugin's ``filter_reasons[c - 1]``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, Sequence

import numpy as np

from .cluster_view import ClusterView
from .objects import Pod
from .status import Status

if TYPE_CHECKING:  # annotations only: both import nothing from here at run time
    from .diagnosis import Diagnosis
    from .profile import Profile

MAX_NODE_SCORE = 100  # a normalised score lies in 0..MAX_NODE_SCORE


class CycleState(dict):
    """Scratch for one cycle, shared by the plugins (each under its own
    keys, by convention its name), plus the plugins the cycle skips."""

    def __init__(self, profile: Profile | None = None) -> None:
        super().__init__()
        # The profile running the cycle: a PostFilter plugin (preemption)
        # reruns its filters with ``run_pre_filter`` / ``run_filter_plugins``.
        self.profile = profile
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()
        self.assumed = False  # the pod was added to the view by this cycle
        # The scheduler's pods held at Permit (``waiting_pods.WaitingPods``),
        # or None outside a scheduler: a Permit plugin may allow or reject
        # them (a gang's last member allowing the others), as through
        # upstream's framework handle.
        self.waiting_pods: Any = None


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

    def post_filter(self, state: CycleState, pod: Pod, view: ClusterView, diagnosis: Diagnosis) -> PostFilterResult: ...


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
    long (emulated seconds, at most 15 min) the pod may wait for this
    plugin's allowance (``state.waiting_pods.get(key).allow(name)``, from
    a later cycle) before it is rejected."""

    name: str

    def permit(self, state: CycleState, pod: Pod, view: ClusterView, node: int) -> tuple[Status, float]: ...


class BindPlugin(Protocol):
    """The binding cycle's last step (``framework.run_bind``, run by the
    scheduler core once the pod may bind): Success binds the pod (the shell
    writes the binding to the API store: the store is where a binding
    lives, whichever plugin made it), Skip passes to the next Bind plugin,
    a rejection or error fails the bind (Unreserve, back off)."""

    name: str

    def bind(self, state: CycleState, pod: Pod, node: int) -> Status: ...
