"""slurmctld's decisions, pure: partitions (named node sets that may
overlap, each with its own queue, maximum and default time, priority tier
and backfill mode), jobs' multifactor priority, the scheduling pass per
partition (``backfill.schedule``) with specific nodes chosen, time-limit
kills and fair-share charging. No clock: every call takes ``now``; the
actor (not built yet) keeps the timers and talks to the node daemons.

Why partitions are passed over in tier order: a job of a higher tier is
placed before any of a lower one on nodes they share (SLURM's
PriorityTier); within a partition, the queue is ordered by priority.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from schedlab.schedulers.archs.slurm.backfill import Mode, QueuedJob, RunningJob, schedule
from schedlab.schedulers.archs.slurm.priority import FairShare, Weights, priority


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
    job_id: int
    partition: str
    nodes: int
    limit: float
    account: str
    submitted: float
    started: float | None = None
    on: tuple[int, ...] = ()
    backfilled: bool = False


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
    busy: dict[int, int] = field(default_factory=dict)  # node -> the job on it
    # Nodes no job of ours may use, and until when as far as we know: load
    # we did not place (until it ends), nodes down (inf).
    held: dict[int, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.by_name = {p.name: p for p in self.partitions}
        self.max_factor = max((p.tier for p in self.partitions), default=1)
        self.reservations: dict[int, float] = {}  # queued job -> its planned start, from the last pass
        # Jobs requeued to make room since the caller last took them: (job, the nodes it had, its start).
        self.preempted: list[tuple[int, tuple[int, ...], float]] = []

    def submit(self, job_id: int, partition: str, nodes: int, limit: float | None, account: str, now: float) -> str:
        """"" if queued, else why not: an unknown partition, more nodes than
        it has, a limit over its maximum (SLURM would leave it pending
        forever with reason PartitionTimeLimit; the scenario parser refuses
        such jobs before a run)."""
        p = self.by_name.get(partition)
        if p is None:
            return f"no partition {partition!r}"
        if nodes > len(p.nodes):
            return f"{nodes} nodes, partition {partition} has {len(p.nodes)}"
        lim = p.default_time if limit is None else limit
        if lim > p.max_time:
            return f"time limit {lim:g} s over partition {partition}'s maximum {p.max_time:g} s"
        self.jobs[job_id] = Job(job_id, partition, nodes, lim, account, now)
        return ""

    def _priority(self, j: Job, now: float) -> float:
        fs = self.fairshare.factor(j.account, now) if self.fairshare is not None else 0.0
        return priority(self.weights, submitted=j.submitted, now=now, nodes=j.nodes, total_nodes=self.n_nodes,
                        fairshare=fs, partition_factor=self.by_name[j.partition].tier / self.max_factor)

    def schedule(self, now: float) -> list[Started]:
        """One pass over every partition, highest tier first: the jobs to
        start now, on which nodes. Also leaves the pass's reservations in
        ``reservations`` and adds the jobs it requeued (preemption) to
        ``preempted``."""
        out: list[Started] = []
        self.reservations = {}
        for p in sorted(self.partitions, key=lambda p: -p.tier):
            queue = sorted((j for j in self.jobs.values() if j.partition == p.name and j.started is None),
                           key=lambda j: (-self._priority(j, now), j.submitted, j.job_id))
            if not queue:
                continue
            decided = schedule(now, len(p.nodes), self._running_on(p), [QueuedJob(j.job_id, j.nodes, j.limit) for j in queue],
                               p.backfill)
            if p.preempt and not decided.start and self._make_room(p, queue[0], now):
                decided = schedule(now, len(p.nodes), self._running_on(p),
                                   [QueuedJob(j.job_id, j.nodes, j.limit) for j in queue], p.backfill)
            self.reservations.update(decided.reservations)
            for jid in decided.start:
                j = self.jobs[jid]
                free = [n for n in p.nodes if n not in self.busy and n not in self.held]
                j.on = tuple(sorted(free)[:j.nodes])
                j.started, j.backfilled = now, jid in decided.backfilled
                for n in j.on:
                    self.busy[n] = jid
                out.append(Started(jid, j.on, j.backfilled))
        return out

    def _running_on(self, p: Partition) -> list[RunningJob]:
        """What holds the partition's nodes, as the backfill profile sees it:
        our running jobs (until their start plus limit), and held nodes."""
        members = set(p.nodes)
        running: dict[int, int] = {}
        for node, jid in self.busy.items():
            if node in members:
                running[jid] = running.get(jid, 0) + 1
        out = [RunningJob(jid, n, self.jobs[jid].started + self.jobs[jid].limit)  # type: ignore[operator]
               for jid, n in running.items()]
        out += [RunningJob(-1 - node, 1, until) for node, until in self.held.items() if node in members]
        return out

    def _make_room(self, p: Partition, head: Job, now: float) -> bool:
        """Requeue running jobs of lower tiers on ``p``'s nodes, newest
        first, until ``head`` fits; nothing if even all of them would not do."""
        free = {n for n in p.nodes if n not in self.busy and n not in self.held}
        victims: list[Job] = []
        members = set(p.nodes)
        lower = sorted({jid for n, jid in self.busy.items() if n in members
                        and self.by_name[self.jobs[jid].partition].tier < p.tier},
                       key=lambda jid: -(self.jobs[jid].started or 0.0))
        for jid in lower:
            if len(free) >= head.nodes:
                break
            victims.append(self.jobs[jid])
            free |= {n for n in self.jobs[jid].on if n in members}
        if len(free) < head.nodes:
            return False
        for v in victims:
            self.preempted.append((v.job_id, v.on, now if v.started is None else v.started))
            self.requeue(v.job_id, now)
        return True

    def requeue(self, job_id: int, now: float) -> None:
        """A running job goes back to its queue (preempted, or a node of it
        failed): its nodes are free, the time it ran is charged, and it keeps
        its submit time (its age)."""
        j = self.jobs[job_id]
        if j.started is None:
            return
        for n in j.on:
            self.busy.pop(n, None)
        if self.fairshare is not None:
            self.fairshare.charge(j.account, len(j.on) * (now - j.started), now)
        j.started, j.on, j.backfilled = None, (), False

    def expired(self, now: float) -> list[int]:
        """Running jobs past their time limit: to be killed (``timeout``)."""
        return sorted(j.job_id for j in self.jobs.values() if j.started is not None and now >= j.started + j.limit)

    def finish(self, job_id: int, now: float) -> Job | None:
        """The job ended (on its own or killed): its nodes are free and its
        use (nodes x time run) charged to its account."""
        j = self.jobs.pop(job_id, None)
        if j is None or j.started is None:
            return j
        for n in j.on:
            self.busy.pop(n, None)
        if self.fairshare is not None:
            self.fairshare.charge(j.account, len(j.on) * (now - j.started), now)
        return j
