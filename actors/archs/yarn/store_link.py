"""An RM's link to the RM state store (``schedulers.archs.yarn.state_store``)
on the coordinator group: the records it keeps while active, written in
the background, and the read a standby makes when it takes over.

Writes are asynchronous (as Hadoop's store writes go through the RM's
state-store dispatcher): a record changed in the last write interval before
the active RM dies is lost with it, and its successor acts on the record
before. Every write is fenced by the writer's lease epoch in the replicated
machine itself, so a deposed RM's late write is refused, not applied.

Its own coordinator client, not the lease campaign's: a write stuck behind
a slow coordinator must never hold up the renewal that keeps the RM active.
"""
from __future__ import annotations

from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.yarn.state_store import StoredApp, StoreMirror


class StoreLink:
    def __init__(self, name: str, replicas: int, rt: Runtime, deadline_wall_s: float) -> None:
        self.client = CoordinatorClient(f"{name}-store", replicas, rt)
        self.deadline = deadline_wall_s
        self.mirror: StoreMirror | None = None  # None: not active, or its read not back yet
        self.epoch = 0

    def begin(self, epoch: int, fresh: bool) -> None:
        """Became the active RM with this lease epoch; ``fresh`` (the first
        holder) starts from an empty store, any later one must ``load``."""
        self.epoch = epoch
        self.mirror = StoreMirror() if fresh else None

    def end(self) -> None:
        self.mirror = None

    def fold(self, e: dict) -> None:
        if self.mirror is not None:
            self.mirror.fold(e)

    def mark_scheduled(self, app: int) -> None:
        if self.mirror is not None:
            self.mirror.mark_scheduled(app)

    def record(self, app: int) -> StoredApp | None:
        return None if self.mirror is None else self.mirror.apps.get(app)

    async def load(self, epoch: int) -> bool | None:
        """Read every record, through the log. True: loaded; None: not now
        (no coordinator leader within the deadline: try again); False:
        ``epoch`` is no longer the lease's (give up, another RM is active)."""
        try:
            got = await self.client.submit(("load", epoch), deadline=self.deadline)
        except Exception:
            return None
        if got is None:
            return False
        if self.epoch == epoch:
            self.mirror = StoreMirror({int(a): StoredApp.from_wire(r) for a, r in got})
        return True

    async def write(self) -> None:
        """Write the records changed since the last write; kept for the next
        one if this one did not land, dropped if the store fenced us off."""
        mirror, epoch = self.mirror, self.epoch
        if mirror is None or not mirror.dirty:
            return
        updates = mirror.take_dirty()
        try:
            ok = await self.client.submit(("put", epoch, list(updates.items())), deadline=self.deadline)
        except Exception:
            ok = None
        if ok is None and self.mirror is mirror:
            mirror.put_back(updates)
