"""How a machine host reaches a service actor of its own (one per host: a
daemon that runs beside the machine's executor, keeping per-machine state
machines the rest of the control plane talks to): a picklable recipe bound in the host, which
polls ``exchange`` and, after a restart, ``rejoin`` on its own service
(``handles[host_id]``). The service answers as any cell endpoint does
(``actors.common.cell_endpoint``)."""
from __future__ import annotations

from typing import Any


class PerHostEndpoint:
    def __init__(self, handles: dict[int, Any]) -> None:
        self.handles = handles

    def bind(self, rt: Any, owner: str, log: Any, report: Any = None, reset: Any = None) -> None:
        self.rt = rt

    async def exchange(self, host_id: int, finished: bytes) -> Any:
        return await self.rt.call(self.handles[host_id], "exchange", host_id, finished)

    async def rejoin(self, host_id: int) -> list:
        return await self.rt.call(self.handles[host_id], "rejoin", host_id)
