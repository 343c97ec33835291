"""Driver-side handle on the Mesos masters: spawn, find the leader, kill,
restart (a restarted master comes back as a standby with empty state)."""
from __future__ import annotations

from typing import Any, Callable

from schedlab.actors import engines
from schedlab.actors.archs.mesos.link import master_name
from schedlab.actors.archs.mesos.master import MesosMaster
from schedlab.schedulers.archs.mesos.master_state import MasterConfig
from schedlab.actors.coordinator.replica_set import LeasedSet


class MasterSet(LeasedSet):
    def __init__(self, cfg: MasterConfig, rt: Any, metrics: Any, flush: float, on_spawn: Callable[[Any], Any]) -> None:
        super().__init__(cfg.masters, on_spawn)
        self.cfg = cfg
        self.rt = rt
        self.metrics = metrics
        self.flush = flush

    def make(self, i: int) -> Any:
        return engines.current().spawn(MesosMaster, master_name(i), self.rt.namespace, rt=self.rt, index=i, cfg=self.cfg,
                                       metrics=self.metrics, flush_interval=self.flush)
