"""kube-controller-manager as an actor: the controllers that turn the
submitter's jobs into pods in the API store (a batch class is a Job, its
pods run to completion; a service class is a Deployment, its replicas
kept) and make a pod again when it is lost (its node written off, or
evicted by preemption), as the Job and ReplicaSet controllers do.

Routed and recovering: the submitter sends it the jobs; a restarted one is
handed every job routed to its predecessor and creates their pods again
(the store answers ``exists`` for a pod it has and ``done`` for a task
that ran to its end, so nothing runs twice).

At the end of the run it is the one that knows each job's fate from the
store: ``jobs_final`` lists every job whose tasks were all bound or done
(its ``job_scheduled`` event may have died with a killed scheduler) and
``job_pending`` the others.
"""
from __future__ import annotations

from typing import Any

from schedlab.actors.common.cell_endpoint import ReplicatedCell
from schedlab.actors.common.shell import ActorShell
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.kubernetes.pods import PodFactory
from schedlab.schedulers.model.jobs import Job

NAME = "kube-controller-manager"
LOST_POLL_WALL_S = 0.25


class KubeControllerManager(ActorShell):
    def __init__(self, rt: Runtime, pods: PodFactory, replicas: int, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, NAME, metrics, flush_interval)
        self.pods = pods
        self.store = ReplicatedCell(replicas)
        self.jobs: dict[int, Job] = {}
        self.lost_cursor = 0
        self.recreated = 0

    async def on_start(self) -> None:
        self.store.bind(self.rt, self.name, self.log)
        self.spawn_loop(self._lost_loop())

    def _rows(self, job: Job, tasks: list[int] | range) -> list[list]:
        now = self.rt.now()
        return [self.pods.row(job.job_id, t, job.job_class, list(job.request), float(job.durations[t]), job.tasks, now)
                for t in tasks]

    async def submit(self, jobs: list[dict]) -> None:
        fresh = [j for j in map(Job.from_wire, jobs) if j.job_id not in self.jobs]
        self.jobs.update((j.job_id, j) for j in fresh)
        rows = [r for j in fresh for r in self._rows(j, range(j.tasks))]
        if rows:
            await self.store.write("create", ("create", rows))

    async def recover(self, jobs: list[dict]) -> None:
        """A restarted controller manager: every job routed to its
        predecessor. Lost pods are taken from the store's cursor as it
        stands now (older losses were made again by the predecessor, or
        are made again here: a pod the store has answers ``exists``)."""
        self.lost_cursor = int((await self.store.client.query(("lost", 0)))[0])
        await self.submit(jobs)

    async def _lost_loop(self) -> None:
        while await self.nap_wall(LOST_POLL_WALL_S):
            try:
                cursor, lost = await self.store.client.query(("lost", self.lost_cursor))
            except Exception:  # the store is between leaders
                continue
            rows = [r for j, t, _why in lost if int(j) in self.jobs
                    for r in self._rows(self.jobs[int(j)], [int(t)])]
            if rows:
                await self.store.write("create", ("create", rows))
                self.recreated += len(rows)
            self.lost_cursor = max(self.lost_cursor, int(cursor))

    async def on_stop(self) -> dict:
        if not self.jobs:
            return {}
        try:
            progress = await self.store.client.query(("progress", sorted(self.jobs)), deadline=5.0)
        except Exception as e:  # the store is gone: the submitter reports our jobs pending
            self.log.emit("progress_failed", error=f"{type(e).__name__}: {e}"[:200])
            return {"jobs": len(self.jobs), "recreated": self.recreated}
        done = [j for j, n in progress if n >= self.jobs[j].tasks]
        self.log.emit("jobs_final", scheduled=done, queued=[])
        for j, n in progress:
            if n < self.jobs[j].tasks:
                self.log.emit("job_pending", job_id=j, scheduler=NAME, unplaced=self.jobs[j].tasks - n)
        return {"jobs": len(self.jobs), "recreated": self.recreated}
