"""Machine hosts: one actor carrying K emulated machines.

Tasks run for their scaled duration on asyncio timers. A host keeps its own
account of what runs where, independent of the cell state, and reports any
launch that would exceed a machine's capacity as an ``overcommit`` event:
the check that the schedulers' commit path really protects the machines.
Completions go back to the cell state in one batch per flush.
"""
from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np

from actors.base import ActorShell
from actors.runtime import Runtime
from schedulers.resources import EPS

# A launch on the wire: (job_id, task_index, machine, request list, duration, start_time)
Launch = tuple[int, int, int, list, float, float]


class MachineHost(ActorShell):
    def __init__(
        self,
        rt: Runtime,
        host_id: int,
        first_machine: int,
        capacity: np.ndarray,
        cellstate: Any,
        metrics: Any,
        flush_interval: float,
        initial: list[Launch] | None = None,
    ) -> None:
        super().__init__(rt, f"machine-host-{host_id}", metrics, flush_interval)
        self.host_id = host_id
        self.first = first_machine
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.used = np.zeros_like(self.capacity)
        self.cellstate = cellstate
        self.running_tasks: dict[tuple[int, int], tuple[int, np.ndarray, Any]] = {}
        self.done_machines: list[int] = []
        self.done_requests: list[np.ndarray] = []
        self.done_events: list[list] = []
        self.overcommits = 0
        self._initial = initial or []

    async def on_start(self) -> None:
        if self._initial:
            self._launch(self._initial, prefill=True)
            self._initial = []

    async def launch(self, tasks: list[Launch]) -> None:
        """Start tasks whose claims already committed. Each (job, task) pair is
        launched at most once while running; a repeat is logged, not run."""
        self._launch(tasks, prefill=False)

    def _launch(self, tasks: list[Launch], prefill: bool) -> None:
        loop = asyncio.get_running_loop()
        now = self.rt.now()
        started = []
        for job_id, task, machine, request, duration, start in tasks:
            key = (job_id, task)
            local = machine - self.first
            req = np.asarray(request, dtype=np.float64)
            if key in self.running_tasks:
                self.log.emit("double_launch", job_id=job_id, task=task, machine=machine)
                continue
            self.used[local] += req
            if np.any(self.used[local] > self.capacity[local] + EPS):
                self.overcommits += 1
                self.log.emit("overcommit", machine=machine, used=self.used[local].tolist(), capacity=self.capacity[local].tolist())
            handle = None
            if not math.isinf(duration):
                delay = self.rt.clock.wall(max(0.0, start + duration - now))  # type: ignore[attr-defined]
                handle = loop.call_later(delay, self._complete, key)
            self.running_tasks[key] = (local, req, handle)
            started.append([job_id, task, machine, *request, start])
        if started:
            self.log.emit("tasks_launched", host=self.host_id, prefill=prefill, tasks=started)

    def _complete(self, key: tuple[int, int]) -> None:
        local, req, _ = self.running_tasks.pop(key)
        self.used[local] -= req
        self.done_machines.append(local + self.first)
        self.done_requests.append(req)
        self.done_events.append([key[0], key[1], local + self.first])

    async def flush(self, final: bool = False) -> None:
        if self.done_machines:
            machines = np.asarray(self.done_machines, dtype=np.int64)
            requests = np.vstack(self.done_requests)
            self.log.emit("tasks_completed", host=self.host_id, tasks=self.done_events)
            self.done_machines, self.done_requests, self.done_events = [], [], []
            if self.cellstate is not None:
                if final:
                    await self.rt.call(self.cellstate, "release", machines, requests)
                else:
                    self.rt.send(self.cellstate, "release", machines, requests)
        await super().flush(final)

    async def on_stop(self) -> dict:
        for _local, _req, handle in self.running_tasks.values():
            if handle is not None:
                handle.cancel()
        return {"host": self.host_id, "running": len(self.running_tasks), "overcommits": self.overcommits}
