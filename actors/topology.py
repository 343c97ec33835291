"""What each architecture starts besides machine hosts, submitter and metrics.

``build_omega`` and ``build_mesos`` spawn the architecture's own actors and
return a ``Topology``: the endpoint the machine hosts poll, the schedulers
(or frameworks) the submitter routes jobs to, and what to start and stop
around the hosts. run.py does the rest the same way for every architecture.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from schedlab.actors.engines import ray_engine
from schedlab.actors.common.cell_endpoint import DirectCell, ReplicatedCell
from schedlab.schedulers.archs.omega.cell_machine import CellMachineFactory
from schedlab.actors.archs.borg.frontend import BorgFrontend, BorgletEndpoint
from schedlab.schedulers.archs.borg.cell_machine import BorgMachineFactory
from schedlab.actors.archs.borg.borgmaster import BorgmasterReplica, BorgParams
from schedlab.actors.archs.omega.cell_replica import CellReplica
from schedlab.actors.archs.omega.cellstate import CellState
from schedlab.actors.coordinator.group import CoordinatorGroup
from schedlab.schedulers.consensus.lease import LeaseMachineFactory
from schedlab.actors.archs.mesos.framework import MesosFramework
from schedlab.actors.archs.mesos.link import AgentEndpoint, MasterLink
from schedlab.actors.archs.mesos.master import MasterConfig
from schedlab.actors.common.members import Members
from schedlab.actors.archs.mesos.masters import MasterSet
from schedlab.actors.archs.omega.scheduler import OmegaScheduler
from schedlab.schedulers.archs.borg.placement import PlacementParams
from schedlab.schedulers.model.cluster import Cell, host_count
from schedlab.schedulers.archs.mesos.allocator import get_allocation_policy
from schedlab.schedulers.archs.mesos.framework import FrameworkParams
from schedlab.schedulers.archs.omega.scheduler import SchedulerParams
from schedlab.schedulers.scenario.parse import Scenario
from schedlab.schedulers.model.workload import Prefill

Spawned = Callable[[Any], Any]


@dataclass
class Plan:
    """What a run will start, computed before any actor exists."""

    scenario: Scenario
    cell: Cell
    jobs: list[dict]
    prefill: Prefill


@dataclass
class Topology:
    cell: Any  # the endpoint recipe machine hosts poll
    core: list[Any]  # the substrate RTT is measured against core[0]
    group: CoordinatorGroup | None
    schedulers: list[Any] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    routes: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    start_with_hosts: list[Any] = field(default_factory=list)
    masters: MasterSet | None = None
    quiesce_before_hosts: bool = False  # the Borgmaster: stop deciding before the Borglets stop

    def before_hosts_stop(self) -> None:
        """A placement made after the hosts stopped would never launch."""
        if self.quiesce_before_hosts and self.group is not None:
            ray_engine.gather([ray_engine.call(h, "quiesce") for h in self.group.live.values()], timeout=30)

    def stop_after_hosts(self) -> list[Any]:
        """The architecture's own actors still alive at the end (faults may
        have killed and restarted some), stopped after the machine hosts."""
        if self.masters is not None:
            return list(self.masters.live.values())
        return [] if self.group is not None else self.core


def _group(plan: Plan, out: Path, namespace: str, rt: Any, metrics: Any, add: Spawned, factory: Any, sample: float | None,
           replica_cls: type | None = None, extra: tuple = ()) -> CoordinatorGroup:
    sc = plan.scenario
    # A run starts from an empty log: a coordinator directory left by an
    # earlier run in the same OUT would replay that run's commits.
    shutil.rmtree(out / "coordinator", ignore_errors=True)
    kw = {"replica_cls": replica_cls, "extra": extra} if replica_cls is not None else {}
    return CoordinatorGroup(sc.coordinator, namespace, out / "coordinator", factory, rt, metrics, sc.seed, sample, add, **kw)


def build_omega(plan: Plan, out: Path, namespace: str, rt: Any, metrics: Any, members: Members, policy_fns: dict) -> Topology:
    add = members.on_spawn
    sc = plan.scenario
    assert sc.omega is not None
    flush, k = sc.substrate.batch_interval, sc.cell.machines_per_actor
    if sc.coordinator.replicas == 1:
        cellstate = members.spawn(
            "cellstate", CellState, "cellstate", rt, plan.cell.capacity, plan.prefill.free,
            sc.omega.conflict_mode, sc.omega.txn_mode, metrics, sc.metrics.sample_interval, flush, k, sc.liveness,
        )
        topo = Topology(DirectCell(cellstate), [cellstate], None)
    else:
        factory = CellMachineFactory(plan.cell.capacity, plan.prefill.free, sc.omega.conflict_mode.value, sc.omega.txn_mode.value, k)
        group = _group(plan, out, namespace, rt, metrics, add, factory, sc.metrics.sample_interval, CellReplica, (host_count(plan.cell.size, k), sc.liveness))
        topo = Topology(ReplicatedCell(namespace, sc.coordinator.replicas), group.spawn_all(), group)
    for spec in sc.omega.schedulers:
        params = SchedulerParams(spec.name, spec.t_job, spec.t_task, policy_fns[spec.name], sc.omega.max_attempts, sc.omega.retry_backoff)
        for i in range(spec.count):
            name = f"scheduler-{spec.name}-{i}"
            h = members.spawn("scheduler", OmegaScheduler, name, rt, name, params, sc.seed, topo.cell, metrics, flush)
            topo.schedulers.append(h)
            topo.names.append(name)
            for cls in spec.classes:
                topo.routes.setdefault(cls, []).append((name, h))
    return topo


def _preferred(sc: Scenario, names: tuple[str, ...]) -> np.ndarray | None:
    if not names:
        return None
    mask = [mc.name in names or any(lab in names for lab in mc.labels) for mc in sc.cell.machine_classes for _ in range(mc.count)]
    return np.asarray(mask, dtype=bool)


def build_mesos(plan: Plan, out: Path, namespace: str, rt: Any, metrics: Any, members: Members, policy_fns: dict) -> Topology:
    add = members.on_spawn
    sc = plan.scenario
    ms = sc.mesos
    assert ms is not None
    flush, k, n = sc.substrate.batch_interval, sc.cell.machines_per_actor, plan.cell.size
    group = None
    if ms.masters > 1:
        group = _group(plan, out, namespace, rt, metrics, add, LeaseMachineFactory(), None)
        group.spawn_all()
    cfg = MasterConfig(
        namespace=namespace, capacity=plan.cell.capacity, machines_per_host=k, hosts=host_count(n, k),
        frameworks={f"framework-{f.name}": (f.weight, f.priority, f.guarantee) for f in ms.frameworks},
        policy=get_allocation_policy(ms.allocator), granularity=ms.granularity,
        allocation_interval=ms.allocation_interval, offer_timeout=ms.offer_timeout, revocation=ms.revocation,
        starvation_timeout=ms.starvation_timeout, masters=ms.masters, replicas=sc.coordinator.replicas,
        lease_wall_s=ms.master_lease_ms / 1e3, sample_interval=sc.metrics.sample_interval, liveness=sc.liveness,
    )
    masters = MasterSet(cfg, rt, metrics, flush, add)
    master_handles = masters.spawn_all()
    link = MasterLink(namespace, ms.masters, sc.coordinator.replicas)
    core = master_handles if group is None else list(group.live.values())
    topo = Topology(AgentEndpoint(link), core, group, masters=masters, start_with_hosts=master_handles if group else [])
    for f in ms.frameworks:
        params = FrameworkParams(f.name, f.t_job, f.t_task, policy_fns[f.name], f.mode, ms.max_attempts, f.delay,
                                 f.data_replicas, f.min_offer, _preferred(sc, f.preferred), f.refuse_seconds)
        name = f"framework-{f.name}"
        h = members.spawn("framework", MesosFramework, name, rt, params, n, sc.seed, link, metrics, flush, cfg.lease_wall_s)
        topo.schedulers.append(h)
        topo.names.append(name)
        for cls in f.classes:
            topo.routes.setdefault(cls, []).append((name, h))
    return topo


def _machine_mask(sc: Scenario, names: tuple[str, ...]) -> np.ndarray:
    return np.asarray([mc.name in names or any(lab in names for lab in mc.labels)
                       for mc in sc.cell.machine_classes for _ in range(mc.count)], dtype=bool)


def build_borg(plan: Plan, out: Path, namespace: str, rt: Any, metrics: Any, members: Members, policy_fns: dict) -> Topology:
    add = members.on_spawn
    sc = plan.scenario
    b = sc.borg
    assert b is not None
    flush, k, n = sc.substrate.batch_interval, sc.cell.machines_per_actor, plan.cell.size
    params = BorgParams(
        t_job=b.t_job, t_task=b.t_task, batch_t_job=b.batch_t_job, batch_t_task=b.batch_t_task,
        placement=PlacementParams(b.scoring, b.sample or None, False), spread_service=b.spread_service,
        preemption=b.preemption, multi_path=b.multi_path, missed_polls=b.missed_polls,
        # A Borglet polls every batch interval (wall): never call it silent
        # before it missed several of those, whatever the emulated interval.
        poll_interval=max(b.poll_interval, 4 * flush * sc.time_scale),
        hosts=host_count(n, k), racks=plan.cell.rack, eligible={cls: _machine_mask(sc, names) for cls, names in b.requires},
        retry_backoff=b.retry_backoff, idle_wall=flush / 2, liveness=sc.liveness,
    )
    quota = {(q.user, q.band): list(q.limit) for q in b.quota}
    standing = [[job.job_id, t, m, list(job.request), job.priority]
                for job, ms in zip(plan.prefill.jobs, plan.prefill.machines) for t, m in enumerate(ms.tolist())]
    factory = BorgMachineFactory(plan.cell.capacity, plan.prefill.free, k, quota, b.max_attempts, standing)
    group = _group(plan, out, namespace, rt, metrics, add, factory, sc.metrics.sample_interval, BorgmasterReplica, (params,))
    topo = Topology(BorgletEndpoint(namespace, sc.coordinator.replicas), group.spawn_all(), group, quiesce_before_hosts=True)
    front = members.spawn("frontend", BorgFrontend, "borg-frontend", rt, namespace, sc.coordinator.replicas, metrics, flush)
    topo.schedulers.append(front)
    topo.names.extend(["borgmaster-all"] if not b.multi_path else ["borgmaster-service", "borgmaster-batch"])
    for jc in sc.workload.classes:
        topo.routes[jc.name] = [("borg-frontend", front)]
    return topo
