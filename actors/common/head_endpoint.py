"""How a machine host reaches a single control-plane actor that it polls
and that may be restarted (a head node, a resource manager): its poll, its
rejoin after a host restart, and registering with a restarted head. A
picklable recipe, bound to the host that uses it
(``actors.common.machine_host``).

The head is found by ``name`` again after a failed call (a restarted head
is a new actor under the same name). A restarted head answers a poll with
``{"register": True}``: the host then tells it what runs there and what
finished lately (its ``report``, through the head's ``register`` method),
and polls again; the head does not give back twice what the registration
already counted free."""
from __future__ import annotations

from typing import Any, Callable

from schedlab.actors.common.events import EventLog


class HeadEndpoint:
    def __init__(self, handle: Any, name: str, register: str) -> None:
        """``name``: the head actor's name, to look it up again;
        ``register``: its method taking ``(host_id, report)``."""
        self.handle = handle
        self.name = name
        self.register = register

    def bind(self, rt: Any, owner: str, log: EventLog, report: Callable[[], dict] | None = None,
             reset: Any = None) -> None:
        self.rt = rt
        self.report = report

    async def _call(self, method: str, *args: Any) -> Any:
        """Through the current head: a failed call looks it up again by
        name, and the error goes to the host, which keeps its report for
        the next poll."""
        try:
            return await self.rt.call(self.handle, method, *args)
        except Exception:
            self.handle = self.rt.lookup(self.name) or self.handle
            raise

    async def exchange(self, host_id: int, finished: bytes) -> Any:
        reply = await self._call("exchange", host_id, finished)
        if isinstance(reply, dict) and reply.get("register"):
            assert self.report is not None
            await self._call(self.register, host_id, self.report())
            reply = await self._call("exchange", host_id, finished)
        return reply

    async def rejoin(self, host_id: int) -> list:
        return await self._call("rejoin", host_id)
