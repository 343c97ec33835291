"""YARN: the ``[yarn]`` section of a scenario (ResourceManager, scheduler,
ApplicationMasters and queue tree), parsed and validated; and the builders
of the pure cores (scheduler, RM, AM configs) from it.

A ResourceManager runs one scheduler (Capacity, Fair or FIFO) over a tree of
queues; every job is an application whose ApplicationMaster asks for its
tasks' containers on a heartbeat. Job classes are routed to leaf queues
(``[[yarn.queues]] classes``), and a queue's jobs are spread over ``users``
users. Inert, validated, frozen data like the rest of the scenario; parsed by
``parse_yarn`` with errors naming the file, the key and the problem.

Keys the selected scheduler does not read (Capacity's under ``scheduler =
"fair"`` and the other way round; any preemption key under FIFO) are
refused, so a file never says something its run does not do. Queue fields
are the exception: one ``[[yarn.queues]]`` tree carries both schedulers'
settings (``queues.QueueSpec``), so a section can switch ``scheduler``.

``SPEC`` at the end registers it; ``actors.archs.yarn`` is its live half.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from schedlab.schedulers.placement.device_claims import DEVICE_POLICIES
from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.archs.yarn.fair import (
    POLICIES,
)
from schedlab.schedulers.archs.yarn.queue_section import (
    QUEUE_FIELDS,
    YarnQueueSpec,
    parse_queues,
)
from schedlab.schedulers.archs.yarn.queues import QueueSpec, QueueTree
from schedlab.schedulers.archs.yarn.events import EVENTS
from schedlab.schedulers.archs.yarn.scheduler import (
    CALCULATORS,
)
from schedlab.schedulers.model.cluster import MachineClass
from schedlab.schedulers.model.resources import BASE
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.fields import Computed, Field, amounts, parse_fields, per_resource, read_field
from schedlab.schedulers.scenario.toml_table import (
    Table,
    non_negative,
    positive,
)

SCHEDULERS = ("capacity", "fair", "fifo")
MAX_AM_POOLS = 64
AM_DEFAULT = {"cpu": 1.0, "mem": 1.5}  # yarn.app.mapreduce.am.resource.cpu-vcores 1, .resource.mb 1536 (GB here)
RM_DECIDER = "resourcemanager"
MEM = BASE.index("mem")

# Keys only one scheduler reads. monitor_interval is read by both preemptive
# schedulers (their preemption check's period) and refused under FIFO.
PREEMPTION_KEYS = ("preemption", "monitor_interval")
MONITOR_INTERVAL = {"capacity": 3.0, "fair": 0.5}
def _count(v: int) -> str | None:
    return None if v >= 0 else "must be >= 0"


def _unit(v: float) -> str | None:
    return None if 0 < v <= 1 else "must be in (0, 1]"


def _closed(v: float) -> str | None:
    return None if 0 <= v <= 1 else "must be in [0, 1]"


@dataclass(frozen=True)
class YarnSpec:
    """The ``[yarn]`` section. Defaults are Hadoop's where it has one.

    Every scheduler:

    * ``scheduler`` ("capacity"): ``yarn.resourcemanager.scheduler.class``:
      "capacity" | "fair" | "fifo".
    * ``am`` ({cpu = 1, mem = 1.5}): the AM container,
      ``yarn.app.mapreduce.am.resource.cpu-vcores`` / ``.resource.mb`` (1536 MB).
    * ``am_heartbeat`` (1.0): emulated s between an AM's allocate calls,
      ``yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms`` (1000).
    * ``max_am_attempts`` (2): ``yarn.resourcemanager.am.max-attempts``.
    * ``global_scheduling`` (false): Capacity's
      ``schedule-asynchronously.enable``, Fair's ``continuous-scheduling-enabled``:
      allocate on a timer over the whole cluster, not per node heartbeat.
    * ``assign_multiple`` (true; false under Fair, as Hadoop): several
      containers per node heartbeat (Capacity's
      ``per-node-heartbeat.multiple-assignments-enabled``, Fair's
      ``assignmultiple``); under FIFO false means one per heartbeat.
    * ``max_assign`` (0 = no limit): containers per heartbeat (Fair's
      ``max.assign`` -1; Capacity's ``maximum-container-assignments`` is 100
      in Hadoop, unlimited here).
    * ``rms`` (1): ResourceManagers; > 1 is active/standby
      (``yarn.resourcemanager.ha.rm-ids``), leader elected through the
      coordinator group, so ``[coordinator] replicas >= 3``.
    * ``rm_lease_ms`` (1000): wall ms an active RM's lease lasts unrenewed.
    * ``am_pools`` (1): the actors the ApplicationMasters' logic runs in
      (schedlab's, not Hadoop's: each AM is a process of its own there).
    * ``am_expiry`` (600): emulated s an AM may stay silent before the RM
      takes it for dead and starts a new attempt,
      ``yarn.am.liveness-monitor.expiry-interval-ms`` (600000).

    Capacity (``yarn.scheduler.capacity.*``):

    * ``node_locality_delay`` (40): ``node-locality-delay``, missed opportunities.
    * ``rack_locality_additional_delay`` (0): ``rack-locality-additional-delay``
      (Hadoop's -1, the wait-factor mode, is not modelled).
    * ``resource_calculator`` ("memory"): ``resource-calculator``,
      "memory" (DefaultResourceCalculator) | "dominant".
    * ``max_off_switch_per_heartbeat`` (1):
      ``per-node-heartbeat.maximum-offswitch-assignments``; 0 = no limit.

    Fair (``yarn.scheduler.fair.*`` and the allocation file):

    * ``fair_policy`` ("fair"): ``defaultQueueSchedulingPolicy``, "fair" | "drf".
    * ``locality_threshold_node`` / ``locality_threshold_rack`` (0):
      ``locality.threshold.node`` / ``.rack``, fractions of the cluster in
      [0, 1]; Hadoop's -1 (no delay) is 0 here.

    Preemption:

    * ``preemption`` (false): Capacity's ``yarn.resourcemanager.scheduler.monitor.enable``,
      Fair's ``yarn.scheduler.fair.preemption``; FIFO never preempts.
    * ``monitor_interval``: emulated s between preemption checks; Capacity's
      ``monitor.capacity.preemption.monitoring_interval`` (3 s), Fair's
      ``update-interval-ms`` (0.5 s, where Hadoop 3 detects starvation).
    * Capacity (``yarn.resourcemanager.monitor.capacity.preemption.*``):
      ``max_wait_before_kill`` (15 s), ``total_preemption_per_round`` (0.1),
      ``max_ignored_over_capacity`` (0.1), ``natural_termination_factor`` (0.2).
    * Fair (allocation file defaults): ``min_share_preemption_timeout`` and
      ``fair_share_preemption_timeout`` (never; omit the key for never),
      ``fair_share_preemption_threshold`` (0.5).

    ``queues``: the declared ``[[yarn.queues]]`` in file order (index i is
    ``yarn.queues[i]``), or one ``root.default`` leaf taking every class when
    the file declares none. ``implied``: undeclared parent paths (see
    ``parse_yarn``)."""

    queues: tuple[YarnQueueSpec, ...]
    implied: tuple[str, ...] = ()
    scheduler: str = "capacity"
    am: tuple[float, ...] = tuple(AM_DEFAULT.get(r, 0.0) for r in BASE)  # one per resource the cell declares
    am_heartbeat: float = 1.0
    max_am_attempts: int = 2
    global_scheduling: bool = False
    device_policy: str = ""  # global scheduling in a cell with devices: the node for a container asking some
    assign_multiple: bool = True
    max_assign: int = 0
    node_locality_delay: int = 40
    rack_locality_additional_delay: int = 0
    resource_calculator: str = "memory"
    max_off_switch_per_heartbeat: int = 1
    fair_policy: str = "fair"
    locality_threshold_node: float = 0.0
    locality_threshold_rack: float = 0.0
    preemption: bool = False
    monitor_interval: float = 3.0
    max_wait_before_kill: float = 15.0
    total_preemption_per_round: float = 0.1
    max_ignored_over_capacity: float = 0.1
    natural_termination_factor: float = 0.2
    min_share_preemption_timeout: float = math.inf
    fair_share_preemption_timeout: float = math.inf
    fair_share_preemption_threshold: float = 0.5
    rms: int = 1
    rm_lease_ms: float = 1000.0
    am_pools: int = 1
    am_expiry: float = 600.0

    def queue_of(self, job_class: str) -> YarnQueueSpec:
        """The leaf queue ``job_class``'s jobs are submitted to (KeyError if none)."""
        for q in self.queues:
            if job_class in q.classes:
                return q
        raise KeyError(job_class)

    def route(self, job_class: str, job_id: int) -> tuple[str, str]:
        """(leaf queue, user) of a job: users ``u0``.. of its queue by job id."""
        q = self.queue_of(job_class)
        return q.name, f"u{int(job_id) % q.users}"

    def queue_specs(self) -> tuple[QueueSpec, ...]:
        """The tree's specs: the declared queues, then the implied parents
        (capacity 100 of a parent they are the only child of)."""
        return (*(q.queue_spec() for q in self.queues), *(QueueSpec(n, capacity=100.0) for n in self.implied))


# ------------------------------------------------------------ parsing


_D = YarnSpec(queues=())
# [yarn.am]: the ApplicationMaster's container, an amount per resource.
AM_FIELDS = (per_resource(lambda r, base: Field(r, float, AM_DEFAULT.get(r, 0.0),
                                                check=positive if r in AM_DEFAULT else non_negative,
                                                doc=f"The AM container's {r}." if base else
                                                "The AM container's amount of a further resource (default 0).")),)
CAP, FAIR, CAP_FAIR = ("capacity",), ("fair",), ("capacity", "fair")

# Every key of [yarn], in the order parse_yarn reads them (the first bad one
# is the one reported). Variants: the scheduler that reads a key.
FIELDS = (
    Field("scheduler", str, _D.scheduler, choices=SCHEDULERS, doc="yarn.resourcemanager.scheduler.class."),
    Field("am", dict, None, nested=True, of=AM_FIELDS,
          doc="The AM container per resource: yarn.app.mapreduce.am.resource.cpu-vcores / .resource.mb."),
    Field("queues", list, None, nested=True, of=QUEUE_FIELDS,
          doc="[[yarn.queues]]: the queue tree (default: one root.default leaf taking every class)."),
    Field("rms", int, _D.rms, check=lambda v: None if 1 <= v <= 9 else "must be 1 to 9", schema={"minimum": 1, "maximum": 9},
          doc="ResourceManagers; > 1 is active/standby (yarn.resourcemanager.ha.rm-ids), elected through the "
              "coordinator group, so [coordinator] replicas >= 3."),
    Field("am_heartbeat", float, _D.am_heartbeat, unit="emulated s", check=positive,
          doc="Between an AM's allocate calls: yarn.app.mapreduce.am.scheduler.heartbeat.interval-ms."),
    Field("max_am_attempts", int, _D.max_am_attempts, check=lambda v: None if v >= 1 else "must be >= 1",
          schema={"minimum": 1}, doc="yarn.resourcemanager.am.max-attempts."),
    Field("global_scheduling", bool, _D.global_scheduling,
          doc="Allocate on a timer over the whole cluster, not per node heartbeat: Capacity's "
              "schedule-asynchronously.enable, Fair's continuous-scheduling-enabled."),
    Field("device_policy", str, _D.device_policy, choices=lambda: ("", *DEVICE_POLICIES),
          doc="With global_scheduling, in a cell with devices ([cell] devices): the node for a container asking for "
              "some, by a device policy over each node's free whole devices (YARN counts them; as a "
              "multi-node-sorting policy ranks nodes); empty: the least loaded node, as for every other container."),
    Field("assign_multiple", bool, Computed(lambda v: v["variant"] != "fair", "true; false under Fair, as Hadoop"),
          doc="Several containers per node heartbeat (Capacity's per-node-heartbeat.multiple-assignments-enabled, "
              "Fair's assignmultiple); under FIFO false means one per heartbeat."),
    Field("max_assign", int, _D.max_assign, check=_count, schema={"minimum": 0},
          doc="Containers per heartbeat, 0 = no limit (Fair's max.assign)."),
    Field("node_locality_delay", int, _D.node_locality_delay, check=_count, schema={"minimum": 0}, variants=CAP,
          unit="missed opportunities", doc="yarn.scheduler.capacity.node-locality-delay."),
    Field("rack_locality_additional_delay", int, _D.rack_locality_additional_delay, check=_count, schema={"minimum": 0},
          variants=CAP, unit="missed opportunities",
          doc="yarn.scheduler.capacity.rack-locality-additional-delay (Hadoop's -1 is not modelled)."),
    Field("resource_calculator", str, _D.resource_calculator, choices=CALCULATORS, variants=CAP,
          doc="yarn.scheduler.capacity.resource-calculator: memory (DefaultResourceCalculator) or dominant."),
    Field("max_off_switch_per_heartbeat", int, _D.max_off_switch_per_heartbeat, check=_count, schema={"minimum": 0},
          variants=CAP, doc="per-node-heartbeat.maximum-offswitch-assignments; 0 = no limit."),
    Field("fair_policy", str, _D.fair_policy, choices=POLICIES, variants=FAIR, doc="defaultQueueSchedulingPolicy."),
    Field("locality_threshold_node", float, 0.0, check=_closed, schema={"minimum": 0, "maximum": 1}, variants=FAIR,
          otherwise=0.0, doc="yarn.scheduler.fair.locality.threshold.node, a fraction of the cluster (Hadoop's -1 is 0)."),
    Field("locality_threshold_rack", float, 0.0, check=_closed, schema={"minimum": 0, "maximum": 1}, variants=FAIR,
          otherwise=0.0, doc="yarn.scheduler.fair.locality.threshold.rack, a fraction of the cluster."),
    Field("preemption", bool, False,
          against=lambda v, got: "the FIFO scheduler never preempts" if v and got["variant"] not in CAP_FAIR else None,
          doc="Capacity's yarn.resourcemanager.scheduler.monitor.enable, Fair's yarn.scheduler.fair.preemption."),
    Field("monitor_interval", float, Computed(lambda v: MONITOR_INTERVAL.get(v["variant"], _D.monitor_interval),
                                              "3 under Capacity, 0.5 under Fair"),
          unit="emulated s", check=positive, variants=CAP_FAIR, otherwise=_D.monitor_interval,
          doc="Between preemption checks: Capacity's monitor.capacity.preemption.monitoring_interval, "
              "Fair's update-interval-ms."),
    Field("max_wait_before_kill", float, _D.max_wait_before_kill, unit="emulated s", check=non_negative, variants=CAP,
          doc="yarn.resourcemanager.monitor.capacity.preemption.max_wait_before_kill."),
    Field("total_preemption_per_round", float, _D.total_preemption_per_round, check=_unit,
          schema={"exclusiveMinimum": 0, "maximum": 1}, variants=CAP, doc="...preemption.total_preemption_per_round."),
    Field("max_ignored_over_capacity", float, _D.max_ignored_over_capacity, check=non_negative, variants=CAP,
          doc="...preemption.max_ignored_over_capacity."),
    Field("natural_termination_factor", float, _D.natural_termination_factor, check=_unit,
          schema={"exclusiveMinimum": 0, "maximum": 1}, variants=CAP, doc="...preemption.natural_termination_factor."),
    Field("min_share_preemption_timeout", float, math.inf, unit="emulated s", check=non_negative, variants=FAIR,
          otherwise=math.inf, doc="Allocation file; omit the key for never."),
    Field("fair_share_preemption_timeout", float, math.inf, unit="emulated s", check=non_negative, variants=FAIR,
          otherwise=math.inf, doc="Allocation file; omit the key for never."),
    Field("fair_share_preemption_threshold", float, _D.fair_share_preemption_threshold, check=_closed,
          schema={"minimum": 0, "maximum": 1}, variants=FAIR, doc="Allocation file."),
    Field("rm_lease_ms", float, _D.rm_lease_ms, unit="wall ms", check=lambda v: None if v >= 50 else "must be >= 50",
          schema={"minimum": 50}, doc="How long an active RM's lease lasts unrenewed."),
    Field("am_pools", int, _D.am_pools, check=lambda v: None if 1 <= v <= MAX_AM_POOLS else f"must be 1 to {MAX_AM_POOLS}",
          schema={"minimum": 1, "maximum": MAX_AM_POOLS},
          doc="Actors the ApplicationMasters' logic runs in (schedlab's; each AM is a process in Hadoop)."),
    Field("am_expiry", float, _D.am_expiry, unit="emulated s", check=positive,
          doc="How long an AM may stay silent before the RM starts a new attempt: yarn.am.liveness-monitor.expiry-interval-ms."),
)
FIELD = {f.name: f for f in FIELDS}
CAPACITY_KEYS = tuple(f.name for f in FIELDS if f.variants == CAP)
FAIR_KEYS = tuple(f.name for f in FIELDS if f.variants == FAIR)


def parse_yarn(t: Table, ctx: SectionContext) -> YarnSpec:
    """The ``[yarn]`` section (``t``) as a YarnSpec, or ScenarioError (one
    line: file, key, problem).

    Queues: every queue is declared, as Hadoop requires, except a parent
    path that is *implied*: undeclared, with exactly one child, and the only
    child of its own parent (``root.a.b`` alone implies ``root.a``). Such a
    parent can only have capacity 100 and adds no setting; any other
    undeclared parent is an error, since its capacity or weight among its
    siblings would be a guess."""
    scheduler = read_field(t, FIELD["scheduler"])
    _refuse_other_keys(t, scheduler)
    am = _am(t, ctx.machine_classes, ctx.resources)
    queues, implied = parse_queues(t, ctx, scheduler)
    rms = read_field(t, FIELD["rms"])
    if rms > 1 and ctx.coordinator.replicas < 3:
        t.fail(t.key("rms"), "standby ResourceManagers elect their leader through the coordinator: "
                             "set [coordinator] replicas >= 3")
    if rms == 1 and ctx.coordinator.replicas > 1:
        ctx.top.fail("coordinator.replicas", "a single ResourceManager runs no coordinator group: set replicas = 1, "
                                             "or yarn.rms > 1 (standby RMs elect the active one through it)")
    spec = YarnSpec(queues=queues, implied=implied, scheduler=scheduler, am=am, rms=rms,
                    **parse_fields(t, FIELDS, variant=scheduler, skip=("scheduler", "rms")))
    _resource_types(t, spec, ctx.resources)
    if spec.am_expiry <= 2 * spec.am_heartbeat:
        t.fail(t.key("am_expiry"), f"must be more than twice am_heartbeat ({spec.am_heartbeat:g} s): "
                                   "a live AM would be expired between two calls")
    if spec.device_policy and not spec.global_scheduling:
        t.fail(t.key("device_policy"), "ranks nodes for global scheduling: set global_scheduling = true (a node "
                                       "heartbeat offers one node, there is no node to choose)")
    t.done()
    return spec


def _refuse_other_keys(t: Table, scheduler: str) -> None:
    """A key the selected scheduler never reads is a mistake in the file."""
    owners = [("Capacity", CAPACITY_KEYS, scheduler == "capacity"), ("Fair", FAIR_KEYS, scheduler == "fair")]
    for k in t.data:
        for who, keys, mine in owners:
            if k in keys and not mine:
                t.fail(t.key(k), f"is a key of the {who} scheduler; this section has scheduler = {scheduler!r}")
        if k == "monitor_interval" and scheduler == "fifo":
            t.fail(t.key(k), "is a preemption key; the FIFO scheduler never preempts")


def _resource_types(t: Table, spec: YarnSpec, resources: tuple[str, ...]) -> None:
    """Resource types beyond memory and vcores need the DominantResourceCalculator:
    Hadoop's DefaultResourceCalculator (the Capacity scheduler's default, FIFO's,
    and the Fair scheduler's "fair" policy) compares memory alone, so a GPU
    container would be placed where memory fits, GPU or not (Hadoop's GPU
    guide requires DominantResourceCalculator). Refused, not run wrong."""
    further = [r for r in resources if r not in BASE]
    if not further:
        return
    key, fix = {"capacity": ("resource_calculator", 'resource_calculator = "dominant"'),
                "fair": ("fair_policy", 'fair_policy = "drf"')}.get(
        spec.scheduler, ("scheduler", 'scheduler = "capacity" and resource_calculator = "dominant"'))
    dominant = (spec.scheduler == "capacity" and spec.resource_calculator == "dominant") or (
        spec.scheduler == "fair" and spec.fair_policy == "drf")
    if not dominant:
        t.fail(t.key(key), f"resource types ({', '.join(further)}) are scheduled only with the DominantResourceCalculator "
                           f"(memory alone is compared otherwise, as in Hadoop): set {fix}")


def _fmt(v: tuple[float, ...] | np.ndarray, resources: tuple[str, ...]) -> str:
    return ", ".join(f"{r}={float(x):g}" for r, x in zip(resources, v))


def _am(t: Table, machine_classes: tuple[MachineClass, ...], resources: tuple[str, ...]) -> tuple[float, ...]:
    at = t.sub("am", default={})
    am = amounts(parse_fields(at, AM_FIELDS, values={"resources": resources}), resources)
    at.done()
    if not any(all(a <= c + 1e-9 for a, c in zip(am, mc.capacity)) for mc in machine_classes):
        big = max(machine_classes, key=lambda mc: (mc.capacity[MEM], mc.capacity))
        t.fail(t.key("am"), f"the AM container ({_fmt(am, resources)}) fits no machine class; "
                            f"the largest is {big.name!r} ({_fmt(big.capacity, resources)})")
    return am


def check_sizes(top: Table, sc: Scenario, tasks: dict[str, float]) -> None:
    """The RM holds (and with ``rms`` > 1 replicates) every application's
    input locations: tasks x data_replicas machine ids over all queues must
    stay within MAX_TASKS. Then ``check_fit``: this is the one hook that
    sees both the section and the workload's requests, before anything
    starts."""
    from schedlab.schedulers.scenario.limits import MAX_TASKS, count

    ys: YarnSpec = sc.section
    ids = [sum(tasks.get(c, 0.0) for c in q.classes) * min(q.data_replicas, sc.cell.machines) for q in ys.queues]
    if ids and sum(ids) > MAX_TASKS:
        i = max(range(len(ids)), key=lambda j: ids[j])
        top.fail(f"yarn.queues[{i}].data_replicas",
                 f"~{count(sum(ids))} machine ids of task input for the ResourceManager to hold (tasks x data_replicas, "
                 f"{count(ids[i])} from this queue); at most {count(MAX_TASKS)}")
    check_fit(top, sc)


def check_fit(top: Table, sc: Scenario) -> None:
    """An application holds its AM container while its tasks run, so its
    leaf queue must be able to hold the AM and the largest task at once:
    within the queue's absolute maximum capacity of the cell (Capacity) or
    the least max share on its path (Fair). Otherwise its jobs would wait
    forever. (A task larger than every machine is the generic check's,
    ``workload.classes[i]``; FIFO has no queue limits.)"""
    ys: YarnSpec = sc.section
    if ys.scheduler == "fifo":
        return
    names = sc.cell.resources
    tree = QueueTree.build(ys.queue_specs(), check_capacity=ys.scheduler == "capacity", width=len(names))
    total = sum((np.asarray(mc.capacity, dtype=np.float64) * mc.count for mc in sc.cell.machine_classes), np.zeros(len(names)))
    am = np.asarray(ys.am)
    section = top.data.get("yarn")
    declared = isinstance(section, dict) and "queues" in section  # else the default queue: the AM is to blame
    for i, q in enumerate(ys.queues):
        if ys.scheduler == "capacity":
            ceiling, what = tree[q.name].abs_max_capacity * total, "max_capacity"
        else:
            ceiling = np.min([tree[p].max_share for p in tree.path(q.name)[1:]], axis=0)
            what = "max_share"
        for jc in sc.workload.classes:
            if jc.name not in q.classes:
                continue
            need = am + np.array([d.maximum() for d in jc.request])
            if np.any(need > ceiling + 1e-9):
                key = f"yarn.queues[{i}].classes" if declared else "yarn.am"
                top.fail(key, f"an application of job class {jc.name!r} holds its AM and a task at once "
                              f"({_fmt(need, names)}), more than queue {q.name} may ever hold "
                              f"({_fmt(ceiling, names)}: {what} along its path)")


# ------------------------------------------------------------ the cores, from a spec


def deciders(sc: Scenario) -> list[Decider]:
    """The active ResourceManager's scheduler decides every placement. YARN
    models no think time; its cadence is the AM heartbeat, so that is what
    the run compares with a round trip (a substrate slower than it measures
    Ray, not YARN)."""
    ys: YarnSpec = sc.section
    return [Decider(RM_DECIDER, ys.am_heartbeat, 0.0)]


# ------------------------------------------------------------ the registration

RM_NAME = RM_DECIDER  # the ResourceManager's actor (rms = 1), and the route jobs go to (any rms)
RM_ROLE = "rm"  # its role (an actor name and a role name must differ: chaos targets either)
POOL_ROLE = "am_pool"
RM_LEADER_KILL = "kill_rm"  # kill the active ResourceManager (rms > 1)


def rm_name(i: int) -> str:
    """ResourceManager ``i`` of an active/standby set (rms > 1), numbered
    ``<role>-<i>`` as every role that elects a leader is."""
    return f"{RM_ROLE}-{i}"


def rm_names(ys: YarnSpec) -> list[str]:
    return [RM_NAME] if ys.rms == 1 else [rm_name(i) for i in range(ys.rms)]


def pool_names(ys: YarnSpec) -> list[str]:
    return [f"am-pool-{i}" for i in range(ys.am_pools)]


def roster(sc: Scenario) -> dict[str, list[str]]:
    ys: YarnSpec = sc.section
    return {RM_ROLE: rm_names(ys), POOL_ROLE: pool_names(ys)}


def actors(sc: Scenario) -> list[tuple[str, int]]:
    ys: YarnSpec = sc.section
    return [("yarn.rms", ys.rms), ("yarn.am_pools", ys.am_pools)]


def example(classes: tuple[str, ...]) -> dict:
    """Two Capacity queues with preemption; AMs expire fast enough for a
    killed AM pool to be noticed within the conformance run, with attempts
    to spare (a pool restarted slowly on a loaded machine costs its AMs two
    expiries); an active and a standby
    ResourceManager (the run needs [coordinator] replicas >= 3); the
    DominantResourceCalculator, so a cell with resource types runs it too."""
    first, rest = classes[:1], classes[1:]
    return {
        "scheduler": "capacity", "resource_calculator": "dominant", "preemption": True, "monitor_interval": 3.0, "max_wait_before_kill": 5.0,
        "node_locality_delay": 4, "am": {"cpu": 0.5, "mem": 1.0}, "am_heartbeat": 1.0, "am_expiry": 20.0,
        "max_am_attempts": 4, "rms": 2,
        "queues": [
            {"name": "batch", "capacity": 60, "max_capacity": 100, "classes": list(first), "data_replicas": 2},
            {"name": "other", "capacity": 40, "max_capacity": 100, "classes": list(rest)},
        ],
    }


def _parse(t: Table, ctx: SectionContext) -> YarnSpec:
    return parse_yarn(t, ctx)


SPEC = ArchSpec(
    name="yarn",
    no_gang="YARN has no gang scheduling: an ApplicationMaster gathers its containers one by one (an AM-level gang is not modelled)",
    title="YARN (a ResourceManager, standbys optional; ApplicationMasters per job; Capacity/Fair/FIFO queues)",
    events=EVENTS,
    parse=_parse,
    roster=roster,
    actors=actors,
    deciders=deciders,
    roles=(
        # One RM (rms = 1) is restarted in place: no leader to kill. With
        # standbys the active one holds the coordinator group's lease.
        Role(RM_ROLE, routed=True, recovers=True, kill_leader=RM_LEADER_KILL, leader_from=2,
             about="a ResourceManager: admits applications, schedules containers, answers NodeManagers and AMs; "
                   "with rms > 1 one is active and standbys take over"),
        Role(POOL_ROLE, about="an actor running ApplicationMasters (their AMs are lost with it; the RM expires them)"),
    ),
    peers={"machine": (RM_ROLE, "coordinator"), RM_ROLE: ("coordinator", "machine", POOL_ROLE),
           POOL_ROLE: (RM_ROLE, "coordinator"), "coordinator": ("coordinator",)},
    example=example,
    live="schedlab.actors.archs.yarn.architecture:ARCHITECTURE",
    section_required=False,  # a missing [yarn] means Capacity with one root.default queue
    max_replicas=9,  # a coordinator group only with rms > 1 (parse_yarn refuses one for a single RM)
    check_sizes=check_sizes,
    fields=FIELDS,
    showcase="yarn_queues",
    further_resources=("resource types (yarn.resource-types): container capabilities, queue shares and the "
                       "DominantResourceCalculator cover every type; the DefaultResourceCalculator compares memory only, as "
                       "Hadoop's does"),
)
