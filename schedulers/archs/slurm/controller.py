"""slurmctld's decisions, pure: partitions (named node sets that may
overlap, each with its own queue, maximum and default time, priority tier
and backfill mode), jobs' multifactor priority, the scheduling pass per
partition (``backfill.schedule``) with specific nodes chosen, time-limit
kills, preemption by higher tiers and fair-share charging. No clock:
every call takes ``now``; the actor keeps the timers and talks to the
node daemons.

Resources: with ``capacity`` (nodes x resources) jobs get what their tasks
ask and share nodes (select/cons_tres, SLURM's default); without it every
node is one unit and a task takes a whole node (select/linear, the
exclusive allocation of the classic backfill studies).

Why partitions are passed over in tier order: a job of a higher tier is
placed before any of a lower one on nodes they share (SLURM's
PriorityTier); within a partition, the queue is ordered by priority.
"""
from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field

import numpy as np

from schedlab.schedulers.archs.slurm.backfill import Mode, Pass, QueuedJob, RunningJob, run_steps, schedule_steps
from schedlab.schedulers.archs.slurm.priority import FairShare, Weights, priority

WHOLE_NODE = (1.0,)  # a task's request when every node is one unit


@dataclass(frozen=True)
class Partition:
    name: str
    nodes: tuple[int, ...]
    max_time: float
    default_time: float
    tier: int = 1
    backfill: Mode = "easy"
    # PreemptType=preempt/partition_prio, PreemptMode=REQUEUE: a job of this
    # partition that cannot start now may requeue running jobs of lower
    # tiers on its nodes (newest first) to make room.
    preempt: bool = False


@dataclass
class Job:
    """A job in slurmctld's books. ``nodes``: its task count (one task per
    node with whole nodes); ``on``: the node of each task once started."""

    job_id: int
    partition: str
    nodes: int
    limit: float
    account: str
    submitted: float
    started: float | None = None
    on: tuple[int, ...] = ()
    backfilled: bool = False
    request: tuple[float, ...] = WHOLE_NODE


@dataclass
class Started:
    job_id: int
    nodes: tuple[int, ...]
    backfilled: bool


@dataclass
class SlurmCore:
    partitions: tuple[Partition, ...]
    n_nodes: int
    weights: Weights = field(default_factory=Weights)
    fairshare: FairShare | None = None
    jobs: dict[int, Job] = field(default_factory=dict)
    qos: dict[str, float] = field(default_factory=dict)  # account -> its QOS priority factor (0 to 1)
    capacity: np.ndarray | None = None  # nodes x resources (cons_tres); None: whole nodes
    bf_max_job_test: int | None = None  # how many queued jobs a backfill pass looks at

    def __post_init__(self) -> None:
        self.by_name = {p.name: p for p in self.partitions}
        self.max_factor = max((p.tier for p in self.partitions), default=1)
        self.whole_nodes = self.capacity is None
        self.cap = np.ones((self.n_nodes, 1)) if self.capacity is None else np.asarray(self.capacity, dtype=np.float64)
        self.used = np.zeros_like(self.cap)
        self.down: set[int] = set()  # nodes no job may use (their daemon is gone)
        # Load we did not place: key -> (node, request, when it ends as far as we know).
        self.foreign: dict[tuple[int, int], tuple[int, tuple[float, ...], float]] = {}
        self.reservations: dict[int, float] = {}  # queued job -> its planned start, from the last pass
        # Jobs requeued to make room since the caller last took them: (job, the nodes it had, its start).
        self.preempted: list[tuple[int, tuple[int, ...], float]] = []

    # ------------------------------------------------------------ books

    def submit(self, job_id: int, partition: str, nodes: int, limit: float | None, account: str, now: float,
               request: tuple[float, ...] | None = None) -> str:
        """"" if queued, else why not: an unknown partition, a job larger
        than its partition could ever hold, a limit over its maximum (SLURM
        would leave it pending forever with reason PartitionTimeLimit; the
        scenario parser refuses such jobs before a run)."""
        p = self.by_name.get(partition)
        if p is None:
            return f"no partition {partition!r}"
        req = WHOLE_NODE if self.whole_nodes or request is None else tuple(float(x) for x in request)
        room = self._slots(self.cap[list(p.nodes)], req).sum() if p.nodes else 0
        if nodes > room:
            unit = "nodes" if self.whole_nodes else "tasks"
            return f"{nodes} {unit}, partition {partition} holds {int(room)}"
        lim = p.default_time if limit is None else limit
        if lim > p.max_time:
            return f"time limit {lim:g} s over partition {partition}'s maximum {p.max_time:g} s"
        self.jobs[job_id] = Job(job_id, partition, nodes, lim, account, now, request=req)
        return ""

    @staticmethod
    def _slots(free: np.ndarray, req: tuple[float, ...]) -> np.ndarray:
        r = np.asarray(req, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            per = np.where(r > 0, np.floor((free + 1e-9) / np.where(r > 0, r, 1.0)), np.inf)
        return np.maximum(per.min(axis=-1), 0.0)

    def add_foreign(self, key: tuple[int, int], node: int, request: tuple[float, ...], until: float) -> None:
        """Load running that no job of ours placed (the prefill): it holds
        its node's resources (the whole node, with whole-node allocation)
        until it ends."""
        req = WHOLE_NODE if self.whole_nodes else tuple(float(x) for x in request)
        if self.whole_nodes and any(n == node for n, _r, _u in self.foreign.values()):
            req = (0.0,)  # the node is taken once
        self.foreign[key] = (node, req, until)
        self.used[node] += req

    def end_foreign(self, key: tuple[int, int]) -> bool:
        """That load ended; False if it was not ours to know."""
        got = self.foreign.pop(key, None)
        if got is None:
            return False
        node, req, _until = got
        self.used[node] -= req
        if self.whole_nodes and req == (1.0,):
            rest = next((k for k, (n, r, _u) in self.foreign.items() if n == node), None)
            if rest is not None:  # the node stays taken by the load still there
                n, _r, u = self.foreign[rest]
                self.foreign[rest] = (n, (1.0,), u)
                self.used[node] += 1.0
        return True

    def node_down(self, node: int) -> None:
        self.down.add(node)
        for key in [k for k, (n, _r, _u) in self.foreign.items() if n == node]:
            self.end_foreign(key)

    def node_up(self, node: int) -> None:
        self.down.discard(node)

    def jobs_on(self, nodes: set[int]) -> set[int]:
        """Running jobs with a task on any of ``nodes``."""
        return {j.job_id for j in self.jobs.values() if j.started is not None and nodes.intersection(j.on)}

    def adopt(self, j: Job) -> None:
        """A job from saved state (a new controller): a running one holds
        its resources again."""
        self.jobs[j.job_id] = j
        if j.started is not None:
            self._hold(j, +1.0)

    def _hold(self, j: Job, sign: float) -> None:
        np.add.at(self.used, np.asarray(j.on, dtype=np.int64), sign * np.asarray(j.request, dtype=np.float64))

    def _priority(self, j: Job, now: float) -> float:
        fs = self.fairshare.factor(j.account, now) if self.fairshare is not None else 0.0
        return priority(self.weights, submitted=j.submitted, now=now, nodes=j.nodes, total_nodes=self.n_nodes,
                        fairshare=fs, partition_factor=self.by_name[j.partition].tier / self.max_factor,
                        qos_factor=self.qos.get(j.account, 0.0))

    # ------------------------------------------------------------ passes

    def schedule(self, now: float) -> list[Started]:
        """One pass over every partition, highest tier first: the jobs to
        start now, on which nodes. Also leaves the pass's reservations in
        ``reservations`` and adds the jobs it requeued (preemption) to
        ``preempted``. ``schedule_steps`` run to its end in one go."""
        return run_steps(self.schedule_steps(now))

    def schedule_steps(self, now: float) -> Generator[list[Started] | None, None, list[Started]]:
        """``schedule`` cut into steps: a generator yielding between the jobs
        it looks at (``backfill.schedule_steps``), returning the jobs
        started. Each partition's starts are applied at the end of its
        pass, each one only if its job is still queued and its nodes are up
        with room for it now: between steps the books may change (a job
        ends or is cancelled, a node goes down). The step that applied them
        yields them (so a caller's own books can follow before anything
        else runs). Run without pause it decides as one pass does (every
        check holds)."""
        out: list[Started] = []
        self.reservations = {}
        for p in sorted(self.partitions, key=lambda p: -p.tier):
            queue = sorted((j for j in self.jobs.values() if j.partition == p.name and j.started is None),
                           key=lambda j: (-self._priority(j, now), j.submitted, j.job_id))
            if not queue:
                continue
            decided = yield from self._pass(p, queue, now)
            if p.preempt and not decided.start and self._make_room(p, queue[0], now):
                decided = yield from self._pass(p, queue, now)
            self.reservations.update(decided.reservations)
            applied: list[Started] = []
            for jid in decided.start:
                j = self.jobs.get(jid)
                on = tuple(p.nodes[i] for i in decided.placed[jid])
                if j is None or j.started is not None or not self._room(on, j.request):
                    continue  # changed while the pass ran: the next pass looks again
                j.on = on
                j.started, j.backfilled = now, jid in decided.backfilled
                self._hold(j, +1.0)
                applied.append(Started(jid, j.on, j.backfilled))
            out += applied
            yield applied
        return out

    def _room(self, nodes: tuple[int, ...], request: tuple[float, ...]) -> bool:
        """Whether a job of ``request`` per task fits on ``nodes`` (one per
        task) now: every node up, none over its capacity."""
        if self.down.intersection(nodes):
            return False
        idx, tasks = np.unique(np.asarray(nodes, dtype=np.int64), return_counts=True)
        return bool(np.all(self._slots(self.cap[idx] - self.used[idx], request) >= tasks))

    def _pass(self, p: Partition, queue: list[Job], now: float) -> Generator[None, None, Pass]:
        nodes = list(p.nodes)
        pos = {n: i for i, n in enumerate(nodes)}
        free = self.cap[nodes] - self.used[nodes]
        for n in self.down.intersection(nodes):
            free[pos[n]] = 0.0
        running = []
        for j in self.jobs.values():
            if j.started is not None:
                mine = tuple(pos[n] for n in j.on if n in pos)
                if mine:
                    running.append(RunningJob(j.job_id, mine, j.started + j.limit, j.request))
        running += [RunningJob(-1, (pos[n],), until, req) for n, req, until in self.foreign.values()
                    if n in pos and n not in self.down]
        return (yield from schedule_steps(now, free, running, [QueuedJob(j.job_id, j.nodes, j.limit, j.request)
                                                                for j in queue], p.backfill, self.bf_max_job_test))

    def _make_room(self, p: Partition, head: Job, now: float) -> bool:
        """Requeue running jobs of lower tiers on ``p``'s nodes, newest
        first, until ``head`` fits now; nothing if even all of them would
        not do."""
        nodes = list(p.nodes)
        free = self.cap[nodes] - self.used[nodes]
        for i, n in enumerate(nodes):
            if n in self.down:
                free[i] = 0.0
        pos = {n: i for i, n in enumerate(nodes)}
        lower = sorted((j for j in self.jobs.values() if j.started is not None and set(j.on) & pos.keys()
                        and self.by_name[j.partition].tier < p.tier), key=lambda j: -(j.started or 0.0))
        victims: list[Job] = []
        for v in lower:
            if self._slots(free, head.request).sum() >= head.nodes:
                break
            victims.append(v)
            for n in v.on:
                if n in pos:
                    free[pos[n]] += np.asarray(v.request)
        if self._slots(free, head.request).sum() < head.nodes:
            return False
        for v in victims:
            self.preempted.append((v.job_id, v.on, now if v.started is None else v.started))
            self.requeue(v.job_id, now)
        return True

    # ------------------------------------------------------------ ends

    def requeue(self, job_id: int, now: float) -> None:
        """A running job goes back to its queue (preempted, or a node of it
        failed): its resources are free, the time it ran is charged, and it
        keeps its submit time (its age)."""
        j = self.jobs[job_id]
        if j.started is None:
            return
        self._charge(j, now)
        self._hold(j, -1.0)
        j.started, j.on, j.backfilled = None, (), False

    def expired(self, now: float) -> list[int]:
        """Running jobs past their time limit: to be killed (``timeout``)."""
        return sorted(j.job_id for j in self.jobs.values() if j.started is not None and now >= j.started + j.limit)

    def finish(self, job_id: int, now: float) -> Job | None:
        """The job ended (on its own or killed): its resources are free and
        its use (tasks x time run) charged to its account."""
        j = self.jobs.pop(job_id, None)
        if j is None or j.started is None:
            return j
        self._charge(j, now)
        self._hold(j, -1.0)
        return j

    def _charge(self, j: Job, now: float) -> None:
        if self.fairshare is not None and j.started is not None:
            self.fairshare.charge(j.account, len(j.on) * (now - j.started), now)
