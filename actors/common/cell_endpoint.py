"""How schedulers and hosts reach the cell state: one actor, or a Raft group.

Both endpoints have the same calls, so a scheduler and the
machine hosts do not know (or care) whether their commits are replicated.
Endpoints are picklable recipes; ``bind`` attaches them to the actor that
uses them.
"""
from __future__ import annotations

from typing import Any

from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.common.events import EventLog
from schedlab.actors.common.host_watch import HOST_CALL_MAX_WALL_S, HOST_CALL_WALL_S
from schedlab.schedulers.events.shared import COORD_ACK


class DirectCell:
    """The single ``cellstate`` actor (``[coordinator] replicas = 1``)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def bind(self, rt: Any, owner: str, log: EventLog, report: Any = None, reset: Any = None) -> None:
        self.rt = rt

    async def snapshot(self) -> bytes:
        return await self.rt.call(self.handle, "snapshot")

    async def sync(self, version: int) -> bytes:
        return await self.rt.call(self.handle, "sync", version)

    async def commit(self, scheduler: str, claims: bytes, since: int, job_id: int, tasks: bytes, now: float,
                     n_tasks: int, gang: bool = False) -> tuple:
        return await self.rt.call(self.handle, "commit", scheduler, claims, since, job_id, tasks, n_tasks, gang)

    async def exchange(self, host_id: int, finished: bytes) -> list:
        return await self.rt.call(self.handle, "exchange", host_id, finished)

    async def rejoin(self, host_id: int) -> list:
        return await self.rt.call(self.handle, "rejoin", host_id)

    async def recover(self, job_ids: list[int]) -> list:
        return await self.rt.call(self.handle, "recover", job_ids)

    async def lost(self, cursor: int) -> list:
        return await self.rt.call(self.handle, "lost", cursor)


class ReplicatedCell:
    """The coordinator group: writes are acknowledged once applied by the
    leader after a majority stored them; reads come from the leader's state.
    Every acknowledged write is logged as ``coord_ack`` for the checker."""

    def __init__(self, replicas: int) -> None:
        self.replicas = replicas

    def bind(self, rt: Any, owner: str, log: EventLog, report: Any = None, reset: Any = None) -> None:
        """Machine hosts (the owners that can be reset) try a leader briefly
        before looking elsewhere: stuck on one that does not answer, a healthy
        host would fall silent to the new leader and be written off."""
        if reset:
            self.client = CoordinatorClient(owner, self.replicas, rt, attempt_timeout=HOST_CALL_WALL_S,
                                            max_attempt_timeout=HOST_CALL_MAX_WALL_S)
        else:
            self.client = CoordinatorClient(owner, self.replicas, rt)
        self.rt = rt
        self.owner = owner
        self.log = log

    async def write(self, kind: str, command: tuple) -> Any:
        """Replicate ``command`` and return its result, logging its
        acknowledgement (``coord_ack``, for the checker's lost_acked)."""
        # No deadline: giving up would leave it unknown whether the write
        # applied (a commit the scheduler then re-plans would place tasks
        # twice). Retrying with the same request id until it lands is safe;
        # stop() ends the wait if the whole group is gone.
        result = await self.client.submit(command, deadline=float("inf"))
        ack = self.client.acks.pop()  # keep memory flat: the event is the record
        self.log.emit(COORD_ACK, client=self.owner, request_id=ack.request_id, kind=kind, replica=ack.replica, tries=ack.attempts)
        return result

    async def snapshot(self) -> bytes:
        return await self.client.query(("snapshot",))

    async def sync(self, version: int) -> bytes:
        return await self.client.query(("sync", version))

    async def commit(self, scheduler: str, claims: bytes, since: int, job_id: int, tasks: bytes, now: float,
                     n_tasks: int, gang: bool = False) -> tuple:
        return await self.write("commit", ("commit", claims, since, job_id, tasks, now, n_tasks, gang))

    async def exchange(self, host_id: int, finished: bytes) -> list:
        # An idle poll need not cost a log entry: ask first whether anything waits.
        if not finished and not await self.client.query(("pending", host_id)):
            return []
        return await self.write("exchange", ("exchange", host_id, finished))

    async def rejoin(self, host_id: int) -> list:
        return await self.write("rejoin", ("rejoin", host_id, self.rt.now()))

    async def recover(self, job_ids: list[int]) -> list:
        # Through the log: a stale leader's older view would show tasks placed
        # since as pending, and the restarted scheduler would place them twice.
        return await self.write("recover", ("read", ("recover", job_ids)))

    async def lost(self, cursor: int) -> list:
        # A plain read: a stale one is a prefix, and the caller's cursor only
        # moves forward (the scheduler's _poll_lost).
        return await self.client.query(("lost", cursor))
