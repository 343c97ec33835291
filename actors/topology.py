"""What a run starts, between the generic driver (``actors.run``) and an
architecture's ``build``.

run.py computes a ``Plan`` (cell, jobs, prefill) and starts what every run
has: metrics, the chaos inbox, machine hosts, the submitter. An
architecture's ``build(Build)`` starts the rest and returns a ``Topology``:
the endpoint machine hosts poll, where the submitter routes each job class,
the controllers of roles that elect leaders, and what to start and stop
around the hosts. run.py does everything else the same way for every
architecture.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from schedlab.actors.common.members import Members
from schedlab.actors.coordinator.group import CoordinatorGroup
from schedlab.actors.coordinator.replica import CoordinatorReplica
from schedlab.actors.coordinator.replica_set import ReplicaSet
from schedlab.actors import engines
from schedlab.schedulers.model.cluster import Cell
from schedlab.schedulers.model.workload import Prefill
from schedlab.schedulers.scenario.spec import Scenario


@dataclass
class Plan:
    """What a run will start, computed before any actor exists."""

    scenario: Scenario
    cell: Cell
    jobs: list[dict]
    prefill: Prefill
    # A replayed trace's record of its real scheduling (actors.analysis.trace_reference; None: none).
    reference: dict | None = None


@dataclass
class Build:
    """What an architecture's ``build`` gets: the plan, where the run writes,
    the run's Runtime object and metrics actor, the register to spawn its
    actors through (``members.spawn(role, cls, name, ...)``), and the
    placement policies chosen for its deciders (by decider name)."""

    plan: Plan
    out: Path
    namespace: str
    rt: Any
    metrics: Any
    members: Members
    policies: dict[str, Callable]

    @property
    def scenario(self) -> Scenario:
        return self.plan.scenario

    def coordinator_group(self, factory: Any, sample: float | None, replica_cls: type = CoordinatorReplica,
                          extra: dict[str, Any] | None = None) -> CoordinatorGroup:
        """The run's coordinator replicas ([coordinator] replicas), running
        ``factory``'s state machine; ``replica_cls`` / ``extra``: a replica
        subclass that also does the architecture's work, and its keyword arguments."""
        sc = self.scenario
        # A run starts from an empty log: a coordinator directory left by an
        # earlier run in the same OUT would replay that run's commits.
        shutil.rmtree(self.out / "coordinator", ignore_errors=True)
        return CoordinatorGroup(sc.coordinator, self.namespace, self.out / "coordinator", factory, self.rt, self.metrics,
                                sc.seed, sample, self.members.on_spawn, replica_cls=replica_cls, extra=extra)


@dataclass
class Topology:
    """What an architecture started, for the driver.

    ``cell``: the endpoint recipe machine hosts poll (``actors.common.
    cell_endpoint``). ``core``: its control-plane actors (the substrate's
    round trip is measured against ``core[0]``). ``group``: the coordinator
    group, if it runs one (started and awaited before the rest).
    ``schedulers`` / ``names`` / ``routes``: who decides, the names the
    summary lists, and job class -> [(name, handle)] for the submitter.
    ``controllers``: role -> controller of a numbered role that elects a
    leader besides the coordinator (chaos kills and restarts through it).
    ``start_with_hosts``: started with the hosts. ``quiesce_before_hosts``:
    the group's replicas stop deciding before the hosts stop (a placement
    after that would never launch). ``await_admission``: the submitter
    delivers to a stateless front end (see Submitter). ``stop_also``: its
    actors outside the controllers, stopped with them after the hosts
    (when it has controllers or a group). ``info``: extra
    fields for the summary's info (e.g. the frameworks' names).
    ``heartbeat``: emulated s between a machine host's exchanges when it
    has nothing to exchange, for an architecture whose keepers ring a host
    when work waits for it (``actors.common.doorbell``); None: they do
    not, and hosts poll every batch interval."""

    cell: Any
    core: list[Any]
    group: CoordinatorGroup | None
    schedulers: list[Any] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    routes: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    holders: dict[str, str] = field(default_factory=dict)
    start_with_hosts: list[Any] = field(default_factory=list)
    controllers: dict[str, ReplicaSet] = field(default_factory=dict)
    quiesce_before_hosts: bool = False
    await_admission: bool = False
    stop_also: list[Any] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    heartbeat: float | None = None

    def route(self, job_classes: tuple[str, ...] | list[str], name: str, handle: Any, holder: str | None = None) -> None:
        """Send jobs of these classes to ``name`` (with others of the same
        classes: by job id). ``holder``: the member actor behind the route
        when it is not ``name`` itself (an active/standby set's route is held
        by whichever member is active; it moves with the submitter's
        ``reroute``), so a run ending while its holder is dead reports the
        route's jobs pending."""
        self.schedulers.append(handle)
        self.names.append(name)
        self.holders[name] = holder or name
        for cls in job_classes:
            self.routes.setdefault(cls, []).append((name, handle))

    def all_controllers(self) -> dict[str, ReplicaSet]:
        return {**({"coordinator": self.group} if self.group is not None else {}), **self.controllers}

    def before_hosts_stop(self) -> None:
        """Before the machine hosts stop: every control-plane actor stops
        judging their silence, and (``quiesce_before_hosts``) the group stops
        placing: a placement made after the hosts stopped would never launch."""
        keepers = {engines.current().actor_key(h): h for c in self.all_controllers().values() for h in c.live.values()}
        keepers.update((engines.current().actor_key(h), h) for h in self.core if engines.current().actor_key(h) not in keepers)
        engines.current().outcomes([engines.current().call(h, "hosts_stopping") for h in keepers.values()], timeout=10)
        if self.quiesce_before_hosts and self.group is not None:
            engines.current().gather([engines.current().call(h, "quiesce") for h in self.group.live.values()], timeout=30)

    def stop_after_hosts(self) -> list[Any]:
        """The architecture's own actors still alive at the end (faults may
        have killed and restarted some), stopped after the machine hosts;
        the coordinator group stops on its own, after converging."""
        others = [h for c in self.controllers.values() for h in c.live.values()]
        return [*others, *self.stop_also] if others or self.group is not None else self.core
