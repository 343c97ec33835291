"""Borg's front door and its Borglet link, on the Borgmaster group.

``BorgFrontend`` (actor ``borg-frontend``) takes the submitter's jobs and
writes them to the replicated log in one ``submit`` command per batch;
admission (quota) happens when it is applied, and a rejected job is a
``job_rejected`` event with its reason. ``BorgletEndpoint`` is what a
machine host polls: the same ``exchange`` as the other architectures.
"""
from __future__ import annotations

from typing import Any

from schedlab.actors.common.shell import ActorShell
from schedlab.actors.common.cell_endpoint import ReplicatedCell
from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.events.shared import JOB_REJECTED
from schedlab.schedulers.model.wire import unpack_release_keys


class BorgFrontend(ActorShell):
    def __init__(self, rt: Runtime, replicas: int, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, "borg-frontend", metrics, flush_interval)
        self.replicas = replicas

    async def on_start(self) -> None:
        self.client = CoordinatorClient(self.name, self.replicas, self.rt)

    async def submit(self, jobs: list[dict]) -> None:
        """Awaited by the submitter: during a Borgmaster failover, submission
        waits for the new leader (as Borg's clients do)."""
        batch = [dict(j, user=j["job_class"]) for j in jobs]
        # The client keeps one admission in flight at a time (concurrent
        # submitters queue), so a retried batch is never superseded.
        results = await self.client.submit(("submit", batch, self.rt.now()), deadline=float("inf"))
        self.client.acks.clear()
        for job_id, ok, reason in results:
            if not ok:
                self.log.emit(JOB_REJECTED, job_id=job_id, reason=reason)


class BorgletEndpoint(ReplicatedCell):
    """Finished tasks out (by key), launches and kills in."""

    async def rejoin(self, host_id: int) -> list:
        """A restarted Borglet: marked down at once (its tasks rescheduled);
        its next poll brings it back up, empty."""
        return await self.write("rejoin", ("rejoin", host_id, self.rt.now()))

    async def exchange(self, host_id: int, finished: bytes) -> Any:
        if not finished and not await self.client.query(("pending", host_id)):
            return [], []
        keys = unpack_release_keys(finished) if finished else []
        launches, kills, reset = await self.write("exchange", ("exchange", host_id, keys, self.rt.now()))
        if reset:
            return {"reset": True, "launches": (launches, kills)}
        return launches, kills
