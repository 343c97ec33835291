"""DefaultBinder: the Bind extension point's default. Binding is a write
to the API store, which the live half performs (a compare-and-swap on the
pod's resource version); the pure half only names the decision, so this
plugin returns Success and lets ``ScheduleResult.node`` carry it."""
from __future__ import annotations

from ..extension_points import CycleState
from ..objects import Pod
from ..status import SUCCESS, Status


class DefaultBinder:
    name = "DefaultBinder"

    def bind(self, state: CycleState, pod: Pod, node: int) -> Status:
        return SUCCESS
