"""Scenarios as inert, validated, frozen data.

``parse_scenario(data, source)`` turns a TOML-shaped dict into a ``Scenario``
or raises ``ScenarioError`` with one line naming the file, the key and the
problem. Nothing here starts anything: a scenario is checked whole before any
actor exists.
"""
from __future__ import annotations

import copy
from dataclasses import replace

from schedlab.schedulers import arch as registry
from schedlab.schedulers.arch import COMMON_ROLES, SectionContext
from schedlab.schedulers.faults.liveness import LivenessSpec
from schedlab.schedulers.faults.plan import FaultSpec, Roster, parse_fault
from schedlab.schedulers.model.cluster import MachineClass, host_count
from schedlab.schedulers.model.devices import ask_problem, count_problem
from schedlab.schedulers.model.inflation import Inflation
from schedlab.schedulers.model.jobs import JobKind
from schedlab.schedulers.model.resources import BASE
from schedlab.schedulers.model.workload import Dist, JobClass
from schedlab.schedulers.scenario import section_fields as fields
from schedlab.schedulers.scenario.css import read_css
from schedlab.schedulers.scenario.fields import amounts, parse_fields, read_field
from schedlab.schedulers.scenario.limits import CLUSTER, Limits, check_sizes
from schedlab.schedulers.scenario.gpu_trace import read_nodes, read_trace_class
from schedlab.schedulers.scenario.swf_class import read_swf_class
from schedlab.schedulers.scenario.trace_workload import Replay, read_replay
from schedlab.schedulers.scenario.spec import (CellSpec, CoordinatorSpec, MetricsSpec, Scenario, SubstrateSpec,
                                               WorkloadSpec)
from schedlab.schedulers.scenario.toml_table import ScenarioError, Table, read_dist, table_array

__all__ = ["FaultSpec", "roster_for", "Scenario", "ScenarioError", "parse_comparison", "parse_scenario"]


def _machine_class(t: Table, index: int, resources: tuple[str, ...]) -> MachineClass:
    v = parse_fields(t, fields.MACHINE_CLASS, values={"index": index, "resources": resources})
    t.done()
    return MachineClass(name=v["name"], count=v["count"], capacity=amounts(v, resources), racks=v["racks"],
                        labels=tuple(v["labels"]), model=v["model"])


def _job_class(t: Table, cell: CellSpec) -> JobClass:
    resources = cell.resources
    if "swf" in t.data:
        return read_swf_class(t, resources)
    if "gpu_trace" in t.data:
        return read_trace_class(t, resources, cell.devices, cell.machine_classes)
    v = parse_fields(t, fields.JOB_CLASS, values={"resources": resources})
    if "gang_timeout" in t.data and not v["gang"]:
        t.fail(t.key("gang_timeout"), "is for a gang: set gang = true")
    t.done()
    return JobClass(
        name=v["name"],
        kind=JobKind(v["kind"]),
        interarrival=Dist("exponential", mean=v["interarrival"]),
        interarrival_mode=v["interarrival_mode"],
        start=v["start"],
        tasks=v["tasks"],
        duration=v["duration"],
        request=amounts(v, resources),
        priority=v["priority"],
        one_duration=v["rigid"],
        bursts=v["bursts"],
        models=tuple(v["models"]),
        gang_timeout=v["gang_timeout"] if v["gang"] else None,
    )


def parse_scenario(data: dict, source: str = "<scenario>", limits: Limits | None = None) -> Scenario:
    """``data`` as a Scenario, or ScenarioError (one line: file, key, problem).

    Also refuses a scenario too big to build under ``limits``, from its
    numbers alone and before anything O(machines) or O(jobs) is made, so a
    typo in a size fails in milliseconds. The caller reads the limits where
    the run will happen (``actors.engines.limits.limits_for``: this
    machine's for the embedded Ray, a cluster's with an address); without
    them the bound is Ray's own envelope (``limits.CLUSTER``), since this
    module never looks at the machine."""
    top = Table(data, "", source)
    if "sites" in data:
        top.fail("sites", "this file is a federation of sites: run it with `schedlab run` (one cell per scenario elsewhere)")
    if "architectures" in data:
        top.fail("architectures", "this file compares architectures: run it with `schedlab compare`")
    head = parse_fields(top, fields.TOP, values={"source": source})
    arch, duration = head["architecture"], head["duration"]
    spec = registry.spec_of(arch)

    wd = data.get("workload")
    traced = isinstance(wd, dict) and "trace" in wd
    ct = top.sub("cell", default={}) if traced else top.sub("cell")
    resources = tuple(read_field(ct, fields.RESOURCES))
    taken = sorted(set(resources) & fields.resource_keys_taken())
    if taken:
        ct.fail(ct.key("resources"), f"{taken[0]!r} is a key of a table that has a key per resource: name the resource otherwise")
    own_machines = "machine_classes" in ct.data or "nodes" in ct.data
    wt = top.sub("workload")
    replay = read_replay(wt.sub("trace"), resources, own_machines) if traced else None
    mclasses = tuple(_machine_class(x, i, resources) for i, x in enumerate(table_array(ct, "machine_classes"))) \
        if "machine_classes" in ct.data or not (own_machines or traced) else \
        (replay.machines if replay is not None else ())
    cell = CellSpec(mclasses, resources=resources, **parse_fields(ct, fields.CELL, skip=("resources",)))
    if cell.devices is not None and cell.devices not in resources[len(BASE):]:
        ct.fail(ct.key("devices"), f"{cell.devices!r} is not one of the further resources [cell] resources declares")
    if "nodes" in ct.data:
        cell = replace(cell, machine_classes=mclasses + read_nodes(ct.sub("nodes"), resources, cell.devices))
    ct.done()

    if replay is not None:
        jclasses, standing, standing_limit = _from_replay(wt, replay)
    elif "css" in wt.data:
        if "classes" in wt.data:
            wt.fail(wt.key("classes"), "give either [[workload.classes]] or [workload.css] (which makes the classes)")
        jclasses, standing, standing_limit = read_css(wt.sub("css"), resources)
    else:
        jclasses, standing, standing_limit = tuple(_job_class(x, cell) for x in table_array(wt, "classes")), (), 1.0
    names = [jc.name for jc in jclasses]
    if len(set(names)) != len(names):
        wt.fail(wt.key("classes"), "job class names must be unique")
    workload = WorkloadSpec(jclasses, parse_fields(wt, fields.WORKLOAD)["prefill_utilization"], standing, standing_limit,
                            _inflation(wt, cell))
    wt.done()

    coord_data = top.data.get("coordinator", {})
    if isinstance(coord_data, dict) and "replicas" not in coord_data and spec.default_replicas != 1:
        top.data["coordinator"] = dict(coord_data, replicas=spec.default_replicas)
    coordinator = _coordinator(top.sub("coordinator", default={}))
    if coordinator.replicas < spec.min_replicas:
        top.fail("coordinator.replicas", f"architecture {arch!r} needs {spec.min_replicas} or more replicas")
    if coordinator.replicas > spec.max_replicas:
        top.fail("coordinator.replicas", f"architecture {arch!r} runs no coordinator group: replicas must be 1")
    further = [r for r in resources if r not in BASE]
    if further and not spec.further_resources:
        ct.fail(ct.key("resources"), f"architecture {arch!r} cannot schedule {', '.join(map(repr, further))}: "
                                     f"{spec.no_further_resources}")
    _check_devices(ct, wt, cell, jclasses, spec)
    _check_gangs(wt, jclasses, spec)
    _check_fit(wt, cell, jclasses)
    ctx = SectionContext(tuple(names), mclasses, coordinator, top, resources)
    section = spec.parse(top.sub(arch) if spec.section_required else top.sub(arch, default={}), ctx)
    for other in registry.names():
        if other != arch and other in top.data:
            top.fail(other, f"is for architecture = {other!r}; this scenario is {arch!r}")

    mt = top.sub("metrics", default={})
    metrics = MetricsSpec(**parse_fields(mt, fields.METRICS))
    mt.done()
    st = top.sub("substrate", default={})
    substrate = SubstrateSpec(**parse_fields(st, fields.SUBSTRATE), latency=read_dist(st, "latency", default=SubstrateSpec().latency))
    st.done()
    lt = top.sub("liveness", default={})
    liveness = LivenessSpec(**parse_fields(lt, fields.LIVENESS))
    lt.done()
    sc = Scenario(head["name"], arch, head["seed"], head["time_scale"], duration, cell, workload, section, metrics, substrate,
                  coordinator, (), head["description"], source, liveness, head["engine"])
    check_sizes(top, sc, limits or CLUSTER)  # before roster_for: it names every host actor
    roster = roster_for(sc)
    faults = tuple(parse_fault(x, duration, roster) for x in (table_array(top, "faults") if "faults" in top.data else []))
    joins = tuple(f for f in replay.faults if f.at < duration) if replay is not None else ()
    if joins and sc.cell.machines_per_actor != 1:
        ct.fail(ct.key("machines_per_actor"), "machines join and leave one by one as the trace says: each needs a host "
                                              "actor of its own (1), or set [workload.trace] machine_events = false")
    faults += joins
    top.done()
    return replace(sc, faults=tuple(sorted(faults, key=lambda f: f.at)))


def _from_replay(wt: Table, replay: Replay) -> tuple[tuple[JobClass, ...], tuple, float]:
    for other in ("classes", "css"):
        if other in wt.data:
            wt.fail(wt.key(other), "give one workload: [workload.trace] makes the job classes")
    return replay.classes, replay.standing, 1.0


def roster_for(sc: Scenario, nodes: tuple[str, ...] = ()) -> Roster:
    """The actors a run of ``sc`` starts, by role (what faults can hit), with
    what the fault vocabulary needs to know of each role."""
    spec = registry.spec_of(sc.architecture)
    replicas = [f"coordinator-{i}" for i in range(sc.coordinator.replicas)] if sc.coordinator.replicas > 1 else []
    members: dict[str, list[str]] = {
        "machine": [f"machine-host-{i}" for i in range(host_count(sc.cell.machines, sc.cell.machines_per_actor))],
        "coordinator": replicas,
        **spec.roster(sc),
    }
    roles = {r.name: r for r in (*COMMON_ROLES, *spec.roles)}
    leaders = tuple(r for r in members if roles[r].kill_leader and members[r] and len(members[r]) >= roles[r].leader_from)
    return Roster(
        members,
        restartable=frozenset(r for r in members if not roles[r].no_restart),
        nodes=nodes,
        leader_roles=leaders,
        kill_leader={roles[r].kill_leader: r for r in leaders},
        peers={r: tuple(p for p in spec.peers.get(r, ()) if p in members) for r in members},
        no_restart={r: roles[r].no_restart for r in members if roles[r].no_restart},
        unavailable=_unavailable_leader_kills(members),
    )


def _unavailable_leader_kills(members: dict[str, list[str]]) -> dict[str, str]:
    """Leader kills of roles this run has no leader for, and what it would take."""
    out = {}
    for spec in (None, *registry.registry().values()):
        for r in COMMON_ROLES if spec is None else spec.roles:
            if not r.kill_leader or r.kill_leader in out:
                continue
            if not members.get(r.name):
                out[r.kill_leader] = "[coordinator] replicas >= 3" if spec is None else f'architecture "{spec.name}"'
            elif len(members[r.name]) < r.leader_from:
                out[r.kill_leader] = f"{r.leader_from} or more {r.name} actors (one is restarted in place: kill it by name)"
    return out


def _coordinator(t: Table) -> CoordinatorSpec:
    for k, why in fields.COORDINATOR_REPLACED.items():
        if k in t.data:
            t.fail(t.key(k), why)
    got = parse_fields(t, fields.COORDINATOR)
    t.done()
    e = got["election_ms"]
    return CoordinatorSpec(**dict(got, election_ms=e if isinstance(e, float) else (float(e[0]), float(e[1]))))


def _check_devices(ct: Table, wt: Table, cell: CellSpec, classes: tuple[JobClass, ...], spec: registry.ArchSpec) -> None:
    """Devices are whole on machines; a task's ask is whole devices or a
    share of one; a model named is some machine class's; an architecture
    that only counts devices gets no ask a count cannot honour."""
    mts = table_array(ct, "machine_classes") if "machine_classes" in ct.data else []
    jts = table_array(wt, "classes") if "classes" in wt.data else []
    if cell.devices is None:
        for ts, classes_, key in ((mts, cell.machine_classes, "model"), (jts, classes, "models")):
            for t, c in zip(ts, classes_):
                if getattr(c, key):
                    t.fail(t.key(key), "names device models, but [cell] devices names no resource held as devices")
        return
    d = cell.resources.index(cell.devices)
    for t, mc in zip(mts, cell.machine_classes):
        if (why := count_problem(mc.capacity[d])) is not None:
            t.fail(t.key(cell.devices), why)
    known = {mc.model for mc in cell.machine_classes if mc.model}
    for t, jc in zip(jts, classes):
        key = cell.devices if cell.devices in t.data or "gpu_trace" not in t.data else "gpu_trace"
        ask = jc.request[d]
        if ask.kind not in ("constant", "empirical"):
            t.fail(t.key(key), "a device ask is a number or an empirical distribution of them")
        for a in (ask.value,) if ask.kind == "constant" else ask.values:
            if (why := ask_problem(a)) is not None:
                t.fail(t.key(key), why)
        unknown = sorted(set(jc.models) - known)
        if unknown:
            t.fail(t.key("models"), f"no machine class has model {unknown[0]!r} (models: {', '.join(sorted(known)) or 'none'})")
        if not spec.devices:
            share = any(0 < a < 1 for a in ((ask.value,) if ask.kind == "constant" else ask.values))
            if share or jc.models:
                t.fail(t.key(key if share else "models"),
                       f"architecture {spec.name!r} counts {cell.devices} as a number per machine: "
                       f"{'a share of one device' if share else 'a model constraint'} needs one that places devices "
                       f"({', '.join(s.name for s in registry.registry().values() if s.devices)})")


def _inflation(wt: Table, cell: CellSpec) -> Inflation | None:
    if "inflate" not in wt.data:
        return None
    it = wt.sub("inflate")
    v = parse_fields(it, fields.INFLATE, values={"devices": cell.devices})
    it.done()
    if v["resource"] not in cell.resources:
        it.fail(it.key("resource"), f"{v['resource']!r} is not one of [cell] resources ({', '.join(cell.resources)})")
    return Inflation(cell.resources.index(v["resource"]), v["until"], v["gap"])


def _check_gangs(wt: Table, classes: tuple[JobClass, ...], spec: registry.ArchSpec) -> None:
    """A gang class on an architecture that cannot start a job's tasks together is refused, saying why."""
    if spec.gang:
        return
    for i, jc in enumerate(classes):
        if jc.gang_timeout is not None:
            wt.fail(f"{wt.key('classes')}[{i}].gang", f"architecture {spec.name!r} cannot start a job's tasks "
                    f"together: {spec.no_gang} (gangs run on: "
                    f"{', '.join(s.name for s in registry.registry().values() if s.gang)})")


def _check_fit(t: Table, cell: CellSpec, classes: tuple[JobClass, ...]) -> None:
    """A job class whose largest task fits no machine class (of the device
    models it allows) would only ever be abandoned."""
    for i, jc in enumerate(classes):
        if jc.trace and jc.trace[0].request is not None:
            continue  # each job checked as it was read
        biggest = [d.maximum() for d in jc.request]
        allowed = [mc for mc in cell.machine_classes if not jc.models or mc.model in jc.models]
        if not any(all(b <= c + 1e-9 for b, c in zip(biggest, mc.capacity)) for mc in allowed):
            asked = ", ".join(f"{r}={b:g}" for r, b in zip(cell.resources, biggest))
            t.fail(f"{t.key('classes')}[{i}]", f"a task of job class {jc.name!r} ({asked}) fits no machine class")


def parse_comparison(data: dict, source: str = "<scenario>", limits: Limits | None = None) -> list[Scenario]:
    """One scenario per architecture to compare, same cell, workload and seed.

    ``architectures = [...]`` names them (default: every
    registered architecture with a section in the file, else the file's
    own); each gets the file with only its own section. An architecture
    whose section is optional runs on its defaults when the file has none."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: <top level>: must be a table")
    known = registry.names()
    archs = data.get("architectures")
    if archs is None:
        archs = [a for a in known if a in data] or [data.get("architecture", registry.default_name())]
    if not isinstance(archs, list) or not archs or len(set(map(str, archs))) != len(archs):
        raise ScenarioError(f"{source}: architectures: must be a non-empty list of distinct names (got {archs!r})")
    out = []
    for a in archs:
        if a not in known:
            raise ScenarioError(f"{source}: architectures: {a!r} is not one of {', '.join(known)}")
        d = copy.deepcopy(data)
        d.pop("architectures", None)
        d["architecture"] = a
        for other in known:
            if other != a:
                d.pop(other, None)
        most = registry.spec_of(a).max_replicas
        coord = d.get("coordinator")
        if isinstance(coord, dict) and isinstance(coord.get("replicas"), int) and coord["replicas"] > most:
            # The shared [coordinator] is for those that run a group; one
            # that runs none (a single head node) is compared as it is.
            d["coordinator"] = dict(coord, replicas=most)
        out.append(parse_scenario(d, source, limits))
    return out
