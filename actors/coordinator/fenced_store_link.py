"""A master's link to its records in the fenced store on the coordinator
group (``schedulers.consensus.fenced_store``): the records it keeps while
active, written in the background, and the read a standby makes when it
takes over.

Writes are asynchronous (as real masters' state-save threads are): a record changed in the last write interval before
the active master dies is lost with it, and its successor acts on the
record before. Every write is fenced by the writer's lease epoch in the
replicated machine itself, so a deposed master's late write is refused.

Its own coordinator client, not the lease campaign's: a write stuck behind
a slow coordinator must never hold up the renewal that keeps it active.

The mirror is the master's own (what it keeps of its records): anything
with ``take_dirty() -> {key: record or None}`` and ``put_back(updates)``,
made by ``make_mirror(loaded)`` from the records read (an empty dict for
the first holder).
"""
from __future__ import annotations

from typing import Any, Callable

from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.engines.runtime import Runtime


class FencedStoreLink:
    def __init__(self, name: str, replicas: int, rt: Runtime, deadline_wall_s: float,
                 make_mirror: Callable[[dict[int, list]], Any]) -> None:
        self.client = CoordinatorClient(f"{name}-store", replicas, rt)
        self.deadline = deadline_wall_s
        self.make_mirror = make_mirror
        self.mirror: Any = None  # None: not active, or its read not back yet
        self.epoch = 0

    def begin(self, epoch: int, fresh: bool) -> None:
        """Became the active master with this lease epoch; ``fresh`` (the
        first holder) starts from an empty store, any later one must ``load``."""
        self.epoch = epoch
        self.mirror = self.make_mirror({}) if fresh else None

    def end(self) -> None:
        self.mirror = None

    async def load(self, epoch: int) -> bool | None:
        """Read every record, through the log. True: loaded; None: not now
        (no coordinator leader within the deadline: try again); False:
        ``epoch`` is no longer the lease's (give up, another is active)."""
        try:
            got = await self.client.submit(("load", epoch), deadline=self.deadline)
        except Exception:
            return None
        if got is None:
            return False
        if self.epoch == epoch:
            self.mirror = self.make_mirror({int(k): r for k, r in got})
        return True

    async def write(self) -> None:
        """Write the records changed since the last write; kept for the next
        one if this one did not land, dropped if the store fenced us off."""
        mirror, epoch = self.mirror, self.epoch
        if mirror is None:
            return
        updates = mirror.take_dirty()
        if not updates:
            return
        try:
            ok = await self.client.submit(("put", epoch, list(updates.items())), deadline=self.deadline)
        except Exception:
            ok = None
        if ok is None and self.mirror is mirror:
            mirror.put_back(updates)
