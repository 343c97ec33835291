"""Shared shell for every emulation actor: epoch, event batching, stop."""
from __future__ import annotations

import asyncio
from typing import Any

from actors.events import EventLog
from actors.runtime import Runtime


class ActorShell:
    """Owns the actor's event buffer and its background loops.

    Contract: ``start(epoch)`` once; ``stop()`` cancels loops, flushes every
    buffered event to the collector and only then returns, so when the driver
    has every stop reply, events.jsonl is complete."""

    def __init__(self, rt: Runtime, name: str, metrics: Any, flush_interval: float) -> None:
        self.rt = rt
        self.name = name
        self.metrics = metrics
        self.flush_interval = flush_interval
        self.log = EventLog(name, rt.now)
        self._tasks: list[asyncio.Task] = []
        self.running = False

    async def ready(self) -> str:
        return self.name

    async def ping(self) -> None:
        return None

    async def start(self, epoch: float) -> None:
        self.rt.set_epoch(epoch)  # type: ignore[attr-defined]
        self.running = True
        self.spawn_loop(self._flush_loop())
        await self.on_start()

    def spawn_loop(self, coro: Any) -> None:
        self._tasks.append(asyncio.get_running_loop().create_task(coro))

    async def on_start(self) -> None:
        """Subclasses start their own loops here."""

    async def on_stop(self) -> Any:
        """Subclasses settle their state here; the return value goes to the driver."""
        return None

    async def flush(self, final: bool = False) -> None:
        """Send what is buffered; subclasses extend with their own batches and,
        when ``final``, wait for their deliveries before returning."""
        lines = self.log.drain()
        if lines and self.metrics is not None:
            await self.rt.call(self.metrics, "record", lines)

    async def _flush_loop(self) -> None:
        while self.running:
            await asyncio.sleep(self.flush_interval)
            await self.flush()

    async def stop(self) -> Any:
        self.running = False
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        result = await self.on_stop()
        await self.flush(final=True)
        return result
