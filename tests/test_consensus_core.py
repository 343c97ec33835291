"""Unit tests of the pure Raft core (``schedulers.consensus``): elections,
replication and repair, the §5.4.2 commit rule (Figure 8, hand-scripted),
pre-vote, snapshots, restart, exactly-once and redirects. No Ray, no clock."""
from __future__ import annotations

import random
from typing import Any, Callable

import numpy as np
import pytest

from schedlab.schedulers.consensus.core import RaftNode, Role
from schedlab.schedulers.consensus.log import RaftLog
from schedlab.schedulers.consensus.messages import (
    AppendEntries, AppendEntriesReply, ClientReply, ClientRequest, HardState, InstallSnapshot, LogEntry, Message,
    Ready, RequestVote, RequestVoteReply, Snapshot, decode, encode,
)
from schedlab.schedulers.consensus.statemachine import ExactlyOnce, KVStateMachine
from schedlab.schedulers.consensus.storage import Storage
from tests.consensus_sim import Cluster, SimConfig, check_all


# ------------------------------------------------------------------ helpers

class Manual:
    """Hand-driven nodes: messages queue up and a test chooses which to deliver."""

    def __init__(self, nodes: dict[int, RaftNode]) -> None:
        self.nodes: dict[int, RaftNode | None] = dict(nodes)
        # as if each node had been restored from exactly what it holds
        self.storage = {i: Storage(HardState(n.term, n.voted_for), n.snapshot, list(n.log.entries))
                        for i, n in nodes.items()}
        self.queue: list[Message] = []
        self.replies: list[ClientReply] = []

    def flush(self, i: int) -> Ready:
        node = self.nodes[i]
        assert node is not None
        r = node.ready()
        self.storage[i].persist(r)
        self.queue.extend(r.messages)
        self.replies.extend(r.replies)
        return r

    def tick(self, i: int, k: int = 1) -> None:
        for _ in range(k):
            node = self.nodes[i]
            assert node is not None
            node.tick()
            self.flush(i)

    def deliver(self, keep: Callable[[Message], bool] = lambda m: True, limit: int = 10_000) -> list[Message]:
        """Deliver queued messages matching ``keep`` (and those they cause)
        until none match; others stay queued; messages to crashed nodes vanish."""
        done: list[Message] = []
        while limit > 0:
            k = next((k for k, m in enumerate(self.queue) if keep(m)), None)
            if k is None:
                break
            m = self.queue.pop(k)
            limit -= 1
            node = self.nodes.get(m.dst)
            if node is None:
                continue
            node.step(m)
            self.flush(m.dst)
            done.append(m)
        return done

    def drop(self, pred: Callable[[Message], bool] = lambda m: True) -> None:
        self.queue = [m for m in self.queue if not pred(m)]

    def crash(self, i: int) -> None:
        self.nodes[i] = None
        self.drop(lambda m: m.dst == i)

    def elect(self, i: int, voters: set[int]) -> None:
        """Tick only ``i`` until it is leader, delivering between it and ``voters``."""
        among = voters | {i}
        for _ in range(200):
            self.tick(i)
            self.deliver(lambda m: m.src in among and m.dst in among
                         and isinstance(m, (RequestVote, RequestVoteReply)))
            node = self.nodes[i]
            assert node is not None
            if node.is_leader:
                return
        raise AssertionError(f"node {i} was not elected")


def restored(i: int, ids: list[int], term: int, terms: list[int], voted_for: int | None = None,
             **opts: Any) -> RaftNode:
    """A node restarted with log entries of the given terms at indices 1, 2, ..."""
    entries = [LogEntry(t, k + 1, ("set", f"k{k + 1}", f"t{t}")) for k, t in enumerate(terms)]
    return RaftNode.restore(i, ids, random.Random(i), KVStateMachine(), HardState(term, voted_for), None,
                            entries, **opts)


def log_terms(node: RaftNode) -> list[int]:
    return [e.term for e in node.log.entries]


def kv(node: RaftNode) -> dict:
    inner = node.sm.inner
    assert isinstance(inner, KVStateMachine)
    return inner.data


def settle(c: Cluster, max_ticks: int = 300) -> RaftNode:
    assert c.run_until(lambda c: c.leader() is not None, max_ticks) is not None, "no leader elected"
    leader = c.leader()
    assert leader is not None
    return leader


def submit(c: Cluster, request: ClientRequest, max_ticks: int = 300) -> ClientReply:
    """Send a request to the current leader, re-sending on redirect or after
    30 silent ticks, and tick until it is acknowledged."""
    waited = 30
    for _ in range(max_ticks):
        ok = [r for r in c.outside_replies if r.ok and r.request_id == request.request_id
              and r.client_id == request.client_id]
        if ok:
            c.outside_replies.clear()
            return ok[0]
        leader = c.leader()
        if leader is not None and (waited >= 30 or any(not r.ok for r in c.outside_replies)):
            c.outside_replies.clear()
            c.deliver(leader.id, request)
            waited = 0
        c.tick()
        waited += 1
    raise AssertionError(f"{request} was never acknowledged")


# ---------------------------------------------------------------- elections

@pytest.mark.parametrize("n", [1, 3, 5])
def test_healthy_cluster_elects_one_stable_leader(n: int) -> None:
    c = Cluster(SimConfig(n=n, seed=11))
    leader = settle(c, 100)
    term = leader.term
    c.run(300)
    assert [x.id for x in c.leaders()] == [leader.id]
    assert {x.term for x in c.live()} == {term}, "a healthy cluster should not hold more elections"
    assert all(x.leader_id == leader.id for x in c.live())
    check_all(c.history)


def test_election_timeouts_are_randomized_and_numpy_generators_work() -> None:
    ids = [0, 1, 2]
    nodes = [RaftNode(i, ids, np.random.default_rng(i), KVStateMachine()) for i in ids]
    firsts = []
    for node in nodes:
        k = 0
        while node.role is Role.FOLLOWER:
            node.tick()
            k += 1
        firsts.append(k)
        assert 10 <= k <= 20
    assert len(set(firsts)) > 1


# -------------------------------------------------------------- replication

def test_log_replication_commits_and_applies_everywhere() -> None:
    c = Cluster(SimConfig(n=5, seed=3, max_delay=2))
    settle(c)
    for k in range(1, 6):
        rep = submit(c, ClientRequest("a", k, ("incr", "x")))
        assert rep.ok and rep.result == k
    c.run(30)
    nodes = c.live()
    assert all(kv(x) == {"x": 5} for x in nodes)
    assert len({tuple(x.log.entries) for x in nodes}) == 1
    assert len({x.commit_index for x in nodes}) == 1
    check_all(c.history)


def test_divergent_follower_is_repaired_with_fast_backtracking() -> None:
    # Raft Figure 7: the leader's log, follower (f) with extra entries of
    # terms 2 and 3 that were never committed, and a short follower.
    ids = [0, 1, 2]
    m = Manual({
        0: restored(0, ids, 6, [1, 1, 1, 4, 4, 5, 5, 6, 6, 6]),
        1: restored(1, ids, 3, [1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3]),
        2: restored(2, ids, 4, [1, 1, 1, 4]),
    })
    m.elect(0, {1, 2})
    leader = m.nodes[0]
    assert leader is not None and leader.term == 7
    delivered = m.deliver()
    rejections = [x for x in delivered if isinstance(x, AppendEntriesReply) and not x.success and x.src == 1]
    # one probe per conflicting term instead of one per entry
    assert len(rejections) <= 3
    want = [1, 1, 1, 4, 4, 5, 5, 6, 6, 6, 7]
    for i in ids:
        node = m.nodes[i]
        assert node is not None and log_terms(node) == want
        assert m.storage[i].entries == node.log.entries
    assert leader.commit_index == 11
    m.tick(0, 3)
    m.deliver()
    assert all(n is not None and n.commit_index == 11 for n in m.nodes.values())


def test_figure8_old_term_entry_is_not_committed_by_counting_replicas() -> None:
    """Raft Figure 8 (c)-(d): a leader of term 4 replicates its term-2 entry
    to a majority; that must not commit it, because S5 (holding a term-3
    entry at the same index) can still be elected and overwrite it."""
    ids = [0, 1, 2, 3, 4]
    opts = dict(max_batch=1)  # so index 2 can reach S3 without the term-4 no-op
    m = Manual({
        0: restored(0, ids, 2, [1, 2], **opts),       # S1, leader of term 2 before it crashed
        1: restored(1, ids, 2, [1, 2], **opts),       # S2 got index 2 from S1
        2: restored(2, ids, 3, [1], voted_for=4, **opts),
        3: restored(3, ids, 3, [1], voted_for=4, **opts),
        4: restored(4, ids, 3, [1, 3], voted_for=4, **opts),  # S5 led term 3
    })
    m.crash(4)
    m.crash(3)
    m.elect(0, {1, 2})
    s1 = m.nodes[0]
    assert s1 is not None and s1.term == 4 and log_terms(s1) == [1, 2, 4]
    # S3 gets index 2 (term 2); S2's copy of the term-4 no-op is held back.
    s2, s3 = m.nodes[1], m.nodes[2]
    assert s2 is not None and s3 is not None

    def hold_back_noop(x: Message) -> bool:
        # the first probe to S3 carries the no-op but is rejected (S3 lacks
        # index 2), so only hold it back once S3 could accept it
        carries_noop = isinstance(x, AppendEntries) and any(e.term == 4 for e in x.entries)
        return not (carries_noop and x.dst == 2 and s3.log.last_index >= 2)

    m.deliver(hold_back_noop)
    assert s3 is not None and log_terms(s3) == [1, 2]
    assert s1.match_index[2] == 2 and s1.match_index[1] == 3 and log_terms(s2) == [1, 2, 4]
    assert s1.commit_index < 2, "a term-2 entry on a majority was committed by counting (violates §5.4.2)"
    # (d) S1 crashes; S5 comes back and wins with S3 and S4 (its last term 3 beats their 2 and 1).
    m.crash(0)
    m.drop()
    m.nodes[4] = restored(4, ids, 3, [1, 3], voted_for=4, **opts)
    m.nodes[3] = restored(3, ids, 3, [1], voted_for=4, **opts)
    for i in (1, 2, 3):
        m.tick(i, 10)  # they stop trusting S1's lease (their own campaigns are lost)
    m.drop()
    m.elect(4, {1, 2, 3})
    s5 = m.nodes[4]
    assert s5 is not None and s5.is_leader
    m.deliver(lambda x: x.dst != 0)
    assert log_terms(s2)[1] == 3 and log_terms(s3)[1] == 3, "S5 overwrote index 2, as Figure 8 (d) shows"


def test_figure8_current_term_entry_commits_earlier_ones_indirectly() -> None:
    """Raft Figure 8 (e): once the term-4 entry is on a majority, committing
    it commits index 2 too, and S5 can no longer win an election."""
    ids = [0, 1, 2, 3, 4]
    m = Manual({
        0: restored(0, ids, 2, [1, 2]),
        1: restored(1, ids, 2, [1, 2]),
        2: restored(2, ids, 3, [1], voted_for=4),
        3: restored(3, ids, 3, [1], voted_for=4),
        4: restored(4, ids, 3, [1, 3], voted_for=4),
    })
    m.crash(4)
    m.crash(3)
    m.elect(0, {1, 2})
    m.deliver()
    s1 = m.nodes[0]
    assert s1 is not None and s1.commit_index == 3 and [a for a in (s1.last_applied,)] == [3]
    m.crash(0)
    m.nodes[4] = restored(4, ids, 3, [1, 3], voted_for=4)
    m.nodes[3] = restored(3, ids, 3, [1], voted_for=4)
    for _ in range(300):
        for i in (1, 2, 3, 4):
            m.tick(i)
        m.deliver()
    leaders = [n for n in m.nodes.values() if n is not None and n.is_leader]
    assert len(leaders) == 1 and leaders[0].id in (1, 2), "only a node holding the committed entries can lead"
    for n in m.nodes.values():
        if n is not None:
            assert log_terms(n)[:3] == [1, 2, 4]


# ------------------------------------------------------------------ pre-vote

def test_prevote_keeps_a_rejoining_node_from_deposing_the_leader() -> None:
    c = Cluster(SimConfig(n=3, seed=5))
    leader = settle(c)
    term = leader.term
    lonely = next(i for i in c.ids if i != leader.id)
    c.partition([x for x in c.ids if x != lonely], [lonely])
    c.run(200)
    node = c.nodes[lonely]
    assert node is not None and node.term == term, "pre-vote failed, so the isolated node's term must not grow"
    assert node.role is not Role.LEADER
    c.heal()
    c.run(100)
    assert c.leader() is leader and leader.term == term
    assert node.leader_id == leader.id
    check_all(c.history)


def test_node_that_heard_from_leader_refuses_prevotes_and_ignores_votes() -> None:
    c = Cluster(SimConfig(n=3, seed=6))
    leader = settle(c)
    c.run(5)
    follower = next(x for x in c.live() if not x.is_leader)
    other = next(i for i in c.ids if i not in (leader.id, follower.id))
    term = follower.term
    follower.step(RequestVote(term + 1, other, follower.id, 10**6, term, pre_vote=True))
    r = c.process(follower.id)
    assert [(x.granted, x.term) for x in r.messages if isinstance(x, RequestVoteReply)] == [(False, term)]
    follower.step(RequestVote(term + 1, other, follower.id, 10**6, term, pre_vote=False))
    r = c.process(follower.id)
    assert follower.term == term and not r.messages and r.hard_state is None


# ---------------------------------------------------------------- snapshots

def test_lagging_follower_catches_up_by_install_snapshot() -> None:
    c = Cluster(SimConfig(n=3, seed=7, snapshot_threshold=10))
    leader = settle(c)
    lag = next(i for i in c.ids if i != leader.id)
    c.crash(lag)
    for k in range(1, 31):
        assert submit(c, ClientRequest("a", k, ("incr", "x"))).result == k
    assert leader.log.snap_index > 10 and len(leader.log.entries) <= 11
    assert leader.snapshot is not None
    snapshots_sent: list[InstallSnapshot] = []
    original = c.send

    def spy(dst: Any, payload: Any, *, src: int | None = None) -> None:
        if isinstance(payload, InstallSnapshot):
            snapshots_sent.append(payload)
        original(dst, payload, src=src)

    c.send = spy  # type: ignore[method-assign]
    c.restart(lag)
    c.run(40)
    node = c.nodes[lag]
    assert node is not None
    assert any(s.dst == lag for s in snapshots_sent)
    assert kv(node) == {"x": 30} and node.sm.sessions == leader.sm.sessions
    assert node.log.entries == leader.log.entries[-len(node.log.entries):]
    st = c.storage[lag]
    assert st.snapshot is not None and st.snapshot.index == node.log.snap_index
    check_all(c.history)


def test_snapshot_holds_the_exactly_once_table() -> None:
    sm = ExactlyOnce(KVStateMachine())
    assert sm.apply(LogEntry(1, 1, ("incr", "x"), "c", 1)) == (1, False)
    other = ExactlyOnce(KVStateMachine())
    other.restore(sm.snapshot())
    assert other.apply(LogEntry(1, 2, ("incr", "x"), "c", 1)) == (1, True)
    assert other.apply(LogEntry(1, 3, ("incr", "x"), "c", 2)) == (2, False)
    assert other.apply(LogEntry(1, 4, ("incr", "x"), "c", 1)) == (None, True)


def test_a_snapshot_restores_results_keyed_by_numbers() -> None:
    """A result kept for dedup may be a map with int keys (a read through the
    log answers job id -> tasks): the snapshot must restore it, or a lagging
    replica fails to install it."""
    class Reads(KVStateMachine):
        def apply(self, command: Any) -> Any:
            return {7: [0, 1]} if command[0] == "read" else super().apply(command)

    sm = ExactlyOnce(Reads())
    assert sm.apply(LogEntry(1, 1, ("read",), "c", 1)) == ({7: [0, 1]}, False)
    other = ExactlyOnce(Reads())
    other.restore(sm.snapshot())
    assert other.apply(LogEntry(1, 2, ("read",), "c", 1)) == ({7: [0, 1]}, True)


@pytest.mark.parametrize("result", [[], ([[1, 2, 3]], [[4, 5]]), [[1, 2, 3], [4, 5, 6]], (), {"reset": True, "launches": ([], [])}])
def test_a_retry_after_a_snapshot_gets_the_original_result_exactly(result: Any) -> None:
    """Callers tell replies apart by shape (a host: launches, or (launches,
    kills)): a list must not come back a tuple, nor a tuple a list. The sim
    soak's seed 9 died in a host's poll on ``()`` for ``[]``."""
    class Fixed(KVStateMachine):
        def apply(self, command: Any) -> Any:
            return result

    sm = ExactlyOnce(Fixed())
    sm.apply(LogEntry(1, 1, ("x",), "host-0", 5))
    other = ExactlyOnce(Fixed())
    other.restore(sm.snapshot())
    got, dup = other.apply(LogEntry(1, 2, ("x",), "host-0", 5))
    assert dup and got == result and type(got) is type(result)
    if isinstance(result, dict):
        assert type(got["launches"]) is tuple


# ------------------------------------------------------------------ restart

def test_restart_of_every_node_from_persisted_state() -> None:
    c = Cluster(SimConfig(n=3, seed=8, snapshot_threshold=4))
    leader = settle(c)
    for k in range(1, 11):
        submit(c, ClientRequest("a", k, ("incr", "x")))
    term = leader.term
    c.run(10)
    for i in c.ids:
        c.crash(i)
    for i in c.ids:
        c.restart(i)
    restarted = c.live()
    assert all(x.term >= term for x in restarted)
    assert all(c.storage[x.id].snapshot is not None for x in restarted)
    leader = settle(c)
    assert leader.term > term
    assert submit(c, ClientRequest("a", 11, ("incr", "x"))).result == 11
    c.run(20)
    assert all(kv(x) == {"x": 11} for x in c.live())
    check_all(c.history)


def test_restarted_node_remembers_its_vote() -> None:
    ids = [0, 1, 2]
    node = RaftNode(0, ids, random.Random(0), KVStateMachine())
    node.step(RequestVote(5, 1, 0, 0, 0))
    r = node.ready()
    assert r.hard_state == HardState(5, 1)
    assert [m.granted for m in r.messages if isinstance(m, RequestVoteReply)] == [True]
    again = RaftNode.restore(0, ids, random.Random(1), KVStateMachine(), r.hard_state, None, [])
    again.step(RequestVote(5, 2, 0, 0, 0))
    assert [m.granted for m in again.ready().messages if isinstance(m, RequestVoteReply)] == [False]


# ------------------------------------------------------- clients, redirects

def test_retried_request_applies_exactly_once_and_gets_the_original_result() -> None:
    c = Cluster(SimConfig(n=3, seed=9))
    leader = settle(c)
    req = ClientRequest("a", 1, ("incr", "x"))
    # The leader replicates the request and then crashes before anyone
    # learns it committed; the client retries at whoever leads next.
    leader.propose(req)
    c.process(leader.id)
    c.run(1)
    c.crash(leader.id)
    new = settle(c)
    assert new is not leader
    new.propose(req)  # may reach the new leader before or after it applies the original
    c.process(new.id)
    rep = submit(c, req)
    assert rep.ok and rep.result == 1
    c.restart(leader.id)
    c.run(60)
    assert all(kv(x) == {"x": 1} for x in c.live())
    assert submit(c, ClientRequest("a", 2, ("incr", "x"))).result == 2
    # a late copy of request 1 is recognised as stale, not applied
    current = c.leader()
    assert current is not None
    current.propose(req)
    r = c.process(current.id)
    assert [(x.ok, x.error) for x in r.replies] == [(False, "stale")]
    c.run(20)
    assert all(kv(x) == {"x": 2} for x in c.live())
    check_all(c.history)


def test_retry_to_the_same_leader_returns_the_cached_result_without_a_new_entry() -> None:
    c = Cluster(SimConfig(n=3, seed=10))
    leader = settle(c)
    req = ClientRequest("a", 1, ("set", "k", "v"))
    assert submit(c, req).result == "v"
    last = leader.log.last_index
    leader.propose(req)
    r = c.process(leader.id)
    assert [(x.ok, x.result) for x in r.replies] == [(True, "v")]
    assert leader.log.last_index == last


def test_follower_redirects_to_the_leader() -> None:
    c = Cluster(SimConfig(n=3, seed=12))
    nobody = c.nodes[0]
    assert nobody is not None
    nobody.propose(ClientRequest("a", 1, ("incr", "x")))
    assert c.process(0).replies == (ClientReply("a", 1, False, None, "not_leader", None),)
    leader = settle(c)
    c.run(5)
    follower = next(x for x in c.live() if not x.is_leader)
    follower.propose(ClientRequest("a", 1, ("incr", "x")))
    (rep,) = c.process(follower.id).replies
    assert not rep.ok and rep.error == "not_leader" and rep.leader_hint == leader.id
    assert follower.log.last_index == leader.log.last_index


# ----------------------------------------------------------- wire, the log

def test_every_message_round_trips_through_msgpack() -> None:
    e = LogEntry(3, 7, ("set", "k", 1), "c", 4)
    msgs: list[Any] = [
        RequestVote(2, 0, 1, 7, 3, True), RequestVoteReply(2, 1, 0, True, False),
        AppendEntries(3, 0, 1, 6, 3, (e, LogEntry(3, 8, None)), 5),
        AppendEntriesReply(3, 1, 0, False, 0, 4, 2), AppendEntriesReply(3, 1, 0, True, 8),
        InstallSnapshot(3, 0, 1, 9, 3, b"\x00\xff"), ClientRequest("c", 4, ("incr", "x")),
        ClientReply("c", 4, False, None, "not_leader", 2), HardState(3, None), Snapshot(9, 3, b"x"), e,
    ]
    for msg in msgs:
        assert decode(encode(msg)) == msg


def test_log_compaction_keeps_the_boundary_term() -> None:
    log = RaftLog(0, 0, [LogEntry(1, 1, None), LogEntry(1, 2, None), LogEntry(2, 3, None)])
    log.compact(2, 1)
    assert (log.snap_index, log.snap_term, log.last_index, log.term_at(2), log.term_at(1)) == (2, 1, 3, 1, None)
    log.compact(5, 4)  # a snapshot past the end supersedes the log
    assert (log.last_index, log.last_term, log.entries) == (5, 4, [])


# ------------------------------------------------------ timers when due

def _observable(node: RaftNode) -> tuple:
    r = node.ready()
    return (node.role, node.term, node.leader_id, node.voted_for, node.election_elapsed, node._heartbeat_elapsed,
            node._timeout, node.commit_index, tuple(r.messages), r.hard_state)


@pytest.mark.parametrize("seed", range(6))
def test_advance_is_exactly_that_many_ticks(seed: int) -> None:
    """A shell that sleeps until ``ticks_until_due`` and then calls
    ``advance`` must see what one ticking every tick saw, whatever the role
    (a leader, followers, a cut-off leader stepping down, candidates)."""
    import copy

    rng = random.Random(seed)
    c = Cluster(SimConfig(n=3, seed=seed, election_ticks=(10, 20), heartbeat_ticks=3))
    for round_ in range(30):
        c.run(rng.randint(1, 40))
        if round_ == 10:
            c.partition([0], [1], [2])  # leaders step down, everyone campaigns
        if round_ == 20:
            c.heal()
        for node in c.live():
            node.ready()  # what the harness has not drained yet is not ours to compare
            ticked, advanced = copy.deepcopy(node), copy.deepcopy(node)
            n = rng.choice([1, 2, node.ticks_until_due() - 1, node.ticks_until_due(), node.ticks_until_due() + 1, 45])
            due = node.ticks_until_due()
            for k in range(max(n, 0)):
                ticked.tick()
                if k + 1 < due:
                    assert ticked.ready().is_empty() and ticked.role is node.role, "a tick before the due one acted"
            advanced.advance(max(n, 0))
            ticked_final = copy.deepcopy(node)
            for _ in range(max(n, 0)):
                ticked_final.tick()
            assert _observable(advanced) == _observable(ticked_final)


def test_ticks_until_due_names_the_heartbeat_and_the_election_timeout() -> None:
    ids = [0, 1, 2]
    follower = RaftNode(0, ids, random.Random(1), KVStateMachine(), election_ticks=(1000, 1999), heartbeat_ticks=100)
    assert 1000 <= follower.ticks_until_due() <= 1999
    follower.advance(follower.ticks_until_due() - 1)
    assert follower.role is Role.FOLLOWER and follower.ticks_until_due() == 1
    follower.advance(1)
    assert follower.role is Role.PRE_CANDIDATE
    solo = RaftNode(0, [0], random.Random(1), KVStateMachine(), election_ticks=(1000, 1999), heartbeat_ticks=100)
    solo.advance(solo.ticks_until_due())
    assert solo.is_leader and solo.ticks_until_due() == 100
