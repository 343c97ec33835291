"""The submitter's delivery around a scheduler restart (pure asyncio, no Ray)."""
from __future__ import annotations

import asyncio
import json
from typing import Any

from schedlab.actors.engines.link_faults import LinkFaults
from schedlab.actors.common.submitter import Submitter
from schedlab.schedulers.events.shared import JOB_PENDING


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


class PausedRuntime(FakeRuntime):
    """``paused`` answers only when ``wakes`` is set (a paused or slowed
    scheduler); if ``dies`` is set as well, it answers with an error (killed
    while paused)."""

    def __init__(self) -> None:
        super().__init__()
        self.wakes = asyncio.Event()
        self.dies = False

    async def _call(self, handle: str, method: str, args: tuple) -> Any:
        if handle == "paused":
            await self.wakes.wait()
            if self.dies:
                raise RuntimeError("the actor died")
        return await super()._call(handle, method, args)


def _pending(sub: Submitter) -> dict[int, dict]:
    lines = [json.loads(line) for line in sub.log.drain()]
    return {e["job_id"]: e for e in lines if e["event"] == JOB_PENDING}


def _paused_submitter(rt: PausedRuntime) -> Submitter:
    sub = Submitter(rt, [], {"batch": [("s", "paused")]}, metrics=None, flush_interval=0.01)
    sub.DELIVERY_WAIT_S = 0.01  # type: ignore[misc]  # the instance's patience, shortened for the test
    job = {"job_id": 78, "job_class": "batch", "durations": [1.0, 1.0]}
    sub.routed["s"] = [job]
    sub.undelivered["s"] = [job]
    return sub


def test_a_delivery_unanswered_when_the_submitter_stops_is_reported_pending() -> None:
    """Job 78 is sent to a paused scheduler just before the run ends; the
    submitter stops waiting for the answer (the scheduler takes it when it
    wakes). The driver stops the submitter, then the schedulers: a paused
    scheduler may take the driver's stop before the submitter's batch (no
    order between two callers), report its queue without job 78 and take
    the batch afterwards. Unless the submitter reports what it has sent but
    not seen arrive, job 78 has no fate (lost_jobs)."""

    async def main() -> dict[int, dict]:
        rt = PausedRuntime()
        sub = _paused_submitter(rt)
        await asyncio.wait_for(sub._deliver(), 5.0)  # gives up on the answer after DELIVERY_WAIT_S
        assert not sub.undelivered.get("s")  # the batch left: not sent again
        await sub.on_stop()
        return _pending(sub)

    got = asyncio.run(main())
    assert set(got) == {78} and got[78]["scheduler"] == "s" and got[78]["unplaced"] == 2 and got[78]["in_flight"]


def test_a_late_answer_delivers_the_batch_once() -> None:
    """The paused scheduler wakes and takes the batch before the run ends:
    it reports the job itself; the request was not withdrawn when the
    submitter stopped waiting, and is neither sent again nor reported."""

    async def main() -> tuple[list, dict[int, dict]]:
        rt = PausedRuntime()
        sub = _paused_submitter(rt)
        await asyncio.wait_for(sub._deliver(), 5.0)
        rt.wakes.set()
        for _ in range(100):  # bounded: the answer comes within a few loop turns
            if rt.sent:
                break
            await asyncio.sleep(0.001)
        await asyncio.sleep(0)  # the answer settles
        await sub._deliver()
        await sub.on_stop()
        return rt.sent, _pending(sub)

    sent, pending = asyncio.run(main())
    assert sent == [("paused", "submit", [78])] and pending == {}


def test_a_scheduler_killed_while_paused_keeps_the_batch_for_its_successor() -> None:
    """The answer that comes late is an error (killed while paused, not yet
    restarted): the batch waits for the next delivery, as one that failed
    at once does, and is reported pending if the run ends first."""

    async def main() -> tuple[list, dict[int, dict]]:
        rt = PausedRuntime()
        sub = _paused_submitter(rt)
        await asyncio.wait_for(sub._deliver(), 5.0)
        rt.dies = True
        rt.wakes.set()
        for _ in range(100):
            if sub.undelivered.get("s"):
                break
            await asyncio.sleep(0.001)
        kept = [j["job_id"] for j in sub.undelivered.get("s", [])]
        await sub.on_stop()
        return kept, _pending(sub)

    kept, pending = asyncio.run(main())
    assert kept == [78] and set(pending) == {78} and pending[78]["orphaned"]


def test_jobs_orphaned_by_a_restart_that_never_started_are_reported_pending() -> None:
    """A scheduler killed and restarted just before the run ends: the new
    incarnation's start is still queued, so it answers nothing (its calls
    wait for the start) and, stopped before it started, reports nothing.
    The driver marks it orphaned; the submitter sends the routed jobs its
    way and stops before any answer: they are still its to report."""

    async def main() -> dict[int, dict]:
        rt = PausedRuntime()
        sub = _paused_submitter(rt)
        job = sub.routed["s"][0]
        sub.undelivered.clear()
        sub.handles["s"] = "old"
        sub._started.set()  # as if the driver had started it (its messages pass the start gate)
        recovery = asyncio.ensure_future(sub.reroute("s", "paused", recover=True))  # waits for the start
        await asyncio.sleep(0)
        assert sub.incarnation["s"] == 1 and not recovery.done()
        await sub.orphaned(["s"])
        assert sub.undelivered["s"] == [job]
        await asyncio.wait_for(sub._deliver(), 5.0)
        await sub.on_stop()
        recovery.cancel()
        return _pending(sub)

    got = asyncio.run(main())
    assert set(got) == {78} and got[78]["in_flight"]
