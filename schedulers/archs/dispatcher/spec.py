"""A central dispatcher (the head-node approach): the ``[dispatcher]``
section of a scenario and the architecture's registration.

One head node receives every job into one queue (``fifo``, or ``fair``:
per-user round robin) and assigns tasks to worker machines when they have
room, with a placement policy from ``schedulers.placement`` (first fit,
round-robin filling, ...); no preemption. ``view = "omniscient"`` makes it
the omniscient reference Sparrow compares against (exact durations: a slot
is free at its task's end, not at the worker's report; no think time unless
given). ``schedulers.archs.dispatcher.head`` holds its decisions;
``actors.archs.dispatcher`` runs it.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from schedlab.schedulers.placement.device_claims import DEVICE_POLICIES
from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.archs.dispatcher.head import QUEUES, VIEWS
from schedlab.schedulers.placement.policies import PLACEMENT_POLICIES
from schedlab.schedulers.scenario.fields import Computed, Field, parse_fields
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, non_negative, positive
from schedlab.schedulers.archs.dispatcher.events import EVENTS

NAME = "dispatcher"  # the head node's actor
ROLE = "head"  # its role (what chaos aims at: kill head, or kill dispatcher by name)


@dataclass(frozen=True)
class DispatcherSpec:
    queue: str = "fifo"  # "fifo": strict arrival order; "fair": per-user (job class) round robin
    placement: str = "first_fit"  # any placement policy (round_robin: the Octopus round-robin filling)
    t_job: float = 0.01  # emulated s the head thinks per dispatch turn
    t_task: float = 0.001  # ... and per task it places
    view: str = "reported"  # "omniscient": the reference scheduler (a slot free at its task's exact end)
    heartbeat: float = 10.0  # emulated s: an idle worker's liveness poll (a dispatch rings the worker)
    device_policy: str = "best_fit"  # in a cell with devices: which machine and devices a task asking some takes


_D = DispatcherSpec()


def _ideal(got: Mapping[str, Any]) -> bool:
    """The omniscient reference thinks in no time unless told otherwise."""
    return got["view"] == "omniscient"


# Every key of [dispatcher], in the order parse_dispatcher reads them (view
# first: the think times' defaults depend on it).
FIELDS = (
    Field("view", str, _D.view, choices=VIEWS,
          doc="reported: a slot is free when its worker says so; omniscient: the reference scheduler "
              "(a slot free at its task's exact end)."),
    Field("queue", str, _D.queue, choices=QUEUES, doc="fifo: strict arrival order; fair: per-user (job class) round robin."),
    Field("placement", str, _D.placement, choices=lambda: tuple(PLACEMENT_POLICIES),
          doc="Any placement policy (round_robin: the Octopus round-robin filling)."),
    Field("t_job", float, Computed(lambda v: 0.0 if _ideal(v) else _D.t_job, "0.01; 0 when omniscient"),
          unit="emulated s", check=non_negative, doc="The head's think time per dispatch turn."),
    Field("t_task", float, Computed(lambda v: 0.0 if _ideal(v) else _D.t_task, "0.001; 0 when omniscient"),
          unit="emulated s", check=non_negative, doc="... and per task it places."),
    Field("heartbeat", float, _D.heartbeat, unit="emulated s", check=positive,
          doc="A worker's liveness poll when nothing else is to exchange (a dispatch to it rings the worker; "
              "written off after 3 missed)."),
    Field("device_policy", str, _D.device_policy, choices=DEVICE_POLICIES,
          doc="In a cell with devices ([cell] devices): how the head places a task asking for some, which machine "
              "and which of its devices (fgd: Fragmentation Gradient Descent)."),
)


def parse_dispatcher(t: Table, ctx: SectionContext) -> DispatcherSpec:
    spec = DispatcherSpec(**parse_fields(t, FIELDS))
    t.done()
    return spec


def roster(sc: Scenario) -> dict[str, list[str]]:
    return {ROLE: [NAME]}


def actors(sc: Scenario) -> list[tuple[str, int]]:
    return [("dispatcher", 1)]


def deciders(sc: Scenario) -> list[Decider]:
    d: DispatcherSpec = sc.section
    return [Decider(NAME, d.t_job, d.t_task, d.placement)]


SPEC = ArchSpec(
    name="dispatcher",
    no_gang="the head starts each task as soon as it fits",
    title="central dispatcher (one head node, one queue)",
    events=EVENTS,
    parse=parse_dispatcher,
    roster=roster,
    actors=actors,
    deciders=deciders,
    roles=(Role(ROLE, routed=True, recovers=True, about="the head node that queues and dispatches every job"),),
    peers={"machine": (ROLE,), ROLE: ("machine",)},
    example=lambda classes: {"queue": "fair", "placement": "round_robin", "t_job": 0.2, "t_task": 0.01},
    live="schedlab.actors.archs.dispatcher.architecture:ARCHITECTURE",
    section_required=False,  # a missing [dispatcher] means FIFO with first fit
    max_replicas=1,  # one head node, no coordinator group
    fields=FIELDS,
    showcase="dispatcher",
    further_resources=("a resource vector: the head places a task where every resource fits"),
    devices=("the head places a task asking for devices with its device_policy (fgd, best_fit, dot_product, "
             "gpu_packing, random_fit) on its view of the workers, and the launch names the devices it takes"),
)
