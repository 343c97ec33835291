"""Driver-side handle on an active/standby set of ResourceManagers
(``[yarn] rms`` > 1): spawn, find the active one, kill, restart (a
restarted RM comes back as a standby, with empty books)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from schedlab.actors import engines
from schedlab.actors.archs.yarn.rm import ResourceManager, RMShellConfig
from schedlab.actors.coordinator.replica_set import ReplicaSet


class RMSet(ReplicaSet):
    def __init__(self, cfg: RMShellConfig, rt: Any, metrics: Any, flush: float, on_spawn: Callable[[Any], Any]) -> None:
        super().__init__()
        self.cfg = cfg
        self.rt = rt
        self.metrics = metrics
        self.flush = flush
        self.on_spawn = on_spawn

    def spawn(self, i: int) -> Any:
        cfg = dataclasses.replace(self.cfg, index=i)
        h = engines.current().spawn(ResourceManager, cfg.name, self.rt.namespace, self.rt, cfg, self.metrics, self.flush)
        self.on_spawn(h)
        self.live[i] = h
        return h

    def spawn_all(self) -> list[Any]:
        return [self.spawn(i) for i in range(self.cfg.spec.rms)]

    def lead(self) -> tuple[int, int] | None:
        st = self.leading_status()
        return (int(st["index"]), int(st["epoch"])) if st else None

    def restart(self, i: int) -> None:
        self.kill(i)
        self.starting[i] = engines.current().call(self.spawn(i), "start", self.epoch)
