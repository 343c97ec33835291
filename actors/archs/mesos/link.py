"""How agents (machine hosts) and frameworks reach the leading Mesos master.

A picklable recipe, bound inside the actor that uses it. It finds the
leader (the only master, or the lease holder in the coordinator group, as
Mesos agents learn it from ZooKeeper), registers through the owner's
``register`` coroutine, and forgets the master on any failed call, so the
next call finds the leader again and re-registers. Every successful
(re-)registration is a ``registered`` event: the summary times a master
failover from the kill to the last of them.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Awaitable, Callable

from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.coordinator.lease import lease_holder, lease_holder_epoch, lease_holder_name, lease_identity  # noqa: F401 (re-exported)
from schedlab.actors.common.events import EventLog
from schedlab.schedulers.archs.mesos.events import REGISTERED
from schedlab.schedulers.model.wire import unpack_release_keys

Register = Callable[[Any], Awaitable[dict]]
RTT_KEPT = 8  # round trips to the master remembered for ``reply_s``


def master_name(i: int) -> str:
    return f"master-{i}"


class MasterLink:
    def __init__(self, masters: int, replicas: int) -> None:
        self.masters = masters
        self.replicas = replicas
        self.handle: Any = None
        self.master: str | None = None  # the leader registered with (None: not connected yet)
        self.epoch: int | None = None

    def bind(self, rt: Any, owner: str, log: EventLog, role: str, register: Register) -> None:
        self.rt = rt
        self.owner = owner
        self.log = log
        self.role = role
        self.register = register
        self.handle = None
        self.master = None
        self.epoch = None
        self.coord = CoordinatorClient(owner, self.replicas, rt) if self.masters > 1 else None
        self._rtts: deque[float] = deque(maxlen=RTT_KEPT)

    @property
    def reply_s(self) -> float:
        """How long (emulated s) a call to the master may take, judged by
        the slowest of the last few: a framework leaves this much of an
        offer's timeout for its answer to arrive. Measured, not configured,
        because it is the substrate's (a loaded machine's round trips are
        100x an idle one's) and the emulated clock scales it."""
        return max(self._rtts, default=0.0)

    async def _timed(self, call: Awaitable[dict]) -> dict:
        """``call``'s reply, its round trip remembered if it came (a call
        that failed says nothing about the next master's speed)."""
        w0 = self.rt.wall_clock()
        reply = await call
        self._rtts.append((self.rt.wall_clock() - w0) * self.rt.scale)
        return reply

    async def leader(self) -> str | None:
        if self.coord is None:
            return master_name(0)
        return await lease_holder(self.coord)

    async def stale(self) -> bool:
        """Whether the master registered with no longer leads: another holds
        the lease, or the same name holds it at a later epoch (it was killed,
        restarted and elected again: a new incarnation that does not know us)."""
        if self.coord is None or self.handle is None:
            return False
        name, epoch = await lease_holder_epoch(self.coord)
        return name is not None and (name != self.master or epoch > (self.epoch or 0))

    async def connected(self) -> bool:
        """Make sure we are registered with the current leader."""
        if self.handle is not None:
            return True
        name = await self.leader()
        handle = self.rt.lookup(name) if name else None
        if handle is None:
            return False
        try:
            reply = await self._timed(self.register(handle))
        except Exception:  # the master died while we registered
            return False
        if not reply.get("ok"):
            return False
        self.handle, self.master, self.epoch = handle, name, reply["epoch"]
        self.log.emit(REGISTERED, role=self.role, who=self.owner, master=name, epoch=self.epoch)
        return True

    def lost(self) -> None:
        self.handle = None

    async def call(self, method: str, *args: Any) -> dict | None:
        """Call the leader; None (and forget it) if it failed or is not the leader."""
        if not await self.connected():
            return None
        try:
            reply = await self._timed(self.rt.call(self.handle, method, self.owner, self.epoch, *args))
        except Exception:
            reply = None
        if not reply or not reply.get("ok"):
            self.lost()
            return None
        return reply


class AgentEndpoint:
    """The machine host's side: the same ``exchange`` the Omega cell endpoints
    offer, so ``MachineHost`` runs unchanged on Mesos."""

    def __init__(self, link: MasterLink) -> None:
        self.link = link

    def bind(self, rt: Any, owner: str, log: EventLog, report: Callable[[], dict] | None = None,
             reset: Callable[[], None] | None = None) -> None:
        assert report is not None and reset is not None
        self.report = report
        self.reset = reset
        self.link.bind(rt, owner, log, "agent", self._register)

    async def _register(self, handle: Any) -> dict:
        r = self.report()
        reply = await self.link.rt.call(handle, "register_agent", self.link.owner, r["host"], r["tasks"], r["finished"])
        if reply.get("reset"):
            self.reset()  # the master gave up on us while we were away
        return reply

    async def rejoin(self, host_id: int) -> list:
        """Nothing to do here: registering tells the master what this agent
        runs (nothing), and the master reports the rest lost."""
        return [[], []]

    async def exchange(self, host_id: int, finished: bytes) -> Any:
        keys = unpack_release_keys(finished) if finished else []
        reply = await self.link.call("exchange", host_id, keys)
        if reply is None:
            # Keep the returns for the next poll (raising makes the host do so).
            raise ConnectionError("no leading master")
        return reply["launch"], reply["kill"]

