"""A kube-scheduler (one profile) as an actor: a thin shell over
``schedulers.archs.kubernetes.scheduler_core.KubeSchedulerCore``.

Each round: catch up with the API store's watch (pods and nodes; a watch
that fell behind the store's compaction relists), run scheduling cycles
for the pods ready in the queue (thinking ``t_pod`` emulated s each),
then send the round's binds in one write and hand the answers to the core;
a preemption's evictions are written as they are chosen. A pod held at
Permit (Wait) sends nothing until the core releases it (allowed: its bind
goes out with the round's) or undoes it (rejected or timed out: it backs
off); timeouts are checked every round.

Events: ``job_attempt`` (first) at a job's first cycle; ``txn`` per job
and bind write (``committed``: binds the store took, ``conflicted``: binds
it refused because another scheduler took the node's room or the pod
changed; ``placed``); ``job_scheduled`` once every task of a job was
bound at least once; ``k8s_cycle`` per round (cycles run, pods bound,
unschedulable, held at Permit, released from it, rejected there or timed
out, failed by a Bind plugin, filtered-out nodes per plugin);
``preempted`` per victim (a preemption's victims share scheduler,
``by_job``, ``by_task`` and time).
"""
from __future__ import annotations

import collections
import dataclasses
from dataclasses import dataclass
from typing import Any

from schedlab.actors.common.cell_endpoint import ReplicatedCell
from schedlab.actors.common.events import span_stamp
from schedlab.actors.common.shell import ActorShell
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.kubernetes.events import K8S_CYCLE, K8S_RELIST, WATCH_FAILED
from schedlab.schedulers.archs.kubernetes.objects import Node
from schedlab.schedulers.archs.kubernetes.pods import PodFactory
from schedlab.schedulers.archs.kubernetes.plugins.coscheduling import NAME as COSCHEDULING
from schedlab.schedulers.archs.kubernetes.plugins.device_share import NAME as DEVICE_SHARE
from schedlab.schedulers.placement.device_claims import DeviceView
from schedlab.schedulers.archs.kubernetes.registry import build_profile, default_profile, register_plugin
from schedlab.schedulers.archs.kubernetes.scheduler_core import Cycle, KubeSchedulerCore
from schedlab.schedulers.archs.kubernetes.section import ProfileSpec
from schedlab.schedulers.events.shared import GANG_RELEASED, JOB_ATTEMPT, JOB_SCHEDULED, PREEMPTED, TASKS_LOST, TXN
from schedlab.schedulers.model.seeding import rng_for
from schedlab.schedulers.model.resources import DEFAULT

WATCH_LIMIT = 5000  # events per watch answer: a relist of a big cell comes in pages
MAX_ROUND = 500  # cycles per round before the binds go out


@dataclass(frozen=True)
class SchedulerConfig:
    profile: ProfileSpec
    nodes: tuple[Node, ...]
    pods: PodFactory
    replicas: int
    seed: int
    # Plugins a scenario script registered, by name: registered again in the
    # scheduler's own process (on Ray, another process) before its profile
    # is built.
    user_plugins: tuple[tuple[str, Any], ...] = ()
    worker: int = 0  # which of the profile's workers (its pods: job id mod workers)
    resources: tuple[str, ...] = DEFAULT  # the cell's resource names (the nodes' capacity columns)
    gangs: bool = False  # the workload has gang classes: Coscheduling runs at Permit
    devices: DeviceView | None = None  # a cell with devices: DeviceShare places them (its policy in the view)


# DeviceShare's score weight: above NodeResourcesFit's and BalancedAllocation's 1, so the device policy
# decides among nodes the pod fits (a GPU-sharing scheduler's score is the one its operators tune).
DEVICE_WEIGHT = 10


def make_profile(spec: ProfileSpec, gangs: bool = False, devices: DeviceView | None = None, seed: int = 0) -> Any:
    """The framework profile a scheduler runs, from its scenario entry; with
    ``gangs``, Coscheduling added (a cluster that runs gang jobs installs
    it: scheduler-plugins' Coscheduling, as the PodGroup's owner); with
    ``devices``, DeviceShare (a cluster sharing GPUs installs a GPU-sharing
    scheduler's plugins), weighted above the others so its score decides
    among the nodes that fit."""
    weights = dict(spec.weights)
    args: dict[str, dict[str, Any]] = {
        "NodeResourcesFit": {"strategy": spec.scoring_strategy, "shape": [list(p) for p in spec.shape]}}
    extra = [COSCHEDULING] if gangs else []
    if devices is not None:
        extra.append(DEVICE_SHARE)
        args[DEVICE_SHARE] = {"view": dataclasses.replace(devices, policy=spec.device_policy), "seed": seed}
        weights.setdefault(DEVICE_SHARE, DEVICE_WEIGHT)
    pct = spec.percentage_of_nodes_to_score or None
    if spec.plugins is None:
        profile = default_profile(spec.name, weights=weights, plugin_args=args, disable=spec.disabled,
                                  enable=extra, percentage_of_nodes_to_score=pct)
    else:
        names = [p for p in spec.plugins if p not in spec.disabled]
        names += [p for p in extra if p not in names]
        profile = build_profile(spec.name, names, weights=weights,
                                plugin_args={k: v for k, v in args.items() if k in names}, percentage_of_nodes_to_score=pct)
    return dataclasses.replace(profile, candidate_limit=spec.candidates or None)


class KubeScheduler(ActorShell):
    def __init__(self, rt: Runtime, name: str, cfg: SchedulerConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, name, metrics, flush_interval)
        self.cfg = cfg
        self.store = ReplicatedCell(cfg.replicas)
        self.core: KubeSchedulerCore | None = None
        self.since: int | None = None
        self.bound_tasks: dict[int, set[int]] = collections.defaultdict(set)
        self.scheduled: set[int] = set()

    async def on_start(self) -> None:
        self.store.bind(self.rt, self.name, self.log)
        for name, factory in self.cfg.user_plugins:
            register_plugin(name, factory, replace=True)
        seed = int(rng_for(self.cfg.seed, self.name).integers(2**31))
        spec = self.cfg.pods.spec
        budgets = {c: tpl.max_unavailable for tpl in spec.templates if tpl.max_unavailable is not None for c in tpl.classes}
        self.core = KubeSchedulerCore(make_profile(self.cfg.profile, self.cfg.gangs, self.cfg.devices, seed),
                                      list(self.cfg.nodes), self.cfg.pods.pod, seed,
                                      budgets, share=(self.cfg.worker, self.cfg.profile.workers), resources=self.cfg.resources)
        self.spawn_loop(self._loop())

    # ------------------------------------------------------------ the watch

    async def _sync(self) -> None:
        core = self.core
        assert core is not None
        now = self.rt.now()
        if self.since is None:
            pods = await self.store.client.query(("list", "pods"))
            nodes = await self.store.client.query(("list", "nodes"))
            core.relisted(pods["items"], nodes["items"], now)
            self.since = min(int(pods["revision"]), int(nodes["revision"]))
            return
        while True:
            w = await self.store.client.query(("watch", ["pods", "nodes"], self.since, WATCH_LIMIT))
            if w["gone"]:
                self.since = None
                self.log.emit(K8S_RELIST, scheduler=self.name, compacted=w["compacted"])
                await self._sync()
                return
            core.watched(w["events"], now)
            self.since = int(w["revision"])
            if not w["more"]:
                return

    # ------------------------------------------------------------ rounds

    async def _loop(self) -> None:
        core = self.core
        assert core is not None
        while self.running:
            try:
                await self._sync()
            except Exception as e:  # the store is between leaders: try again next round
                self.log.emit(WATCH_FAILED, scheduler=self.name, error=f"{type(e).__name__}: {e}"[:200])
                if not await self.nap_wall(self.flush_interval):
                    return
                continue
            started = self.rt.now()
            binds: list[Cycle] = []
            cycles = unschedulable = waiting = released = 0
            rejected, bind_failed = core.permit_rejected, core.bind_failed
            filtered: collections.Counter[str] = collections.Counter()
            while len(binds) < MAX_ROUND and self.running:
                c = core.next_cycle(self.rt.now())
                if c is None:
                    break
                if c.released:  # a pod allowed at Permit: its binding cycle ends here
                    released += 1
                    if c.node is not None:
                        binds.append(c)
                    continue
                cycles += 1
                if c.first:
                    self.log.emit(JOB_ATTEMPT, job_id=c.pod.key[0], attempt=1, first=True, scheduler=self.name)
                if self.cfg.profile.t_pod and not await self.nap(self.cfg.profile.t_pod):
                    return
                if c.node is not None:
                    binds.append(c)
                    continue
                if c.waiting:
                    waiting += 1
                    continue
                unschedulable += 1
                filtered.update(c.reasons)
                if c.victims:
                    await self._evict(c)
            if binds:
                await self._bind(binds, started)
            rejected, bind_failed = core.permit_rejected - rejected, core.bind_failed - bind_failed
            for job, n in sorted(core.gang_released.items()):
                self.log.emit(GANG_RELEASED, job_id=job, tasks=n, scheduler=self.name)
            core.gang_released.clear()
            if cycles or released or rejected:
                self.log.emit(K8S_CYCLE, scheduler=self.name, cycles=cycles, bound=len(binds),
                              unschedulable=unschedulable, waiting=waiting, released=released,
                              permit_rejected=rejected, bind_failed=bind_failed, filtered=dict(filtered))
            if not binds and not await self.nap_wall(self.flush_interval):
                return

    async def _evict(self, c: Cycle) -> None:
        victims = [[*v.key, c.nominated] for v in c.victims]
        answers = await self.store.write("evict", ("evict", victims, self.rt.now()))
        withdrawn = []
        for v, answer in zip(c.victims, answers):
            if answer == "gone":
                continue
            self.log.emit(PREEMPTED, scheduler=self.name, job_id=v.key[0], task=v.key[1], priority=v.priority,
                          by_job=c.pod.key[0], by_task=c.pod.key[1], by_priority=c.pod.priority, node=c.nominated)
            if answer == "withdrawn":
                withdrawn.append(list(v.key))
        if withdrawn:
            # Bound but never pulled: the bind's launch is gone with it (the
            # checker traces that commit here); its controller makes it again.
            self.log.emit(TASKS_LOST, framework=self.name, reason="preempted_before_launch", tasks=withdrawn,
                          requeued_jobs=[])

    async def _bind(self, binds: list[Cycle], started: float) -> None:
        core = self.core
        assert core is not None
        # With the request as reserved: devices a device plugin chose travel with the binding.
        rows = [[c.pod.key[0], c.pod.key[1], c.node, c.version, list(c.pod.requests)] for c in binds]
        results = await self.store.write("bind", ("bind", rows, self.rt.now()))
        now = self.rt.now()
        by_job: dict[int, list[tuple[Cycle, str]]] = collections.defaultdict(list)
        for c, (status, *_versions) in zip(binds, results):
            core.bound(c, status, now)
            by_job[c.pod.key[0]].append((c, status))
        for job, outcomes in by_job.items():
            placed = [[c.pod.key[1], c.node] for c, status in outcomes if status == "ok"]
            self.log.emit(TXN, scheduler=self.name, job_id=job, claims=len(outcomes), committed=len(placed),
                          conflicted=len(outcomes) - len(placed), think=round(self.cfg.profile.t_pod * len(outcomes), 6),
                          placed=placed, **span_stamp(started, now))
            self.bound_tasks[job].update(c.pod.key[1] for c, status in outcomes if status == "ok")
            n = core.job_tasks.get(job)
            if job not in self.scheduled and n is not None and len(self.bound_tasks[job]) >= n:
                self.scheduled.add(job)
                self.log.emit(JOB_SCHEDULED, job_id=job, scheduler=self.name, attempts=1)

    async def on_stop(self) -> dict:
        core = self.core
        return {} if core is None else {"attempts": core.attempts, "filtered": core.filtered,
                                        "waiting": len(core.versions), "permit_rejected": core.permit_rejected,
                                        "bind_failed": core.bind_failed}
