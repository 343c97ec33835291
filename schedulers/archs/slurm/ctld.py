"""slurmctld's books around its scheduling core (``controller.SlurmCore``),
pure: which node daemon (machine host) holds which node, the launches and
kills waiting for each daemon's next poll, which tasks of a running job are
still out, the load it did not place, and how a new controller (restarted,
or the backup taking over) rebuilds from its saved state and the daemons'
registrations.

Why a job requeued (preempted, or one of its nodes failed) waits until every
kill of it is confirmed before it may start again: its tasks keep their
keys, and a task started anew on one node while its old copy still runs on
another is one task on two machines.

Jobs get whole nodes (``OverSubscribe=EXCLUSIVE``): each task is launched
asking its node's whole capacity, so what the cell reports used is what
SLURM counts allocated. A job's nodes stay allocated until its last task
ends (a rigid job ends with its last process).
"""
from __future__ import annotations

import collections
import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from schedlab.schedulers.archs.slurm.backfill import run_steps
from schedlab.schedulers.archs.slurm.controller import Job as SlurmJob
from schedlab.schedulers.archs.slurm.controller import Started as CoreStarted
from schedlab.schedulers.archs.slurm.controller import SlurmCore
from schedlab.schedulers.model.host_roll import HostRoll
from schedlab.schedulers.model.jobs import Job

TaskKey = tuple[int, int]
# A launch as machine hosts take it: [job, task, machine, request, duration, start].
Launch = list


@dataclass(frozen=True)
class Started:
    job_id: int
    nodes: tuple[int, ...]
    backfilled: bool
    reserved: float | None  # the first start a reservation promised it, if it had one
    waited: float


@dataclass(frozen=True)
class Ended:
    """A job whose nodes came free: ``state`` completed, timeout (killed at
    its limit), or requeued (preempted, node_fail: back in the queue)."""

    job_id: int
    state: str
    started: float
    nodes: int
    reason: str = ""


@dataclass
class Slurmctld:
    core: SlurmCore
    capacity: np.ndarray
    k: int  # machines (nodes) per host
    recovering: bool = False  # a new controller: nothing is scheduled before every daemon is heard
    specs: dict[int, Job] = field(default_factory=dict)  # the jobs as submitted (tasks' durations)
    out: dict[int, set[int]] = field(default_factory=dict)  # job -> tasks handed out, not reported ended
    parked: dict[int, SlurmJob] = field(default_factory=dict)  # requeued, waiting for its kills
    to_launch: dict[int, list[Launch]] = field(default_factory=lambda: collections.defaultdict(list))
    to_kill: dict[int, list[list[int]]] = field(default_factory=lambda: collections.defaultdict(list))
    first_reserved: dict[int, float] = field(default_factory=dict)
    ended: list[Ended] = field(default_factory=list)  # taken by the shell
    dirty: set[int] = field(default_factory=set)  # jobs whose saved state changed (for the state save)
    withdrawn: list[list[int]] = field(default_factory=list)  # launches taken back unpulled [job, task, node]

    def __post_init__(self) -> None:
        self.n = int(self.capacity.shape[0])
        self.hosts = -(-self.n // self.k)
        # Which daemons this controller knows, which it wrote off, and the
        # ends their registrations told (a report repeating one is stale).
        self.roll = HostRoll.of(self.hosts, trusted=not self.recovering)
        self.finished: set[TaskKey] = set()  # reported by registrations (a new controller's view)
        self.gone: set[int] = set()  # jobs that ended under an earlier controller (its saved tombstones)
        # job -> task -> machine: what the daemons said they run (a new controller's view)
        self.reported: dict[int, dict[int, int]] = collections.defaultdict(dict)

    # ------------------------------------------------------------ jobs in

    def add_foreign(self, machine: int, key: TaskKey, until: float, request: Sequence[float]) -> None:
        """Load running at the start that no job of ours placed (the
        prefill): it holds what it uses until it ends."""
        self.core.add_foreign(key, machine, tuple(request), until)

    def submit(self, job: Job, partition: str, limit: float, now: float) -> str:
        """Queue a job (nodes = its tasks); "" or why it was refused. A job
        already known (sent twice around a failover) is ignored."""
        if job.job_id in self.core.jobs or job.job_id in self.parked or job.job_id in self.specs or job.job_id in self.gone:
            return ""
        why = self.core.submit(job.job_id, partition, job.tasks, limit, job.job_class, job.submit_time, job.request)
        if not why:
            self.specs[job.job_id] = job
            self.dirty.add(job.job_id)
        return why

    def queued(self) -> dict[str, int]:
        """Pending jobs per partition."""
        out = {p.name: 0 for p in self.core.partitions}
        for j in self.core.jobs.values():
            if j.started is None and j.job_id >= 0:
                out[j.partition] += 1
        return out

    # ------------------------------------------------------------ scheduling

    def schedule(self, now: float) -> list[Started]:
        """One scheduling pass (nothing while recovering): jobs to start
        now, their launches queued for their daemons; jobs preempted to make
        room have their kills queued and are parked. ``schedule_steps`` run
        to its end in one go."""
        return run_steps(self.schedule_steps(now))

    def schedule_steps(self, now: float) -> Generator[list[Started], None, list[Started]]:
        """``schedule`` cut into steps (``Controller.schedule_steps``): a
        generator yielding, between them, the jobs the step started (mostly
        none), returning every job started. The books are whole at every
        step: what the core started or preempted is queued for the daemons
        before the yield (a daemon may pull it before the pass ends)."""
        if self.recovering:
            return []
        out: list[Started] = []
        steps = self.core.schedule_steps(now)
        while True:
            try:
                started = next(steps)
            except StopIteration:
                break
            n = len(out)
            self._follow(now, started or [], out)
            yield out[n:]
        for jid, at in self.core.reservations.items():
            self.first_reserved.setdefault(jid, at)
        return out

    def _follow(self, now: float, started: list[CoreStarted], out: list[Started]) -> None:
        for jid, nodes, began in self.core.preempted:
            self._requeued(jid, nodes, began, "preempted")
        self.core.preempted = []
        for s in started:
            job, spec = self.core.jobs[s.job_id], self.specs[s.job_id]
            self.out[s.job_id] = set(range(len(s.nodes)))
            for task, node in enumerate(s.nodes):
                # Whole nodes: the task asks its node's all, as SLURM allocates it.
                req = self.capacity[node].tolist() if self.core.whole_nodes else list(spec.request)
                self.to_launch[node // self.k].append([s.job_id, task, node, req, spec.durations[task], now])
            self.dirty.add(s.job_id)
            out.append(Started(s.job_id, s.nodes, s.backfilled, self.first_reserved.pop(s.job_id, None),
                               now - job.submitted))

    def next_expiry(self) -> float:
        """When the next running job reaches its limit (inf if none): the
        shell wakes then, so kills are on time and a reservation behind
        them is kept."""
        return min((j.started + j.limit for j in self.core.jobs.values()
                    if j.started is not None and j.job_id in self.out), default=math.inf)

    def expire(self, now: float) -> list[int]:
        """Kill the jobs past their time limit (state timeout). Their nodes
        are free at once: each daemon takes its kills before its launches."""
        gone = [j for j in self.core.expired(now) if j >= 0 and j in self.out]
        for jid in gone:
            job = self.core.jobs[jid]
            self._kill_tasks(jid, job.on)
            self.out.pop(jid, None)
            self.core.finish(jid, now)
            self.ended.append(Ended(jid, "timeout", now if job.started is None else job.started, len(job.on)))
            self.dirty.add(jid)
        return gone

    def _kill_tasks(self, jid: int, nodes: Sequence[int]) -> list[TaskKey]:
        """Queue kills for a job's tasks still out; a task its daemon has not
        pulled yet is withdrawn instead. Returns the kills queued."""
        killed = []
        for task in sorted(self.out.get(jid, ())):
            host = nodes[task] // self.k
            pending = self.to_launch.get(host, [])
            mine = [ln for ln in pending if ln[0] == jid and ln[1] == task]
            if mine:
                pending.remove(mine[0])
                self.out[jid].discard(task)
                self.withdrawn.append([jid, task, nodes[task]])
            elif host not in self.down:
                self.to_kill[host].append([jid, task])
                killed.append((jid, task))
        return killed

    def _requeue(self, jid: int, now: float, reason: str) -> None:
        """Back to the queue once its kills are confirmed (parked till then)."""
        job = self.core.jobs[jid]
        nodes, started = job.on, now if job.started is None else job.started
        self.core.requeue(jid, now)
        self._requeued(jid, nodes, started, reason)

    def _requeued(self, jid: int, nodes: tuple[int, ...], started: float, reason: str) -> None:
        """The core requeued ``jid`` (it ran on ``nodes``): kill what is out."""
        self._kill_tasks(jid, nodes)
        self.ended.append(Ended(jid, "requeued", started, len(nodes), reason))
        self.dirty.add(jid)
        if self.out.get(jid):
            self.parked[jid] = self.core.jobs.pop(jid)
        else:
            self.out.pop(jid, None)

    # ------------------------------------------------------------ daemons

    @property
    def down(self) -> set[int]:
        """Daemons written off, until they are heard again."""
        return self.roll.down

    def _nodes(self, host: int) -> range:
        return range(host * self.k, min((host + 1) * self.k, self.n))

    def exchange(self, host: int, keys: list[tuple[int, int, bool]], now: float) -> tuple[list, list] | dict:
        """A daemon's poll: its tasks that ended (killed or not), then its
        kills and launches. A daemon written off meanwhile is told to reset
        (its nodes come back empty); one a new controller has not heard
        from is asked to register first. An end its registration already
        told is stale: the task may run anew under the same key (HostRoll)."""
        greeting = self.roll.greet(host)
        if greeting is not None:
            if greeting.get("reset"):
                self._nodes_up(host)
            return greeting
        for i in self.roll.news(host, keys):
            job, task, killed = keys[i]
            self._task_ended(host, int(job), int(task), killed, now)
        return self.to_launch.pop(host, []), self.to_kill.pop(host, [])

    def _task_ended(self, host: int, job: int, task: int, killed: bool, now: float) -> None:
        if self.core.end_foreign((job, task)):
            return
        tasks = self.out.get(job)
        if tasks is None or task not in tasks:
            return
        tasks.discard(task)
        if tasks:
            return
        del self.out[job]
        if job in self.parked:  # every kill confirmed: it may start again
            self.core.jobs[job] = self.parked.pop(job)
            return
        sj = self.core.jobs.get(job)
        if sj is not None and sj.started is not None:
            started, nodes = sj.started, len(sj.on)
            self.core.finish(job, now)
            self.ended.append(Ended(job, "completed", started, nodes))
            self.dirty.add(job)

    def write_off(self, hosts: list[int], now: float) -> tuple[list[list[int]], list[list[int]]]:
        """Daemons silent too long: their nodes are down; every job with a
        task there is requeued (SLURM's JobRequeue on node failure), its
        tasks elsewhere killed. Returns (lost: were running, unpulled: never
        handed out) as [job, task] lists."""
        lost: list[list[int]] = []
        unpulled: list[list[int]] = []
        for host in hosts:
            if not self.roll.write_off(host):
                continue
            never = {(ln[0], ln[1]) for ln in self.to_launch.pop(host, [])}
            self.to_kill.pop(host, None)
            nodes = set(self._nodes(host))
            for m in nodes:
                self.core.node_down(m)
            hit = self.core.jobs_on(nodes) | {j for j, job in self.parked.items() if nodes.intersection(job.on)}
            for jid in sorted(hit):
                on = self.core.jobs[jid].on if jid in self.core.jobs else self.parked[jid].on
                for task, node in enumerate(on):
                    if node // self.k == host and task in self.out.get(jid, ()):
                        self.out[jid].discard(task)
                        (unpulled if (jid, task) in never else lost).append([jid, task])
                if jid in self.parked:
                    if not self.out.get(jid):
                        self.out.pop(jid, None)
                        self.core.jobs[jid] = self.parked.pop(jid)
                else:
                    self._requeue(jid, now, "node_fail")
        return lost, unpulled

    def rejoin(self, host: int, now: float) -> tuple[list[list[int]], list[list[int]]]:
        """A restarted daemon's first word: what it ran died with it."""
        out = self.write_off([host], now)
        self.roll.back(host)
        self._nodes_up(host)
        return out

    def _nodes_up(self, host: int) -> None:
        """Back empty: what ran there (ours or not) is gone."""
        for m in self._nodes(host):
            self.core.node_down(m)
            self.core.node_up(m)

    # ------------------------------------------------------------ a new controller

    def restore(self, jobs: list[SlurmJob], specs: dict[int, Job]) -> None:
        """A new controller's books from the saved state: queued and running
        jobs (a running one holds its nodes again), with their submissions."""
        for j in jobs:
            self.core.adopt(j)
        self.specs.update(specs)

    def register(self, host: int, running: list[tuple[int, int, int, Sequence[float]]], finished: list[TaskKey],
                 foreign_until: dict[TaskKey, float], *, unreported: list[TaskKey]) -> None:
        """A daemon telling a new controller what runs on it ([job, task,
        machine, request]) and what finished lately. Load we did not place
        (``foreign_until``: its keys and ends) holds its node again.
        ``unreported``: the ends it has not delivered yet, which its next
        polls repeat (stale then: not counted again)."""
        self.roll.register(host, unreported)
        self._nodes_up(host)
        for job, task, m, req in running:
            if (job, task) in foreign_until:
                self.add_foreign(m, (job, task), foreign_until[(job, task)], req)
            else:
                self.reported[job][task] = m
        self.finished.update(finished)

    def _kill_unsaved(self, jid: int, reported: dict[int, int]) -> None:
        """Tasks the daemons run of a start the saved state does not hold
        (task -> machine): killed where they run, the job parked until
        every kill is confirmed."""
        self.out[jid] = set(reported)
        for task, m in reported.items():
            self.to_kill[m // self.k].append([jid, task])
        self.parked[jid] = self.core.jobs.pop(jid)

    def settle(self, now: float) -> list[int]:
        """Once every daemon registered or was written off: the saved state
        meets what the daemons say. A job saved as running keeps the tasks
        still running; if none runs and all finished, it completed; a task
        neither running nor finished (lost with a dead daemon) requeues it.
        A job the daemons run but the saved state has queued (its start was
        not saved in time) is killed and requeued: nothing says when it
        started, so its limit could not be kept; so is a job the daemons run
        on other nodes than its saved start. Returns the jobs requeued."""
        requeued = []
        for jid, job in list(self.core.jobs.items()):
            if jid < 0:
                continue
            reported = self.reported.pop(jid, {})
            if job.started is None:
                if reported:
                    self._kill_unsaved(jid, reported)
                    requeued.append(jid)
                continue
            if any(t >= len(job.on) or job.on[t] != m for t, m in reported.items()):
                # Run elsewhere than its saved start: started again by a
                # controller that died before saving. Its saved nodes are
                # not where it runs, so nothing would hold the nodes it
                # does use: requeued, and what runs killed.
                started, nodes = job.started, len(job.on)
                self.core.requeue(jid, now)
                self.ended.append(Ended(jid, "requeued", started, nodes, "node_fail"))
                self.dirty.add(jid)
                self._kill_unsaved(jid, reported)
                requeued.append(jid)
                continue
            spec = self.specs.get(jid)
            tasks = len(job.on) if spec is None else spec.tasks
            done = {t for t in range(tasks) if (jid, t) in self.finished}
            missing = set(range(tasks)) - set(reported) - done
            if not reported and not missing:
                self.core.finish(jid, now)
                self.ended.append(Ended(jid, "completed", job.started, len(job.on)))
                self.dirty.add(jid)
                continue
            self.out[jid] = set(reported)
            if missing:
                self._requeue(jid, now, "node_fail")
                requeued.append(jid)
        self.reported.clear()
        self.recovering = False
        return requeued
