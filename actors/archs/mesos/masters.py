"""Driver-side handle on the Mesos masters: spawn, find the leader, kill,
restart (a restarted master comes back as a standby with empty state)."""
from __future__ import annotations

from typing import Any, Callable

from schedlab.actors import engines
from schedlab.actors.archs.mesos.link import master_name
from schedlab.actors.archs.mesos.master import MesosMaster
from schedlab.schedulers.archs.mesos.master_state import MasterConfig
from schedlab.actors.coordinator.replica_set import ReplicaSet


class MasterSet(ReplicaSet):
    def __init__(self, cfg: MasterConfig, rt: Any, metrics: Any, flush: float, on_spawn: Callable[[Any], Any]) -> None:
        super().__init__()
        self.cfg = cfg
        self.rt = rt
        self.metrics = metrics
        self.flush = flush
        self.on_spawn = on_spawn

    def spawn(self, i: int) -> Any:
        h = engines.current().spawn(MesosMaster, master_name(i), self.rt.namespace, rt=self.rt, index=i, cfg=self.cfg,
                             metrics=self.metrics, flush_interval=self.flush)
        self.on_spawn(h)
        self.live[i] = h
        return h

    def spawn_all(self) -> list[Any]:
        return [self.spawn(i) for i in range(self.cfg.masters)]

    def leader(self) -> dict | None:
        """The live master that leads with the highest epoch, if any."""
        return self.leading_status()

    def lead(self) -> tuple[int, int] | None:
        lead = self.leader()
        return (int(lead["index"]), int(lead["epoch"])) if lead else None

    def restart(self, i: int) -> None:
        self.kill(i)
        self.starting[i] = engines.current().call(self.spawn(i), "start", self.epoch)
