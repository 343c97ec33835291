"""kube-controller-manager as an actor: the controllers that turn the
submitter's jobs into pods in the API store, each of its template's
``kind`` (a Job: a pod whose run ends is Succeeded and never run again; a
Deployment: restartPolicy Always, a pod whose run ends is restarted in
place by its kubelet, which the API machine plays), and make a pod again
when it is gone (its node written off, or evicted by preemption), as the
Job and ReplicaSet controllers both do (``workloads.on_end``).

Events: ``pods_recreated`` (``tasks``: [job, task, why]) when it makes
pods again, so the summary times a recreated pod from its own creation.

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
from schedlab.schedulers.archs.kubernetes.events import PODS_RECREATED, PROGRESS_FAILED
from schedlab.schedulers.archs.kubernetes.pods import KIND, PodFactory
from schedlab.schedulers.archs.kubernetes.workloads import on_end
from schedlab.schedulers.events.shared import JOBS_FINAL, JOB_PENDING
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
        return [self.pods.row(job.job_id, t, job.job_class, list(job.request), float(job.durations[t]), job.tasks, now,
                              job.gang_timeout, job.models)
                for t in tasks]

    async def _create(self, rows: list[list]) -> list:
        return list(await self.store.write("create", ("create", rows))) if rows else []

    def _made_again(self, rows: list[list], answers: list, whys: list[str]) -> None:
        """Log the pods the store took (``ok``) as made again."""
        made = [[r[0], r[1], w] for r, a, w in zip(rows, answers, whys) if a == "ok"]
        if made:
            self.recreated += len(made)
            self.log.emit(PODS_RECREATED, tasks=made)

    def _admit(self, jobs: list[dict]) -> list[list]:
        fresh = [j for j in map(Job.from_wire, jobs) if j.job_id not in self.jobs]
        self.jobs.update((j.job_id, j) for j in fresh)
        return [r for j in fresh for r in self._rows(j, range(j.tasks))]

    async def submit(self, jobs: list[dict]) -> None:
        await self._create(self._admit(jobs))

    async def recover(self, jobs: list[dict]) -> None:
        """A restarted controller manager: every job routed to its
        predecessor. Lost pods are taken from the store's cursor as it
        stands now (older losses were made again by the predecessor, or
        are made again here: a pod the store has answers ``exists``)."""
        self.lost_cursor = int((await self.store.client.query(("lost", 0)))[0])
        rows = self._admit(jobs)
        # The pods the store did not have: gone while nobody made them again.
        self._made_again(rows, await self._create(rows), ["recovered"] * len(rows))

    async def _lost_loop(self) -> None:
        while await self.nap_wall(LOST_POLL_WALL_S):
            try:
                cursor, lost = await self.store.client.query(("lost", self.lost_cursor))
            except Exception:  # the store is between leaders
                continue
            rows, whys = [], []
            for j, t, why in lost:
                if int(j) not in self.jobs:
                    continue  # a standing (prefill) pod: nobody's to make again
                row = self._rows(self.jobs[int(j)], [int(t)])[0]
                if on_end(row[KIND], why) == "replace":  # a pod that is gone, of either kind
                    rows.append(row)
                    whys.append(why)
            self._made_again(rows, await self._create(rows), whys)
            self.lost_cursor = max(self.lost_cursor, int(cursor))

    async def on_stop(self) -> dict:
        if not self.jobs:
            return {}
        try:
            progress = await self.store.client.query(("progress", sorted(self.jobs)), deadline=5.0)
        except Exception as e:  # the store is gone: the submitter reports our jobs pending
            self.log.emit(PROGRESS_FAILED, error=f"{type(e).__name__}: {e}"[:200])
            return {"jobs": len(self.jobs), "recreated": self.recreated}
        done = [j for j, n in progress if n >= self.jobs[j].tasks]
        self.log.emit(JOBS_FINAL, scheduled=done, queued=[])
        for j, n in progress:
            if n < self.jobs[j].tasks:
                self.log.emit(JOB_PENDING, job_id=j, scheduler=NAME, unplaced=self.jobs[j].tasks - n)
        return {"jobs": len(self.jobs), "recreated": self.recreated}
