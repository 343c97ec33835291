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

from dataclasses import dataclass

from schedlab.schedulers.arch import ArchSpec, Decider, Role, SectionContext
from schedlab.schedulers.archs.dispatcher.head import QUEUES, VIEWS
from schedlab.schedulers.placement.policies import PLACEMENT_POLICIES
from schedlab.schedulers.scenario.spec import Scenario
from schedlab.schedulers.scenario.toml_table import Table, non_negative, one_of
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


def parse_dispatcher(t: Table, ctx: SectionContext) -> DispatcherSpec:
    view = t.get("view", str, default="reported", check=one_of(VIEWS))
    ideal = view == "omniscient"  # the reference thinks in no time unless told otherwise
    spec = DispatcherSpec(
        queue=t.get("queue", str, default="fifo", check=one_of(QUEUES)),
        placement=t.get("placement", str, default="first_fit", check=one_of(tuple(PLACEMENT_POLICIES))),
        t_job=t.get("t_job", float, default=0.0 if ideal else 0.01, check=non_negative),
        t_task=t.get("t_task", float, default=0.0 if ideal else 0.001, check=non_negative),
        view=view,
    )
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
)
