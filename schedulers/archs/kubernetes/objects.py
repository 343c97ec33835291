"""The Kubernetes objects the scheduler reasons about, as plain frozen
values (no Ray, no clock): nodes with labels and taints, pods with their
requests, priority, node affinity, tolerations, topology spread
constraints and inter-pod (anti-)affinity terms.

Why our own types and not the API's dictionaries: every plugin runs per
pod per node, so the fields it reads are typed and precomputed once (a
pod's label set, a node's topology domains) instead of parsed in the hot
loop. The shapes follow the upstream API closely enough that a reader of
``k8s.io/api/core/v1`` recognises each field; what is left out is said in
the package NOTES.

Resources are the house's vector over the cell's resources (``[cell]
resources``: cpu, mem, then any extended resource such as a GPU count),
one float per dimension, named by ``ClusterView.resources``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np

Labels = tuple[tuple[str, str], ...]  # sorted (key, value) pairs: hashable, cheap to compare
PodKey = tuple[int, int]  # (job, task): a pod is the house's task
PreemptionPolicy = Literal["PreemptLowerPriority", "Never"]

HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
RACK = "topology.schedlab.io/rack"


def labels(d: dict[str, str] | None = None) -> Labels:
    return tuple(sorted((d or {}).items()))


def label_dict(ls: Labels) -> dict[str, str]:
    return dict(ls)


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = "NoSchedule"


@dataclass(frozen=True)
class Toleration:
    """``operator`` Exists matches any value (and, with an empty key, any
    taint); Equal matches key and value. An empty ``effect`` matches all."""

    key: str = ""
    operator: Literal["Equal", "Exists"] = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, t: Taint) -> bool:
        if self.effect and self.effect != t.effect:
            return False
        if self.operator == "Exists":
            return not self.key or self.key == t.key
        return self.key == t.key and self.value == t.value


@dataclass(frozen=True)
class Requirement:
    """A label selector requirement (node or pod): ``op`` In, NotIn,
    Exists, DoesNotExist."""

    key: str
    op: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: tuple[str, ...] = ()

    def matches(self, ls: dict[str, str]) -> bool:
        has = self.key in ls
        if self.op == "Exists":
            return has
        if self.op == "DoesNotExist":
            return not has
        if self.op == "In":
            return has and ls[self.key] in self.values
        return not has or ls[self.key] not in self.values  # NotIn


@dataclass(frozen=True)
class Selector:
    """Requirements ANDed (a NodeSelectorTerm, or a LabelSelector's
    matchExpressions with its matchLabels as In requirements). Empty
    matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, ls: dict[str, str]) -> bool:
        return all(r.matches(ls) for r in self.requirements)

    @staticmethod
    def of_labels(d: dict[str, str]) -> Selector:
        return Selector(tuple(Requirement(k, "In", (v,)) for k, v in sorted(d.items())))


@dataclass(frozen=True)
class NodeAffinity:
    """``required``: terms ORed (requiredDuringSchedulingIgnoredDuringExecution);
    empty means no requirement. ``preferred``: (weight 1..100, term)."""

    required: tuple[Selector, ...] = ()
    preferred: tuple[tuple[int, Selector], ...] = ()


@dataclass(frozen=True)
class PodAffinityTerm:
    """Pods matching ``selector`` in the same ``topology_key`` domain as the
    candidate node. ``anti``: must (or should) not share it."""

    selector: Selector
    topology_key: str
    anti: bool = False


@dataclass(frozen=True)
class SpreadConstraint:
    """PodTopologySpread: pods matching ``selector`` spread over the domains
    of ``topology_key`` with at most ``max_skew`` between the fullest and
    the emptiest eligible domain. ``when_unsatisfiable``: DoNotSchedule
    (a filter) or ScheduleAnyway (a score)."""

    max_skew: int
    topology_key: str
    selector: Selector
    when_unsatisfiable: Literal["DoNotSchedule", "ScheduleAnyway"] = "DoNotSchedule"


@dataclass(frozen=True)
class Node:
    index: int  # the machine's index in the cell
    name: str
    capacity: tuple[float, ...]  # allocatable, per resource
    labels: Labels = ()
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False  # cordoned


@dataclass(frozen=True)
class Pod:
    """``key``: (job, task), the house's task identity. ``priority``: the
    resolved value of its priority class. ``preemption_policy``:
    PreemptLowerPriority or Never. ``created``: emulated seconds, the
    queue's tie-break. ``owner``: the deployment or job it belongs to
    (a PodDisruptionBudget names it)."""

    key: tuple[int, int]
    requests: tuple[float, ...]
    priority: int = 0
    created: float = 0.0
    labels: Labels = ()
    scheduler_name: str = "default-scheduler"
    node_selector: Labels = ()
    affinity: NodeAffinity = field(default_factory=NodeAffinity)
    tolerations: tuple[Toleration, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()  # required (anti-)affinity
    preferred_pod_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    preemption_policy: PreemptionPolicy = "PreemptLowerPriority"
    owner: str = ""
    # Its PodGroup (the coscheduling plugin's): the pods of its job, of which
    # min_member must be placed together (0: no group); a member waits at
    # Permit at most gang_timeout emulated s (permitWaitingTimeSeconds).
    min_member: int = 0
    gang_timeout: float = 0.0
    models: tuple[str, ...] = ()  # the device models its devices may be (empty: any)

    @property
    def request_vector(self) -> np.ndarray:
        return np.asarray(self.requests, dtype=float)
