"""A coordinator replica: drives the pure Raft core (schedulers.consensus) on Ray.

The actor only does timers and I/O: one timer that sleeps until the core's
next deadline (``RaftNode.ticks_until_due``: a leader's heartbeat, anyone
else's election timeout) and then advances the core by the ticks that
passed (one tick = ``timing.TICK_S`` emulated), peer messages as actor calls (one ``deliver`` call per peer per
Ready, carrying every message for it), the log and term/vote on local disk
(``actors.coordinator.raft_disk``), and client proposals that resolve once their entry is
applied. Named ``coordinator-<i>``; a replica restarted under the same name
and directory recovers from disk.
"""
from __future__ import annotations

import asyncio
import math
from dataclasses import dataclass
from typing import Any, Callable

from schedlab.actors.common.events import report_held_at_end
from schedlab.actors.common.shell import ActorShell
from schedlab.schedulers.consensus.core import RaftNode
from schedlab.schedulers.consensus.messages import ClientReply, ClientRequest, decode, encode
from schedlab.schedulers.consensus.statemachine import StateMachine
from schedlab.schedulers.consensus.timing import TICK_S, raft_timing
from schedlab.actors.coordinator.raft_disk import DiskStorage
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.events.shared import CELL_SAMPLE, LOOP_CRASHED, RAFT_ROLE, REPLICA_START
from schedlab.schedulers.model.seeding import rng_for
from schedlab.schedulers.model.resources import sample_fields


def replica_name(i: int) -> str:
    return f"coordinator-{i}"


@dataclass(frozen=True)
class ReplicaConfig:
    """One replica of the group: which one, where its disk is, the state
    machine it runs (a factory: every incarnation builds its own) and the
    Raft timing ([coordinator] in the scenario, emulated ms; the wall floor
    of ``schedulers.consensus.timing`` applies)."""

    index: int
    replicas: int
    data_dir: str
    make_state_machine: Callable[[], StateMachine]
    seed: int = 0
    heartbeat_ms: float = 2500.0
    election_ms: float | tuple[float, float] = 7500.0
    snapshot_threshold: int = 1000
    proposal_timeout: float = 2.0  # wall seconds
    sample_interval: float | None = None  # emulated s between the leader's cell samples; None: none


class CoordinatorReplica(ActorShell):
    BEFORE_START = frozenset({"set_peers"})  # the group wires replicas up before any starts

    TIMER = "raft"  # the timer loop's wakeable nap
    # Events ship EVENT_FLUSH_EVERY of these after the first of a batch (an
    # idle replica logs none and never wakes for them). Short: a replica
    # killed holds its unshipped events, and the invariants replay them.
    FLUSH_WALL_S = 0.015

    def __init__(self, rt: Runtime, cfg: ReplicaConfig, metrics: Any) -> None:
        self.timing = raft_timing(cfg.heartbeat_ms, cfg.election_ms, rt.scale)
        super().__init__(rt, replica_name(cfg.index), metrics, self.FLUSH_WALL_S)
        self.index = cfg.index
        self.storage = DiskStorage(cfg.data_dir)
        incarnation = len(list(self.storage.dir.glob("incarnation-*")))
        (self.storage.dir / f"incarnation-{incarnation}").touch()
        self.node = RaftNode.restore(
            cfg.index, range(cfg.replicas), rng_for(cfg.seed, f"{self.name}/{incarnation}"), cfg.make_state_machine(),
            self.storage.hard_state, self.storage.snapshot, self.storage.entries,
            election_ticks=self.timing.election_ticks, heartbeat_ticks=self.timing.heartbeat_ticks,
            snapshot_threshold=cfg.snapshot_threshold,
        )
        self._origin = 0.0  # emulated time of tick 0 (set on start)
        self._ticked = 0  # core ticks advanced so far
        self._alarm = math.inf  # emulated time the timer loop wakes at
        self.proposal_timeout = cfg.proposal_timeout
        self.peers: dict[int, Any] = {}
        self.waiting: dict[tuple[str, int], asyncio.Future] = {}
        self._last_role = (self.node.term, self.node.role.value, self.node.leader_id)
        self.sample_interval = cfg.sample_interval
        self._next_sample = 0.0
        self._pending_process = False

    # ----------------------------------------------------------------- loops

    async def on_start(self) -> None:
        self.log.emit(REPLICA_START, replica=self.index, term=self.node.term, log_last=self.node.log.last_index)
        self._origin = self.rt.now()
        self.spawn_loop(self._timer_loop())

    async def _timer_loop(self) -> None:
        """Sleep until something is due, never tick by tick: an idle group
        costs one wake per heartbeat on the leader and about one per
        election timeout on a follower (its heartbeats push the timeout
        back; it wakes at the old one, finds nothing due, sleeps again)."""
        while True:
            self._catch_up()
            self._process()
            now = self.rt.now()
            if self.sample_interval and self.node.is_leader and now >= self._next_sample:
                # The leader speaks for the cell: one utilisation sample per interval.
                shares, version = self.node.sm.inner.query(("sample",))
                self.log.emit(CELL_SAMPLE, **sample_fields(shares), version=version)
                self._next_sample = now + self.sample_interval
            self._alarm = self._due_at()
            if not await self.nap_wall(self.rt.wall(self._alarm - now), wakeable=self.TIMER):
                return

    def _due_at(self) -> float:
        """Emulated time of the next deadline: the core's, or a leader's next sample."""
        at = self._origin + (self._ticked + self.node.ticks_until_due()) * TICK_S
        if self.sample_interval and self.node.is_leader:
            at = min(at, self._next_sample)
        return at

    def _catch_up(self) -> None:
        """Advance the core by the ticks that passed since it last was, so
        its counters are current before any input (a stale count would
        make a follower think it still hears a leader). A timer late by
        more than an election timeout (a paused actor) fires what that
        timeout holds and drops the rest, as etcd's ticker drops ticks."""
        n = int((self.rt.now() - self._origin) / TICK_S + 1e-6) - self._ticked
        if n > 0:
            self.node.advance(min(n, self.timing.election_ticks[0]))
            self._ticked += n

    def _rearm(self) -> None:
        """After an input: wake the timer loop if the deadline moved before
        its alarm (a new leader's first heartbeat); a later one (a follower
        that heard its leader) needs nothing, the loop sleeps again."""
        if self._due_at() < self._alarm - 1e-9:
            self.wake_early(self.TIMER)

    async def set_peers(self, peers: dict[int, Any]) -> None:
        """Handles of the current incarnations of peers, pushed by the driver
        on start and on every restart (a restarted replica is a new actor; a
        handle to the old one would talk to nobody). Name lookups would be
        blocking GCS round trips inside the event loop."""
        for i, h in peers.items():
            if i != self.index:
                self.peers[int(i)] = h

    # ----------------------------------------------------------------- I/O

    def _process(self) -> None:
        ready = self.node.ready()
        if ready.is_empty():
            return
        self.storage.persist(ready)  # durable before anything leaves
        by_dst: dict[int, list[bytes]] = {}
        for m in ready.messages:
            by_dst.setdefault(m.dst, []).append(encode(m))
        for dst, blobs in by_dst.items():
            h = self.peers.get(dst)
            if h is not None:
                self.rt.send(h, "deliver", blobs)
        for r in ready.replies:
            fut = self.waiting.pop((r.client_id, r.request_id), None)
            if fut is not None and not fut.done():
                fut.set_result(r)
        role = (self.node.term, self.node.role.value, self.node.leader_id)
        if role != self._last_role:
            self._last_role = role
            self.log.emit(RAFT_ROLE, replica=self.index, term=role[0], role=role[1], leader=role[2],
                          commit_index=self.node.commit_index)

    def _process_soon(self) -> None:
        """Coalesce: proposals arriving in the same loop turn share one Ready,
        so followers get one AppendEntries for all of them, not one each."""
        if not self._pending_process:
            self._pending_process = True

            def run() -> None:
                self._pending_process = False
                self._process()

            asyncio.get_running_loop().call_soon(run)

    async def query(self, command: Any) -> tuple:
        """A read served by the leader from its applied state, without a log
        entry: (ok, result, error, leader hint). A client tolerates a read that
        is a moment stale, since every commit is validated anyway."""
        if not self.running or not self.node.is_leader:
            return (False, None, "not_leader", self.node.leader_id)
        return (True, self.node.sm.inner.query(command), None, self.index)

    async def deliver(self, blobs: list[bytes]) -> None:
        """Messages from one peer, in the order it produced them."""
        if not self.running:
            return
        try:
            self._catch_up()
            for b in blobs:
                m = decode(b)
                if m.dst == self.index:
                    self.node.step(m)
            self._process()
            self._rearm()
        except Exception as e:
            # A committed entry its state machine cannot apply stops this
            # replica (and, the apply being deterministic, every replica):
            # nobody awaits a one-way message, so it is logged where the
            # invariants count it (crashed_loops), never lost.
            self.log.emit(LOOP_CRASHED, loop=f"{type(self).__name__}.deliver", error=f"{type(e).__name__}: {e}"[:500])
            raise

    async def propose(self, client_id: str, request_id: int, command: Any) -> tuple:
        """Replicate ``command``; reply once applied (ok, result, error, leader hint).
        Safe to retry with the same ids: it is applied at most once."""
        if not self.running:
            return (False, None, "stopped", None)
        key = (client_id, request_id)
        fut = self.waiting.get(key)
        if fut is None or fut.done():
            fut = asyncio.get_running_loop().create_future()
            self.waiting[key] = fut
        self._catch_up()
        self.node.propose(ClientRequest(client_id, request_id, command))
        self._process_soon()
        try:
            r: ClientReply = await asyncio.wait_for(asyncio.shield(fut), self.proposal_timeout)
        except TimeoutError:
            return (False, None, "timeout", self.node.leader_id)
        return (r.ok, r.result, r.error, r.leader_hint)

    async def status(self) -> dict:
        n = self.node
        return {"replica": self.index, "term": n.term, "role": n.role.value, "leader": n.leader_id,
                "commit_index": n.commit_index, "last_applied": n.last_applied, "log_last": n.log.last_index}

    async def applied(self) -> list[tuple]:
        """Every entry this replica (all its incarnations) applied, in order."""
        return self.storage.applied()

    async def on_stop(self) -> dict:
        for fut in self.waiting.values():
            if not fut.done():
                fut.cancel()
        # Launches this replica's applied state holds for hosts that never
        # pulled them (the cell left without a leader at the end, or a host's
        # last poll came too late): committed and in flight, not lost. Every
        # live replica says so, leader or not: its applied state is committed.
        held = getattr(self.node.sm.inner, "held_launches", None)
        if held is not None:
            report_held_at_end(self.log, self.name, held())
        return await self.status()
