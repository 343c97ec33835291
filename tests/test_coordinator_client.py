"""The coordinator client's contract with the log's exactly-once table: one
request in flight per client, ids increasing in the order they are sent."""
from __future__ import annotations

import asyncio
import random
import time

from schedlab.schedulers.consensus.messages import LogEntry
from schedlab.schedulers.consensus.statemachine import ExactlyOnce, KVStateMachine
from schedlab.actors.coordinator.client import CoordinatorClient


class FakeRuntime:
    """Just what the client uses of a Runtime: calls go to ``replica``."""

    def __init__(self, replica: object) -> None:
        self.replica = replica

    def call(self, handle: object, method: str, *args: object) -> object:
        return self.replica(handle, method, *args)

    def lookup(self, name: str) -> object:
        return object()

    def wall_clock(self) -> float:
        return time.monotonic()

    def stamp(self) -> int:
        return 1000

    async def sleep_wall(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def test_concurrent_submits_are_sent_one_at_a_time() -> None:
    """A restarted host's rejoin and its first poll share one client. If
    both were in flight, the later id could apply first and the earlier
    request come back refused or with no result; the client queues them."""
    sm = ExactlyOnce(KVStateMachine())
    rng = random.Random(4)
    in_flight = 0
    most = 0
    index = 0

    async def replica(_handle: object, method: str, client: str, rid: int, command: tuple) -> tuple:
        nonlocal in_flight, most, index
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(rng.random() * 0.01)  # replies arrive in any order
        index += 1
        result, duplicate = sm.apply(LogEntry(1, index, command, client, rid))
        in_flight -= 1
        return (not duplicate, result, None if not duplicate else "stale", 0)

    client = CoordinatorClient("machine-host-3", 1, FakeRuntime(replica))

    async def main() -> list:
        return await asyncio.gather(*(client.submit(("incr", "x")) for _ in range(8)))

    results = asyncio.run(main())
    assert most == 1
    assert sorted(results) == list(range(1, 9))  # each applied once, none refused
    rids = [a.request_id for a in client.acks]
    assert rids == sorted(rids) and len(set(rids)) == 8
