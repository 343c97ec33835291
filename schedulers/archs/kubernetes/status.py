"""A plugin's verdict: ``Code`` and ``Status``, and the shorthands plugins
return (``SUCCESS``, ``SKIP``, ``unschedulable``, ``error``).

Kept apart from the cycle because every plugin returns these and nothing
here depends on the view, the profile or the cycle: plugins import this
module (and ``extension_points``) without pulling in ``framework``.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from enum import IntEnum


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
    messages ("Insufficient cpu"), counted per node in the Diagnosis.
    Frozen and hashable: the Diagnosis deduplicates equal statuses."""

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

    def by(self, plugin: str) -> Status:
        return self if self.plugin else replace(self, plugin=plugin)


SUCCESS = Status()
SKIP = Status(Code.SKIP)


def unschedulable(*reasons: str, plugin: str = "", unresolvable: bool = False) -> Status:
    """A Filter rejection: Unschedulable (preemption might help), or
    UnschedulableAndUnresolvable when no eviction on the node could."""
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    return Status(code, reasons, plugin)


def error(message: str, plugin: str = "") -> Status:
    """An internal failure: the cycle ends and the pod is retried later."""
    return Status(Code.ERROR, (message,), plugin)
