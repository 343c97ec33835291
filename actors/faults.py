"""The scenario's fault timeline, executed by the driver during a run.

Each fault is logged as a ``fault`` event; killing the current leader starts
a failover record, closed when the driver sees a new leader (``failover``
event). When the first write succeeded after the kill is read from the
clients' ``coord_ack`` events by the summary.
"""
from __future__ import annotations

from typing import Any

from actors.coordinator_group import CoordinatorGroup
from actors.events import EventLog
from schedulers.scenario import FaultSpec


class FaultTimeline:
    def __init__(self, faults: tuple[FaultSpec, ...], group: CoordinatorGroup | None, log: EventLog) -> None:
        self.pending = list(faults)
        self.group = group
        self.log = log
        self.watching: list[dict[str, Any]] = []  # failovers awaiting a new leader

    def step(self, now: float) -> None:
        while self.pending and self.pending[0].at <= now:
            self._inject(self.pending.pop(0))
        self._watch()

    def _inject(self, f: FaultSpec) -> None:
        assert self.group is not None  # validation: coordinator faults need replicas
        lead = self.group.leader()
        if f.action == "kill_leader":
            if lead is None:
                self.log.emit("fault", at_s=f.at, kind=f.action, target=None, skipped="no leader at that moment")
                return
            target = lead["replica"]
        else:
            target = int(f.target.rsplit("-", 1)[1])
        name = f"coordinator-{target}"
        if f.action == "restart":
            self.group.restart(target)
            self.log.emit("fault", at_s=f.at, kind=f.action, target=name)
            return
        was_leader = lead is not None and lead["replica"] == target
        self.group.kill(target)
        if f.restart_after is not None:
            self.pending.append(FaultSpec(f.at + f.restart_after, "restart", name))
            self.pending.sort(key=lambda x: x.at)
        self.log.emit("fault", at_s=f.at, kind=f.action, target=name, was_leader=was_leader,
                      term=lead["term"] if lead else None)
        if was_leader:
            self.watching.append({"target": name, "term": lead["term"]})

    def _watch(self) -> None:
        if not self.watching or self.group is None:
            return
        lead = self.group.leader()
        if lead is None:
            return
        for w in list(self.watching):
            if lead["term"] > w["term"]:
                self.log.emit("failover", role="coordinator", old_leader=w["target"], new_leader=f"coordinator-{lead['replica']}", term=lead["term"])
                self.watching.remove(w)
