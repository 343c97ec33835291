"""How a worker (machine host) reaches the head node: its poll, its rejoin
after a restart, and registering with a restarted head. A picklable recipe,
bound to the host that uses it (``actors.common.machine_host``)."""
from __future__ import annotations

from typing import Any, Callable

from schedlab.actors.common.events import EventLog
from schedlab.schedulers.archs.dispatcher.spec import NAME


class WorkerEndpoint:
    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def bind(self, rt: Any, owner: str, log: EventLog, report: Callable[[], dict] | None = None,
             reset: Any = None) -> None:
        self.rt = rt
        self.report = report

    async def _call(self, method: str, *args: Any) -> Any:
        """Through the current head: a call that fails looks it up again by
        name (a restarted head is a new actor), and the error goes to the
        host, which keeps its report for the next poll."""
        try:
            return await self.rt.call(self.handle, method, *args)
        except Exception:
            self.handle = self.rt.lookup(NAME) or self.handle
            raise

    async def exchange(self, host_id: int, finished: bytes) -> Any:
        reply = await self._call("exchange", host_id, finished)
        if isinstance(reply, dict) and reply.get("register"):
            # A restarted head: tell it what runs here and what finished
            # lately, then poll as usual (the head does not give back twice
            # what the registration already counted free).
            assert self.report is not None
            await self._call("register_worker", host_id, self.report())
            reply = await self._call("exchange", host_id, finished)
        return reply

    async def rejoin(self, host_id: int) -> list:
        return await self._call("rejoin", host_id)
