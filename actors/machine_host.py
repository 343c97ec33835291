"""Machine hosts: one actor carrying K emulated machines.

Tasks run for their scaled duration: each flush tick finishes the tasks
whose emulated end time has passed. A host keeps its own
account of what runs where, independent of the cell state, and reports any
launch that would exceed a machine's capacity as an ``overcommit`` event:
the check that the schedulers' commit path really protects the machines.
Once per batch interval the host calls the cell state's ``exchange``: its
finished tasks go back, the tasks committed to its machines come in.
"""
from __future__ import annotations

import heapq
import math
from typing import Any, Sequence

import numpy as np

from actors.base import ActorShell
from actors.runtime import Runtime
from actors.wire import pack_release
from schedulers.resources import EPS

# A launch on the wire: [job_id, task_index, machine, request list, duration, start_time]
# (a list when it crossed msgpack or came from the cell state machine, else a tuple)
Launch = Sequence[Any]


class MachineHost(ActorShell):
    def __init__(
        self,
        rt: Runtime,
        host_id: int,
        first_machine: int,
        capacity: np.ndarray,
        cell: Any,
        metrics: Any,
        flush_interval: float,
        initial: list[Launch] | None = None,
    ) -> None:
        super().__init__(rt, f"machine-host-{host_id}", metrics, flush_interval)
        self.host_id = host_id
        self.first = first_machine
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.used = np.zeros_like(self.capacity)
        self.cell = cell  # an actors.cell_endpoint endpoint
        self._unsent = b""  # finished tasks a failed exchange did not deliver
        self.running_tasks: dict[tuple[int, int], tuple[int, np.ndarray]] = {}
        self.ends: list[tuple[float, int, int]] = []  # heap of (emulated end, job, task)
        self.done_machines: list[int] = []
        self.done_requests: list[np.ndarray] = []
        self.done_events: list[list] = []
        self.overcommits = 0
        self._initial = initial or []

    async def on_start(self) -> None:
        self.cell.bind(self.rt, self.name, self.log)
        if self._initial:
            self._launch(self._initial, prefill=True)
            self._initial = []

    def _launch(self, tasks: list[Launch], prefill: bool) -> None:
        """Start tasks whose claims already committed. Each (job, task) pair is
        launched at most once while running; a repeat is logged, not run."""
        started = []
        for job_id, task, machine, request, duration, start in tasks:
            key = (job_id, task)
            if key in self.running_tasks:
                self.log.emit("double_launch", job_id=job_id, task=task, machine=machine)
                continue
            local = machine - self.first
            req = np.asarray(request, dtype=np.float64)
            self.used[local] += req
            if np.any(self.used[local] > self.capacity[local] + EPS):
                self.overcommits += 1
                self.log.emit("overcommit", machine=machine, used=self.used[local].tolist(), capacity=self.capacity[local].tolist())
            self.running_tasks[key] = (local, req)
            if not math.isinf(duration):
                heapq.heappush(self.ends, (start + duration, job_id, task))
            started.append([job_id, task, machine, *request, start])
        if started:
            self.log.emit("tasks_launched", host=self.host_id, prefill=prefill, tasks=started)

    def _complete_due(self) -> None:
        """Finish every task whose end time has passed. Completions are
        reported once per batch interval anyway, so one check per flush
        replaces a timer per task (and its wake-up) at no loss of accuracy:
        the event carries each task's exact emulated end time."""
        now = self.rt.now()
        ends = self.ends
        while ends and ends[0][0] <= now:
            end, job_id, task = heapq.heappop(ends)
            local, req = self.running_tasks.pop((job_id, task))
            self.used[local] -= req
            self.done_machines.append(local + self.first)
            self.done_requests.append(req)
            self.done_events.append([job_id, task, local + self.first, round(end, 6)])

    async def flush(self, final: bool = False) -> None:
        if self.running:
            self._complete_due()
        if self.done_machines:
            self.log.emit("tasks_completed", host=self.host_id, tasks=self.done_events)
            self.done_events = []
        if self.done_machines and not self._unsent:
            self._unsent = pack_release(np.asarray(self.done_machines, dtype=np.int64), np.vstack(self.done_requests))
            self.done_machines, self.done_requests = [], []
        # Awaited: one exchange in flight per host, so hand-outs and returns
        # stay in order and a slow cell state slows the polls.
        try:
            launches = await self.cell.exchange(self.host_id, self._unsent)
        except Exception as e:  # the cell state is gone: keep the returns for the next poll
            self.log.emit("exchange_failed", host=self.host_id, error=f"{type(e).__name__}: {e}")
        else:
            self._unsent = b""
            self._launch(launches, prefill=False)
        await super().flush(final)

    async def on_stop(self) -> dict:
        self._complete_due()
        return {"host": self.host_id, "running": len(self.running_tasks), "overcommits": self.overcommits}
