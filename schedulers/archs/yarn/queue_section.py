"""YARN's ``[[yarn.queues]]``: one queue entry (``YarnQueueSpec``) and the
parsing of the tree from a scenario (declared and implied queues, leaf
routing of job classes, the core's ``QueueError`` keys mapped onto the
file's), apart from the rest of the ``[yarn]`` section (``spec``)."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from collections.abc import Mapping
from typing import Any

from schedlab.schedulers.arch import SectionContext
from schedlab.schedulers.archs.yarn.queues import ROOT, QueueError, QueueSpec, QueueTree
from schedlab.schedulers.scenario.fields import Computed, Field, amounts, parse_fields, per_resource, read_field
from schedlab.schedulers.scenario.toml_table import (
    Table,
    non_negative,
    positive,
    table_array,
)

DEFAULT_QUEUE = f"{ROOT}.default"
_PART = re.compile(r"[A-Za-z0-9_-]+")


def _pct(v: float) -> str | None:
    return None if 0 <= v <= 100 else "must be in [0, 100] (percent of the parent)"


@dataclass(frozen=True)
class YarnQueueSpec:
    """One ``[[yarn.queues]]`` entry: ``name`` the full dotted path
    (``root.prod.etl``), percentages of the parent queue, ``min_share`` and
    ``max_share`` per resource (None: unlimited). What each key means, its
    default and Hadoop's name for it: ``QUEUE_FIELDS``."""

    name: str
    classes: tuple[str, ...] = ()
    users: int = 1
    capacity: float = 100.0
    max_capacity: float = 100.0
    user_limit_factor: float = 1.0
    minimum_user_limit_percent: float = 100.0
    weight: float = 1.0
    min_share: tuple[float, ...] | None = None  # None: 0 of every resource
    max_share: tuple[float, ...] | None = None
    data_replicas: int = 0
    relax_locality: bool = True

    def queue_spec(self) -> QueueSpec:
        return QueueSpec(self.name, capacity=self.capacity, max_capacity=self.max_capacity,
                         user_limit_factor=self.user_limit_factor,
                         minimum_user_limit_percent=self.minimum_user_limit_percent, weight=self.weight,
                         min_share=self.min_share, max_share=self.max_share)


def _classes(q: Table, got: Mapping[str, Any]) -> tuple[str, ...]:
    """The job classes a queue takes: known ones, each once."""
    classes = q.get("classes", list, default=[])
    for c in classes:
        if not isinstance(c, str) or c not in got["known"]:
            q.fail(q.key("classes"), f"unknown job class {c!r}")
    if len(set(classes)) != len(classes):
        q.fail(q.key("classes"), "names a job class twice")
    return tuple(classes)


def _shares(key: str, each: float, doc: str) -> Field:
    """The sub-table ``key``: an amount per resource (``each`` for one it
    leaves out); None when the queue has none."""
    of = (per_resource(lambda r, base: Field(r, float, each, check=non_negative, doc=f"Its {r}.")),)

    def read(q: Table, got: Mapping[str, Any]) -> tuple[float, ...] | None:
        if key not in q.data:
            return None
        st = q.sub(key)
        out = amounts(parse_fields(st, of, values=got), got["resources"])
        st.done()
        return out
    return Field(key, dict, None, nested=True, of=of, read=read, doc=doc)


_Q = YarnQueueSpec(name="")

# [[yarn.queues]]: one queue, in the order its keys are read (``values``:
# ``known``, the job classes; ``only_child``, whether its parent has it alone).
QUEUE_FIELDS = (
    Field("name", str, doc="The queue's dotted path (root.prod.etl); a plain name means root.<name>."),
    Field("classes", list, [], nested=True, read=_classes, schema={"items": {"type": "string"}},
          doc="Job classes submitted to this leaf queue (mapreduce.job.queuename); a parent queue takes none."),
    Field("capacity", float, Computed(lambda v: 100.0 if v["only_child"] else 0.0, "100 for an only child, else 0"),
          unit="% of the parent", check=_pct, schema={"minimum": 0, "maximum": 100},
          doc="yarn.scheduler.capacity.<queue>.capacity, the guarantee: siblings sum to 100 under the Capacity "
              "scheduler, where it is required unless the queue is its parent's only child."),
    _shares("min_share", 0.0, "The Fair allocation file's <minResources>, per resource (missing: 0)."),
    _shares("max_share", math.inf,
            "The Fair allocation file's <maxResources>, per resource (missing: unlimited)."),
    Field("users", int, _Q.users, check=lambda v: None if v >= 1 else "must be >= 1", schema={"minimum": 1},
          doc="The queue's jobs are spread over users u0.. by job id (user limits and app order see them)."),
    Field("max_capacity", float, _Q.max_capacity, unit="% of the parent", check=_pct, schema={"minimum": 0, "maximum": 100},
          doc="yarn.scheduler.capacity.<queue>.maximum-capacity (Hadoop's -1 is 100)."),
    Field("user_limit_factor", float, _Q.user_limit_factor, check=positive, doc="yarn.scheduler.capacity.<queue>.user-limit-factor."),
    Field("minimum_user_limit_percent", float, _Q.minimum_user_limit_percent, unit="%",
          check=lambda v: None if 0 < v <= 100 else "must be in (0, 100]", schema={"exclusiveMinimum": 0, "maximum": 100},
          doc="yarn.scheduler.capacity.<queue>.minimum-user-limit-percent."),
    Field("weight", float, _Q.weight, check=positive, doc="The Fair allocation file's <weight>."),
    Field("data_replicas", int, _Q.data_replicas, check=lambda v: None if v >= 0 else "must be >= 0", schema={"minimum": 0},
          doc="Machines holding each task's input; 0: no locality preference (the AM asks anywhere)."),
    Field("relax_locality", bool, _Q.relax_locality,
          doc="ResourceRequest's relaxLocality; false pins tasks to their data machines."),
)
QUEUE = {f.name: f for f in QUEUE_FIELDS}


def _queue_name(q: Table) -> str:
    raw = read_field(q, QUEUE["name"])
    parts = raw.split(".")
    if raw == ROOT:
        q.fail(q.key("name"), f"'{ROOT}' is implicit: name a queue under it")
    if not all(_PART.fullmatch(p) for p in parts):
        q.fail(q.key("name"), f"{raw!r}: a queue name is parts of letters, digits, '_' and '-', joined by '.'")
    if len(parts) > 1 and parts[0] != ROOT:
        q.fail(q.key("name"), f"{raw!r}: a dotted path starts with '{ROOT}.' (a plain name means '{ROOT}.<name>')")
    return raw if len(parts) > 1 else f"{ROOT}.{raw}"


def _parent(name: str) -> str:
    return name.rsplit(".", 1)[0]


def parse_queues(t: Table, ctx: SectionContext, scheduler: str) -> tuple[tuple[YarnQueueSpec, ...], tuple[str, ...]]:
    job_classes = list(ctx.job_classes)
    if "queues" not in t.data:
        t.used.add("queues")
        return (YarnQueueSpec(DEFAULT_QUEUE, classes=tuple(job_classes), capacity=100.0),), ()
    tables = table_array(t, "queues")
    names: list[str] = []
    for q in tables:
        n = _queue_name(q)
        if n in names:
            q.fail(q.key("name"), f"duplicate queue {n!r} (also yarn.queues[{names.index(n)}])")
        names.append(n)
    declared = set(names)
    ancestors = {a for n in names for a in _ancestors(n)}
    every = declared | ancestors
    children: dict[str, list[str]] = {}
    for n in sorted(every):
        children.setdefault(_parent(n), []).append(n)
    implied = []
    for p in sorted(ancestors - declared):
        if len(children[p]) != 1 or len(children[_parent(p)]) != 1:
            i = min(j for j, n in enumerate(names) if n.startswith(p + "."))
            tables[i].fail(tables[i].key("name"),
                           f"parent queue {p!r} is not declared; declare it in [[yarn.queues]] (an undeclared "
                           "parent is implied only when it has one child and is its parent's only child)")
        implied.append(p)

    specs = [_queue(q, n, children, scheduler, set(job_classes), ctx.resources) for q, n in zip(tables, names)]
    taken: dict[str, int] = {}
    for i, (q, s) in enumerate(zip(tables, specs)):
        if s.classes and children.get(s.name):
            q.fail(q.key("classes"), f"{s.name} is a parent queue (of {', '.join(children[s.name])}); "
                                     "jobs are submitted to leaf queues")
        for c in s.classes:
            if c in taken:
                where = "this queue" if taken[c] == i else f"{specs[taken[c]].name} (yarn.queues[{taken[c]}])"
                q.fail(q.key("classes"), f"job class {c!r} is already submitted to {where}; "
                                         "each class goes to one leaf queue")
            taken[c] = i
    for c in job_classes:
        if c not in taken:
            t.fail(t.key("queues"), f"no leaf queue takes job class {c!r}")

    try:
        QueueTree.build([*(s.queue_spec() for s in specs), *(QueueSpec(n, capacity=100.0) for n in implied)],
                        check_capacity=scheduler == "capacity", width=len(ctx.resources))
    except QueueError as e:
        t.fail(*_queue_error(t, e, len(specs), implied))
    return tuple(specs), tuple(implied)


def _ancestors(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:k]) for k in range(2, len(parts))]


def _queue_error(t: Table, e: QueueError, declared: int, implied: list[str]) -> tuple[str, str]:
    """A QueueError's ``queues[i].field`` as ``yarn.queues[i].field``."""
    m = re.fullmatch(r"queues\[(\d+)\](.*)", e.key)
    if m and int(m.group(1)) >= declared:
        return t.key("queues"), f"implied parent queue {implied[int(m.group(1)) - declared]!r}: {e.message}"
    return t.key(e.key), e.message


def _queue(q: Table, name: str, children: dict[str, list[str]], scheduler: str, known: set[str],
           resources: tuple[str, ...]) -> YarnQueueSpec:
    got = {"known": known, "only_child": len(children[_parent(name)]) == 1, "resources": resources}
    classes = parse_fields(q, [QUEUE["classes"]], values=got)["classes"]
    if "capacity" not in q.data and not got["only_child"] and scheduler == "capacity":
        q.fail(q.key("capacity"), 'is required with scheduler = "capacity" (percent of the parent; '
                                  "siblings' capacities sum to 100)")
    spec = YarnQueueSpec(name=name, classes=classes, **parse_fields(q, QUEUE_FIELDS, values=got, skip=("name", "classes")))
    q.done()
    return spec


# ------------------------------------------------------------ scenario-wide checks
