"""Carries out faults during a run: the scenario's timeline and whatever the
chaos script posts meanwhile. The driver owns every actor, so it is the one
that kills, restarts, pauses, slows and partitions them; the chaos script
only asks (through the chaos inbox).

Each fault is logged as a ``fault`` event; killing the current leader starts
a failover record, closed when the driver sees a new leader (``failover``
event). When the first write succeeded after the kill is read from the
clients' ``coord_ack`` events by the summary.
"""
from __future__ import annotations

import bisect
import os
import signal
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from schedlab.actors import engines
from schedlab.actors.chaos.inbox import cluster_dir
from schedlab.actors.common.events import EventLog
from schedlab.actors.common.members import Members
from schedlab.actors.coordinator.replica_set import ReplicaSet
from schedlab.schedulers.events.shared import FAILOVER, FAULT
from schedlab.schedulers.faults.plan import FaultError, FaultSpec, Roster, check, leader_alias, member_index

Leader = Callable[[], "tuple[int, int] | None"]
ASK_WALL_S = 2.0  # the driver's patience with a member's answer (a paused one answers when its pause ends)
PARTITION_LEAD_WALL_S = 0.5  # a partition begins this long after it is carried out, on both sides at once
# A fault aimed at a role's leader while the role has none (an election under
# way) waits this long for one before it is skipped: "pause the leader" means
# whoever leads, and on a loaded machine elections take a while.
LEADER_WAIT_WALL_S = 10.0


class NoLeader(FaultError):
    """The fault's target is a leader and there is none at this moment."""


@dataclass
class Due:
    """A fault waiting for its time: who asked for it, and the chaos
    script's ticket to answer (None for the scenario's own faults)."""

    spec: FaultSpec
    source: str  # "scenario" or "chaos" (a chaos kill's restart is chaos too)
    ticket: int | None = None
    deferred: bool = False  # waited for a leader to be elected

class FaultTimeline:
    def __init__(self, faults: tuple[FaultSpec, ...], roster: Roster, members: Members, controllers: dict[str, ReplicaSet],
                 log: EventLog, seed: int, scale: float, exempt: list[str], placement: dict[str, str] | None = None,
                 end: float | None = None) -> None:
        """``controllers``: role -> the controller of a role whose members are
        numbered (``<role>-<i>``) and elect a leader (the coordinator group, an
        architecture's masters); every other actor is a singleton in ``members``.
        ``placement``: actor name -> the label of the cluster node it was placed
        on, for the actors placed on a node of their own (a node kill takes them).
        ``end``: the run's end (emulated s on the log's clock): nothing is
        carried out from then on, and no question to a member is allowed to
        outlast it: a paused leader answers only when its pause ends, so an
        unbounded wait would carry faults out past the end, where a stop
        without a quorum loses what the leader held."""
        self.pending = sorted((Due(f, "scenario") for f in faults), key=lambda d: d.spec.at)
        self.roster = roster
        self.members = members
        self.controllers = controllers
        self.log = log
        self.rng = np.random.default_rng([seed, 0xC4A05])
        self.scale = scale
        self.exempt = exempt  # instruments' actor keys: a slow actor still reports on time
        self.placement = placement or {}
        self.watching: list[dict[str, Any]] = []  # failovers awaiting a new leader
        self.done: list[tuple[int, dict]] = []  # (ticket, outcome) for the chaos inbox
        self.end = end

    def _schedule(self, due: Due) -> None:
        # After any due at the same time (as a stable sort would put it): a
        # day's soak schedules ~20,000, and a sort per insert grew with them.
        bisect.insort_right(self.pending, due, key=lambda d: d.spec.at)

    def post(self, f: FaultSpec, ticket: int) -> None:
        """A fault from the chaos script (already checked against the roster there)."""
        self._schedule(Due(f, "chaos", ticket))

    def step(self, now: float) -> None:
        later: list[Due] = []
        while self.pending and self.pending[0].spec.at <= now and not self._over():
            due = self.pending.pop(0)
            f = due.spec
            try:
                outcome = self._inject(f, now, due.source)
            except NoLeader as e:
                if now - f.at < LEADER_WAIT_WALL_S * self.scale:
                    due.deferred = True
                    later.append(due)  # try again next step
                    continue
                outcome = {"kind": f.action, "target": f.target or None, "skipped": f"{e} (waited {LEADER_WAIT_WALL_S:g} wall s)"}
            except FaultError as e:
                outcome = {"kind": f.action, "target": f.target or None, "skipped": str(e)}
            self._log(due, now, outcome)
        for due in later:
            self._schedule(due)
        if not self._over():
            self._watch()

    def close(self, now: float) -> None:
        """The run ends: every fault that came due and was not carried out
        (held back for a leader, or behind one that was) is logged skipped;
        those due after the end never came due, and are not."""
        for due in [d for d in self.pending if d.spec.at <= now]:
            f = due.spec
            why = "the run ended while it waited for a leader" if due.deferred else "the run ended before it was carried out"
            self._log(due, now, {"kind": f.action, "target": f.target or None, "skipped": why})
        self.pending = [d for d in self.pending if d.spec.at > now]

    def _log(self, due: Due, now: float, outcome: dict[str, Any]) -> None:
        if due.deferred:
            outcome["waited_s"] = round(now - due.spec.at, 6)
        # Injecting can take a while (finding the leader first): the fault's
        # time is when it was carried out, here and in the chaos reply alike.
        t = self.log.now()
        self.log.emit(FAULT, t=t, at_s=round(now, 6), source=due.source, **outcome)
        if due.ticket is not None:
            self.done.append((due.ticket, {"at_s": round(t, 3), **outcome}))

    def _over(self) -> bool:
        return self.end is not None and self.log.now() >= self.end

    def _patience(self) -> float:
        """Wall s to wait for a member's answer: never past the run's end."""
        if self.end is None:
            return ASK_WALL_S
        return min(ASK_WALL_S, max(0.0, (self.end - self.log.now()) / self.scale))

    # ------------------------------------------------------------ targets

    def _leader_of(self, role: str) -> Leader:
        ctl = self.controllers[role]
        return lambda: ctl.lead(self._patience())

    def _live(self, role: str) -> dict[str, Any]:
        ctl = self._indexed(role)
        return {f"{role}-{i}": h for i, h in ctl.live.items()} if ctl is not None else self.members.of_role(role)

    def _pick(self, target: str) -> tuple[str, str]:
        """(role, actor name) of a target that is a name, a role (a live
        member at random) or a role's leader (whoever leads now)."""
        role = leader_alias(self.roster, target)
        if role is not None:
            lead = self._leader_of(role)()
            if lead is None:
                raise NoLeader(f"no {role} leader at that moment")
            return role, f"{role}-{lead[0]}"
        if target in self.roster.members:
            live = sorted(self._live(target))
            if not live:
                raise FaultError(f"no live {target} to hit")
            return target, live[int(self.rng.integers(len(live)))]
        role = self.roster.role_of(target)
        assert role is not None  # checked against the roster
        return role, target

    def _side(self, target: str) -> dict[str, Any]:
        """Live actors on one side of a partition (a name or a whole role)."""
        if target in self.roster.members:
            return self._live(target)
        if leader_alias(self.roster, target):
            target = self._pick(target)[1]
        role = self.roster.role_of(target)
        h = self._live(role or "").get(target)
        if h is None:
            raise FaultError(f"{target} is not running")
        return {target: h}

    # ------------------------------------------------------------ actions

    def _inject(self, f: FaultSpec, now: float, source: str) -> dict[str, Any]:
        check(f, self.roster)
        wall = (f.duration or 0.0) / self.scale
        if f.action == "kill_node":
            return self._kill_node(f.target)
        if f.action in self.roster.kill_leader:
            role = self.roster.kill_leader[f.action]
            lead = self._leader_of(role)()
            if lead is None:
                raise NoLeader(f"no {role} leader at that moment")
            return self._kill(f, role, f"{role}-{lead[0]}", now, lead, source)
        if f.action == "partition":
            a = self._side(f.target)
            b = {n: h for n, h in self._side(f.peer).items() if n not in a}
            if not a or not b:
                raise FaultError(f"nothing alive on one side ({f.target} | {f.peer})")
            keys_a = [engines.current().actor_key(h) for h in a.values()]
            keys_b = [engines.current().actor_key(h) for h in b.values()]
            # Both sides cut at one instant, a moment from now: each actor
            # learns of it when it gets its call, which on a busy machine
            # is seconds apart, and a cut that began one host at a time
            # would look like a few hosts dying, not a partition.
            begins = now + PARTITION_LEAD_WALL_S * self.scale
            engines.current().outcomes([engines.current().call(h, "chaos_partition", keys_b, wall, begins) for h in a.values()]
                                       + [engines.current().call(h, "chaos_partition", keys_a, wall, begins) for h in b.values()],
                                       timeout=self._patience())
            return {"kind": "partition", "target": sorted(a), "role": self.roster.role_of(next(iter(a))),
                    "duration_s": f.duration, "peer": sorted(b)}
        role, name = self._pick(f.target)
        if f.action == "restart":
            self._restart(role, name)
            return {"kind": "restart", "target": name, "role": role}
        if f.action == "kill":
            lead = self._leader_of(role)() if role in self.roster.leader_roles else None
            return self._kill(f, role, name, now, lead, source)
        out = {"kind": f.action, "target": name, "role": role, "duration_s": f.duration}
        if f.action == "pause":
            engines.current().call(self._side(name)[name], "chaos_pause", wall)
            return out
        engines.current().call(self._side(name)[name], "chaos_slow", f.delay / self.scale, wall, self.exempt)
        return {**out, "delay_s": f.delay}

    def _indexed(self, role: str) -> ReplicaSet | None:
        """The controller of a role whose actors are numbered and elect a
        leader (kill / restart by index); None for singletons in members."""
        return self.controllers.get(role)

    def _kill(self, f: FaultSpec, role: str, name: str, now: float, lead: tuple[int, int] | None, source: str) -> dict[str, Any]:
        ctl = self._indexed(role)
        index = member_index(name) if ctl is not None else None
        if ctl is not None:
            ctl.kill(member_index(name))
        elif not self.members.kill(name):
            raise FaultError(f"{name} is not running")
        if f.restart_after is not None:
            self._schedule(Due(FaultSpec(now + f.restart_after, "restart", name), source))
        was_leader = lead is not None and lead[0] == index
        if was_leader:
            assert lead is not None
            self.watching.append({"target": name, "term": lead[1], "role": role, "leader": self._leader_of(role)})
        out: dict[str, Any] = {"kind": f.action, "target": name, "role": role}
        if role in self.roster.leader_roles:
            out.update(was_leader=was_leader, term=lead[1] if lead else None)
        if f.restart_after is not None:
            out["restart_after_s"] = f.restart_after
        return out

    def _restart(self, role: str, name: str) -> None:
        ctl = self._indexed(role)
        if ctl is not None:
            ctl.restart(member_index(name))
        else:
            self.members.restart(name)

    def _kill_node(self, node: str) -> dict[str, Any]:
        """A rack failure: SIGKILL to the node's whole process group (raylet,
        workers, actors), as scripts/cluster.sh kill does. The outcome names
        the actors it took (``took``: placed on the node and running now, in
        placement order): they die now, though the driver learns of each
        death only when Ray declares the node dead, seconds later, or never
        if the run ends first."""
        pid_file = cluster_dir() / f"{node}.pid"
        try:
            pid = int(pid_file.read_text().strip())
        except (OSError, ValueError):
            raise FaultError(f"{node} was not started by scripts/cluster.sh (no {pid_file}; set SCHEDLAB_CLUSTER_DIR)") from None
        try:
            os.killpg(pid, signal.SIGKILL)
        except ProcessLookupError:
            raise FaultError(f"{node} is already down") from None
        except PermissionError:
            os.kill(pid, signal.SIGKILL)
        on_node = [name for name, where in self.placement.items() if where == node]
        role_of = {name: role for role, names in self.roster.members.items() for name in names}
        live: set[str] = set()
        for role in sorted({role_of[name] for name in on_node if name in role_of}):
            live.update(self._live(role))
        return {"kind": "kill_node", "target": node, "role": "node", "took": [name for name in on_node if name in live]}

    def _watch(self) -> None:
        """Close a failover once its role has a leader with a newer term or epoch."""
        seen: dict[str, tuple[int, int] | None] = {}
        for w in list(self.watching):
            if w["role"] not in seen:
                seen[w["role"]] = w["leader"]()
            lead = seen[w["role"]]
            if lead is not None and lead[1] > w["term"]:
                self.log.emit(FAILOVER, role=w["role"], old_leader=w["target"], new_leader=f"{w['role']}-{lead[0]}", term=lead[1])
                self.watching.remove(w)
