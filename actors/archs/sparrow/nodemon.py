"""The node monitors of one machine host's machines, as one actor
(``nodemon-<h>``), and the endpoint the machine host polls it through.

Each machine is a ``schedulers.archs.sparrow.worker.Worker`` core (slots,
one FIFO queue of tasks and reservations). Schedulers probe it
(``probe``: queue lengths), place tasks or reservations on it
(``enqueue``); a reservation reaching the head of its queue makes this
actor ask the scheduler that owns it for a task (``get_task``: a task or
a cancel; a scheduler that does not answer, or is still recovering, is
asked again after ``retry``, the slot held meanwhile). A task started
here is a placement (its ``txn``), handed to the host at its next poll
(``exchange``) and timed here: its slot frees at its end. Schedulers
learn which of their tasks started (and ended) from one ``report`` per
scheduler per batch interval. With Hawk's stealing, a worker that goes
idle (its task ended or its GetTask was cancelled, queue empty) asks random
workers of the general partition for short entries queued behind a long
task (``steal``) at once, and again every ``steal_interval`` while idle.
"""
from __future__ import annotations

import asyncio
import heapq
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from schedlab.actors.common.host_handoff import HostHandoff
from schedlab.actors.common.per_host_endpoint import PerHostEndpoint
from schedlab.actors.common.shell import ActorShell
from schedlab.actors.common.usage_sampler import sample_usage_loop
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.archs.sparrow.events import SPARROW_NODEMON, SPARROW_STEAL
from schedlab.schedulers.archs.sparrow.hybrid import partition
from schedlab.schedulers.archs.sparrow.nodes import drop_running, set_slots
from schedlab.schedulers.events.shared import TXN
from schedlab.schedulers.model.resources import slots_for
from schedlab.schedulers.archs.sparrow.spec import nodemon_name, scheduler_name
from schedlab.schedulers.archs.sparrow.stealing import Stealing
from schedlab.schedulers.archs.sparrow.worker import GetTask, Outputs, QueueView, Reservation, Task, Worker
from schedlab.schedulers.model.seeding import rng_for

CALL_WALL_S = 5.0


@dataclass(frozen=True)
class NodemonConfig:
    host: int
    machines: tuple[int, ...]
    capacity: np.ndarray  # [machines of this host, R]
    largest: tuple[float, ...]  # the workload's largest request, per resource
    slots: int  # [sparrow] slots (0: as many as fit)
    standing: tuple[tuple[tuple[int, int, tuple[float, ...]], ...], ...]  # per machine: prefill tasks
    machines_per_host: int
    cell_size: int
    seed: int
    retry: float
    steal: bool = False
    steal_attempts: int = 10
    steal_interval: float = 1.0
    short_fraction: float = 0.0  # Hawk's short-only partition (the last workers): never a steal victim
    hosts: int = 1
    sample_interval: float = 5.0  # nodemon-0 samples the cell's utilization (cell_sample)
    total: tuple[float, ...] = ()  # the cell's capacity, per resource


class NodeMonitor(ActorShell):
    def __init__(self, rt: Runtime, cfg: NodemonConfig, metrics: Any, flush_interval: float) -> None:
        super().__init__(rt, nodemon_name(cfg.host), metrics, flush_interval)
        self.cfg = cfg
        self.rng = rng_for(cfg.seed, self.name)
        self.workers = {m: Worker(m, 1) for m in cfg.machines}
        self.standing = {m: {(j, t): np.asarray(r, dtype=np.float64) for j, t, r in tasks}
                         for m, tasks in zip(cfg.machines, cfg.standing)}
        self.jobs: dict[int, tuple[str, list[float]]] = {}  # job -> (owner scheduler, request)
        self.owner_of: dict[tuple[int, int], str] = {}  # an eager task -> its scheduler
        self.started: dict[str, set[tuple[int, int]]] = {}  # owner -> its tasks started here (ever)
        self.running_at: dict[tuple[int, int], int] = {}  # running task -> machine
        self.ends: list[tuple[float, int, int, int]] = []  # (end, job, task, machine)
        # Launches wait here until the host has room by its own account:
        # the core frees a slot at the task's end, the host a little later
        # (at its next poll), and a launch must never reach it before that.
        self.handoff = HostHandoff(cfg.machines)
        self.reports: dict[str, tuple[list, list]] = {}  # owner -> (started [job, task], finished [job, task, machine])
        self.frozen = False  # the hosts are stopping: nothing more starts
        self.wake = asyncio.Event()
        self.asks: set[asyncio.Task] = set()
        self.stealing = Stealing(cfg.steal, partition(cfg.cell_size, cfg.short_fraction)[0] if cfg.steal else (),
                                 cfg.steal_attempts, cfg.steal_interval, cfg.machines_per_host)
        self.counts = {"get_task": 0, "cancels": 0, "retries": 0, "steals": 0, "stolen": 0, "steal_messages": 0,
                       "probes": 0}

    async def on_start(self) -> None:
        now = self.rt.now()
        for m in self.cfg.machines:
            self._apply(set_slots(self.workers[m], self._slots(m), now), now)
        self.spawn_loop(self._clock_loop())
        if self.cfg.host == 0 and self.cfg.total:
            self.spawn_loop(self._sample_loop())

    async def usage(self) -> list[float]:
        """What this host's machines run by the node monitors' account
        (tasks started and not ended, standing tasks)."""
        used = np.zeros(self.cfg.capacity.shape[1])
        for m, w in self.workers.items():
            for k in w.running:
                used += np.asarray(self.jobs[k[0]][1], dtype=np.float64)
            for r in self.standing[m].values():
                used += r
        return used.tolist()

    async def _sample_loop(self) -> None:
        names = [nodemon_name(i) for i in range(self.cfg.hosts)]
        await sample_usage_loop(self, names, self.cfg.total, self.cfg.sample_interval)

    def _slots(self, m: int) -> int:
        i = self.cfg.machines.index(m)
        used = sum(self.standing[m].values(), np.zeros(self.cfg.capacity.shape[1]))
        return slots_for(self.cfg.capacity[i], used, self.cfg.largest, self.cfg.slots)

    def _owner(self, key: tuple[int, int], task: Task | None = None) -> str:
        return self.owner_of.get(key) or self.jobs.get(key[0], ("?", []))[0]

    # ---------------------------------------------------------------- outputs

    def _apply(self, out: Outputs, now: float) -> None:
        """Start what the cores started (a placement each, handed to the
        host at its next poll) and send the GetTasks they asked for."""
        by_job: dict[tuple[str, int], list] = {}
        for s in out.started:
            key = s.task.key
            if self.frozen:
                continue  # the run is ending: its host would never pull it
            owner = self._owner(key)
            request = self.jobs[key[0]][1]
            self.running_at[key] = s.worker
            if math.isfinite(s.end):
                heapq.heappush(self.ends, (s.end, key[0], key[1], s.worker))
            self.started.setdefault(owner, set()).add(key)
            self.reports.setdefault(owner, ([], []))[0].append([key[0], key[1]])
            self.handoff.hold(s.worker, [key[0], key[1], s.worker, list(request), s.task.duration, now, owner])
            by_job.setdefault((owner, key[0]), []).append([key[1], s.worker])
        for (owner, job), placed in by_job.items():
            self.log.emit(TXN, scheduler=owner, job_id=job, claims=len(placed), committed=len(placed),
                          think=0.0, placed=placed, outbox=self.name, t=now, span=0.0)
        if out.started:
            self.wake.set()
        for msg in out.messages:
            task = asyncio.get_running_loop().create_task(self._ask(msg))
            self.asks.add(task)
            task.add_done_callback(self._ask_done)

    def _ask_done(self, task: asyncio.Task) -> None:
        self.asks.discard(task)
        self._loop_ended(task)

    async def _ask(self, msg: GetTask) -> None:
        """A reservation reached the head: ask its scheduler (again after
        ``retry`` while it is dead or recovering)."""
        name = scheduler_name(msg.scheduler)
        while self.running:
            handle = self.rt.lookup(name)
            reply: Any = None
            if handle is not None:
                try:
                    reply = await asyncio.wait_for(self.rt.call(handle, "get_task", msg.job_id),
                                                   self.rt.wall(CALL_WALL_S * self.rt.scale))
                except Exception:
                    reply = None
            if isinstance(reply, dict) and "task" in reply:
                self.counts["get_task"] += 1
                task = reply["task"]
                if task is None:
                    self.counts["cancels"] += 1
                else:
                    self.jobs.setdefault(task.job_id, (name, list(reply["request"])))
                now = self.rt.now()
                w = self.workers[msg.worker]
                if msg.request not in w.asking:
                    return  # the host was lost meanwhile and the ask with it
                self._apply(w.answer(msg.request, task, now), now)
                self._went_idle(msg.worker)
                return
            self.counts["retries"] += 1
            if not await self.nap(self.cfg.retry):
                return

    # ------------------------------------------------------------- schedulers

    async def probe(self, machines: list[int]) -> list[int]:
        self.counts["probes"] += len(machines)
        return [self.workers[m].queue_length() for m in machines]

    async def enqueue(self, owner: str, job_id: int, request: list[float], entries: list[tuple[int, Any]]) -> None:
        now = self.rt.now()
        self.jobs.setdefault(job_id, (owner, list(request)))
        for m, e in entries:
            if isinstance(e, Task):
                self.owner_of[e.key] = owner
            self._apply(self.workers[int(m)].enqueue([e], now), now)

    async def owned(self, owner: str, owner_id: int) -> dict:
        """A restarted scheduler rebuilding: its tasks started here, its
        tasks queued, and its reservations waiting or asking, per job."""
        queued: dict[int, list[int]] = {}
        reservations: dict[int, int] = {}
        for w in self.workers.values():
            for e in w.queue:
                if isinstance(e, Task) and self.owner_of.get(e.key) == owner:
                    queued.setdefault(e.job_id, []).append(e.index)
                elif isinstance(e, Reservation) and e.scheduler == owner_id:
                    reservations[e.job_id] = reservations.get(e.job_id, 0) + 1
            for r in w.asking.values():
                if r.scheduler == owner_id:
                    reservations[r.job_id] = reservations.get(r.job_id, 0) + 1
        long_load = [[m, s.task.job_id, s.task.index] for m, w in self.workers.items() for s in w.running.values()
                     if self.owner_of.get(s.task.key) == owner]
        return {"started": sorted(self.started.get(owner, ())), "queued": queued, "reservations": reservations,
                "running": long_load}

    # ---------------------------------------------------------------- stealing

    async def views(self, machines: list[int]) -> list:
        return [self.workers[m].view() for m in machines]

    async def steal(self, victim: int, entries: list) -> list:
        """A thief takes these entries (those still waiting), with what it
        needs to run them (owner and request per job)."""
        taken = self.workers[victim].remove(entries)
        out = []
        for e in taken:
            job = e.job_id
            owner = self.owner_of.pop(e.key, None) if isinstance(e, Task) else None
            out.append((e, owner or self.jobs[job][0], self.jobs[job][1]))
        return out

    def _went_idle(self, m: int) -> None:
        """Worker ``m`` may have just gone idle (a task ended, a GetTask was
        cancelled): Hawk's worker tries to steal at that moment, not at its
        next periodic retry."""
        if self.stealing.went_idle(m, self.workers[m]):
            self.wake.set()

    async def _steal_for(self, thief: int) -> None:
        """One try of ``thief`` (``Stealing`` decides whom and what): contact
        the targets in turn (2 messages each) and steal from the first with
        something to take (2 more). Transport: the first contact on another
        host fetches the views of every target there in one call."""
        cfg, stealing = self.cfg, self.stealing
        targets = stealing.targets(thief, self.rng)
        fetched: dict[int, dict[int, Any]] = {}
        for victim in targets:
            host = stealing.host_of(victim)
            self.counts["steal_messages"] += 2
            view: QueueView | None
            if host == cfg.host:
                view = self.workers[victim].view()
            else:
                if host not in fetched:
                    on_host = stealing.on_host(targets, host)
                    handle = self.rt.lookup(nodemon_name(host))
                    try:
                        got_views = await self.rt.call(handle, "views", on_host) if handle is not None else []
                    except Exception:
                        got_views = []
                    fetched[host] = dict(zip(on_host, got_views))
                view = fetched[host].get(victim)
            group = stealing.take(view)
            if not group:
                continue
            self.counts["steal_messages"] += 2
            if host == cfg.host:
                got = await self.steal(victim, list(group))
            else:
                try:
                    got = await self.rt.call(self.rt.lookup(nodemon_name(host)), "steal", victim, list(group))
                except Exception:
                    return
            if self.frozen:
                return
            if not got:
                continue  # served meanwhile: the next target
            now = self.rt.now()
            for e, owner, request in got:
                self.jobs.setdefault(e.job_id, (owner, list(request)))
                if isinstance(e, Task):
                    self.owner_of[e.key] = owner
            self.counts["steals"] += 1
            self.counts["stolen"] += len(got)
            self.log.emit(SPARROW_STEAL, thief=thief, victim=victim, entries=len(got))
            self._apply(self.workers[thief].enqueue([e for e, _o, _r in got], now), now)
            return

    # ------------------------------------------------------------------ clock

    def _complete_due(self, now: float) -> None:
        while self.ends and self.ends[0][0] <= now:
            end, job, task, m = heapq.heappop(self.ends)
            key = (job, task)
            if self.running_at.get(key) != m or key not in self.workers[m].running:
                continue  # lost with its host
            del self.running_at[key]
            owner = self._owner(key)
            self.reports.setdefault(owner, ([], []))[1].append([job, task, m])
            self._apply(self.workers[m].complete(key, max(end, now)), now)
            self._went_idle(m)

    async def _clock_loop(self) -> None:
        cap = self.flush_interval * 4
        while self.running:
            self.wake.clear()  # before the work: a wake-up set while stealing awaits is not lost
            now = self.rt.now()
            self._complete_due(now)
            if self.cfg.steal and not self.frozen:
                for m, w in self.workers.items():
                    if self.stealing.due(m, w, now):
                        await self._steal_for(m)
            wait = cap if not self.ends else min(cap, max(0.0, self.rt.wall(self.ends[0][0] - self.rt.now())))
            try:
                await asyncio.wait_for(self.wake.wait(), wait)
            except TimeoutError:
                pass

    def on_stopping(self) -> None:
        self.wake.set()

    # ------------------------------------------------------------- the host

    async def exchange(self, host: int, finished: bytes) -> Any:
        now = self.rt.now()
        self._complete_due(now)
        for job, task, m in self.handoff.returned(finished):
            if job < 0 and self.standing.get(m, {}).pop((job, task), None) is not None:
                self._apply(set_slots(self.workers[m], self._slots(m), now), now)
        return self.handoff.hand_out(lambda m: self.workers[m].slots)

    async def rejoin(self, host: int) -> list:
        """The host restarted: the tasks it ran died with it, launches it
        never pulled never ran; their slots serve the queues again (the
        queues themselves live here and survive)."""
        now = self.rt.now()
        lost, unpulled = [], []
        for m, w in self.workers.items():
            gone, never = self.handoff.drop(m)
            lost += gone
            unpulled += never
            keys = list(w.running)
            for k in keys:
                self.running_at.pop(k, None)
            self.standing[m] = {}
            w.slots = self._slots(m)
            self._apply(drop_running(w, keys, now), now)
        return [lost, unpulled]

    async def hosts_stopping(self) -> None:
        self.frozen = True

    # ---------------------------------------------------------------- reports

    async def flush(self, final: bool = False) -> None:
        if self.reports and not final:
            reports, self.reports = self.reports, {}
            for owner, (started, finished) in reports.items():
                handle = self.rt.lookup(owner)
                if handle is not None:
                    self.rt.send(handle, "report", started, finished)
        await super().flush(final)

    async def on_stop(self) -> dict:
        for t in list(self.asks):
            t.cancel()
        self.handoff.log_never_pulled(self.log, self.name)
        self.log.emit(SPARROW_NODEMON, host=self.cfg.host, **self.counts,
                      slots=sum(w.slots for w in self.workers.values()))
        return dict(self.counts)


class NodemonEndpoint(PerHostEndpoint):
    """What machine host ``h`` polls: its own ``nodemon-<h>``."""
