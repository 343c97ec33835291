"""A seeded in-memory network and cluster harness for ``RaftNode`` (not a
test module). Everything random comes from one ``random.Random(seed)``, so a
run is a pure function of its seed, configuration and fault schedule.

The network delays each message 1..``max_delay`` ticks (so messages reorder),
drops with probability ``drop``, duplicates with ``duplicate``, and drops
messages between nodes in different partition groups at delivery time.
Nodes crash (their in-memory state is gone, their ``Storage`` stays) and
restart from what they persisted. Clients send ("incr", client_id) requests
one at a time, numbered 1, 2, ..., retrying on timeout or redirect, so with
exactly-once application the n-th acknowledged result of a client is n.

The ``History`` records what the safety checkers at the bottom need: leaders
per term with their log at election, every node's log after each change,
every applied entry per node and incarnation, and client acknowledgements.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from typing import Any

from schedlab.schedulers.consensus.core import RaftNode, Role
from schedlab.schedulers.consensus.messages import Applied, ClientReply, ClientRequest, LogEntry, Message, Ready
from schedlab.schedulers.consensus.statemachine import KVStateMachine
from schedlab.schedulers.consensus.storage import Storage

Dst = int | tuple[str, str]


@dataclass
class SimConfig:
    n: int = 3
    seed: int = 0
    drop: float = 0.0
    duplicate: float = 0.0
    max_delay: int = 1
    election_ticks: tuple[int, int] = (10, 20)
    heartbeat_ticks: int = 3
    snapshot_threshold: int = 1000
    max_batch: int = 64
    clients: int = 0
    client_requests: int = 1_000_000
    client_timeout: int = 40
    check_storage: bool = True


@dataclass(frozen=True)
class LogRecord:
    time: int
    term: int
    role: Role
    snap_index: int
    snap_term: int
    entries: tuple[LogEntry, ...]

    def term_at(self, index: int) -> int | None:
        if index == self.snap_index:
            return self.snap_term
        if self.snap_index < index <= self.snap_index + len(self.entries):
            return self.entries[index - self.snap_index - 1].term
        return None


@dataclass
class History:
    leaders: dict[int, set[int]] = field(default_factory=dict)
    elections: list[tuple[int, int, LogRecord]] = field(default_factory=list)  # (term, node, log)
    logs: dict[int, list[LogRecord]] = field(default_factory=dict)
    applied: dict[tuple[int, int], list[tuple[int, int, Applied]]] = field(default_factory=dict)
    applied_from: dict[tuple[int, int], int] = field(default_factory=dict)  # first index expected
    acks: list[tuple[int, ClientReply]] = field(default_factory=list)


@dataclass
class Client:
    cid: str
    next_id: int = 1
    outstanding: ClientRequest | None = None
    target: int = 0
    send_at: int = 0
    deadline: int = 0
    acked: list[int] = field(default_factory=list)


class Cluster:
    def __init__(self, config: SimConfig, node_class: type[RaftNode] = RaftNode) -> None:
        self.cfg = config
        self.node_class = node_class
        self.rng = random.Random(config.seed)
        self.ids = list(range(config.n))
        self.now = 0
        self.storage = {i: Storage() for i in self.ids}
        self.incarnation = {i: 0 for i in self.ids}
        self.history = History()
        self.nodes: dict[int, RaftNode | None] = {i: self._make(i, None) for i in self.ids}
        self.groups: dict[int, int] | None = None
        self.in_flight: list[tuple[int, int, Dst, Any]] = []
        self._seq = 0
        self.clients = {f"c{k}": Client(f"c{k}", target=self.rng.choice(self.ids)) for k in range(config.clients)}
        self.delivered = 0
        self.outside_replies: list[ClientReply] = []  # to clients a test drives by hand

    # ---------------------------------------------------------------- nodes

    def _options(self) -> dict[str, Any]:
        c = self.cfg
        return dict(election_ticks=c.election_ticks, heartbeat_ticks=c.heartbeat_ticks,
                    snapshot_threshold=c.snapshot_threshold, max_batch=c.max_batch)

    def _make(self, i: int, storage: Storage | None) -> RaftNode:
        rng = random.Random(self.cfg.seed * 1_000_003 + i * 7919 + self.incarnation[i])
        key = (i, self.incarnation[i])
        if storage is None:
            node = self.node_class(i, self.ids, rng, KVStateMachine(), **self._options())
        else:
            node = self.node_class.restore(i, self.ids, rng, KVStateMachine(), storage.hard_state,
                                           storage.snapshot, list(storage.entries), **self._options())
        self.history.applied_from[key] = node.last_applied + 1 if storage else 1
        self.history.applied[key] = []
        return node

    def crash(self, i: int) -> None:
        self.nodes[i] = None

    def restart(self, i: int) -> None:
        if self.nodes[i] is None:
            self.incarnation[i] += 1
            self.nodes[i] = self._make(i, self.storage[i])

    def partition(self, *groups: list[int] | set[int] | tuple[int, ...]) -> None:
        """Nodes in different groups cannot talk; unlisted nodes are alone."""
        self.groups = {}
        for g, members in enumerate(groups):
            for i in members:
                self.groups[i] = g

    def heal(self) -> None:
        self.groups = None

    def calm(self) -> None:
        """Heal and stop all faults: no drops, duplicates or long delays."""
        self.heal()
        self.cfg.drop = self.cfg.duplicate = 0.0
        self.cfg.max_delay = 1

    def live(self) -> list[RaftNode]:
        return [n for n in self.nodes.values() if n is not None]

    def leaders(self) -> list[RaftNode]:
        return [n for n in self.live() if n.is_leader]

    def leader(self) -> RaftNode | None:
        """The live leader with the highest term, if any."""
        ls = self.leaders()
        return max(ls, key=lambda n: n.term) if ls else None

    # -------------------------------------------------------------- network

    def _connected(self, a: int, b: int) -> bool:
        if self.groups is None:
            return True
        return self.groups.get(a, -1 - a) == self.groups.get(b, -1 - b)

    def send(self, dst: Dst, payload: Any, *, src: int | None = None) -> None:
        copies = 1
        if self.rng.random() < self.cfg.drop:
            copies = 0
        elif self.rng.random() < self.cfg.duplicate:
            copies = 2
        for _ in range(copies):
            self._seq += 1
            at = self.now + 1 + self.rng.randrange(self.cfg.max_delay)
            heapq.heappush(self.in_flight, (at, self._seq, dst, (src, payload)))

    def deliver_due(self) -> None:
        due = []
        while self.in_flight and self.in_flight[0][0] <= self.now:
            due.append(heapq.heappop(self.in_flight))
        self.rng.shuffle(due)
        for _, _, dst, (src, payload) in due:
            self.deliver(dst, payload, src)

    def deliver(self, dst: Dst, payload: Any, src: int | None = None) -> None:
        if isinstance(dst, tuple):
            client = self.clients.get(dst[1])
            if client is None:
                self.outside_replies.append(payload)
            else:
                self._client_receive(client, payload)
            return
        node = self.nodes[dst]
        if node is None or (src is not None and not self._connected(src, dst)):
            return
        self.delivered += 1
        if isinstance(payload, ClientRequest):
            node.propose(payload)
        else:
            node.step(payload)
        self.process(dst)

    def step(self, i: int, m: Message) -> None:
        """Deliver one message right now (for hand-scripted tests)."""
        self.deliver(i, m)

    def process(self, i: int) -> Ready:
        node = self.nodes[i]
        assert node is not None
        r = node.ready()
        self.storage[i].persist(r)
        self._record(i, node, r)
        for m in r.messages:
            self.send(m.dst, m, src=i)
        for rep in r.replies:
            self.send(("c", rep.client_id), rep)
        return r

    # -------------------------------------------------------------- clients

    def _client_send(self, c: Client) -> None:
        assert c.outstanding is not None
        c.deadline = self.now + self.cfg.client_timeout
        c.send_at = -1
        self.send(c.target, c.outstanding)

    def _client_receive(self, c: Client, rep: ClientReply) -> None:
        if c.outstanding is None or rep.request_id != c.outstanding.request_id:
            return
        if rep.ok:
            self.history.acks.append((self.now, rep))
            c.acked.append(rep.request_id)
            c.outstanding = None
            c.send_at = self.now + 1
            return
        c.target = rep.leader_hint if rep.leader_hint is not None else self.rng.choice(self.ids)
        c.send_at = self.now + 1

    def _client_tick(self, c: Client) -> None:
        if c.outstanding is None:
            if c.next_id > self.cfg.client_requests or self.now < c.send_at:
                return
            c.outstanding = ClientRequest(c.cid, c.next_id, ("incr", c.cid))
            c.next_id += 1
            self._client_send(c)
        elif self.now >= c.deadline:
            c.target = self.rng.choice(self.ids)
            self._client_send(c)
        elif c.send_at >= 0 and self.now >= c.send_at:
            self._client_send(c)

    def issued(self) -> dict[str, int]:
        """Per client, the highest request_id handed out so far."""
        return {cid: c.next_id - 1 for cid, c in self.clients.items()}

    def all_acked(self, issued: dict[str, int]) -> bool:
        """Has every client had every request up to ``issued`` acknowledged?"""
        return all(len(self.clients[cid].acked) >= n for cid, n in issued.items())

    # ----------------------------------------------------------------- time

    def tick(self) -> None:
        self.deliver_due()
        for i in self.ids:
            node = self.nodes[i]
            if node is not None:
                node.tick()
                self.process(i)
        for c in self.clients.values():
            self._client_tick(c)
        self.now += 1

    def run(self, ticks: int, faults: dict[int, list[tuple]] | None = None) -> None:
        for _ in range(ticks):
            for f in (faults or {}).get(self.now, ()):
                self.apply_fault(f)
            self.tick()

    def run_until(self, cond: Any, max_ticks: int) -> int | None:
        """Ticks taken until ``cond(self)`` holds, or None."""
        for k in range(max_ticks + 1):
            if cond(self):
                return k
            self.tick()
        return None

    def apply_fault(self, f: tuple) -> None:
        kind = f[0]
        if kind == "crash":
            self.crash(f[1])
        elif kind == "restart":
            self.restart(f[1])
        elif kind == "partition":
            self.partition(*f[1])
        elif kind == "heal":
            self.heal()
        else:
            raise ValueError(kind)

    # ------------------------------------------------------------ recording

    def _record(self, i: int, node: RaftNode, r: Ready) -> None:
        h = self.history
        if node.is_leader:
            ls = h.leaders.setdefault(node.term, set())
            if i not in ls:
                ls.add(i)
                h.elections.append((node.term, i, self._log_record(node)))
        if r.truncate_from is not None or r.snapshot is not None:
            h.logs.setdefault(i, []).append(self._log_record(node))
        key = (i, self.incarnation[i])
        for a in r.committed:
            h.applied[key].append((self.now, node.term, a))
        if self.cfg.check_storage:
            s = self.storage[i]
            snap = s.snapshot.index if s.snapshot else 0
            assert snap == node.log.snap_index and s.entries == node.log.entries, f"storage of {i} diverged"

    def _log_record(self, node: RaftNode) -> LogRecord:
        return LogRecord(self.now, node.term, node.role, node.log.snap_index, node.log.snap_term,
                         tuple(node.log.entries))


# ------------------------------------------------------------------ checkers
# Each raises AssertionError naming the Raft property (Figure 3) it found broken.

def check_election_safety(h: History) -> None:
    for term, ls in h.leaders.items():
        assert len(ls) <= 1, f"Election Safety: term {term} had leaders {sorted(ls)}"


def check_leader_append_only(h: History) -> None:
    for node, records in h.logs.items():
        for a, b in zip(records, records[1:]):
            if not (b.role is Role.LEADER and a.term == b.term):
                continue
            for e in a.entries:
                t = b.term_at(e.index)
                assert t is None and e.index <= b.snap_index or t == e.term, (
                    f"Leader Append-Only: leader {node} of term {b.term} lost or changed entry {e.index}")
            assert b.snap_index + len(b.entries) >= a.snap_index + len(a.entries), (
                f"Leader Append-Only: leader {node} of term {b.term} shrank its log")


def check_log_matching(h: History) -> None:
    """Entries are identified by (index, term); every record must agree on
    the entry and on the term just before it, which by induction makes any
    two logs that share an (index, term) identical up to there."""
    seen: dict[tuple[int, int], tuple[LogEntry, int | None]] = {}
    for records in h.logs.values():
        for rec in records:
            prev = rec.snap_term
            for e in rec.entries:
                key = (e.index, e.term)
                got = seen.setdefault(key, (e, prev))
                assert got == (e, prev), f"Log Matching: two different logs at index {e.index}, term {e.term}"
                prev = e.term
    for _, _, rec in h.elections:
        prev = rec.snap_term
        for e in rec.entries:
            got = seen.get((e.index, e.term))
            assert got is None or got == (e, prev), f"Log Matching at index {e.index}"
            prev = e.term


def committed_entries(h: History) -> dict[int, tuple[LogEntry, int]]:
    """index -> (entry, lowest term of any node applying it), checking that
    every application at an index is of the same entry (State Machine Safety)."""
    out: dict[int, tuple[LogEntry, int]] = {}
    for (node, inc), rows in h.applied.items():
        expect = h.applied_from[(node, inc)]
        for _, term, a in rows:
            e = a.entry
            # applications are in order with no gaps, except that an installed
            # snapshot moves a node forward
            assert e.index >= expect, f"node {node} applied index {e.index} twice or out of order"
            expect = e.index + 1
            if e.index in out:
                assert out[e.index][0] == e, (
                    f"State Machine Safety: index {e.index} applied as {out[e.index][0]} and as {e}")
                out[e.index] = (e, min(term, out[e.index][1]))
            else:
                out[e.index] = (e, term)
    return out


def check_state_machine_safety(h: History) -> None:
    committed_entries(h)
    for (node, _inc), rows in h.applied.items():
        idx = [a.entry.index for _, _, a in rows]
        assert idx == sorted(set(idx)), f"node {node} applied out of order"


def check_leader_completeness(h: History) -> None:
    committed = committed_entries(h)
    for term, node, rec in h.elections:
        for index, (e, commit_term) in committed.items():
            if commit_term >= term or index <= rec.snap_index:
                continue
            assert rec.term_at(index) == e.term, (
                f"Leader Completeness: leader {node} of term {term} lacks entry {index} committed in term {commit_term}")


def check_exactly_once(h: History) -> None:
    """Every client request is applied (not as a duplicate) at one index at
    most; an acknowledged request was applied; with "incr" commands the n-th
    request's result is n, which fails if any earlier one applied twice."""
    committed = committed_entries(h)
    first: dict[tuple[str, int], int] = {}
    for (_node, _inc), rows in h.applied.items():
        for _, _, a in rows:
            e = a.entry
            if e.client_id is None:
                continue
            key = (e.client_id, e.request_id)
            if not a.duplicate:
                assert first.setdefault(key, e.index) == e.index, f"exactly-once: {key} applied at two indices"
                assert a.result == e.request_id, f"exactly-once: {key} gave {a.result}"
    for _, rep in h.acks:
        key = (rep.client_id, rep.request_id)
        assert key in first, f"exactly-once: acknowledged {key} was never applied"
        assert rep.result == rep.request_id, f"exactly-once: {key} acknowledged with result {rep.result}"
        assert committed[first[key]][0].client_id == rep.client_id


def check_all(h: History) -> None:
    check_election_safety(h)
    check_leader_append_only(h)
    check_log_matching(h)
    check_state_machine_safety(h)
    check_leader_completeness(h)
    check_exactly_once(h)
