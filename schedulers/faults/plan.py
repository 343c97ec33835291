"""The fault vocabulary shared by scenario files and the chaos script.

A fault names an action, a target (an actor's name, a role to pick a member
of, or ``node-<i>``) and how long it lasts. What targets exist is a
``Roster``: scenario files are checked against the roster their own scenario
will start, the chaos script against the one a running emulation publishes.
Everything here is pure: the monkey draws from a ``numpy.random.Generator``.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from schedlab.schedulers.scenario.fields import Computed, Field, parse_fields
from schedlab.schedulers.scenario.toml_table import ScenarioError, Table, positive, table_array

# The actions every run knows; a role that elects a leader adds its own
# "kill whoever leads" action (the roster's ``kill_leader``: the
# coordinator's is kill_leader).
ACTIONS = ("kill", "restart", "kill_node", "pause", "slow", "partition")
# The submitter and the metrics collector are the experiment's instruments,
# not part of the emulated system: never fault targets.
INSTRUMENTS = ("submitter", "metrics", "chaos-inbox")
LASTING = ("pause", "slow", "partition")  # need a duration


class FaultError(ValueError):
    """A fault that cannot be carried out; str() is the one-line reason."""


@dataclass(frozen=True)
class FaultSpec:
    at: float  # emulated seconds into the run
    action: str
    target: str = ""  # actor name, role, or node-<i>; empty for a leader kill
    peer: str = ""  # partition: the other side (actor name or role)
    duration: float | None = None  # pause / slow / partition: how long, emulated seconds
    delay: float = 0.0  # slow: added to every message, emulated seconds
    restart_after: float | None = None  # kill or a leader kill: restart the victim this much later

    def to_wire(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in ("", None)}

    @staticmethod
    def from_wire(d: dict[str, Any]) -> FaultSpec:
        return FaultSpec(**d)


@dataclass(frozen=True)
class Roster:
    """Who can be hit: role -> actor names, and what the fault vocabulary
    needs to know of each role (built from the architecture registry by
    ``schedulers.scenario.parse.roster_for``; the chaos script gets it from
    the running emulation, so it needs no registry of its own).

    ``leader_roles``: roles whose members elect a leader; ``kill_leader``:
    action -> the leader role it kills; ``peers``: what one member of a role
    talks to (a partition's other side, for the monkey); ``no_restart``:
    role -> why it cannot be restarted; ``nodes``: the cluster's nodes
    (empty on an embedded Ray)."""

    members: dict[str, list[str]]
    restartable: frozenset[str] = frozenset()
    nodes: tuple[str, ...] = ()
    leader_roles: tuple[str, ...] = ()
    kill_leader: dict[str, str] = field(default_factory=dict)
    peers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    no_restart: dict[str, str] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)  # leader kill action -> what a run needs for it

    def role_of(self, name: str) -> str | None:
        for role, names in self.members.items():
            if name in names:
                return role
        return None

    def names(self) -> list[str]:
        return [n for names in self.members.values() for n in names]

    def actions(self) -> tuple[str, ...]:
        return ACTIONS + tuple(self.kill_leader) + tuple(a for a in self.unavailable if a not in self.kill_leader)

    def leader_kill_of(self, role: str) -> str:
        return next(a for a, r in self.kill_leader.items() if r == role)

    def to_wire(self) -> dict[str, Any]:
        return {"members": self.members, "restartable": sorted(self.restartable), "nodes": list(self.nodes),
                "leader_roles": list(self.leader_roles), "kill_leader": self.kill_leader,
                "peers": {r: list(p) for r, p in self.peers.items()}, "no_restart": self.no_restart,
                "unavailable": self.unavailable}

    @staticmethod
    def from_wire(d: dict[str, Any]) -> Roster:
        return Roster({k: list(v) for k, v in d["members"].items()}, frozenset(d["restartable"]), tuple(d["nodes"]),
                      tuple(d["leader_roles"]), dict(d["kill_leader"]), {r: tuple(p) for r, p in d["peers"].items()},
                      dict(d["no_restart"]), dict(d["unavailable"]))


LEADER_ALIAS = "-leader"


def leader_alias(roster: Roster, name: str) -> str | None:
    """The role whose current leader ``name`` stands for (``coordinator-leader``,
    ``master-leader``), resolved when the fault is carried out; else None.
    Who leads changes during a run, so a plan cannot name it in advance."""
    role = name[: -len(LEADER_ALIAS)] if name.endswith(LEADER_ALIAS) else ""
    return role if role in roster.leader_roles else None


def member_index(name: str) -> int:
    """The index of a numbered actor: ``machine-host-3`` -> 3, ``coordinator-0`` -> 0."""
    return int(name.rsplit("-", 1)[1])


def _side(roster: Roster, name: str, what: str) -> str:
    """The role of a target that is an actor name or a role; else why not."""
    if name in INSTRUMENTS:
        raise FaultError(f"{what} {name!r} is an instrument of the experiment (the submitter and metrics "
                         "collector observe the system; they are not part of it)")
    if name in roster.members:
        if not roster.members[name]:
            raise FaultError(f"{what} role {name!r} has no actors in this run")
        return name
    role = roster.role_of(name) or leader_alias(roster, name)
    if role is None:
        roles = ", ".join(r for r in roster.members if roster.members[r])
        leaders = "".join(f", {r}{LEADER_ALIAS}" for r in roster.leader_roles)
        raise FaultError(f"unknown {what} {name!r}: not an actor of this run nor a role ({roles}{leaders})")
    return role


def check(f: FaultSpec, roster: Roster) -> None:
    """Raise FaultError naming what is wrong with ``f`` in a run with ``roster``."""
    actions = roster.actions()
    if f.action not in actions:
        raise FaultError(f"unknown action {f.action!r} (one of {', '.join(actions)})")
    if f.action in LASTING and (f.duration is None or f.duration <= 0):
        raise FaultError(f"{f.action} needs a duration > 0 (emulated seconds)")
    if f.action not in LASTING and f.duration is not None:
        raise FaultError(f"{f.action} takes no duration (kill takes restart_after)")
    if f.action == "slow" and f.delay <= 0:
        raise FaultError("slow needs a delay > 0 (emulated seconds added to every message)")
    if f.action != "slow" and f.delay:
        raise FaultError(f"{f.action} takes no delay")
    if f.action != "partition" and f.peer:
        raise FaultError(f"{f.action} takes no peer (only partition has two sides)")
    if f.action in roster.unavailable:
        raise FaultError(f"{f.action} needs {roster.unavailable[f.action]}")
    kills = ("kill", *roster.kill_leader)
    if f.restart_after is not None and (f.action not in kills or f.restart_after <= 0):
        raise FaultError(f"restart_after must be > 0 and only goes with {', '.join(kills)}")
    if f.action in roster.kill_leader:
        role = roster.kill_leader[f.action]
        if f.target:
            raise FaultError(f"{f.action} picks its own target (the current leader)")
        if len(roster.members.get(role, [])) == 1 and f.restart_after is None:
            raise FaultError(f"with a single {role}, {f.action} needs restart_after (no other {role} takes over)")
        return
    if not f.target:
        raise FaultError(f"{f.action} needs a target (an actor name or a role)")
    if f.action == "kill_node":
        if not f.target.startswith("node-") or not f.target[5:].isdigit():
            raise FaultError(f"kill_node needs a target node-<i> (got {f.target!r})")
        if f.target == "node-0":
            raise FaultError("node-0 is the head node and holds the control plane; kill a worker node (node-1 and up)")
        if roster.nodes and f.target not in roster.nodes:
            raise FaultError(f"no {f.target} in this cluster (nodes: {', '.join(roster.nodes)})")
        return
    role = _side(roster, f.target, "target")
    if f.action == "restart" or (f.action == "kill" and f.restart_after is not None):
        if role not in roster.restartable:
            why = roster.no_restart.get(role)
            raise FaultError(f"a {role} cannot be restarted in this run" + (f" ({why})" if why else ""))
    if f.action == "restart" and (f.target in roster.members or leader_alias(roster, f.target)):
        raise FaultError("restart needs an actor name, not a role (it brings back one that was killed)")
    if f.action == "partition":
        if not f.peer:
            raise FaultError("partition needs a peer (the other side: an actor name or a role)")
        _side(roster, f.peer, "peer")
        if f.peer == f.target and f.target not in roster.members:
            raise FaultError("partition needs two different sides")


def _inside(at: float, run: float | None) -> str | None:
    if run:
        return None if 0 < at < run else f"must be inside the run (0, {run:g})"
    return None if at >= 0 else "must be >= 0"


def _known_action(action: str, roster: Roster) -> str | None:
    return None if action in roster.actions() else f"must be one of {', '.join(roster.actions())}"


# [[faults]]: one fault, in the order its keys are read (``values``:
# ``run``, the run's duration or None, and ``roster``, what it can hit).
FAULT_FIELDS = (
    Field("at", float, unit="emulated s", schema={"minimum": 0}, against=lambda v, got: _inside(v, got["run"]),
          doc="When: emulated seconds into the run, inside it (a chaos plan's: from the plan's start)."),
    Field("action", str, against=lambda v, got: _known_action(v, got["roster"]),
          doc=f"{', '.join(ACTIONS)}, or a role's leader kill (kill_leader: the coordinator group's leader)."),
    Field("target", str, "",
          doc="An actor's name, a role (a member picked when carried out), <role>-leader, or node-<i> (kill_node); "
              "none for a leader kill."),
    Field("peer", str, "", doc="partition: the other side (an actor's name or a role)."),
    Field("duration", float, None, unit="emulated s", check=positive, doc="pause, slow, partition: how long."),
    Field("delay", float, Computed(lambda v: 0.0, "none (only slow takes one)"), unit="emulated s", check=positive,
          doc="slow: added to every message."),
    Field("restart_after", float, None, unit="emulated s", check=positive,
          doc="kill or a leader kill: restart the victim this much later."),
)


def parse_fault(t: Table, duration: float | None, roster: Roster) -> FaultSpec:
    """One ``[[faults]]`` table; ``duration`` bounds ``at`` when known."""
    f = FaultSpec(**parse_fields(t, FAULT_FIELDS, values={"run": duration, "roster": roster}))
    t.done()
    try:
        check(f, roster)
    except FaultError as e:
        t.fail(t.path, str(e))
    return f


def parse_plan(data: Any, source: str, roster: Roster) -> list[FaultSpec]:
    """A chaos plan file: ``[[faults]]`` with ``at`` counted from the plan's start."""
    top = Table(data, "", source)
    if "faults" not in top.data:
        top.fail("faults", "a plan needs at least one [[faults]] entry")
    faults = [parse_fault(t, None, roster) for t in table_array(top, "faults")]
    top.done()
    return sorted(faults, key=lambda f: f.at)


# ------------------------------------------------------------------ monkey

@dataclass
class Monkey:
    """Random faults over chosen roles. Every kill comes back (restart_after),
    so a long soak never drains the cell or loses a replica majority; the
    victim and any peer are named here, from the seeded generator."""

    roster: Roster
    roles: tuple[str, ...]
    rng: np.random.Generator
    lasting: float = 5.0  # emulated seconds a pause / slow / partition lasts (at most)
    back_after: float = 5.0  # emulated seconds before a killed actor restarts
    delay: float = 0.5  # emulated seconds a slow link adds
    actions: tuple[str, ...] = field(default=("kill", "pause", "slow", "partition"))
    known: tuple[str, ...] = ()  # every role name the monkey may be given (default: the roster's)

    def __post_init__(self) -> None:
        known = self.known or tuple(self.roster.members)
        bad = [r for r in self.roles if r not in known]
        if bad:
            raise FaultError(f"unknown role {bad[0]!r} (one of {', '.join(known)})")
        self.roles = tuple(r for r in self.roles if self.roster.members.get(r))
        if not self.roles:
            raise FaultError("none of the chosen roles has actors in this run")

    def draw(self, at: float) -> FaultSpec:
        role = self.roles[int(self.rng.integers(len(self.roles)))]
        # A role that elects a leader: its leader is one more victim to draw
        # (pauses and partitions of the leader are what test a failover).
        lead = role in self.roster.leader_roles
        names = self.roster.members[role] + ([f"{role}{LEADER_ALIAS}"] if lead else [])
        victim = names[int(self.rng.integers(len(names)))]
        choices = [a for a in self.actions if a != "kill" or role in self.roster.restartable]
        if lead and "kill" in choices:
            choices.append(self.roster.leader_kill_of(role))
        action = choices[int(self.rng.integers(len(choices)))]
        span = float(self.rng.uniform(0.2, 1.0)) * self.lasting
        if action in self.roster.kill_leader or (action == "kill" and leader_alias(self.roster, victim)):
            return FaultSpec(at, self.roster.leader_kill_of(role), restart_after=self.back_after)
        if action == "kill":
            return FaultSpec(at, "kill", victim, restart_after=self.back_after)
        if action == "pause":
            return FaultSpec(at, "pause", victim, duration=span)
        if action == "slow":
            return FaultSpec(at, "slow", victim, duration=span, delay=self.delay)
        peers = [p for p in self.roster.peers.get(role, ()) if [n for n in self.roster.members.get(p, []) if n != victim]]
        if not peers:
            return FaultSpec(at, "pause", victim, duration=span)
        return FaultSpec(at, "partition", victim, peer=peers[int(self.rng.integers(len(peers)))], duration=span)


def monkey_plan(monkey: Monkey, start: float, end: float, every: float) -> list[FaultSpec]:
    """The monkey's faults for a whole run, drawn ahead (for an engine with a
    virtual clock, where nothing runs beside the run to post them): gaps
    exponential with mean ``every`` emulated seconds from ``start``, none at
    or after ``end``. Same monkey seed, same plan: a failing soak replays."""
    plan: list[FaultSpec] = []
    at = start
    while True:
        at += float(monkey.rng.exponential(every))
        if at >= end:
            return plan
        plan.append(monkey.draw(round(at, 6)))


def shifted(f: FaultSpec, by: float) -> FaultSpec:
    return replace(f, at=f.at + by)


__all__ = ["ACTIONS", "FAULT_FIELDS", "FaultError", "FaultSpec", "Monkey", "Roster", "check", "monkey_plan", "parse_fault",
           "parse_plan", "ScenarioError"]
