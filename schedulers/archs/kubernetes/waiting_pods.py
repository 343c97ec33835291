"""Pods waiting at Permit: upstream's ``waitingPodsMap`` and
``waitingPod`` (pkg/scheduler/framework/runtime/waiting_pods_map.go), pure.

A Permit plugin that answers Wait holds the pod, assumed on its node (its
room taken in the scheduler's view, Reserve done), until every plugin that
said Wait allows it, one rejects it, or a plugin's timeout passes (a
timeout is a rejection). Plugins reach the waiting pods through the
cycle's ``CycleState.waiting_pods`` (upstream's framework handle:
``GetWaitingPod``, ``IterateOverWaitingPods``), typically a gang plugin
whose last member's Permit allows the others.

The scheduler core owns the map: it adds a pod whose cycle ended in Wait,
``settle``s the map at each cycle (expired timeouts become rejections) and
takes out the pods that are allowed (to bind) or rejected (to unreserve,
un-assume and back off).
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .objects import Pod, PodKey
from .status import Code, Status

# Upstream caps a Permit plugin's wait at 15 minutes (maxTimeout).
MAX_PERMIT_TIMEOUT_S = 900.0


@dataclass
class WaitingPod:
    """One pod held at Permit. ``pending``: plugin -> the time its wait
    ends (each plugin's own timer, as upstream); ``rejected``: the status
    once any plugin rejected it (or its timer fired)."""

    pod: Pod
    node: int
    state: Any  # the cycle's CycleState (Unreserve needs it)
    pending: dict[str, float]
    since: float
    first: bool = False
    rejected: Status | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # the core's own (the pod's store version, ...)

    @property
    def key(self) -> PodKey:
        return self.pod.key

    @property
    def allowed(self) -> bool:
        return self.rejected is None and not self.pending

    def pending_plugins(self) -> list[str]:
        return sorted(self.pending)

    def allow(self, plugin: str) -> None:
        """``plugin`` lets the pod go (its timer stops); once no plugin is
        pending, the pod may bind. A pod already rejected stays rejected."""
        self.pending.pop(plugin, None)

    def reject(self, plugin: str, message: str) -> None:
        """The pod may not bind: it is unreserved, un-assumed and backs off."""
        if self.rejected is None:
            self.rejected = Status(Code.UNSCHEDULABLE, (message,), plugin)


class WaitingPods:
    """The scheduler's waiting pods, by key; iteration is in key order
    (deterministic)."""

    def __init__(self) -> None:
        self._pods: dict[PodKey, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        if wp.key in self._pods:
            raise ValueError(f"pod {wp.key} is already waiting at Permit")
        self._pods[wp.key] = wp

    def get(self, key: PodKey) -> WaitingPod | None:
        return self._pods.get(key)

    def remove(self, key: PodKey) -> WaitingPod | None:
        return self._pods.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter([self._pods[k] for k in sorted(self._pods)])

    def settle(self, now: float) -> tuple[list[WaitingPod], list[WaitingPod]]:
        """Fire the timers due by ``now`` (a rejection naming the plugin and
        how long the pod waited), then take out and return (allowed,
        rejected) pods, each in key order."""
        allowed, rejected = [], []
        for wp in self:
            due = sorted((at, p) for p, at in wp.pending.items() if at <= now)
            if due and wp.rejected is None:
                at, plugin = due[0]
                wp.reject(plugin, f"rejected due to timeout after waiting {at - wp.since:g}s at plugin {plugin}")
            if wp.rejected is not None:
                rejected.append(self._pods.pop(wp.key))
            elif wp.allowed:
                allowed.append(self._pods.pop(wp.key))
        return allowed, rejected

    def next_timeout(self) -> float | None:
        """The earliest pending timer (a shell may wake for it)."""
        return min((at for wp in self._pods.values() for at in wp.pending.values()), default=None)
