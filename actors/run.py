"""Run one scenario end to end on Ray: build, start, watch, stop, summarise.

Everything that can be checked is checked before the first actor starts;
every actor started is killed on the way out, whatever happens.
"""
from __future__ import annotations

import json
import sys
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

from schedlab.actors import interrupt
from schedlab.actors import engines
from schedlab.actors.common.events import EventLog, report_held_at_end
from schedlab.actors.engines import verbosity
from schedlab.actors.chaos.inbox import INBOX_NAME, ChaosInbox
from schedlab.actors.chaos.timeline import FaultTimeline
from schedlab.actors.common.machine_host import MachineHost
from schedlab.actors.common.members import Members
from schedlab.actors.common.event_files import EVENT_FILES, iter_events
from schedlab.actors.common.metrics import MetricsCollector
from schedlab.actors.common.submitter import NAME as SUBMITTER, Submitter
from schedlab.actors.analysis.run_info import RunInfo, RunSetup
from schedlab.actors.analysis.summary import summarize
from schedlab.actors.analysis.trace_reference import reference
from schedlab.actors.arch import architecture
from schedlab.actors.topology import Build, Plan
from schedlab.schedulers.events.shared import ACTOR_LOST, FAULT
from schedlab.schedulers.model.cluster import build_cell, host_count, with_devices
from schedlab.schedulers.model.inflation import inflation_jobs
from schedlab.schedulers.placement.policies import PlacementPolicy, get_policy
from schedlab.schedulers.faults.plan import FaultSpec
from schedlab.schedulers.arch import Decider, all_roles, spec_of
from schedlab.schedulers.scenario.parse import Scenario, roster_for
from schedlab.schedulers.consensus.timing import raft_timing
from schedlab.schedulers.model.workload import Prefill, TraceJob, generate_jobs, prefill, with_device_columns

ProgressFn = Callable[[float, dict], None]
StartedFn = Callable[[str, str], None]  # (namespace, Ray address) once the run's actors are up


def plan_run(sc: Scenario) -> Plan:
    """The cell, jobs and prefill of a run. An architecture that places
    devices gets the cell with a column per device slot (``with_devices``)
    and every request widened to match, device columns 0 until its
    placement fills them in a claim."""
    cell = build_cell(sc.cell.machine_classes, sc.cell.resources, sc.cell.devices)
    inflate = sc.workload.inflate
    sources: list[TraceJob | None] = []
    drawn = (generate_jobs(sc.workload.classes, sc.duration, sc.seed, sources) if inflate is None else
             [j for j in inflation_jobs(sc.workload.classes, float(cell.capacity[:, inflate.resource].sum()), inflate,
                                        sc.seed) if j.submit_time < sc.duration])
    jobs = [j.to_wire() for j in drawn]
    pre = prefill(cell, sc.workload.classes, sc.workload.prefill_utilization, sc.seed,
                  sc.workload.standing, sc.workload.standing_cpu_limit)
    if spec_of(sc.architecture).devices:
        cell = with_devices(cell)
        pre = with_device_columns(pre, cell)
        for j in jobs:
            j["request"] += [0.0] * cell.device_slots
    return Plan(sc, cell, jobs, pre, reference(drawn, sources) if sources else None)


@dataclass
class Started:
    handles: list[Any] = field(default_factory=list)

    def add(self, h: Any) -> Any:
        self.handles.append(h)
        return h


def _initial_launches(pre: Prefill, k: int, hosts: int) -> list[list]:
    """Each host actor's standing tasks (machines ``h * k`` to ``(h + 1) * k``),
    in one pass over the prefill: a cell of a host per machine has as many
    hosts as machines, and a scan of the whole prefill per host grew with
    their product (two thirds of an hour's replay of an 11,000-machine cell)."""
    out: list[list] = [[] for _ in range(hosts)]
    for job, machines in zip(pre.jobs, pre.machines):
        for t, m in enumerate(machines.tolist()):
            out[m // k].append((job.job_id, t, m, list(job.request), job.durations[t], 0.0, "prefill"))
    return out


def measure_rtt(handle: Any, n: int = 50) -> list[float]:
    """Sequential round trips from the driver: the substrate's own latency
    (on the sim engine, its latency model's)."""
    eng = engines.current()
    out = []
    for _ in range(n):
        t0 = eng.time()
        eng.gather([eng.call(handle, "ping")])
        out.append((eng.time() - t0) * 1e3)
    return out


def run_scenario(
    sc: Scenario,
    out_dir: str | Path,
    address: str | None = None,
    on_progress: ProgressFn | None = None,
    policies: dict[str, PlacementPolicy] | None = None,
    on_started: StartedFn | None = None,
    engine: str | None = None,
) -> dict:
    """Run ``sc`` and return its summary (also written to out_dir), on the
    scenario's engine (``engine`` overrides it)."""
    name = engine or sc.engine
    eng = engines.engine_class(name)(scale=sc.time_scale, latency=sc.substrate.latency, seed=sc.seed)
    with engines.use(eng):
        return _run_scenario(sc, Path(out_dir), address, on_progress, policies, on_started)


def _run_scenario(sc: Scenario, out: Path, address: str | None, on_progress: ProgressFn | None,
                  policies: dict[str, PlacementPolicy] | None, on_started: StartedFn | None) -> dict:
    eng = engines.current()
    out.mkdir(parents=True, exist_ok=True)
    plan = plan_run(sc)
    arch = architecture(sc.architecture)
    policy_fns = {d.name: (policies or {}).get(d.policy) or get_policy(d.policy)
                  for d in spec_of(sc.architecture).deciders(sc) if d.policy is not None}
    namespace = f"schedlab-{run_id(sc.seed)}"
    with connected(address, namespace) as started:
        interrupt.check()
        for fn in [*policy_fns.values(), *(arch.ship(sc) if arch.ship else [])]:
            eng.ship_by_value(fn)
        summary = _run(plan, out, namespace, started, policy_fns, on_progress, on_started)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def run_id(seed: int) -> str:
    """A run's id: a deterministic engine gets a deterministic one (it is in the files)."""
    return f"sim{seed}" if engines.current().deterministic else uuid.uuid4().hex[:8]


@contextmanager
def connected(address: str | None, namespace: str) -> Iterator[Started]:
    """The engine connected (an embedded Ray started if there is no
    ``address``) for the block; every actor the block adds to the yielded
    ``Started`` is killed on the way out, whatever happens, and an embedded
    Ray shut down."""
    eng = engines.current()
    started_ray = eng.connect(address, namespace)
    started = Started()
    try:
        yield started
    finally:
        eng.kill_all(started.handles)
        if started_ray:
            eng.shutdown()


def _run(plan: Plan, out: Path, namespace: str, started: Started, policy_fns: dict, on_progress: ProgressFn | None,
         on_started: StartedFn | None = None) -> dict:
    eng = engines.current()
    run = CellRun(plan, out, namespace, started, policy_fns)
    run.start(eng.time() + 0.2)
    if on_started is not None:
        on_started(namespace, eng.gcs_address())
    last_progress = 0.0
    while (left := run.end_wall - eng.time()) > 0:
        interrupt.check()
        # Short naps while faults are due or a failover is being timed.
        eng.sleep(min(run.nap(), left))
        run.step()
        if on_progress is not None and eng.time() - last_progress >= 0.5:
            last_progress = eng.time()
            on_progress(min(plan.scenario.duration, run.now()), eng.gather([eng.call(run.metrics, "progress")])[0])
    return run.finish()


class CellRun:
    """One cell's run in the phases a caller drives: the constructor builds
    everything and waits until it is ready; ``start(epoch)`` starts it on a
    clock; ``step()`` carries out what is due (faults, chaos, node deaths)
    and is called every ``nap()`` wall s until ``end_wall``; ``finish()``
    stops it in dependency order and returns its summary. ``_run`` drives
    one; a federation of cells (``actors.federation``) drives several on
    one clock. ``open_ended``: the submitter starts with no jobs and takes
    what it is handed (``Submitter.inject``) until it is stopped."""

    def __init__(self, plan: Plan, out: Path, namespace: str, started: Started, policy_fns: dict,
                 open_ended: bool = False) -> None:
        eng = engines.current()
        self.plan, self.out, self.namespace = plan, out, namespace
        sc = self.sc = plan.scenario
        scale, flush = sc.time_scale, sc.substrate.batch_interval
        rt = eng.runtime(scale, namespace)
        k = sc.cell.machines_per_actor
        n = plan.cell.size
        out.mkdir(parents=True, exist_ok=True)

        RunSetup(scenario=sc.name, source=sc.source, architecture=sc.architecture, seed=sc.seed, machines_per_actor=k,
                 replicas=sc.coordinator.replicas, namespace=namespace, address=eng.gcs_address(),
                 embedded=eng.is_loopback_only(), engine=eng.name, capacity=plan.cell.capacity.tolist(),
                 rack=plan.cell.rack.tolist(), resources=list(plan.cell.resources),
                 devices=None if plan.cell.device is None else plan.cell.resources[plan.cell.device],
                 model=plan.cell.model.tolist() if plan.cell.device is not None else [],
                 models=list(plan.cell.models)).write(out)
        # On a multi-node cluster, machine hosts are spread over the nodes by rack
        # (a node is a failure domain, like a rack); everything else stays on the
        # first node, so killing another node takes machines, not the control plane.
        nodes = self.nodes = eng.cluster_nodes()
        eng.set_default_node(nodes[0][1] if len(nodes) > 1 else None)
        metrics = self.metrics = started.add(eng.spawn(MetricsCollector, "metrics", namespace, str(out / EVENT_FILES[sc.metrics.events]),
                                                         open_ended))
        roster = self.roster = roster_for(sc, tuple(label for label, _ in nodes) if len(nodes) > 1 else ())
        self.inbox = started.add(eng.spawn(ChaosInbox, INBOX_NAME, namespace, rt, {
            "roster": roster.to_wire(), "time_scale": scale, "duration": sc.duration, "architecture": sc.architecture,
            "seed": sc.seed, "scenario": sc.name, "out": str(out)}))
        members = self.members = Members(namespace, started.add)
        topo = self.topo = architecture(sc.architecture).build(Build(plan, out, namespace, rt, metrics, members, policy_fns))
        cell, core_actors = topo.cell, topo.core
        hosts: list = []
        self.hosts = hosts
        host_node: dict = {}
        self.host_node = host_node  # host name -> (node label, node id) it was placed on
        standing = _initial_launches(plan.prefill, k, host_count(n, k))
        for h in range(host_count(n, k)):
            lo, hi = h * k, min(n, (h + 1) * k)
            where = nodes[int(plan.cell.rack[lo]) % len(nodes)] if len(nodes) > 1 else None
            if where is not None:
                host_node[f"machine-host-{h}"] = where
            # A restarted host comes back with its machines empty (its tasks died with it).
            hosts.append(members.spawn(
                "machine", MachineHost, f"machine-host-{h}", rt, h, lo, plan.cell.capacity[lo:hi],
                cell, metrics, flush, standing[h], False, topo.heartbeat,
                node=where[1] if where else None,
                again=(rt, h, lo, plan.cell.capacity[lo:hi], cell, metrics, flush, [], True, topo.heartbeat),
            ))
        self.submitter = started.add(eng.spawn(Submitter, SUBMITTER, namespace, rt, [] if open_ended else plan.jobs,
                                               topo.routes, metrics, flush, topo.await_admission, topo.holders,
                                               open_ended))
        roles = self.roles = all_roles()  # what each role's members are to the submitter
        members.on_restart.append(lambda role, name, h: eng.call(self.submitter, "reroute", name, h, roles[role].recovers)
                                  if roles[role].routed else None)
        interrupt.check()
        eng.gather([eng.call(h, "ready") for h in started.handles], timeout=300)
        interrupt.check()
        self.spawned = _spawned(members, topo)

        rtt = measure_rtt(core_actors[0])
        rtt_p50 = float(np.median(rtt))
        self.substrate = {
            "rtt_wall_ms_p50": round(rtt_p50, 3),
            "rtt_wall_ms_p90": round(float(np.percentile(rtt, 90)), 3),
            "rtt_emulated_s_p50": round(rtt_p50 / 1e3 * scale, 6),
        }
        self.warnings = think_time_warnings(sc, self.substrate["rtt_emulated_s_p50"])
        if topo.group is not None or sc.coordinator.replicas >= 3:
            raised = raft_timing(sc.coordinator.heartbeat_ms, sc.coordinator.election_ms, sc.time_scale).raised
            if raised:
                self.warnings.append(raised)

    def start(self, epoch: float) -> None:
        """Start everything on the clock whose zero is ``epoch`` (wall s)."""
        eng, topo, sc = engines.current(), self.topo, self.sc
        self.epoch = epoch
        group = topo.group
        if group is not None:
            # The cell state must have a leader before anyone asks it for a snapshot.
            group.start(epoch)
            group.wait_leader()
        for ctl in topo.controllers.values():
            ctl.epoch = epoch  # a restarted member joins the same clock
        self.members.epoch = epoch
        actors = ([] if group else topo.core) + topo.start_with_hosts + [*self.hosts, *topo.schedulers, self.submitter]
        eng.gather([eng.call(h, "start", epoch) for h in actors] + [eng.call(self.inbox, "started", epoch)])
        self.driver_log = EventLog("driver", lambda: (eng.time() - epoch) * sc.time_scale)
        if verbosity.verbose:
            self.driver_log.echo_to(sys.stderr)
        self.live_hosts = self.members.handles  # a host killed by a fault leaves it (and a restarted one comes back)
        self.faults = FaultTimeline(sc.faults, self.roster, self.members, topo.all_controllers(), self.driver_log, sc.seed,
                                    sc.time_scale, [eng.actor_key(self.metrics)],
                                    {h: where[0] for h, where in self.host_node.items()}, end=sc.duration)
        self.end_wall = epoch + sc.duration / sc.time_scale
        self.wall0 = eng.time()
        self.last_node_check = 0.0
        self.last_inbox = 0.0

    def now(self) -> float:
        """Emulated seconds since the start."""
        return (engines.current().time() - self.epoch) * self.sc.time_scale

    def nap(self) -> float:
        """Wall s until the next ``step`` is worth taking."""
        return 0.02 if (self.faults.pending or self.faults.watching) else 0.2

    def step(self) -> None:
        eng, faults = engines.current(), self.faults
        now = self.now()
        # One round trip to the inbox every 0.1 s (at once when an outcome waits).
        if faults.done or eng.time() - self.last_inbox >= 0.1:
            self.last_inbox = eng.time()
            for ticket, wire in eng.gather([eng.call(self.inbox, "exchange", faults.done)])[0]:
                f = FaultSpec.from_wire(wire)
                faults.post(FaultSpec(**{**f.__dict__, "at": max(now, f.at)}), ticket)
            faults.done = []
        faults.step(now)
        if self.host_node and eng.time() - self.last_node_check >= 0.25:
            self.last_node_check = eng.time()
            _node_deaths(self.host_node, self.live_hosts, self.driver_log)
        if len(self.driver_log):
            eng.gather([eng.call(self.metrics, "record", self.driver_log.drain())])

    def finish(self) -> dict:
        eng, sc, topo, members, roles = engines.current(), self.sc, self.topo, self.members, self.roles
        driver_log, group = self.driver_log, topo.group
        self.faults.close(self.now())  # what came due and was not carried out, logged skipped
        eng.gather([eng.call(self.inbox, "settle", self.faults.done, True)])
        # A scheduler killed during the run is dead now, or restarted and perhaps
        # still recovering its queue when the run ended: either way the jobs
        # routed to it are reported pending unless the summary knows them scheduled.
        dead = [n for n, role in members.roles.items() if roles[role].recovers and n in members.killed]
        dead += [self.roster.members[role][i] for role, c in topo.controllers.items() if roles[role].recovers
                 for i in sorted(c.killed)]
        if dead:
            eng.gather([eng.call(self.submitter, "orphaned", dead)])
        # Stop in dependency order: no new jobs, then no new launches, then machines.
        scheds = [h for n, h in members.handles.items() if roles[members.roles[n]].routed or roles[members.roles[n]].places]
        for stage in ([self.submitter], scheds, list(members.of_role("machine").values()), topo.stop_after_hosts()):
            _stop(stage, driver_log)
            if stage is scheds:
                topo.before_hosts_stop()
        applied: dict[int, list[tuple]] = {}
        if group is not None:
            group.converge()
            applied = group.applied_everywhere()
            group.stop()
            for name, launches in group.held_by_dead().items():
                report_held_at_end(driver_log, name, launches, from_disk=True)
        wall_seconds = eng.time() - self.wall0
        if len(driver_log):
            eng.gather([eng.call(self.metrics, "record", driver_log.drain())])
        eng.gather([eng.call(self.metrics, "close")])

        events = iter_events(self.out)
        info = RunInfo(
            scenario=sc.name, architecture=sc.architecture, engine=eng.name, seed=sc.seed,
            time_scale=sc.time_scale, emulated_seconds=sc.duration, wall_seconds=wall_seconds,
            machines_per_actor=sc.cell.machines_per_actor, host_actors=len(self.hosts), substrate=self.substrate,
            warnings=tuple(self.warnings), scheduler_names=tuple(topo.names), namespace=self.namespace,
            replicas=sc.coordinator.replicas, extra=dict(topo.info),
            inflation=None if sc.workload.inflate is None else
            {"resource": sc.workload.inflate.resource, "until": sc.workload.inflate.until},
            trace=self.plan.reference,
            placement={"nodes": [label for label, _ in self.nodes], "hosts": {h: w[0] for h, w in self.host_node.items()}}
            if self.host_node else None,
        )
        summary = summarize(events, info, self.plan.cell, applied if group is not None else None)
        summary["namespace"] = self.namespace
        summary["actors"] = self.spawned
        return summary


def _spawned(members: Members, topo: Any) -> dict[str, list[str]]:
    """The system's actors as first started, by role (the roster, as built)."""
    out: dict[str, list[str]] = {}
    for name, role in members.roles.items():
        out.setdefault(role, []).append(name)
    for role, ctl in topo.all_controllers().items():
        out.setdefault(role, []).extend(f"{role}-{i}" for i in sorted(ctl.live))
    return {r: sorted(names, key=_natural) for r, names in out.items()}


def _natural(name: str) -> tuple[str, int]:
    head, _, tail = name.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (name, -1)


def think_time_warnings(sc: Scenario, rtt_emulated: float) -> list[str]:
    """Where a think time is shorter than a round trip, the run measures Ray,
    not the scheduler: say so and suggest a scale that fits."""
    out = []
    deciders: list[Decider] = spec_of(sc.architecture).deciders(sc)
    for s in deciders:
        think = s.t_job + s.t_task
        if think < rtt_emulated:
            head = (f"scheduler {s.name}: think time {think:g}s is shorter than the substrate round trip "
                    f"({rtt_emulated:g} emulated s at time_scale {sc.time_scale:g}); results measure Ray more than "
                    f"the scheduler.")
            if think > 0:
                out.append(f"{head} A time_scale of {sc.time_scale * think / rtt_emulated:.3g} or less fits.")
            else:  # no scale makes a round trip shorter than nothing: say what a lower one buys
                out.append(f"{head} With zero think time the run measures the substrate; a lower time_scale "
                           f"shrinks its share of each decision (the sim engine models it exactly).")
    return out


def _stop(handles: list[Any], log: EventLog) -> None:
    """Stop actors, tolerating ones that died on the way (a node failure):
    each is logged, and the rest still stop."""
    eng = engines.current()
    for h, got in zip(handles, eng.outcomes([eng.call(h, "stop") for h in handles], timeout=120)):
        if isinstance(got, Exception):
            log.emit(ACTOR_LOST, lost=str(getattr(h, "_ray_actor_id", "?")), error=type(got).__name__)


def _node_deaths(host_node: dict[str, tuple[str, str]], live_hosts: dict[str, Any], log: EventLog) -> None:
    """Machine hosts that died with their node (or alone): each is logged as a
    machine fault, so the summary's replay ends their tasks there. Ray sees
    an actor's death as soon as its process is gone; a node is declared dead
    only after its health checks time out, so pings find it first."""
    eng = engines.current()
    names = [n for n in host_node if n in live_hosts]
    got = eng.outcomes([eng.call(live_hosts[n], "ping") for n in names], timeout=1.0)
    # A ping still pending is a slow host, not a dead one.
    gone = [n for n, g in zip(names, got) if isinstance(g, eng.ActorError)]
    if not gone:
        return
    dead = eng.dead_nodes(sorted({host_node[n][1] for n in gone}))
    for name in gone:
        label, nid = host_node[name]
        del live_hosts[name]
        log.emit(FAULT, at_s=None, kind="node_down" if nid in dead else "host_lost", target=name, role="machine", node=label)
