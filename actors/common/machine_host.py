"""Machine hosts: one actor carrying K emulated machines.

Tasks run for their scaled duration: each flush tick finishes the tasks
whose emulated end time has passed. A host keeps its own
account of what runs where, independent of the cell state, and reports any
launch that would exceed a machine's capacity as an ``overcommit`` event:
the check that the schedulers' commit path really protects the machines.
The host calls its keeper's ``exchange`` (the cell state, a master, a
head): its finished tasks go back, the tasks committed to its machines
come in. With a ``heartbeat`` it exchanges when there is something to
exchange (its keeper rang: a launch or kill waits; a task ended; something
was not delivered), at most once per batch interval, and otherwise once
per heartbeat (``schedulers.model.exchange_clock``); without one, once per
batch interval, whatever there is.
"""
from __future__ import annotations

import asyncio

import collections
import heapq
import math
from typing import Any, Sequence

import numpy as np

from schedlab.actors.common.shell import ActorShell
from schedlab.actors.common.host_watch import report_down
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.events.shared import (
    DOUBLE_LAUNCH, EXCHANGE_FAILED, HOST_RESET, OVERCOMMIT, TASKS_COMPLETED, TASKS_KILLED, TASKS_LAUNCHED,
)
from schedlab.schedulers.model.wire import key_parts, pack_release, task_key, unpack_release_keys
from schedlab.schedulers.model.exchange_clock import ExchangeClock
from schedlab.schedulers.model.resources import EPS

# A launch on the wire: [job_id, task_index, machine, request list, duration, start_time]
# (a list when it crossed msgpack or came from the cell state machine, else a tuple)
Launch = Sequence[Any]


class MachineHost(ActorShell):
    # The last exchange at stop is given up after this long: a cell with a
    # leader answers in milliseconds, one with none (quorum lost at the end)
    # never does, and the host's stop must not hang on it.
    FINAL_EXCHANGE_WALL_S = 5.0

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
        rejoin: bool = False,
        heartbeat: float | None = None,
    ) -> None:
        """``rejoin``: a restarted host, which first tells the cell it is back
        empty, so what its predecessor ran is written off and placed again.
        ``heartbeat``: emulated s; the keeper rings when work waits (None:
        it does not, and the host polls every batch interval)."""
        super().__init__(rt, f"machine-host-{host_id}", metrics, flush_interval)
        self.clock = None if heartbeat is None else ExchangeClock(flush_interval * rt.scale, heartbeat)
        self._rung = False  # the doorbell rang since the last exchange began
        self._failed = False  # the last exchange did not reach the keeper
        self._events_due: float | None = None  # when the buffered events ship (clock mode)
        self.host_id = host_id
        self.first = first_machine
        self.capacity = np.asarray(capacity, dtype=np.float64)
        self.used = np.zeros_like(self.capacity)
        self.cell = cell  # an actors.common.cell_endpoint endpoint
        self._unsent = b""  # finished tasks a failed exchange did not deliver
        self.running_tasks: dict[tuple[int, int], tuple[int, np.ndarray, str]] = {}  # -> (local machine, request, owner)
        self.ends: list[tuple[float, int, int]] = []  # heap of (emulated end, job, task)
        self.done_machines: list[int] = []
        self.done_requests: list[np.ndarray] = []
        self.done_keys: list[int] = []
        self.recently_done: collections.deque[tuple[int, int]] = collections.deque(maxlen=2000)
        self.done_events: list[list] = []
        self.overcommits = 0
        # A kill logged (tasks_killed) but not yet shipped to the collector:
        # it must be shipped before the exchange that confirms it (flush).
        self._kill_unshipped = False
        self._initial = initial or []
        self.rejoining = rejoin
        self._rejoin_lock = asyncio.Lock()

    async def on_start(self) -> None:
        self.cell.bind(self.rt, self.name, self.log, self.agent_report, self._reset)
        await self._rejoin()
        if self._initial:
            self._launch(self._initial, prefill=True)
            self._initial = []

    async def _rejoin(self) -> bool:
        """A restarted host's first word to the cell: what its predecessor
        ran or had waiting is written off. Until the cell has answered, the
        host does not poll: a poll that overtook it (the cell paused or
        slowed, the call failed) would hand the new incarnation its
        predecessor's launches, placed again elsewhere meanwhile. True once
        rejoined (or never needed)."""
        async with self._rejoin_lock:  # one rejoin in flight (start's and the poll loop's)
            if not self.rejoining:
                return True
            try:
                lost, unpulled = await self.cell.rejoin(self.host_id)
            except Exception as e:  # the cell is gone or cut off: try again at the next poll
                self.log.emit(EXCHANGE_FAILED, host=self.host_id, error=f"rejoin: {type(e).__name__}: {e}")
                return False
            self.rejoining = False
        if lost or unpulled:
            report_down(self.log, [self.host_id], lost, unpulled, by=self.name)
        return True

    def _launch(self, tasks: list[Launch], prefill: bool) -> None:
        """Start tasks whose claims already committed. Each (job, task) pair is
        launched at most once while running; a repeat is logged, not run."""
        started = []
        # A launch may carry its owner (the framework that placed it) as a 7th field.
        for job_id, task, machine, request, duration, start, *owner in tasks:
            key = (job_id, task)
            if key in self.running_tasks:
                self.log.emit(DOUBLE_LAUNCH, job_id=job_id, task=task, machine=machine)
                continue
            local = machine - self.first
            req = np.asarray(request, dtype=np.float64)
            self.used[local] += req
            if np.any(self.used[local] > self.capacity[local] + EPS):
                self.overcommits += 1
                self.log.emit(OVERCOMMIT, machine=machine, used=self.used[local].tolist(), capacity=self.capacity[local].tolist())
            self.running_tasks[key] = (local, req, owner[0] if owner else "")
            if not math.isinf(duration):
                heapq.heappush(self.ends, (start + duration, job_id, task))
            started.append([job_id, task, machine, *request, start])
        if started:
            self.log.emit(TASKS_LAUNCHED, host=self.host_id, prefill=prefill, tasks=started)

    def _complete_due(self) -> None:
        """Finish every task whose end time has passed. Completions are
        reported once per batch interval anyway, so one check per flush
        replaces a timer per task (and its wake-up) at no loss of accuracy:
        the event carries each task's exact emulated end time."""
        now = self.rt.now()
        ends = self.ends
        while ends and ends[0][0] <= now:
            end, job_id, task = heapq.heappop(ends)
            if (job_id, task) not in self.running_tasks:
                continue  # killed before it ended
            self._free(job_id, task)
            self.done_events.append([job_id, task, self.done_machines[-1], round(end, 6)])

    def _free(self, job_id: int, task: int, killed: bool = False) -> None:
        local, req, _owner = self.running_tasks.pop((job_id, task))
        self.used[local] -= req
        self.done_machines.append(local + self.first)
        self.done_requests.append(req)
        self.done_keys.append(task_key(job_id, task, killed))
        if not killed:
            self.recently_done.append((job_id, task))

    def _kill(self, keys: list) -> None:
        """The master revoked these tasks: stop them, return their resources."""
        killed = []
        for job_id, task in keys:
            if (job_id, task) in self.running_tasks:
                self._free(job_id, task, killed=True)
                killed.append([job_id, task, self.done_machines[-1]])
        if killed:
            self.log.emit(TASKS_KILLED, host=self.host_id, tasks=killed)
            self._kill_unshipped = True

    def _reset(self) -> None:
        """We were marked down while alive (paused, cut off, too slow): our
        tasks were written off and placed again elsewhere. Stop them all and
        start over empty; their resources were already taken back."""
        gone = [[j, t, local + self.first] for (j, t), (local, _req, _o) in self.running_tasks.items()]
        self.running_tasks.clear()
        self.ends.clear()
        self.used[:] = 0.0
        self.done_machines, self.done_requests, self.done_keys, self.done_events = [], [], [], []
        self.log.emit(HOST_RESET, host=self.host_id, tasks=len(gone))
        if gone:
            self.log.emit(TASKS_KILLED, host=self.host_id, tasks=gone, reason="written_off")

    def agent_report(self) -> dict:
        """What an agent tells a (new) master when it registers: what runs
        here, what finished lately, and the ends (finished or killed) not
        delivered yet, which the next polls repeat: a master that counted
        them from this report knows those repeats are stale."""
        unsent = unpack_release_keys(self._unsent) if self._unsent else []
        return {"host": self.host_id, "tasks": [
            [job_id, task, local + self.first, req.tolist(), owner]
            for (job_id, task), (local, req, owner) in self.running_tasks.items()
        ], "finished": list(self.recently_done),
            "unreported": [list(k) for k in unsent] + [list(key_parts(k)) for k in self.done_keys]}

    async def ring(self) -> None:
        """The keeper's doorbell: something waits for this host (one-way)."""
        self._rung = True
        self.wake_early()

    def _next_end(self) -> float | None:
        """The earliest end of a task still running (killed ones' entries dropped)."""
        ends = self.ends
        while ends and (ends[0][1], ends[0][2]) not in self.running_tasks:
            heapq.heappop(ends)
        return ends[0][0] if ends else None

    def _due(self, clock: ExchangeClock, now: float) -> float:
        retry = self._failed or self.rejoining or bool(self._unsent) or bool(self.done_machines)
        return clock.due(now, rung=self._rung, next_end=self._next_end(), retry=retry)

    async def _flush_loop(self) -> None:
        """With a heartbeat: exchange when due (``ExchangeClock``); ship
        events on their own timer, EVENT_FLUSH_EVERY intervals after the
        oldest was buffered."""
        clock = self.clock
        if clock is None:
            await super()._flush_loop()
            return
        while True:
            now = self.rt.now()
            exchange_at = self._due(clock, now)
            at = exchange_at if self._events_due is None else min(exchange_at, self._events_due)
            if at > now:
                if not await self.nap_wall(self.rt.wall(at - now), wakeable=True):
                    return
                continue
            if exchange_at <= now:
                await self.flush()
            else:
                await self._ship_events()
            if self._events_due is not None and not len(self.log):
                self._events_due = None
            elif self._events_due is None and len(self.log):
                self._events_due = self.rt.now() + self.EVENT_FLUSH_EVERY * clock.interval

    async def flush(self, final: bool = False) -> None:
        if self.clock is not None:
            self._rung = False
            self.clock.began(self.rt.now())
        if self.running:
            self._complete_due()
        if self.done_machines:
            self.log.emit(TASKS_COMPLETED, host=self.host_id, tasks=self.done_events)
            self.done_events = []
        if self.done_machines and not self._unsent:
            self._unsent = pack_release(np.asarray(self.done_machines, dtype=np.int64), np.vstack(self.done_requests),
                                        np.asarray(self.done_keys, dtype=np.int64))
            self.done_machines, self.done_requests, self.done_keys = [], [], []
        if not await self._rejoin():
            await self._flushed(final)
            return
        if self._kill_unshipped:
            # Log before telling: once the cell hears of a kill it may place
            # the task again elsewhere at once, and if this host is killed
            # before its next event batch, its tasks_killed would die with it
            # and the checker would see the task running on two machines
            # (preempted, confirmed, placed on another host, and this host
            # killed before it shipped). One more call only on polls that
            # follow a kill.
            await self._ship_events()
            self._kill_unshipped = False
        if final:
            # Out before the last exchange: with no leader left to answer it
            # (a replicated cell that lost its quorum at the end) that call
            # is given up below, and events still buffered would go with it.
            await self._ship_events()
        # Awaited: one exchange in flight per host, so hand-outs and returns
        # stay in order and a slow cell state slows the polls.
        try:
            call = self.cell.exchange(self.host_id, self._unsent)
            reply = await (asyncio.wait_for(call, self.FINAL_EXCHANGE_WALL_S) if final else call)
        except Exception as e:  # the cell state is gone: keep the returns for the next poll
            self.log.emit(EXCHANGE_FAILED, host=self.host_id, error=f"{type(e).__name__}: {e}")
            self._failed = True
        else:
            self._failed = False
            self._unsent = b""
            if isinstance(reply, dict) and reply.get("reset"):
                self._reset()
                reply = reply["launches"]
            # An endpoint answers with launches, or with (launches, kills).
            launches, kills = reply if isinstance(reply, tuple) else (reply, [])
            # Kills first: a preemption frees room for a launch in this same
            # reply (which may even be the same task, placed again). Masters
            # withdraw launches not yet handed out instead of killing them.
            self._kill(kills)
            self._launch(launches, prefill=False)
        await self._flushed(final)

    async def _flushed(self, final: bool) -> None:
        """Events after an exchange: with a heartbeat they keep their own
        timer (``_flush_loop``); without, every EVENT_FLUSH_EVERY polls."""
        if self.clock is None or final:
            await super().flush(final)

    async def on_stop(self) -> dict:
        self._complete_due()
        return {"host": self.host_id, "running": len(self.running_tasks), "overcommits": self.overcommits}
