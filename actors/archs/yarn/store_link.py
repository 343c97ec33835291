"""An RM's link to the RM state store (``schedulers.archs.yarn.state_store``)
on the coordinator group: the generic fenced-store link
(``actors.coordinator.fenced_store_link``) with YARN's mirror, which folds
the RM core's events into application records."""
from __future__ import annotations

from schedlab.actors.coordinator.fenced_store_link import FencedStoreLink
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.yarn.state_store import StoredApp, StoreMirror


def _mirror(loaded: dict[int, list]) -> StoreMirror:
    return StoreMirror({a: StoredApp.from_wire(r) for a, r in loaded.items()})


class StoreLink(FencedStoreLink):
    def __init__(self, name: str, replicas: int, rt: Runtime, deadline_wall_s: float) -> None:
        super().__init__(name, replicas, rt, deadline_wall_s, _mirror)

    def fold(self, e: dict) -> None:
        if self.mirror is not None:
            self.mirror.fold(e)

    def mark_scheduled(self, app: int) -> None:
        if self.mirror is not None:
            self.mirror.mark_scheduled(app)

    def record(self, app: int) -> StoredApp | None:
        return None if self.mirror is None else self.mirror.apps.get(app)
