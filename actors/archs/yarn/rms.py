"""Driver-side handle on an active/standby set of ResourceManagers
(``[yarn] rms`` > 1): spawn, find the active one, kill, restart (a
restarted RM comes back as a standby, with empty books)."""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

from schedlab.actors import engines
from schedlab.actors.archs.yarn.rm import ResourceManager, RMShellConfig
from schedlab.actors.coordinator.replica_set import LeasedSet


class RMSet(LeasedSet):
    def __init__(self, cfg: RMShellConfig, rt: Any, metrics: Any, flush: float, on_spawn: Callable[[Any], Any]) -> None:
        super().__init__(cfg.spec.rms, on_spawn)
        self.cfg = cfg
        self.rt = rt
        self.metrics = metrics
        self.flush = flush

    def make(self, i: int) -> Any:
        cfg = dataclasses.replace(self.cfg, index=i)
        return engines.current().spawn(ResourceManager, cfg.name, self.rt.namespace, self.rt, cfg, self.metrics, self.flush)
