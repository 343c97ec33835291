"""The scenario's fault timeline, executed by the driver during a run.

Each fault is logged as a ``fault`` event; killing the current leader starts
a failover record, closed when the driver sees a new leader (``failover``
event). When the first write succeeded after the kill is read from the
clients' ``coord_ack`` events by the summary.
"""
from __future__ import annotations

from typing import Any, Callable

from actors import runtime
from actors.coordinator_group import CoordinatorGroup
from actors.events import EventLog
from actors.mesos_masters import MasterSet
from schedulers.scenario import FaultSpec


class FaultTimeline:
    def __init__(self, faults: tuple[FaultSpec, ...], group: CoordinatorGroup | None, log: EventLog,
                 masters: MasterSet | None = None, hosts: dict[str, Any] | None = None) -> None:
        self.hosts = hosts  # machine-host name -> handle
        self.pending = list(faults)
        self.group = group
        self.masters = masters
        self.log = log
        self.watching: list[dict[str, Any]] = []  # failovers awaiting a new leader

    def step(self, now: float) -> None:
        while self.pending and self.pending[0].at <= now:
            self._inject(self.pending.pop(0))
        self._watch()

    def _role(self, f: FaultSpec) -> tuple[str, Any, Callable[[], tuple[int, int] | None]]:
        """The role a fault hits, its driver-side controller (kill/restart by
        index) and how to find its current leader as (index, term)."""
        if f.action == "kill_master" or f.target.startswith("master-"):
            assert self.masters is not None  # validation: master faults need architecture mesos
            ms = self.masters

            def master() -> tuple[int, int] | None:
                lead = ms.leader()
                return (int(lead["index"]), int(lead["epoch"])) if lead else None
            return "master", ms, master
        assert self.group is not None  # validation: coordinator faults need replicas
        group = self.group

        def coordinator() -> tuple[int, int] | None:
            lead = group.leader()
            return (int(lead["replica"]), int(lead["term"])) if lead else None
        return "coordinator", group, coordinator

    def _inject(self, f: FaultSpec) -> None:
        if f.target.startswith("machine-host-"):
            # A machine failure: the host actor and everything on its machines die.
            assert self.hosts is not None
            h = self.hosts.pop(f.target, None)
            if h is not None:
                runtime.kill_all([h])
            self.log.emit("fault", at_s=f.at, kind=f.action, target=f.target, role="machine")
            return
        role, ctl, leader = self._role(f)
        lead = leader()
        if f.action in ("kill_leader", "kill_master"):
            if lead is None:
                self.log.emit("fault", at_s=f.at, kind=f.action, target=None, role=role, skipped="no leader at that moment")
                return
            target = lead[0]
        else:
            target = int(f.target.rsplit("-", 1)[1])
        name = f"{role}-{target}"
        if f.action == "restart":
            ctl.restart(target)
            self.log.emit("fault", at_s=f.at, kind=f.action, target=name, role=role)
            return
        was_leader = lead is not None and lead[0] == target
        ctl.kill(target)
        if f.restart_after is not None:
            self.pending.append(FaultSpec(f.at + f.restart_after, "restart", name))
            self.pending.sort(key=lambda x: x.at)
        self.log.emit("fault", at_s=f.at, kind=f.action, target=name, was_leader=was_leader, role=role,
                      term=lead[1] if lead else None)
        if was_leader:
            assert lead is not None
            self.watching.append({"target": name, "term": lead[1], "role": role, "leader": leader})

    def _watch(self) -> None:
        """Close a failover once its role has a leader with a newer term
        (coordinator) or epoch (master)."""
        seen: dict[str, tuple[int, int] | None] = {}
        for w in list(self.watching):
            if w["role"] not in seen:
                seen[w["role"]] = w["leader"]()
            lead = seen[w["role"]]
            if lead is not None and lead[1] > w["term"]:
                self.log.emit("failover", role=w["role"], old_leader=w["target"], new_leader=f"{w['role']}-{lead[0]}", term=lead[1])
                self.watching.remove(w)
