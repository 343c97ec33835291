"""The pure half of an architecture's registration, and the registry.

An architecture is two packages: ``schedulers/archs/<name>/`` (pure: its
scenario section, its decision cores, its replicated state machines) and
``actors/archs/<name>/`` (live: what it starts, its shells, its summary
section). The pure half registers an ``ArchSpec``; the spec names its live
half by import path (``live``), so reading and checking a scenario never
imports Ray.

Generic code (scenario parsing, the roster faults are checked against,
summaries, invariants, compare, report, the CLI) looks architectures up
here and never names one. A new architecture is its two packages, its
scenarios and tests, and one line: in ``schedulers/archs/__init__.py``'s
``BUILTIN`` or, from another distribution, an entry point in the group
``schedlab.architectures`` whose value is its ``ArchSpec``.

The contract, checked for every registered architecture by
``tests/conformance/``:

* ``parse(table, context)`` reads the ``[<name>]`` section into a frozen
  object (the scenario's ``section``), failing through ``table.fail`` with
  one line naming file, key and problem;
* ``roster(scenario)`` names every actor the run starts besides machine
  hosts, coordinator replicas and the experiment's instruments, by role,
  exactly as the live half spawns them; each role is described once in
  ``roles``;
* ``deciders(scenario)`` lists who decides placements, with think times
  (the run warns when a round trip is longer) and the placement policy each
  uses (shipped to Ray by value when it is a user's own);
* ``actors(scenario)`` counts those actors by the scenario key that makes
  them, without building names (size checks run before anything is built);
* ``example(job_classes)`` is a small valid section, which the conformance
  suite runs end to end, breaks with chaos, and checks;
* ``live`` is ``"module:attribute"`` of its ``actors.arch.Architecture``;
* ``fields`` (optional) describes every key of its section
  (``schedulers.scenario.fields``): the key reference and JSON Schema of the
  section are generated from it, and the tests check every shipped
  scenario's section against that schema.
* ``events`` declares the events it writes besides the shared ones.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import EntryPoint, entry_points
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable

from schedlab.schedulers.model.resources import DEFAULT

if TYPE_CHECKING:
    from schedlab.schedulers.scenario.fields import Field
    from schedlab.schedulers.events.contract import EventType
    from schedlab.schedulers.model.cluster import MachineClass
    from schedlab.schedulers.scenario.spec import CoordinatorSpec, Scenario
    from schedlab.schedulers.scenario.toml_table import Table

ENTRY_POINT_GROUP = "schedlab.architectures"


@dataclass(frozen=True)
class Role:
    """A kind of actor, as the driver, faults and the chaos script see it.

    ``routed``: it receives jobs from the submitter (a restarted member gets
    its route back; it is stopped before the machines). ``recovers``: a
    routed role that keeps the jobs it was sent, so a restarted member is
    handed everything routed to it and a member dead at the end leaves its
    jobs reported pending; a stateless front end does not. ``kill_leader``:
    the role's members elect a leader, and this fault action kills whoever
    leads (``kill_leader`` is the coordinator's own); ``leader_from``: the
    members a run needs for the role to elect one (fewer: a single member
    restarted in place, with no leader to kill). ``no_restart``: why
    the role cannot be restarted, or empty when it can. ``places``: it
    places tasks without being routed any (it finds its work in a shared
    store): stopped before the machines, as routed roles are, so nothing
    it places after they stopped goes unlaunched."""

    name: str
    routed: bool = False
    places: bool = False
    recovers: bool = False
    kill_leader: str = ""
    leader_from: int = 1
    no_restart: str = ""
    about: str = ""  # one line for the chaos script's help


# Roles every run has, whatever the architecture: the machine hosts, and the
# coordinator replicas when [coordinator] replicas >= 3.
MACHINE = Role("machine", about="a machine host (K machines)")
COORDINATOR = Role("coordinator", kill_leader="kill_leader", about="a replica of the Raft coordinator group")
COMMON_ROLES = (MACHINE, COORDINATOR)


@dataclass(frozen=True)
class Decider:
    """Who decides placements: a scheduler, a framework, a Borgmaster path."""

    name: str
    t_job: float
    t_task: float
    policy: str | None = None  # a placement policy name (schedulers.placement), or None


@dataclass(frozen=True)
class SectionContext:
    """What a section parser may look at besides its own table: the rest of
    the scenario, already parsed."""

    job_classes: tuple[str, ...]
    machine_classes: tuple[MachineClass, ...]
    coordinator: CoordinatorSpec
    top: Table  # the whole file, for errors about another key (e.g. coordinator.replicas)
    resources: tuple[str, ...] = DEFAULT  # [cell] resources: a per-resource key's names (quotas, shares, offers)


@dataclass(frozen=True)
class CssSetup:
    """One of the set-ups of the shared-state paper's simulator (CSS) as this
    architecture runs it (``experiments/paper/css_compare``): ``swept`` is the scheduler
    whose think time CSS sweeps (its name in summary.json's ``schedulers``),
    set through ``key`` (``<key>.t_job``, ``<key>.t_task``); ``sets`` are
    further ``--set`` arguments."""

    name: str  # a folder name under OUT
    label: str  # the table's label
    key: str
    swept: str
    sets: tuple[str, ...] = ()


@dataclass(frozen=True)
class ArchSpec:
    name: str  # the scenario's ``architecture`` value and its section's name
    title: str  # its name and kind, for listings and errors
    parse: Callable[[Table, SectionContext], Any]
    roster: Callable[[Scenario], dict[str, list[str]]]
    # (scenario key, how many actors of the roster it makes): the size check
    # counts actors from this, before any name is built (count = 10**9 must
    # fail in microseconds); it adds up to the roster's size.
    actors: Callable[[Scenario], list[tuple[str, int]]]
    deciders: Callable[[Scenario], list[Decider]]
    roles: tuple[Role, ...]
    live: str  # "module:attribute" of the live Architecture
    # A small valid section for a scenario with these job classes: what the
    # conformance suite (tests/conformance) runs for every architecture.
    example: Callable[[tuple[str, ...]], dict[str, Any]]
    # role -> the roles one member talks to, which a partition can cut it
    # off from (the chaos monkey's choices), for its own roles and the
    # common ones; roles without members in a run are left out there.
    peers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    section_required: bool = True  # False: a missing section means its defaults
    default_replicas: int = 1  # [coordinator] replicas when the file does not say
    min_replicas: int = 1  # fewer is refused (a replicated master needs a majority)
    max_replicas: int = 9  # 1: it runs no coordinator group, so replicas would be idle actors
    # Extra size checks (schedulers.scenario.limits): (top table, scenario,
    # expected tasks per job class) -> None, failing through top.fail.
    check_sizes: Callable[[Table, Scenario, dict[str, float]], None] | None = None
    # Every key of its section, described once (its spec module's FIELDS):
    # what its parser reads, and what the key reference and schema say.
    fields: Sequence[Field] = ()
    # Its own events (its ``events.py``: schedlab.schedulers.events explains
    # the contract), beside the shared ones; every name it emits is declared
    # here or there.
    events: tuple[EventType, ...] = ()
    # Actors it starts that stand for the world outside the emulated system
    # (its users, as the submitter stands for the workload): they log, but
    # are not in the roster and are never fault targets.
    instruments: tuple[str, ...] = ()
    # A small shipped scenario that runs it (a failover one where it has a
    # replicated master): what tools that try every architecture run
    # (``schedlab crosscheck``'s default), so they loop over the registry.
    showcase: str = ""
    # The job classes a synthetic benchmark offers it per 1,000 machines of
    # 4 cpu x 16 GB (``scripts/bench_sim.py``), where batch and service jobs
    # do not suit it (a web farm serves pages, not 90 s batch tasks): a
    # function of the cell's size in thousands of machines, returning
    # ``[[workload.classes]]`` tables; None: the bench's own.
    bench_classes: Callable[[float], list[dict[str, Any]]] | None = None
    # How it honours resources beyond cpu and mem ([cell] resources), in the
    # real system's terms (extended resources, resource types, scalars, a
    # vector); empty: it has none, and a scenario naming one is refused with
    # ``no_further_resources`` (why the real system cannot).
    further_resources: str = ""
    no_further_resources: str = "it models no resource beyond cpu and mem"
    # How it places a resource held as devices ([cell] devices): which
    # device of which machine a task takes, in the real system's terms;
    # empty: it counts them, as the machine's amount of the resource, so it
    # runs tasks asking for whole devices and refuses a share of one device
    # or a model constraint (a count cannot tell one device from another).
    devices: str = ""
    # How it starts a gang job's tasks together (a job class with gang =
    # true), in its real system's terms; empty: it cannot, and a scenario
    # with a gang class is refused with ``no_gang`` (why).
    gang: str = ""
    no_gang: str = "it places a job's tasks one by one"
    # The set-ups of the shared-state paper's simulator (CSS) it stands for,
    # if any (CSS compares a monolithic, a two-level and a shared-state scheduler).
    css_setups: tuple[CssSetup, ...] = ()


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


class RegistryError(RuntimeError):
    """A registered architecture is broken (cannot load, duplicate name)."""


@cache
def registry() -> dict[str, ArchSpec]:
    """Every architecture: the built-ins in their list's order, then those
    installed packages register under the entry point group."""
    from schedlab.schedulers.archs import BUILTIN

    found: dict[str, ArchSpec] = {}
    sources: list[tuple[str, str | EntryPoint]] = [(path, path) for path in BUILTIN]
    sources += [(f"entry point {ep.name} = {ep.value}", ep) for ep in entry_points(group=ENTRY_POINT_GROUP)]
    for where, src in sources:
        try:
            spec = _load(src) if isinstance(src, str) else src.load()
        except Exception as e:
            raise RegistryError(f"architecture {where}: cannot load ({type(e).__name__}: {e})") from e
        if not isinstance(spec, ArchSpec):
            raise RegistryError(f"architecture {where}: is a {type(spec).__name__}, not an ArchSpec")
        if spec.name in found:
            raise RegistryError(f"architecture {where}: the name {spec.name!r} is taken")
        found[spec.name] = spec
    return found


def names() -> tuple[str, ...]:
    return tuple(registry())


def default_name() -> str:
    """The architecture of a scenario that names none (``schedulers.archs.DEFAULT``)."""
    from schedlab.schedulers.archs import DEFAULT

    return DEFAULT


def spec_of(name: str) -> ArchSpec:
    try:
        return registry()[name]
    except KeyError:
        raise KeyError(f"unknown architecture {name!r} (one of {', '.join(names())})") from None


def live_half(spec: ArchSpec) -> Any:
    """The live ``Architecture`` ``spec`` names (imports its actors, and Ray)."""
    return _load(spec.live)


def all_roles() -> dict[str, Role]:
    """Every role any registered architecture (or every run) has, by name."""
    out = {r.name: r for r in COMMON_ROLES}
    for spec in registry().values():
        for r in spec.roles:
            out.setdefault(r.name, r)
    return out
