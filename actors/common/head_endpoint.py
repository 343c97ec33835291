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
already counted free.

A head may be one of several members, the active one being whoever holds
the coordinator group's lease (``actors.coordinator.lease``, with
``lease_replicas`` > 0): after a failed call, or a standby's answer
``{"standby": True}``, the host asks the group who holds the lease and
polls that member; the new active head answers ``{"register": True}``
as a restarted one does."""
from __future__ import annotations

from typing import Any, Callable

from schedlab.actors.common.events import EventLog
from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.coordinator.lease import lease_holder

STANDBY = {"standby": True}  # a standby member's answer: not the active head


class HeadEndpoint:
    def __init__(self, handle: Any, name: str, register: str, lease_replicas: int = 0) -> None:
        """``name``: the head actor's name, to look it up again;
        ``register``: its method taking ``(host_id, report)``;
        ``lease_replicas``: > 0 when the active head is whichever member
        holds the coordinator group's lease (the group's replicas)."""
        self.handle = handle
        self.name = name
        self.register = register
        self.lease_replicas = lease_replicas

    def bind(self, rt: Any, owner: str, log: EventLog, report: Callable[[], dict] | None = None,
             reset: Any = None) -> None:
        self.rt = rt
        self.report = report
        self.coord = CoordinatorClient(owner, self.lease_replicas, rt) if self.lease_replicas else None

    async def _find(self) -> None:
        """Look the head up again: by name, or as the lease's holder."""
        if self.coord is None:
            self.handle = self.rt.lookup(self.name) or self.handle
            return
        name = await lease_holder(self.coord)
        handle = self.rt.lookup(name) if name else None
        if handle is not None:
            self.handle = handle

    async def _call(self, method: str, *args: Any) -> Any:
        """Through the current head: a failed call looks it up again by
        name, and the error goes to the host, which keeps its report for
        the next poll."""
        try:
            reply = await self.rt.call(self.handle, method, *args)
        except Exception:
            await self._find()
            raise
        if isinstance(reply, dict) and reply.get("standby"):
            await self._find()
            raise ConnectionError(f"{method}: not the active head")
        return reply

    async def exchange(self, host_id: int, finished: bytes) -> Any:
        reply = await self._call("exchange", host_id, finished)
        if isinstance(reply, dict) and reply.get("register"):
            assert self.report is not None
            await self._call(self.register, host_id, self.report())
            reply = await self._call("exchange", host_id, finished)
            if isinstance(reply, dict) and reply.get("register"):
                # The head forgot the registration at once (another member
                # took over between the two calls): a greeting is no list of
                # launches; the next poll registers again.
                raise ConnectionError("exchange: the head asked again to register")
        return reply

    async def rejoin(self, host_id: int) -> list:
        return await self._call("rejoin", host_id)
