"""The actor shell's lifecycle contract (actors/common/shell.py), in plain
asyncio: a message that reaches an actor before the driver starts it (a
peer that found a restarted actor by name) waits for ``start``, so it never
reads the clock before the run's epoch is set."""
from __future__ import annotations

import asyncio

from schedlab.actors.common.shell import ActorShell
from schedlab.actors.engines.clock import Clock
from schedlab.actors.engines.link_faults import LinkFaults


class WallRuntime:
    """Enough of the Runtime protocol for a shell: a real clock at scale 1."""

    scale = 1.0

    def __init__(self) -> None:
        self.clock = Clock(scale=1.0)
        self.links = LinkFaults()

    def set_epoch(self, epoch: float) -> None:
        self.clock.epoch = epoch

    def now(self) -> float:
        return self.clock.now()


class Echo(ActorShell):
    BEFORE_START = frozenset({"configure"})

    async def stamp(self) -> float:
        return self.rt.now()

    async def configure(self) -> str:
        return "configured"


def test_a_message_before_start_waits_for_the_epoch_and_setup_messages_do_not() -> None:
    async def scenario() -> None:
        import time

        actor = Echo(WallRuntime(), "echo", None, 1.0)
        early = asyncio.ensure_future(actor.stamp())
        assert await asyncio.wait_for(actor.configure(), 5) == "configured"
        await asyncio.sleep(0.05)
        assert not early.done()  # still waiting: its clock has no epoch yet
        await actor.start(time.time())
        stamped = await asyncio.wait_for(early, 5)
        assert 0.0 <= stamped < 5.0  # seconds since the epoch, not since 1970
        actor.running = False
        for task in actor._tasks:
            task.cancel()

    asyncio.run(scenario())
