"""Client of the coordinator group: find the leader, follow redirects, retry.

Contract: ``submit`` returns only once the command is applied by a majority
(the leader replies after applying). A retry after a timeout or a dead
replica reuses the same request id, and replicas dedup by (client id,
request id), so a command is applied at most once however often it is sent.
One request outstanding per client (ids increase), as the dedup table needs.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from schedlab.actors.coordinator.replica import replica_name
from schedlab.actors.engines.runtime import Runtime


class CoordinatorUnavailable(RuntimeError):
    pass


@dataclass
class Ack:
    request_id: int
    result: Any
    replica: int
    attempts: int
    wall_s: float


@dataclass
class CoordinatorClient:
    """A client of the run's coordinator replicas (``coordinator-<i>``),
    reached through the caller's Runtime ``rt``."""

    client_id: str
    replicas: int
    rt: Runtime
    attempt_timeout: float = 2.5  # longer than a replica's own proposal timeout
    # After a try times out, the next waits twice as long, up to this: a
    # client that must not stay stuck on an unanswering leader (a machine
    # host, whose silence gets it written off) starts short and still
    # reaches a leader that is merely slow. None: no growth.
    max_attempt_timeout: float | None = None
    leader: int = 0
    # Request ids grow across incarnations: a restarted client (same name)
    # starting from 1 again would be taken for its predecessor, its requests
    # refused as superseded or, worse, answered with the old last result.
    next_id: int = -1  # set from the runtime's stamp
    acks: list[Ack] = field(default_factory=list)
    one_at_a_time: asyncio.Lock = field(default_factory=asyncio.Lock)
    handles: dict[int, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.next_id < 0:
            self.next_id = self.rt.stamp()

    def _handle(self, i: int) -> Any:
        # Name lookups are blocking round trips to Ray's GCS: cache, and look
        # again only after a call to that replica failed (it may be a new actor).
        if i not in self.handles:
            self.handles[i] = self.rt.lookup(replica_name(i))
        return self.handles[i]

    async def submit(self, command: Any, deadline: float = 30.0) -> Any:
        """Replicate ``command``; returns its result once applied. Concurrent
        callers queue here: with two requests in flight, the later one
        landing first makes the earlier one a stale duplicate (refused, or
        answered with no result)."""
        async with self.one_at_a_time:
            self.next_id += 1
            return await self._send("propose", command, deadline, self.next_id)

    async def query(self, command: Any, deadline: float = 30.0) -> Any:
        """A read from the leader's applied state (no log entry, no request id)."""
        return await self._send("query", command, deadline, None)

    async def _send(self, method: str, command: Any, deadline: float, rid: int | None) -> Any:
        clock = self.rt.wall_clock
        t0 = clock()
        attempts = 0
        target = self.leader
        wait = self.attempt_timeout
        while clock() - t0 < deadline:
            attempts += 1
            handle = self._handle(target)
            hint = None
            if handle is None:
                self.handles.pop(target, None)  # not started yet, or dead: look again next time
            else:
                try:
                    args = (self.client_id, rid, command) if rid is not None else (command,)
                    ok, result, error, hint = await asyncio.wait_for(self.rt.call(handle, method, *args), wait)
                except Exception as e:  # dead replica, timeout: try another with the same id
                    if isinstance(e, asyncio.TimeoutError) and self.max_attempt_timeout is not None:
                        wait = min(2 * wait, self.max_attempt_timeout)
                    ok, error = False, "unreachable"
                    self.handles.pop(target, None)
                if ok:
                    self.leader = target
                    if rid is not None:
                        self.acks.append(Ack(rid, result, target, attempts, clock() - t0))
                    return result
                if error == "stale":
                    raise CoordinatorUnavailable(f"request {rid} superseded")  # a newer request of ours won
            if isinstance(hint, int) and hint != target:
                target = hint  # follow the redirect at once
            else:
                # No leader known here: walk the group, giving an election a moment.
                target = (target + 1) % self.replicas
                await self.rt.sleep_wall(0.02)
        raise CoordinatorUnavailable(f"no leader answered {method} {rid or ''} within {deadline:g}s")
