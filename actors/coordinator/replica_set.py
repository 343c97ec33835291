"""Driver-side base of the numbered actors that elect a leader (coordinator
replicas, an architecture's replicated masters): which incarnation of each
is live, which restarted ones are still starting, who leads, and killing or
restarting one. The fault timeline drives every such role through this."""
from __future__ import annotations

from typing import Any

from schedlab.actors import engines


class ReplicaSet:
    def __init__(self) -> None:
        self.live: dict[int, Any] = {}
        self.starting: dict[int, Any] = {}  # restarted member -> its start call
        self.epoch = 0.0

    def up(self) -> dict[int, Any]:
        """Live members whose start returned: one still starting cannot lead,
        and asking it would stall the driver until Ray has its worker up."""
        return engines.current().up(self.live, self.starting)

    def lead(self) -> tuple[int, int] | None:
        """(index, term or epoch) of the current leader, None when there is none."""
        raise NotImplementedError

    def restart(self, i: int) -> None:
        raise NotImplementedError

    def kill(self, i: int) -> None:
        self.starting.pop(i, None)
        h = self.live.pop(i, None)
        if h is not None:
            engines.current().kill_all([h])
