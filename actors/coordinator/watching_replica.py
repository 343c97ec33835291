"""A coordinator replica whose leader also watches the machine hosts (they
poll the leader) and marks silent ones down through the log, so every
replica writes off the same tasks. For a replicated state machine that
hosts sync with (a shared cell state, an orchestrator's API store): it needs
a ``down`` set of written-off hosts and a ``("down", [host], now)``
command answering ``[lost, unpulled]``; a host is heard on its
``exchange``/``pending``/``rejoin`` commands. A state machine with a
``waiting()`` method (the hosts something waits for) has the leader ring
those hosts' doorbells after each write it applies (``actors.common.doorbell``),
so hosts need not poll to learn of their launches."""
from __future__ import annotations

from typing import Any

from schedlab.actors.common.doorbell import Doorbells
from schedlab.actors.coordinator.replica import CoordinatorReplica, ReplicaConfig
from schedlab.actors.engines.runtime import Runtime
from schedlab.actors.common.host_watch import LivenessSpec, host_of_command, host_timeout, judge, report_down, watch_for


class HearingReplica(CoordinatorReplica):
    """A replica that hears the machine hosts on their polls (``exchange``,
    ``pending``, ``rejoin`` commands and queries) in its ``watch``, which
    the subclass sets up."""

    watch: Any

    def __init__(self, rt: Runtime, cfg: ReplicaConfig, metrics: Any) -> None:
        super().__init__(rt, cfg, metrics)
        self.bells = Doorbells(self.rt)
        self.bell_term = -1  # the term whose leader rang (a new one forgets the old rings)

    async def propose(self, client_id: str, request_id: int, command: Any) -> tuple:
        self._heard(command)
        reply = await super().propose(client_id, request_id, command)
        if reply[0]:
            self.ring_waiting()
        return reply

    def ring_waiting(self) -> None:
        """As the leader: ring every host something waits for (not rung
        since heard). A new leader first forgets the rings sent before it:
        one its predecessor sent may not have been served."""
        waiting = getattr(self.node.sm.inner, "waiting", None)
        if waiting is None or not (self.running and self.node.is_leader):
            return
        if self.bell_term != self.node.term:
            self.bell_term = self.node.term
            self.bells.forget_rings()
        self.bells.ring(waiting())

    async def query(self, command: Any) -> tuple:
        self._heard(command)
        return await super().query(command)

    def _heard(self, command: Any) -> None:
        host = host_of_command(command)
        if host is not None:
            self.watch.heard(host, self.rt.now())
            (self.bells.rejoined if command[0] == "rejoin" else self.bells.heard)(host)


class WatchingReplica(HearingReplica):
    def __init__(self, rt: Runtime, cfg: ReplicaConfig, metrics: Any, *, hosts: int, liveness: LivenessSpec,
                 heartbeat: float | None = None) -> None:
        """``hosts``: machine host actors to watch; ``liveness``: the scenario's rules for writing one off;
        ``heartbeat``: the hosts' (emulated s; None: they poll every batch interval)."""
        super().__init__(rt, cfg, metrics)
        scale = self.rt.scale
        self.watch = watch_for(hosts, host_timeout(scale, heartbeat), liveness, scale)
        self.led_term = -1
        self.rid = 0

    async def on_start(self) -> None:
        await super().on_start()
        self.spawn_loop(self._watch_loop())

    async def _watch_loop(self) -> None:
        while await self.nap(self.watch.timeout / 4):
            if not (self.running and self.node.is_leader):
                continue
            self.ring_waiting()  # a new leader's first rings
            now = self.rt.now()
            if self.led_term != self.node.term:
                # A new leader has heard from nobody yet: a full grace period
                # each, from when a host stuck on the old leader could reach us.
                self.led_term = self.node.term
                self.watch.grace(now, give_up=True)
                continue
            silent = judge(self.watch, self.log, now, self.node.sm.inner.down)
            if not silent:
                continue
            self.rid += 1
            ok, result, _err, _hint = await super().propose(f"{self.name}-t{self.led_term}-watch", self.rid, ("down", silent, now))
            if ok:
                report_down(self.log, silent, *result, by=self.name, watch=self.watch)
