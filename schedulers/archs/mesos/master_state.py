"""The leading Mesos master's soft state and decisions, pure.

The master's shell (``actors.archs.mesos.master``) keeps leadership (its
lease), the loops, the host watch, the calls and sends and the event log;
everything it knows and decides as leader lives here, over the pure
``Allocator``. Every method takes ``now`` where time matters and returns
plain data: what the shell must send, and the records its events carry.

All of it is soft state: a new leader starts empty (``take_over``) and
rebuilds it from agents and frameworks re-registering, the Mesos way.

Books kept beside the allocator:

* ``to_launch``: host -> launches accepted and not yet pulled by its agent,
  each ``[job, task, machine, request, duration, accepted_at, framework]``;
  ``kills``: host -> task keys its agent must kill (revocations);
* status updates owed to each framework, sent once per allocation round:
  ``running_updates`` (its agent pulled the launch), ``finished_updates``
  and ``lost_updates`` (lost with an agent, never reported by one that
  re-registered, or revoked);
* ``recent_finished`` (reported by re-registering agents) and ``done_by_fw``
  (finished under this leader): what a restarted framework must not place
  again, and what reconciliation must not call lost;
* ``written_off``: agents removed as silent; one that comes back starts empty.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

import numpy as np

from schedlab.schedulers.archs.mesos.allocator import Allocator, Launch, Offer, TaskKey
from schedlab.schedulers.archs.mesos.order_policies import OrderPolicy
from schedlab.schedulers.faults.liveness import LivenessSpec
from schedlab.schedulers.model.wire import held_launches, withdraw_launch
from schedlab.schedulers.model.resources import sample_fields, used_shares


@dataclass(frozen=True)
class MasterConfig:
    capacity: np.ndarray
    machines_per_host: int
    hosts: int
    frameworks: dict[str, tuple[float, int, float]]  # actor name -> (weight, priority, guarantee)
    policy: OrderPolicy
    granularity: str
    allocation_interval: float  # emulated s
    offer_timeout: float
    revocation: bool
    starvation_timeout: float
    masters: int
    replicas: int
    lease_wall_s: float
    sample_interval: float
    liveness: LivenessSpec = LivenessSpec()
    heartbeat: float | None = None  # emulated s between an idle agent's pings (None: it polls every batch)


def machine_spans(machines: np.ndarray) -> list[list[int]]:
    """``machines`` as runs of consecutive numbers, [[first, last], ...]
    (inclusive), in their order: how ``offers_made`` names an offer's
    machines. A cell-granularity offer is most of a 10,000-machine cell;
    listed one by one, writing and reading them back costs a third of a
    Mesos sim run's CPU (and 45 KB of events.jsonl per offer)."""
    m = np.asarray(machines, dtype=np.int64)
    if m.size == 0:
        return []
    cut = np.flatnonzero(np.diff(m) != 1) + 1
    return np.stack([m[np.r_[0, cut]], m[np.r_[cut - 1, m.size - 1]]], axis=1).tolist()


def spanned_machines(spans: list[list[int]]) -> list[int]:
    """The machines ``machine_spans`` encoded, in order (for readers of ``offers_made``)."""
    return [m for first, last in spans for m in range(first, last + 1)]


def close_record(o: Offer, framework: str, outcome: str, now: float) -> list:
    """An ``offers_closed`` record: [offer, framework, outcome ("accepted",
    "declined", "rescinded"), seconds it was open, resources offered...]."""
    return [o.offer_id, framework, outcome, round(now - o.made_at, 6), *np.round(o.resources.sum(axis=0), 6).tolist()]


@dataclass
class AgentRegistered:
    """What registering an agent decided."""

    reset: bool  # it had been written off: it must stop everything and start empty
    gone: list[TaskKey]  # tasks we knew there that it does not report: lost (``tasks_gone``)
    tasks: int  # running tasks taken from its report (0 after a reset)
    # Launches accepted for it and never pulled, [job, task, machine]: dropped
    # with the rest of what it does not report (its frameworks get them lost).
    unpulled: list[list[int]] = field(default_factory=list)


@dataclass
class WriteOff:
    """Silent agents removed. Every task that was on them is reported once,
    in ``lost`` (was running) or ``unpulled`` (its launch was never pulled),
    and owed to its framework as lost."""

    rescinded: list[list]  # ``close_record`` of each offer touching their machines
    lost: list[list[int]]  # [[job, task]]
    unpulled: list[list[int]]  # [[job, task]]


@dataclass
class Response:
    """The master's answer to a framework's ``respond``."""

    results: list[tuple[bool, list[bool], list[bool]]]  # per section: (offer ok, launched mask, held mask)
    closed: list[list]  # ``close_record`` of the offers this answer closed


@dataclass
class Revocation:
    """The fields of a ``revoked`` event."""

    starving: list[str]
    victims: dict[str, int]  # framework -> tasks revoked
    tasks: int


@dataclass
class AllocationRound:
    """What one allocation round decided; the shell logs it in this order
    (rescinded, revoked, offers made) and then messages ``recipients``."""

    rescinded: list[list]  # ``close_record`` of offers that expired
    revoked: Revocation | None
    made: list[list]  # ``offers_made`` records: [offer, framework, machine_spans(machines), resources...]
    offers: dict[str, list[dict]]  # framework -> its new offers, as sent
    recipients: list[str]  # frameworks with new offers or status updates owed, in send order


@dataclass
class MasterState:
    """A master's soft state. ``alloc`` is None while the master does not
    lead; ``epoch`` is the last leadership's (replies carry it, and anything
    addressed to an older epoch is refused)."""

    cfg: MasterConfig
    alloc: Allocator | None = None
    epoch: int = 0
    agents: set[int] = field(default_factory=set)
    registered_fws: set[str] = field(default_factory=set)
    to_launch: dict[int, list[list]] = field(default_factory=lambda: collections.defaultdict(list))
    kills: dict[int, list[TaskKey]] = field(default_factory=lambda: collections.defaultdict(list))
    running_updates: dict[str, list[TaskKey]] = field(default_factory=lambda: collections.defaultdict(list))
    lost_updates: dict[str, list[TaskKey]] = field(default_factory=lambda: collections.defaultdict(list))
    finished_updates: dict[str, list[TaskKey]] = field(default_factory=lambda: collections.defaultdict(list))
    recent_finished: set[TaskKey] = field(default_factory=set)
    done_by_fw: dict[str, set[TaskKey]] = field(default_factory=lambda: collections.defaultdict(set))
    written_off: set[int] = field(default_factory=set)

    # ------------------------------------------------------------ leadership

    @property
    def leads(self) -> bool:
        return self.alloc is not None

    def take_over(self, epoch: int) -> list[list[int]]:
        """Become leader of ``epoch`` with empty soft state; the launches
        the books still held unpulled (``drop_unpulled``) are returned."""
        dropped = self.drop_unpulled()
        c = self.cfg
        self.alloc = Allocator(c.capacity, c.policy, c.granularity, c.offer_timeout)
        self.epoch = epoch
        self.agents.clear()
        self.registered_fws.clear()
        for d in (self.to_launch, self.kills, self.running_updates, self.lost_updates, self.finished_updates):
            d.clear()
        self.recent_finished.clear()
        self.done_by_fw.clear()
        self.written_off.clear()
        return dropped

    def step_down(self) -> list[list[int]]:
        """Stop leading (the books stay, unread, until the next take-over);
        the launches held unpulled are dropped and returned."""
        self.alloc = None
        return self.drop_unpulled()

    def drop_unpulled(self) -> list[list[int]]:
        """Forget the launches accepted and never pulled by their agents:
        [[job, task, machine]]. A master that stops leading cannot hand them
        out (every agent's call to an old epoch is refused), so they are gone
        with it; their frameworks learn it by reconciling with the next
        leader. Returned so the shell can say so: a framework that dies
        before it reconciles leaves no other trace of where its commit went."""
        dropped = [[int(ln[0]), int(ln[1]), int(ln[2])] for ln in held_launches(self.to_launch)]
        self.to_launch.clear()
        return dropped

    def _a(self) -> Allocator:
        assert self.alloc is not None, "only a leading master decides"
        return self.alloc

    def machines(self, host: int) -> np.ndarray:
        """The machines of agent ``host``."""
        k = self.cfg.machines_per_host
        return np.arange(host * k, min((host + 1) * k, self.cfg.capacity.shape[0]), dtype=np.int64)

    def agent_ok(self, epoch: int, host: int) -> bool:
        """Whether an agent's call addressed to ``epoch`` is for us, from an agent registered with us."""
        return epoch == self.epoch and host in self.agents

    def framework_ok(self, name: str, epoch: int) -> bool:
        """Whether a framework's call addressed to ``epoch`` is for us, from a framework registered with us."""
        return epoch == self.epoch and name in self.registered_fws

    # ---------------------------------------------------------------- agents

    def register_agent(self, host: int, tasks: list, finished: list) -> AgentRegistered:
        """An agent (re-)registers. ``tasks``: [job, task, machine, request,
        framework] it runs; ``finished``: keys of tasks that ended lately
        (their final status may have died with the old master).

        A written-off agent comes back empty: its tasks were given up and
        placed again. What we thought ran there, or waited to launch there,
        and the agent does not report, running or finished, is gone with a
        previous incarnation: its framework is owed a lost update, or its
        job never completes."""
        a = self._a()
        reset = host in self.written_off
        if reset:
            self.written_off.discard(host)
            tasks, finished = [], []
        reported = {(int(j), int(t)) for j, t, *_ in tasks} | {(int(j), int(t)) for j, t in finished}
        gone = [(k, a.tasks[k][0]) for k in a.tasks_on(self.machines(host)) if k not in reported]
        for key, fw in gone:
            self.lost_updates[fw].append(key)
        a.add_agent(self.machines(host), [((int(j), int(t)), fw, int(m), req) for j, t, m, req, fw in tasks])
        unpulled = [[int(ln[0]), int(ln[1]), int(ln[2])] for ln in self.to_launch.pop(host, [])]
        self.recent_finished.update((int(j), int(t)) for j, t in finished)
        self.agents.add(host)
        return AgentRegistered(reset, [k for k, _ in gone], len(tasks), unpulled)

    def write_off(self, hosts: list[int], now: float) -> WriteOff:
        """Remove agents that stopped polling: offers touching their machines
        are rescinded (each once), launches they never pulled are withdrawn,
        their kills dropped, and every task there is owed to its framework as
        lost (which places it again). A written-off agent that polls again
        is told to start empty."""
        a = self._a()
        lost: list[list[int]] = []
        unpulled: list[list[int]] = []
        rescinded: list[list] = []
        for host in hosts:
            machines = self.machines(host)
            ms = set(machines.tolist())
            rescinded += [close_record(o, o.framework, "rescinded", now)
                          for o in a.offers.values() if ms & set(o.machines.tolist())]
            never = {(ln[0], ln[1]) for ln in self.to_launch.pop(host, [])}
            self.kills.pop(host, None)
            owners = {k: a.tasks[k][0] for k in a.tasks_on(machines)}
            a.remove_agent(machines)
            for key, fw in owners.items():
                (unpulled if key in never else lost).append([key[0], key[1]])
                self.lost_updates[fw].append(key)
            self.agents.discard(host)
            self.written_off.add(host)
        return WriteOff(rescinded, lost, unpulled)

    def exchange(self, host: int, finished: list) -> tuple[list[list], list[TaskKey]]:
        """An agent's poll: ``finished`` [[job, task, killed]] in; its
        launches (each handed out once) and kills out."""
        a = self._a()
        if finished:
            keys = []
            k = self.cfg.machines_per_host
            for j, t, killed in finished:
                key = (int(j), int(t))
                owner_fw = a.tasks.get(key)
                if owner_fw is not None and owner_fw[1] // k != host:
                    # A task this agent ran before it was given up on, placed
                    # again elsewhere since: the report is not about that copy.
                    continue
                if owner_fw is not None:
                    # A revoked task is reported once its agent killed it, not
                    # when revocation was decided: one that finished first ran.
                    (self.lost_updates if killed else self.finished_updates)[owner_fw[0]].append(key)
                    if not killed:
                        self.done_by_fw[owner_fw[0]].add(key)
                keys.append(key)
            a.release(keys)
        launches = self.to_launch.pop(host, [])
        for ln in launches:
            self.running_updates[ln[6]].append((ln[0], ln[1]))
        return launches, self.kills.pop(host, [])

    def waiting(self) -> list[int]:
        """Agents something waits for (launches or kills not pulled): the
        master rings them (``actors.common.doorbell``)."""
        return [h for h, ls in self.to_launch.items() if ls] + [h for h, ks in self.kills.items() if ks]

    # ------------------------------------------------------------ frameworks

    def register_framework(self, name: str, wants: bool, now: float) -> None:
        """``name`` is the framework's actor name, its identity everywhere;
        its weight, priority and guarantee come from the configuration."""
        weight, priority, guarantee = self.cfg.frameworks.get(name, (1.0, 0, 0.0))
        self._a().add_framework(name, weight, priority, guarantee, wants, now)
        self.registered_fws.add(name)

    def revive(self, name: str, wants: bool) -> None:
        self._a().set_wants(name, wants)

    def respond(self, name: str, sections: list, declines: list, unholds: list, wants: bool, now: float) -> Response:
        """A framework's answer to its offers, atomically per offer: first the
        ``unholds`` [(machine, request)] given back, then the ``declines``
        [(offer, refuse_seconds)], then each section (offer or None, launches
        (job, task, machine, request, duration), holds (machine, request)).
        The allocator never launches more than an offer (plus the slots the
        framework holds) has room for; accepted launches wait in
        ``to_launch`` for their agent's next poll."""
        a = self._a()
        closed = []
        for machine, req in unholds:
            a.unhold(name, int(machine), np.asarray(req, dtype=np.float64))
        for oid, refuse in declines:
            o = a.offers.get(oid)
            if o is not None and a.decline(oid, name, float(refuse), now):
                closed.append(close_record(o, name, "declined", now))
        results = []
        k = self.cfg.machines_per_host
        for oid, launches, holds in sections:
            o = a.offers.get(oid) if oid is not None else None
            res = a.accept(oid, name, [Launch((int(j), int(t)), int(m), np.asarray(r, dtype=np.float64)) for j, t, m, r, _d in launches],
                           [(int(m), np.asarray(r, dtype=np.float64)) for m, r in holds])
            if o is not None and o.framework == name:
                # An answer to an offer rescinded earlier closes nothing: the
                # rescind was its close (the framework sees its claims conflict).
                closed.append(close_record(o, name, "accepted" if res.ok else "rescinded", now))
            for (j, t, m, r, d), ok in zip(launches, res.launched.tolist()):
                if ok:
                    self.to_launch[int(m) // k].append([int(j), int(t), int(m), list(r), float(d), now, name])
            results.append((res.ok, res.launched.tolist(), res.held.tolist()))
        a.set_wants(name, wants)
        return Response(results, closed)

    def settled(self) -> bool:
        """Every agent has re-registered with this leader or been written
        off: only then does it know what runs where (its state is soft)."""
        return len(self.agents | self.written_off) >= self.cfg.hosts

    def recover_tasks(self, name: str, job_ids: list) -> dict[int, list[int]] | None:
        """For a restarted framework: job -> its tasks that run, wait to
        launch or finished (as far as this master has seen). None (unknown)
        until ``settled``: a task on an agent not yet re-registered would
        be taken for pending, and placed a second time."""
        if not self.settled():
            return None
        a = self._a()
        jobs = set(int(j) for j in job_ids)
        known = {k for k, v in a.tasks.items() if v[0] == name and k[0] in jobs}
        known |= {(ln[0], ln[1]) for ls in self.to_launch.values() for ln in ls if ln[6] == name and ln[0] in jobs}
        known |= {k for k in self.done_by_fw.get(name, set()) | self.recent_finished if k[0] in jobs}
        by_job: dict[int, list[int]] = collections.defaultdict(list)
        for j, t in known:
            by_job[j].append(t)
        return dict(by_job)

    def reconcile(self, keys: list) -> list[TaskKey] | None:
        """Which of these launched tasks does no agent know about? None
        (unknown) until ``settled``."""
        if not self.settled():
            return None
        a = self._a()
        queued = {(ln[0], ln[1]) for ls in self.to_launch.values() for ln in ls}
        return [k for k in (tuple(x) for x in keys)
                if k not in a.tasks and k not in queued and k not in self.recent_finished]

    # ------------------------------------------------------------ allocation

    def allocate_round(self, now: float) -> AllocationRound:
        """Expire offers past their timeout, revoke for starving frameworks
        (when configured), and make new offers, only to registered
        frameworks (an agent may report one that has not re-registered yet)."""
        a = self._a()
        rescinded = [close_record(o, o.framework, "rescinded", now) for o in a.expire(now)]
        revoked = self._revoke(now) if self.cfg.revocation else None
        for n, acct in a.accounts.items():
            if n not in self.registered_fws:
                acct.wants = False
        made = a.allocate(now)
        offers: dict[str, list[dict]] = collections.defaultdict(list)
        for o in made:
            offers[o.framework].append({"id": o.offer_id, "machines": o.machines, "free": o.resources, "expires": o.expires_at})
        records = [[o.offer_id, o.framework, machine_spans(o.machines), *np.round(o.resources.sum(axis=0), 6).tolist()] for o in made]
        # In a fixed order (first mention), not a set's: a set of names
        # iterates in the order of their salted hashes, so the sends (and
        # with them the sim engine's whole run) would change with
        # PYTHONHASHSEED.
        recipients = list(dict.fromkeys([*offers, *self.running_updates, *self.lost_updates, *self.finished_updates]))
        return AllocationRound(rescinded, revoked, records, offers, recipients)

    def take_status(self, fw: str) -> tuple[list[TaskKey], list[TaskKey]] | None:
        """The status updates owed to ``fw``, handed over once: (running or
        finished, lost); None when there are none."""
        running, lost = self.running_updates.pop(fw, []), self.lost_updates.pop(fw, [])
        finished = self.finished_updates.pop(fw, [])
        if running or lost or finished:
            return running + finished, lost
        return None

    def _revoke(self, now: float) -> Revocation | None:
        """Tasks to take from frameworks above their guarantee for the
        starving ones: a launch not yet pulled is withdrawn and reported lost
        at once; a running task is killed by its agent (reported when it is)."""
        a = self._a()
        starving = a.starving(now, self.cfg.starvation_timeout)
        keys = a.revocations(starving)
        if not keys:
            return None
        k = self.cfg.machines_per_host
        victims: dict[str, int] = collections.Counter()
        for key in keys:
            fw, machine, _req = a.tasks[key]
            if withdraw_launch(self.to_launch, machine // k, key):  # not on its agent yet
                a.release([key])
                self.lost_updates[fw].append(key)
            else:
                self.kills[machine // k].append(key)
            victims[fw] += 1
        return Revocation(starving, dict(victims), len(keys))

    # ---------------------------------------------------------- measurements

    def sample(self) -> tuple[dict, dict]:
        """The fields of a ``cell_sample`` and a ``mesos_sample`` event."""
        a = self._a()
        total = a.total
        locked, held = used_shares(a.locked(), total), used_shares(a.held_total(), total)
        cell = {**sample_fields(used_shares(a.used(), total)), "version": self.epoch}
        mesos = {"epoch": self.epoch, "shares": {k: round(v, 6) for k, v in a.shares().items()},
                 "locked": locked, "held": held,
                 "agents": len(self.agents), "frameworks": len(self.registered_fws)}
        return cell, mesos
