"""``RaftNode``: a pure Raft state machine in the style of etcd's raft.

Inputs: ``step(msg)`` for a peer's message, ``tick()`` for one unit of
logical time, ``propose(request)`` for a client request. Output: ``ready()``
drains everything produced since the previous call into a ``Ready``.

The contract (also on ``Ready``): call ``ready()`` after any input, persist
its snapshot, log change and hard state (``Storage.persist`` does it), and
only then send its messages and deliver its client replies. There is no
``advance``: ``ready()`` itself marks everything handed over, so a caller
that persists before it does anything else can never send a message that
reflects state it has not written. Crashing after ``ready()`` but before
persisting loses the Ready's messages too, which Raft already tolerates.

Features: randomized election timeouts; pre-vote with leader stickiness (a
node that heard from a leader in the last ``election_ticks[0]`` ticks refuses
pre-votes and ignores higher-term votes) and check-quorum (a leader that has
not heard from a majority for that long steps down); consistency check with
fast backtracking; commit of current-term entries only (§5.4.2); a no-op
entry on election; snapshots once more than ``snapshot_threshold`` applied
entries sit in the log, and InstallSnapshot for followers behind it;
exactly-once client requests through ``ExactlyOnce``.
"""
from __future__ import annotations

import enum
import random
from typing import Any, Callable, Iterable, Sequence

import numpy as np

from schedlab.schedulers.consensus.log import RaftLog
from schedlab.schedulers.consensus.messages import (
    AppendEntries, AppendEntriesReply, Applied, ClientReply, ClientRequest, HardState, InstallSnapshot,
    InstallSnapshotReply, LogEntry, Message, NodeId, Ready, RequestVote, RequestVoteReply, Snapshot,
)
from schedlab.schedulers.consensus.statemachine import ExactlyOnce, StateMachine


class Role(enum.Enum):
    FOLLOWER = "follower"
    PRE_CANDIDATE = "pre_candidate"
    CANDIDATE = "candidate"
    LEADER = "leader"


class RaftNode:
    """One Raft replica. ``peers`` are the other members (a static
    membership); ``rng`` draws election timeouts uniformly in the inclusive
    range ``election_ticks``. ``state_machine`` is wrapped in ``ExactlyOnce``."""

    def __init__(self, node_id: NodeId, peers: Iterable[NodeId], rng: np.random.Generator | random.Random,
                 state_machine: StateMachine, *, election_ticks: tuple[int, int] = (10, 20),
                 heartbeat_ticks: int = 3, snapshot_threshold: int = 1000, max_batch: int = 64) -> None:
        lo, hi = election_ticks
        assert 0 < heartbeat_ticks < lo <= hi
        self.id = node_id
        self.peers: tuple[NodeId, ...] = tuple(p for p in peers if p != node_id)
        self._rng = rng
        self._lo, self._hi = lo, hi
        self._heartbeat_ticks = heartbeat_ticks
        self._snapshot_threshold = snapshot_threshold
        self._max_batch = max_batch
        self._quorum = (len(self.peers) + 1) // 2 + 1

        self.sm = ExactlyOnce(state_machine)
        self.term = 0
        self.voted_for: NodeId | None = None
        self.role = Role.FOLLOWER
        self.leader_id: NodeId | None = None
        self.log = RaftLog()
        self.snapshot: Snapshot | None = None
        self.commit_index = 0
        self.last_applied = 0

        self.election_elapsed = 0
        self._heartbeat_elapsed = 0
        self._timeout = self._random_timeout()
        self._votes: dict[NodeId, bool] = {}
        self.next_index: dict[NodeId, int] = {}
        self.match_index: dict[NodeId, int] = {}
        self._active: set[NodeId] = set()
        self._pending: dict[tuple[str, int], int] = {}

        self._persisted_hs = HardState(0, None)
        self._msgs: list[Message] = []
        self._unstable_from: int | None = None
        self._new_snapshot: Snapshot | None = None
        self._applied: list[Applied] = []
        self._replies: list[ClientReply] = []

    @classmethod
    def restore(cls, node_id: NodeId, peers: Iterable[NodeId], rng: np.random.Generator | random.Random,
                state_machine: StateMachine, hard_state: HardState | None, snapshot: Snapshot | None,
                entries: Sequence[LogEntry], **options: Any) -> RaftNode:
        """A node restarted from what an earlier incarnation persisted. The
        state machine is rebuilt from the snapshot; entries after it are
        re-applied once a leader tells this node they are committed."""
        node = cls(node_id, peers, rng, state_machine, **options)
        if hard_state is not None:
            node.term, node.voted_for = hard_state.term, hard_state.voted_for
            node._persisted_hs = hard_state
        if snapshot is not None:
            node.sm.restore(snapshot.data)
            node.snapshot = snapshot
            node.log = RaftLog(snapshot.index, snapshot.term, entries)
            node.commit_index = node.last_applied = snapshot.index
        else:
            node.log = RaftLog(0, 0, entries)
        return node

    # ----------------------------------------------------------------- inputs

    def tick(self) -> None:
        if self.role is Role.LEADER:
            self._heartbeat_elapsed += 1
            self.election_elapsed += 1
            if self.election_elapsed >= self._lo:
                self.election_elapsed = 0
                # check-quorum: a leader cut off from a majority must stop
                # holding followers in its lease, or nobody could replace it
                if len(self._active) + 1 < self._quorum:
                    self._become_follower(self.term, None)
                    return
                self._active = set()
            if self._heartbeat_elapsed >= self._heartbeat_ticks:
                self._heartbeat_elapsed = 0
                self._broadcast_append()
        else:
            self.election_elapsed += 1
            if self.election_elapsed >= self._timeout:
                self._pre_campaign()

    def ticks_until_due(self) -> int:
        """How many ``tick()`` calls from now the first one that does more
        than count is (a leader's heartbeat or check-quorum, anyone else's
        election timeout); at least 1. A shell that is woken by every
        message sleeps that long instead of ticking, and nothing a tick
        does happens in between: only inputs (``step``, ``propose``) can
        move the deadline, and the shell asks again after each."""
        if self.role is Role.LEADER:
            due = min(self._heartbeat_ticks - self._heartbeat_elapsed, self._lo - self.election_elapsed)
        else:
            due = self._timeout - self.election_elapsed
        return max(1, due)

    def advance(self, ticks: int) -> None:
        """Exactly ``ticks`` calls of ``tick()``, without making the ones
        that only count: the ticks before the next due one move the
        counters in one step (none of them reaches a threshold)."""
        while ticks > 0:
            skip = min(ticks, self.ticks_until_due()) - 1
            if skip:
                self.election_elapsed += skip
                if self.role is Role.LEADER:
                    self._heartbeat_elapsed += skip
            self.tick()
            ticks -= skip + 1

    def propose(self, request: ClientRequest) -> None:
        """Append a client request if leader; the reply comes in a later Ready
        once it is applied. Idempotent for retries (same client and request id)."""
        if self.role is not Role.LEADER:
            self._reply(request, ok=False, error="not_leader", hint=self.leader_id)
            return
        seen, result = self.sm.lookup(request.client_id, request.request_id)
        if seen:
            last_id = self.sm.sessions[request.client_id][0]
            if request.request_id == last_id:
                self._reply(request, ok=True, result=result)
            else:
                self._reply(request, ok=False, error="stale")
            return
        key = (request.client_id, request.request_id)
        if key in self._pending:
            return
        index = self.log.last_index + 1
        self._append([LogEntry(self.term, index, request.command, request.client_id, request.request_id)])
        self._pending[key] = index
        self._maybe_commit()
        self._broadcast_append()

    def step(self, m: Message) -> None:
        assert m.dst == self.id, (m, self.id)
        if isinstance(m, RequestVote):
            self._on_request_vote(m)
            return
        if isinstance(m, RequestVoteReply) and m.pre_vote:
            self._on_pre_vote_reply(m)
            return
        if m.term > self.term:
            leader = m.src if isinstance(m, (AppendEntries, InstallSnapshot)) else None
            self._become_follower(m.term, leader)
        elif m.term < self.term:
            # answer a stale leader so it learns the newer term and steps down
            if isinstance(m, AppendEntries):
                self._send(AppendEntriesReply(self.term, self.id, m.src, False))
            elif isinstance(m, InstallSnapshot):
                self._send(InstallSnapshotReply(self.term, self.id, m.src, 0))
            return
        if isinstance(m, AppendEntries):
            self._on_append(m)
        elif isinstance(m, AppendEntriesReply):
            self._on_append_reply(m)
        elif isinstance(m, InstallSnapshot):
            self._on_install_snapshot(m)
        elif isinstance(m, InstallSnapshotReply):
            self._on_install_snapshot_reply(m)
        elif isinstance(m, RequestVoteReply):
            self._on_vote_reply(m)
        else:
            raise TypeError(f"not a Raft message: {m!r}")

    def ready(self) -> Ready:
        """Drain and return everything produced since the last call."""
        hs = HardState(self.term, self.voted_for)
        u = self._unstable_from
        entries: tuple[LogEntry, ...] = ()
        if u is not None:
            lo = max(u, self.log.snap_index + 1)
            entries = tuple(self.log.slice(lo, self.log.last_index + 1))
        r = Ready(tuple(self._msgs), hs if hs != self._persisted_hs else None, u, entries,
                  self._new_snapshot, tuple(self._applied), tuple(self._replies))
        self._persisted_hs = hs
        self._msgs, self._applied, self._replies = [], [], []
        self._unstable_from, self._new_snapshot = None, None
        return r

    @property
    def is_leader(self) -> bool:
        return self.role is Role.LEADER

    # -------------------------------------------------------------- elections

    def _random_timeout(self) -> int:
        if isinstance(self._rng, random.Random):
            return self._rng.randint(self._lo, self._hi)
        return int(self._rng.integers(self._lo, self._hi + 1))

    def _reset_timer(self) -> None:
        self.election_elapsed = 0
        self._timeout = self._random_timeout()

    def _in_lease(self) -> bool:
        return self.leader_id is not None and self.election_elapsed < self._lo

    def _become_follower(self, term: int, leader: NodeId | None) -> None:
        if term > self.term:
            self.term, self.voted_for = term, None
        if self.role is Role.LEADER:
            for (client_id, request_id) in self._pending:
                self._replies.append(ClientReply(client_id, request_id, False, error="leadership_lost",
                                                 leader_hint=leader))
            self._pending.clear()
        self.role = Role.FOLLOWER
        self.leader_id = leader
        self._reset_timer()

    def _pre_campaign(self) -> None:
        # Pre-vote (thesis §9.6): find out whether we could win before
        # bumping the term, so a node that cannot win never disrupts a leader.
        self.role = Role.PRE_CANDIDATE
        self._start_round(pre_vote=True)

    def _campaign(self) -> None:
        self.role = Role.CANDIDATE
        self.term += 1
        self.voted_for = self.id
        self._start_round(pre_vote=False)

    def _start_round(self, pre_vote: bool) -> None:
        """Vote for ourselves and ask the peers; a single-node cluster wins
        at once (moving on from a pre-vote to the real vote, or to leader)."""
        self.leader_id = None
        self._reset_timer()
        self._votes = {self.id: True}
        if self._tally() is True:
            self._campaign() if pre_vote else self._become_leader()
            return
        term = self.term + 1 if pre_vote else self.term
        for p in self.peers:
            self._send(RequestVote(term, self.id, p, self.log.last_index, self.log.last_term, pre_vote))

    def _tally(self) -> bool | None:
        """True once a quorum granted, False once a quorum is out of reach."""
        granted = sum(self._votes.values())
        if granted >= self._quorum:
            return True
        if len(self._votes) - granted > len(self.peers) + 1 - self._quorum:
            return False
        return None

    def _on_request_vote(self, m: RequestVote) -> None:
        up_to_date = self.log.is_up_to_date(m.last_log_index, m.last_log_term)
        if m.pre_vote:
            grant = m.term > self.term and not self._in_lease() and up_to_date
            # a rejection carries our own term, so the asker only steps up if
            # we really are ahead of it
            self._send(RequestVoteReply(m.term if grant else self.term, self.id, m.src, grant, True))
            return
        if m.term > self.term:
            if self._in_lease():
                return
            self._become_follower(m.term, None)
        grant = m.term == self.term and self.voted_for in (None, m.src) and up_to_date
        if grant:
            self.voted_for = m.src
            self._reset_timer()
        self._send(RequestVoteReply(self.term, self.id, m.src, grant, False))

    def _on_pre_vote_reply(self, m: RequestVoteReply) -> None:
        if not m.granted and m.term > self.term:
            self._become_follower(m.term, None)
            return
        if self.role is not Role.PRE_CANDIDATE or (m.granted and m.term != self.term + 1):
            return
        self._record_vote(m, on_win=self._campaign)

    def _on_vote_reply(self, m: RequestVoteReply) -> None:
        if self.role is not Role.CANDIDATE:
            return
        self._record_vote(m, on_win=self._become_leader)

    def _record_vote(self, m: RequestVoteReply, on_win: Callable[[], None]) -> None:
        """Count a (pre-)vote; win moves on, a lost quorum gives up the round."""
        self._votes[m.src] = m.granted
        outcome = self._tally()
        if outcome is True:
            on_win()
        elif outcome is False:
            self._become_follower(self.term, None)

    def _become_leader(self) -> None:
        self.role = Role.LEADER
        self.leader_id = self.id
        self.election_elapsed = self._heartbeat_elapsed = 0
        self._active = set()
        self.next_index = {p: self.log.last_index + 1 for p in self.peers}
        self.match_index = {p: 0 for p in self.peers}
        # The no-op lets the new leader commit (and so learn the commit point
        # of) entries from earlier terms, which §5.4.2 forbids it to count.
        self._append([LogEntry(self.term, self.log.last_index + 1, None)])
        self._maybe_commit()
        self._broadcast_append()

    # ------------------------------------------------------------ replication

    def _broadcast_append(self) -> None:
        for p in self.peers:
            self._send_append(p)

    def _send_append(self, p: NodeId) -> None:
        ni = self.next_index[p]
        if ni <= self.log.snap_index:
            assert self.snapshot is not None
            s = self.snapshot
            self._send(InstallSnapshot(self.term, self.id, p, s.index, s.term, s.data))
            return
        prev = ni - 1
        prev_term = self.log.term_at(prev)
        assert prev_term is not None
        entries = tuple(self.log.slice(ni, ni + self._max_batch))
        self._send(AppendEntries(self.term, self.id, p, prev, prev_term, entries, self.commit_index))

    def _on_append(self, m: AppendEntries) -> None:
        if self.role is Role.LEADER:
            raise AssertionError(f"two leaders in term {self.term}: {self.id} and {m.src}")
        self._follow(m.src)
        if m.prev_log_index < self.commit_index:
            # Our committed prefix is in every later leader's log, so the
            # part of the message up to it carries nothing new.
            self._send(AppendEntriesReply(self.term, self.id, m.src, True, match_index=self.commit_index))
            return
        have = self.log.term_at(m.prev_log_index)
        if have is None:
            self._send(AppendEntriesReply(self.term, self.id, m.src, False, conflict_index=self.log.last_index + 1))
            return
        if have != m.prev_log_term:
            self._send(AppendEntriesReply(self.term, self.id, m.src, False,
                                          conflict_index=self.log.first_index_of_term(m.prev_log_index),
                                          conflict_term=have))
            return
        for k, e in enumerate(m.entries):
            mine = self.log.term_at(e.index)
            if mine == e.term:
                continue
            if mine is not None:
                assert e.index > self.commit_index, "a leader tried to overwrite a committed entry"
                self.log.truncate_from(e.index)
                self._mark_unstable(e.index)
            self._append(m.entries[k:])
            break
        match = m.prev_log_index + len(m.entries)
        # Only up to ``match``: entries past it may be stale ones this leader
        # has not vouched for.
        if min(m.leader_commit, match) > self.commit_index:
            self.commit_index = min(m.leader_commit, match)
            self._apply_committed()
        self._send(AppendEntriesReply(self.term, self.id, m.src, True, match_index=match))

    def _on_append_reply(self, m: AppendEntriesReply) -> None:
        if self.role is not Role.LEADER:
            return
        p = m.src
        self._active.add(p)
        # Heartbeats cover lost replies (see _acknowledged for duplicates).
        if m.success:
            self._acknowledged(p, m.match_index)
            return
        nxt = m.conflict_index
        if m.conflict_term is not None:
            last = self.log.last_index_of_term(m.conflict_term)
            if last is not None:
                nxt = last + 1
        # never below what the follower has acknowledged; never past our log
        nxt = max(self.match_index[p] + 1, min(nxt, self.log.last_index + 1))
        if nxt != self.next_index[p]:
            self.next_index[p] = nxt
            self._send_append(p)

    def _on_install_snapshot(self, m: InstallSnapshot) -> None:
        if self.role is Role.LEADER:
            raise AssertionError(f"two leaders in term {self.term}: {self.id} and {m.src}")
        self._follow(m.src)
        idx, term = m.last_included_index, m.last_included_term
        if idx <= self.commit_index:
            self._send(InstallSnapshotReply(self.term, self.id, m.src, self.commit_index))
            return
        if self.log.term_at(idx) != term:
            self._mark_unstable(idx + 1)
        self.log.compact(idx, term)
        self.sm.restore(m.data)
        self.snapshot = self._new_snapshot = Snapshot(idx, term, m.data)
        self.commit_index = self.last_applied = idx
        self._send(InstallSnapshotReply(self.term, self.id, m.src, idx))

    def _on_install_snapshot_reply(self, m: InstallSnapshotReply) -> None:
        if self.role is not Role.LEADER:
            return
        self._active.add(m.src)
        self._acknowledged(m.src, m.match_index)

    def _acknowledged(self, p: NodeId, match_index: int) -> None:
        """Peer ``p`` holds our log up to ``match_index`` (an append or a
        snapshot reply). Only a reply that moves it sends more: a duplicated
        or reordered one would otherwise start a second stream of appends."""
        if match_index <= self.match_index[p]:
            return
        self.match_index[p] = match_index
        self._maybe_commit()
        self.next_index[p] = max(self.next_index[p], match_index + 1)
        if self.next_index[p] <= self.log.last_index:
            self._send_append(p)

    def _follow(self, leader: NodeId) -> None:
        if self.role is not Role.FOLLOWER:
            self._become_follower(self.term, leader)
        self.leader_id = leader
        self.election_elapsed = 0

    def _maybe_commit(self) -> None:
        acked = sorted([self.log.last_index, *self.match_index.values()], reverse=True)
        n = acked[self._quorum - 1]
        # §5.4.2: only an entry of the current term is committed by counting
        # replicas; everything before it is committed with it.
        if n > self.commit_index and self.log.term_at(n) == self.term:
            self.commit_index = n
            self._apply_committed()

    # ------------------------------------------------------- state and output

    def _apply_committed(self) -> None:
        while self.last_applied < self.commit_index:
            e = self.log.entry(self.last_applied + 1)
            result, duplicate = self.sm.apply(e)
            self.last_applied = e.index
            self._applied.append(Applied(e, result, duplicate))
            if e.client_id is not None and self._pending.pop((e.client_id, e.request_id), None) is not None:
                self._replies.append(ClientReply(e.client_id, e.request_id, True, result))
        if self.last_applied - self.log.snap_index > self._snapshot_threshold:
            term = self.log.term_at(self.last_applied)
            assert term is not None
            self.snapshot = self._new_snapshot = Snapshot(self.last_applied, term, self.sm.snapshot())
            self.log.compact(self.last_applied, term)

    def _append(self, entries: Sequence[LogEntry]) -> None:
        if entries:
            self._mark_unstable(entries[0].index)
            self.log.append(entries)

    def _mark_unstable(self, index: int) -> None:
        if self._unstable_from is None or index < self._unstable_from:
            self._unstable_from = index

    def _send(self, m: Message) -> None:
        self._msgs.append(m)

    def _reply(self, r: ClientRequest, ok: bool, result: Any = None, error: str | None = None,
               hint: NodeId | None = None) -> None:
        self._replies.append(ClientReply(r.client_id, r.request_id, ok, result, error, hint))
