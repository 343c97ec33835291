"""The ``[kubernetes]`` scenario section: priority classes, the labels and
taints of each machine class's nodes, a pod template per job class
(deployment or job, priority class, scheduler profile, labels, spread,
(anti-)affinity, tolerations, a disruption budget), scheduler profiles
(plugins, weights, scoring strategy, percentageOfNodesToScore). The node
lifecycle (when a silent kubelet's node is NotReady and its pods evicted)
is the house's shared host watch, set in ``[liveness]``.

Every mistake is one line naming file, key and problem (``Table.fail``),
before anything starts: an unknown plugin, a weight that is not a positive
integer, a profile without a Bind plugin, a priority class that does not
exist, a topology key no node has,
a pod that no node can ever hold (``check_fit``, once the whole scenario
is parsed).

Nodes get three labels of their own, as kubelets and cloud providers set
them: ``kubernetes.io/hostname`` (``node-<i>``), the rack
(``topology.schedlab.io/rack`` = ``rack-<r>``) and the zone
(``topology.kubernetes.io/zone``: racks are grouped ``racks_per_zone`` to a
zone), so topology spread and anti-affinity have domains without any
configuration.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from schedlab.schedulers.placement.device_claims import DEVICE_POLICIES

from schedlab.schedulers.archs.kubernetes.objects import (
    HOSTNAME,
    RACK,
    ZONE,
    Labels,
    NodeAffinity,
    PodAffinityTerm,
    PreemptionPolicy,
    Requirement,
    Selector,
    SpreadConstraint,
    Taint,
    Toleration,
    label_dict,
    labels,
)
from schedlab.schedulers.archs.kubernetes.workloads import KINDS
from schedlab.schedulers.scenario.fields import Field, parse_fields, read_field
from schedlab.schedulers.scenario.toml_table import Table, non_negative, one_of, positive, table_array

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
OPERATORS = ("Equal", "Exists")
SELECTOR_OPS = ("In", "NotIn", "Exists", "DoesNotExist")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
SCORING_STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
DEFAULT_SCHEDULER = "default-scheduler"
BUILTIN_LABEL_KEYS = (HOSTNAME, RACK, ZONE)


@dataclass(frozen=True)
class PriorityClass:
    name: str
    value: int
    preemption_policy: PreemptionPolicy = "PreemptLowerPriority"
    global_default: bool = False


@dataclass(frozen=True)
class NodeClass:
    """The labels and taints of one machine class's nodes."""

    machine_class: str
    labels: Labels = ()
    taints: tuple[Taint, ...] = ()


@dataclass(frozen=True)
class PodTemplate:
    """What every pod of a job class looks like. ``spread`` and
    ``anti_affinity`` select the pods of the same template by its labels
    (the usual pattern: spread a deployment's own replicas).
    ``kind``: ``job`` (a pod whose run ends is done) or ``deployment`` (it
    is restarted in place; ``workloads.on_end``).
    ``max_unavailable``: a PodDisruptionBudget over each workload of the
    class (None: none)."""

    classes: tuple[str, ...]
    kind: str = "job"
    priority_class: str = ""
    scheduler_name: str = DEFAULT_SCHEDULER
    labels: Labels = ()
    node_selector: Labels = ()
    affinity: NodeAffinity = field(default_factory=NodeAffinity)
    tolerations: tuple[Toleration, ...] = ()
    spread: tuple[SpreadConstraint, ...] = ()
    pod_affinity: tuple[PodAffinityTerm, ...] = ()
    preferred_pod_affinity: tuple[tuple[int, PodAffinityTerm], ...] = ()
    max_unavailable: int | None = None


@dataclass(frozen=True)
class ProfileSpec:
    """A scheduler profile: ``plugins`` None means the default set less
    ``disabled``; ``weights`` override the defaults per score plugin."""

    name: str = DEFAULT_SCHEDULER
    plugins: tuple[str, ...] | None = None
    disabled: tuple[str, ...] = ()
    weights: tuple[tuple[str, int], ...] = ()
    scoring_strategy: str = "LeastAllocated"
    shape: tuple[tuple[float, float], ...] = ((0.0, 10.0), (100.0, 0.0))  # RequestedToCapacityRatio
    percentage_of_nodes_to_score: int = 0  # 0: the adaptive default
    t_pod: float = 0.0  # emulated s of thinking per scheduling cycle
    candidates: int | str = 0  # stop at this many feasible nodes, or "log2" (Nomad's limit); 0: off
    workers: int = 1  # scheduler actors sharing the profile's pods by job (Nomad's workers)
    device_policy: str = "best_fit"  # DeviceShare's, in a cell with devices


@dataclass(frozen=True)
class KubeSpec:
    priority_classes: tuple[PriorityClass, ...] = ()
    nodes: tuple[NodeClass, ...] = ()
    templates: tuple[PodTemplate, ...] = ()
    profiles: tuple[ProfileSpec, ...] = (ProfileSpec(),)
    racks_per_zone: int = 1
    heartbeat: float = 10.0  # emulated s: the kubelet's nodeStatusUpdateFrequency

    def template_of(self, job_class: str) -> PodTemplate:
        for tpl in self.templates:
            if job_class in tpl.classes:
                return tpl
        return PodTemplate(classes=(job_class,))

    def priority_of(self, tpl: PodTemplate) -> tuple[int, PreemptionPolicy]:
        """(value, preemption policy) of a template's class, or of the
        global default (0, PreemptLowerPriority without one)."""
        for pc in self.priority_classes:
            if pc.name == tpl.priority_class or (not tpl.priority_class and pc.global_default):
                return pc.value, pc.preemption_policy
        return 0, "PreemptLowerPriority"


# ------------------------------------------------------------ the section's keys, described once
# Each table lists its keys in the order their parser reads them (the first
# bad one is the one reported); structured keys (``nested``) are read by the
# parsers below, which check them against the cell, the plugin registry and
# each other.

_STRINGS = {"items": {"type": "string"}}
_LABELS = {"additionalProperties": {"type": "string"}}


def _empty(v: str) -> str | None:
    return None if v else "must not be empty"


def _effect(v: str) -> str | None:
    return None if not v or v in EFFECTS else f"must be one of {', '.join(EFFECTS)} (or empty: all)"


_PC = PriorityClass("", 0)
PRIORITY_CLASS_FIELDS = (
    Field("name", str, check=_empty, doc="The PriorityClass's name (unique)."),
    Field("value", int, check=lambda v: None if -2_147_483_648 <= v <= 1_000_000_000
          else "must be at most 1000000000 (higher values are reserved for system classes)",
          schema={"minimum": -2_147_483_648, "maximum": 1_000_000_000}, doc="Its priority: higher is scheduled first."),
    Field("preemption_policy", str, _PC.preemption_policy, choices=PREEMPTION_POLICIES,
          doc="Whether its pods may preempt lower-priority ones."),
    Field("global_default", bool, _PC.global_default, doc="The class of pods that name none (at most one)."),
)

TAINT_FIELDS = (
    Field("key", str, doc="The taint's key."),
    Field("value", str, "", doc="Its value."),
    Field("effect", str, "NoSchedule", choices=EFFECTS, doc="NoSchedule, PreferNoSchedule or NoExecute."),
)

NODE_FIELDS = (
    Field("class", str, doc="The machine class whose nodes these are (each at most once)."),
    Field("labels", dict, {}, nested=True, schema=_LABELS,
          doc="Labels of its nodes (besides hostname, rack and zone, which schedlab sets)."),
    Field("taints", list, (), nested=True, of=TAINT_FIELDS, doc="[[...taints]]: taints of its nodes."),
)

_PS = ProfileSpec()
PROFILE_FIELDS = (
    Field("name", str, _PS.name, check=_empty, doc="The profile's schedulerName (unique)."),
    Field("plugins", list, None, nested=True, schema=_STRINGS,
          doc="The plugins it runs (default: the default set); registered names; one must Bind."),
    Field("disabled", list, [], nested=True, schema=_STRINGS, doc="Plugins taken out of the set."),
    Field("weights", dict, {}, nested=True, schema={"additionalProperties": {"type": "integer", "minimum": 1, "maximum": 100}},
          doc="Score plugin -> its weight, 1 to 100."),
    Field("scoring_strategy", str, _PS.scoring_strategy, choices=SCORING_STRATEGIES, doc="NodeResourcesFit's strategy."),
    Field("shape", list, None, nested=True, schema={"items": {"type": "array"}},
          doc="RequestedToCapacityRatio's [[utilization 0..100, score 0..10], ...], utilization increasing."),
    Field("percentage_of_nodes_to_score", int, _PS.percentage_of_nodes_to_score,
          check=lambda v: None if 0 <= v <= 100 else "must be 0 to 100", schema={"minimum": 0, "maximum": 100},
          doc="percentageOfNodesToScore; 0: the adaptive default."),
    Field("t_pod", float, _PS.t_pod, unit="emulated s", check=non_negative, doc="Thinking per scheduling cycle."),
    Field("candidates", (int, str), _PS.candidates,
          check=lambda v: None if (v == "log2" or (isinstance(v, int) and v >= 0)) else 'must be a number of nodes >= 0 or "log2"',
          doc='Stop at this many feasible nodes, or "log2" (Nomad\'s limit); 0: off.'),
    Field("workers", int, _PS.workers, check=lambda v: None if 1 <= v <= 64 else "must be 1 to 64",
          schema={"minimum": 1, "maximum": 64}, doc="Scheduler actors sharing the profile's pods by job (Nomad's workers)."),
    Field("device_policy", str, _PS.device_policy, choices=DEVICE_POLICIES,
          doc="In a cell with devices ([cell] devices): the DeviceShare plugin's score, which node and which of its "
              "devices a pod asking for some takes (fgd: Fragmentation Gradient Descent)."),
)

REQUIREMENT_FIELDS = (
    Field("operator", str, choices=SELECTOR_OPS, doc="In, NotIn, Exists or DoesNotExist."),
    Field("values", list, [], nested=True, schema=_STRINGS, doc="The values (In, NotIn: at least one; Exists: none)."),
    Field("key", str, doc="The node label's key."),
)
TOPOLOGY_KEY = Field("topology_key", str, check=_empty, doc="The node label whose values are the domains.")
WEIGHT = Field("weight", int, check=lambda v: None if 1 <= v <= 100 else "a preferred term's weight must be an integer 1 to 100",
               schema={"minimum": 1, "maximum": 100}, doc="The term's weight, 1 to 100.")
SPREAD_FIELDS = (
    Field("max_skew", int, 1, check=lambda v: None if v >= 1 else "must be >= 1", schema={"minimum": 1},
          doc="Most pods more in the fullest domain than in the emptiest."),
    TOPOLOGY_KEY,
    Field("when_unsatisfiable", str, "DoNotSchedule", choices=UNSATISFIABLE, doc="DoNotSchedule or ScheduleAnyway."),
)
TOLERATION_FIELDS = (
    Field("operator", str, "Equal", choices=OPERATORS, doc="Equal (needs a key) or Exists."),
    Field("key", str, "", doc="The taint key it tolerates (empty with Exists: every taint)."),
    Field("value", str, "", doc="The taint value (Equal only)."),
    Field("effect", str, "", check=_effect, schema={"enum": ["", *EFFECTS]}, doc="The effect it tolerates (empty: all)."),
)

WORKLOAD_FIELDS = (
    Field("classes", list, nested=True, schema={**_STRINGS, "minItems": 1}, doc="The job classes whose pods this template makes."),
    Field("priority_class", str, "", nested=True, doc="A declared priority class (default: the global default's)."),
    Field("scheduler_name", str, DEFAULT_SCHEDULER, nested=True, doc="The profile that schedules its pods."),
    Field("labels", dict, {}, nested=True, schema=_LABELS, doc="Its pods' labels (default: app = its first class)."),
    Field("spread", list, (), nested=True, of=SPREAD_FIELDS, doc="Topology spread of its own pods."),
    Field("anti_affinity", list, (), nested=True, of=(TOPOLOGY_KEY,), doc="Required anti-affinity to its own pods."),
    Field("preferred_anti_affinity", list, (), nested=True, of=(WEIGHT, TOPOLOGY_KEY),
          doc="Preferred anti-affinity to its own pods."),
    Field("node_affinity", list, (), nested=True, of=REQUIREMENT_FIELDS, doc="Required node affinity: requirements, ANDed."),
    Field("preferred_node_affinity", list, (), nested=True,
          of=(WEIGHT, Field("match", list, nested=True, of=REQUIREMENT_FIELDS, doc="Requirements, ANDed."))),
    Field("tolerations", list, (), nested=True, of=TOLERATION_FIELDS, doc="Taints its pods tolerate."),
    Field("kind", str, "job", choices=KINDS, doc="job (a pod whose run ends is done) or deployment (restarted in place)."),
    Field("max_unavailable", int, None, check=lambda v: None if v >= 0 else "must be >= 0", schema={"minimum": 0},
          doc="A PodDisruptionBudget over each workload of the class (default: none)."),
    Field("node_selector", dict, {}, nested=True, schema=_LABELS, doc="Labels a node must carry."),
)

FIELDS = (
    Field("priority_classes", list, (), nested=True, of=PRIORITY_CLASS_FIELDS, doc="[[kubernetes.priority_classes]]."),
    Field("nodes", list, (), nested=True, of=NODE_FIELDS, doc="[[kubernetes.nodes]]: labels and taints per machine class."),
    Field("profiles", list, (), nested=True, of=PROFILE_FIELDS,
          doc="[[kubernetes.profiles]]: scheduler profiles (default: one default-scheduler)."),
    Field("workloads", list, (), nested=True, of=WORKLOAD_FIELDS, doc="[[kubernetes.workloads]]: a pod template per job class."),
    Field("racks_per_zone", int, 1, check=lambda v: None if v >= 1 else "must be >= 1", schema={"minimum": 1},
          doc="Racks grouped into one zone (topology.kubernetes.io/zone)."),
    Field("heartbeat", float, 10.0, unit="emulated s", check=positive,
          doc="A kubelet's node status to the API server when nothing else is to sync (binds and deletions ring "
              "the kubelet; nodeStatusUpdateFrequency; its node is written off after 3 missed)."),
)
PROFILE = {f.name: f for f in PROFILE_FIELDS}
WORKLOAD = {f.name: f for f in WORKLOAD_FIELDS}


# ------------------------------------------------------------ small readers


def _labels(t: Table, k: str) -> Labels:
    raw = t.get(k, dict, default={})
    for key, v in raw.items():
        if not isinstance(v, str):
            t.fail(t.key(f"{k}.{key}"), f"a label value must be a string, got {type(v).__name__}")
    return labels(raw)


def _requirement(t: Table) -> Requirement:
    op = t.get("operator", str, check=one_of(SELECTOR_OPS))
    values = t.get("values", list, default=[])
    if op in ("In", "NotIn") and not values:
        t.fail(t.key("values"), f"{op} needs at least one value")
    if op in ("Exists", "DoesNotExist") and values:
        t.fail(t.key("values"), f"{op} takes no values")
    if not all(isinstance(v, str) for v in values):
        t.fail(t.key("values"), "values must be strings")
    req = Requirement(t.get("key", str), op, tuple(values))
    t.done()
    return req


def _selector(t: Table, k: str) -> Selector:
    """A list of requirements, ANDed."""
    return Selector(tuple(_requirement(r) for r in table_array(t, k)))


def _taint(t: Table) -> Taint:
    taint = Taint(**parse_fields(t, TAINT_FIELDS))
    t.done()
    return taint


def _toleration(t: Table) -> Toleration:
    tol = Toleration(**parse_fields(t, TOLERATION_FIELDS))
    op = tol.operator
    if op == "Equal" and not tol.key:
        t.fail(t.key("key"), "an Equal toleration needs a key (use operator = \"Exists\" to tolerate every taint)")
    if op == "Exists" and tol.value:
        t.fail(t.key("value"), "an Exists toleration takes no value")
    t.done()
    return tol


def _weight(t: Table, k: str, what: str) -> int:
    return t.get(k, int, check=lambda v: None if 1 <= v <= 100 else f"{what} must be an integer 1 to 100")


# ------------------------------------------------------------ the parts


def _priority_classes(t: Table) -> tuple[PriorityClass, ...]:
    if "priority_classes" not in t.data:
        t.used.add("priority_classes")
        return ()
    out: list[PriorityClass] = []
    for pt in table_array(t, "priority_classes"):
        pc = PriorityClass(**parse_fields(pt, PRIORITY_CLASS_FIELDS))
        if pc.name in {p.name for p in out}:
            pt.fail(pt.key("name"), f"duplicate priority class {pc.name!r}")
        pt.done()
        out.append(pc)
    if sum(p.global_default for p in out) > 1:
        t.fail(t.key("priority_classes"), "at most one priority class may be global_default")
    return tuple(out)


def _node_classes(t: Table, machine_classes: tuple[str, ...]) -> tuple[NodeClass, ...]:
    if "nodes" not in t.data:
        t.used.add("nodes")
        return ()
    out: list[NodeClass] = []
    for nt in table_array(t, "nodes"):
        mc = nt.get("class", str, check=lambda v: None if v in machine_classes
                    else f"unknown machine class (the cell has {', '.join(machine_classes)})")
        if mc in {n.machine_class for n in out}:
            nt.fail(nt.key("class"), f"machine class {mc!r} is described twice")
        ls = _labels(nt, "labels")
        for key, _ in ls:
            if key in BUILTIN_LABEL_KEYS:
                nt.fail(nt.key(f"labels.{key}"), "set by schedlab for every node (hostname, rack, zone)")
        taints = tuple(_taint(x) for x in table_array(nt, "taints")) if "taints" in nt.data else ()
        nt.used.add("taints")
        nt.done()
        out.append(NodeClass(mc, ls, taints))
    return tuple(out)


def _profiles(t: Table) -> tuple[ProfileSpec, ...]:
    if "profiles" not in t.data:
        t.used.add("profiles")
        return (ProfileSpec(),)
    out: list[ProfileSpec] = []
    for pt in table_array(t, "profiles"):
        name = read_field(pt, PROFILE["name"])
        if name in {p.name for p in out}:
            pt.fail(pt.key("name"), f"duplicate profile {name!r}")
        plugins = pt.get("plugins", list, default=None)
        disabled = pt.get("disabled", list, default=[])
        for k, names in (("plugins", plugins or []), ("disabled", disabled)):
            for n in names:
                problem = plugin_problem(n)
                if problem:
                    pt.fail(pt.key(k), problem)
        if not _has_binder(plugins, disabled):
            # Upstream's profile validation: "at least one bind plugin is needed".
            pt.fail(pt.key("disabled" if plugins is None else "plugins"),
                    "a profile needs a Bind plugin (DefaultBinder, or one of your own that binds)")
        weights_t = pt.sub("weights", default={})
        weights = []
        for n in sorted(weights_t.data):
            problem = plugin_problem(n, scoring=True)
            if problem:
                weights_t.fail(weights_t.key(n), problem)
            weights.append((n, _weight(weights_t, n, "a score plugin's weight")))
        strategy = read_field(pt, PROFILE["scoring_strategy"])
        shape = ProfileSpec().shape
        if "shape" in pt.data:
            shape = _shape(pt)
        pt.used.add("shape")
        spec = ProfileSpec(
            name=name, plugins=None if plugins is None else tuple(plugins), disabled=tuple(disabled),
            weights=tuple(weights), scoring_strategy=strategy, shape=shape,
            **parse_fields(pt, PROFILE_FIELDS, skip=("name", "scoring_strategy")))
        pt.done()
        out.append(spec)
    return tuple(out)


def _shape(pt: Table) -> tuple[tuple[float, float], ...]:
    """RequestedToCapacityRatio's shape: [[utilization 0..100, score 0..10], ...], utilization increasing."""
    raw = pt.get("shape", list, check=lambda v: None if len(v) >= 1 else "needs at least one point")
    points = []
    for p in raw:
        if (not isinstance(p, list) or len(p) != 2 or not all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                                 for x in p)):
            pt.fail(pt.key("shape"), "each point is [utilization, score]")
        u, s = float(p[0]), float(p[1])
        if not (0 <= u <= 100 and 0 <= s <= 10):
            pt.fail(pt.key("shape"), f"utilization must be 0 to 100 and score 0 to 10 (got [{u:g}, {s:g}])")
        points.append((u, s))
    if any(b[0] <= a[0] for a, b in zip(points, points[1:])):
        pt.fail(pt.key("shape"), "utilization must increase from point to point")
    return tuple(points)


def plugin_problem(name: Any, scoring: bool = False) -> str | None:
    """Why ``name`` cannot be a profile's plugin (or a score weight's key),
    or None. Plugins are looked up in the registry, which holds the
    built-ins and any a scenario script registered."""
    from schedlab.schedulers.archs.kubernetes import registry

    if not isinstance(name, str):
        return f"a plugin name must be a string, got {type(name).__name__}"
    known = registry.plugin_names()
    if name not in known:
        return f"unknown plugin {name!r} (known: {', '.join(sorted(known))})"
    if scoring:
        try:
            plugin = registry.make_plugin(name)
        except ValueError:
            return None  # it needs arguments: the profile's build says what is wrong
        if not callable(getattr(plugin, "score", None)):
            return f"plugin {name!r} does not score nodes, so it takes no weight"
    return None


def _has_binder(plugins: list | None, disabled: list) -> bool:
    """Whether a profile's plugins (None: the default set) less
    ``disabled`` include one that implements Bind (a plugin that cannot be
    built without its arguments is given the benefit of the doubt)."""
    from schedlab.schedulers.archs.kubernetes import registry

    for name in registry.DEFAULT_PLUGINS if plugins is None else plugins:
        if name in disabled:
            continue
        try:
            if callable(getattr(registry.make_plugin(name), "bind", None)):
                return True
        except ValueError:
            return True
    return False


def _template(t: Table, job_classes: set[str], priority: set[str], profiles: set[str], taken: dict[str, int],
              i: int) -> PodTemplate:
    classes = t.names("classes", job_classes, "job class")
    for c in classes:
        if c in taken:
            t.fail(t.key("classes"), f"job class {c!r} already has a pod template (kubernetes.workloads[{taken[c]}])")
        taken[c] = i
    pc = t.get("priority_class", str, default="",
               check=lambda v: None if not v or v in priority
               else f"no such priority class (declared: {', '.join(sorted(priority)) or 'none'})")
    sched = t.get("scheduler_name", str, default=DEFAULT_SCHEDULER,
                  check=lambda v: None if v in profiles else f"no scheduler profile of that name "
                                                             f"(profiles: {', '.join(sorted(profiles))})")
    own = _labels(t, "labels")
    if not own:
        own = labels({"app": classes[0]})  # a template's pods are told apart by their labels
    same = Selector.of_labels(label_dict(own))
    spread = tuple(_spread(x, same) for x in table_array(t, "spread")) if "spread" in t.data else ()
    t.used.add("spread")
    anti = tuple(PodAffinityTerm(same, _topology_key(x), anti=True) for x in table_array(t, "anti_affinity")) \
        if "anti_affinity" in t.data else ()
    t.used.add("anti_affinity")
    preferred_anti = tuple((_weight(x, "weight", "a preferred term's weight"),
                            PodAffinityTerm(same, _topology_key(x, done=False), anti=True))
                           for x in table_array(t, "preferred_anti_affinity")) \
        if "preferred_anti_affinity" in t.data else ()
    t.used.add("preferred_anti_affinity")
    required = (_selector(t, "node_affinity"),) if "node_affinity" in t.data else ()
    t.used.add("node_affinity")
    preferred = tuple((_weight(x, "weight", "a preferred term's weight"), _selector(x, "match"))
                      for x in table_array(t, "preferred_node_affinity")) if "preferred_node_affinity" in t.data else ()
    t.used.add("preferred_node_affinity")
    tols = tuple(_toleration(x) for x in table_array(t, "tolerations")) if "tolerations" in t.data else ()
    t.used.add("tolerations")
    kind, mu = read_field(t, WORKLOAD["kind"]), read_field(t, WORKLOAD["max_unavailable"])
    tpl = PodTemplate(classes=tuple(classes), kind=kind, priority_class=pc, scheduler_name=sched, labels=own,
                      node_selector=_labels(t, "node_selector"), affinity=NodeAffinity(required, preferred),
                      tolerations=tols, spread=spread, pod_affinity=anti, preferred_pod_affinity=preferred_anti,
                      max_unavailable=mu)
    t.done()
    return tpl


def _topology_key(t: Table, done: bool = True) -> str:
    key = read_field(t, TOPOLOGY_KEY)
    if done:
        t.done()
    return key


def _spread(t: Table, same: Selector) -> SpreadConstraint:
    v = parse_fields(t, SPREAD_FIELDS)
    c = SpreadConstraint(v["max_skew"], v["topology_key"], same, v["when_unsatisfiable"])
    t.done()
    return c


# ------------------------------------------------------------ the section


def parse_kubernetes(t: Table, job_classes: tuple[str, ...], machine_classes: tuple[str, ...]) -> KubeSpec:
    """The ``[kubernetes]`` section, or ScenarioError (one line)."""
    priority = _priority_classes(t)
    nodes = _node_classes(t, machine_classes)
    profiles = _profiles(t)
    taken: dict[str, int] = {}
    templates: list[PodTemplate] = []
    if "workloads" in t.data:
        for i, wt in enumerate(table_array(t, "workloads")):
            templates.append(_template(wt, set(job_classes), {p.name for p in priority},
                                       {p.name for p in profiles}, taken, i))
    t.used.add("workloads")
    spec = KubeSpec(priority_classes=priority, nodes=nodes, templates=tuple(templates), profiles=profiles,
                    **parse_fields(t, FIELDS))
    t.done()
    return spec


# ------------------------------------------------------------ checks on the whole scenario


def node_labels(spec: KubeSpec, machine_class: str, node: int, rack: int) -> dict[str, str]:
    """Every label of a node: its class's, and hostname, rack and zone."""
    own = next((dict(n.labels) for n in spec.nodes if n.machine_class == machine_class), {})
    return {**own, HOSTNAME: f"node-{node}", RACK: f"rack-{rack}", ZONE: f"zone-{rack // spec.racks_per_zone}"}


def check_topology_keys(top: Table, spec: KubeSpec) -> None:
    """A spread or affinity term whose topology key no node carries could
    never be satisfied (upstream would silently treat every node as
    ineligible): a mistake in the file."""
    have = set(BUILTIN_LABEL_KEYS) | {k for n in spec.nodes for k, _ in n.labels}
    for i, tpl in enumerate(spec.templates):
        terms = [("spread", c.topology_key) for c in tpl.spread] + [("anti_affinity", a.topology_key) for a in tpl.pod_affinity]
        terms += [("preferred_anti_affinity", a.topology_key) for _, a in tpl.preferred_pod_affinity]
        for k, key in terms:
            if key not in have:
                top.fail(f"kubernetes.workloads[{i}].{k}", f"topology key {key!r} is on no node "
                                                          f"(nodes carry: {', '.join(sorted(have))})")


def check_fit(top: Table, classes: list[tuple[str, tuple[float, ...], int]],
              machine_classes: list[tuple[str, tuple[float, ...]]], spec: KubeSpec) -> None:
    """Every job class's pod fits some node that its node selector, required
    node affinity and tolerations allow: otherwise its pods would stay
    Pending forever. ``classes``: (name, largest request, index in the
    workload); ``machine_classes``: (name, capacity)."""
    for name, request, i in classes:
        tpl = spec.template_of(name)
        key = (f"kubernetes.workloads[{spec.templates.index(tpl)}]" if tpl in spec.templates
               else f"workload.classes[{i}]")
        why = []
        for mc, cap in machine_classes:
            ls = node_labels(spec, mc, 0, 0)
            taints = next((n.taints for n in spec.nodes if n.machine_class == mc), ())
            if np.any(np.asarray(request) > np.asarray(cap) + 1e-9):
                why.append(f"{mc}: too small")
            elif not all(ls.get(k) == v for k, v in tpl.node_selector):
                why.append(f"{mc}: node_selector")
            elif tpl.affinity.required and not any(s.matches(ls) for s in tpl.affinity.required):
                why.append(f"{mc}: node_affinity")
            elif any(t.effect in ("NoSchedule", "NoExecute") and not any(tol.tolerates(t) for tol in tpl.tolerations)
                     for t in taints):
                why.append(f"{mc}: an untolerated taint")
            else:
                break
        else:
            top.fail(key, f"a pod of job class {name!r} fits no node ({'; '.join(why)})")
