"""The submitter's delivery around a scheduler restart (pure asyncio, no Ray)."""
from __future__ import annotations

import asyncio
from typing import Any

from schedlab.actors.engines.link_faults import LinkFaults
from schedlab.actors.common.submitter import Submitter


class Clock:
    def wall(self, emulated: float) -> float:
        return emulated


class FakeRuntime:
    """The old incarnation's submit fails only when told to (it died with the
    request in flight); the new one records what it is sent."""

    def __init__(self) -> None:
        self.clock = Clock()
        self.links = LinkFaults()
        self.old_dies = asyncio.Event()
        self.sent: list[tuple[str, str, list]] = []

    def now(self) -> float:
        return 0.0

    def wall(self, emulated: float) -> float:
        return self.clock.wall(emulated)

    async def _call(self, handle: str, method: str, args: tuple) -> Any:
        if handle == "old":
            await self.old_dies.wait()
            raise RuntimeError("the actor died")
        self.sent.append((handle, method, [j["job_id"] for j in args[0]]))
        return None

    def call(self, handle: str, method: str, *args: Any) -> Any:
        return asyncio.ensure_future(self._call(handle, method, args))


def test_a_delivery_lost_with_the_old_incarnation_is_not_resent_after_recovery() -> None:
    """Job 7 is on its way to scheduler-batch-1 when it dies; its successor
    recovers every job routed to it (7 included); then the old delivery
    fails. Re-queueing it would hand job 7 to the successor twice, and a job
    recovered and finished would be scheduled again (a double placement)."""

    async def main() -> list:
        rt = FakeRuntime()
        sub = Submitter(rt, [], {"batch": [("scheduler-batch-1", "old")]}, metrics=None, flush_interval=0.01)
        sub._started.set()  # as if the driver had started it (its loops are driven by hand here)
        job = {"job_id": 7, "job_class": "batch", "durations": [1.0]}
        sub.routed["scheduler-batch-1"] = [job]
        sub.undelivered["scheduler-batch-1"] = [job]
        delivery = asyncio.ensure_future(sub._deliver())
        await asyncio.sleep(0)  # the batch has left for the old incarnation
        await sub.reroute("scheduler-batch-1", "new", recover=True)
        rt.old_dies.set()
        await delivery
        await sub._deliver()
        return rt.sent

    assert asyncio.run(main()) == [("new", "recover", [7])]


def test_a_delivery_to_a_dead_scheduler_waits_for_its_successor() -> None:
    """Without a recovery in between, a failed batch is kept and delivered later."""

    async def main() -> tuple[list, list]:
        rt = FakeRuntime()
        sub = Submitter(rt, [], {"batch": [("s", "old")]}, metrics=None, flush_interval=0.01)
        job = {"job_id": 3, "job_class": "batch", "durations": [1.0]}
        sub.undelivered["s"] = [job]
        rt.old_dies.set()
        await sub._deliver()
        kept = [j["job_id"] for j in sub.undelivered["s"]]
        sub.handles["s"] = "new"
        await sub._deliver()
        return kept, rt.sent

    assert asyncio.run(main()) == ([3], [("new", "submit", [3])])
