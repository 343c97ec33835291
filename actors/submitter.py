"""The submitter: releases the workload's jobs at their arrival times and
routes each to one scheduler of its class by hashing the job id."""
from __future__ import annotations

import asyncio
from typing import Any

from actors.base import ActorShell
from actors.runtime import Runtime
from schedulers.seeding import route


class Submitter(ActorShell):
    def __init__(
        self,
        rt: Runtime,
        jobs: list[dict],
        routes: dict[str, list[tuple[str, Any]]],
        metrics: Any,
        flush_interval: float,
    ) -> None:
        super().__init__(rt, "submitter", metrics, flush_interval)
        self.jobs = sorted(jobs, key=lambda j: j["submit_time"])
        self.routes = routes  # job class -> [(scheduler name, handle)]
        self.next = 0

    async def on_start(self) -> None:
        self.spawn_loop(self._loop())

    async def _loop(self) -> None:
        while self.running and self.next < len(self.jobs):
            now = self.rt.now()
            batches: dict[str, tuple[Any, list[dict]]] = {}
            while self.next < len(self.jobs) and self.jobs[self.next]["submit_time"] <= now:
                job = dict(self.jobs[self.next])
                self.next += 1
                targets = self.routes[job["job_class"]]
                name, handle = targets[route(job["job_id"], len(targets))]
                # Wait time counts from the actual release, not the planned arrival.
                job["planned_time"], job["submit_time"] = job["submit_time"], now
                batches.setdefault(name, (handle, []))[1].append(job)
                self.log.emit(
                    "job_submitted",
                    job_id=job["job_id"],
                    job_class=job["job_class"],
                    kind=job["kind"],
                    tasks=len(job["durations"]),
                    request=job["request"],
                    scheduler=name,
                )
            # Awaited, so a job logged as submitted has reached its scheduler
            # before stop() returns: the accounting at the end can trust it.
            refs = [self.rt.call(h, "submit", b) for h, b in batches.values()]
            await asyncio.gather(*refs)
            if self.next < len(self.jobs):
                # Release at most once per flush interval: one submit message
                # per scheduler per interval, however dense the arrivals.
                # Wait time still counts from the actual release.
                gap = self.rt.clock.wall(self.jobs[self.next]["submit_time"] - self.rt.now())  # type: ignore[attr-defined]
                if not await self.nap_wall(max(gap, self.flush_interval / 2)):
                    break

    async def on_stop(self) -> dict:
        return {"released": self.next, "planned": len(self.jobs)}
