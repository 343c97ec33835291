"""DefaultBinder: the Bind extension point's default. Upstream it POSTs the
pod's Binding to the apiserver; here the binding is the store write the
scheduler's shell sends (one batch per round, refused when the pod changed
or its node's room is gone), so the plugin's Success is the decision to
write it."""
from __future__ import annotations

from ..extension_points import CycleState
from ..objects import Pod
from ..status import SUCCESS, Status


class DefaultBinder:
    name = "DefaultBinder"

    def bind(self, state: CycleState, pod: Pod, node: int) -> Status:
        return SUCCESS
