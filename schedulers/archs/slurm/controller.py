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

    def __post_init__(self) -> None:
        self.by_name = {p.name: p for p in self.partitions}
        self.max_factor = max((p.tier for p in self.partitions), default=1)

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
        start now, on which nodes."""
        out: list[Started] = []
        for p in sorted(self.partitions, key=lambda p: -p.tier):
            members = set(p.nodes)
            running: dict[int, int] = {}
            for node, jid in self.busy.items():
                if node in members:
                    running[jid] = running.get(jid, 0) + 1
            queue = sorted((j for j in self.jobs.values() if j.partition == p.name and j.started is None),
                           key=lambda j: (-self._priority(j, now), j.submitted, j.job_id))
            if not queue:
                continue
            run = [RunningJob(jid, n, self.jobs[jid].started + self.jobs[jid].limit)  # type: ignore[operator]
                   for jid, n in running.items()]
            decided = schedule(now, len(p.nodes), run, [QueuedJob(j.job_id, j.nodes, j.limit) for j in queue],
                               p.backfill)
            for jid in decided.start:
                j = self.jobs[jid]
                free = [n for n in p.nodes if n not in self.busy]
                j.on = tuple(sorted(free)[:j.nodes])
                j.started, j.backfilled = now, jid in decided.backfilled
                for n in j.on:
                    self.busy[n] = jid
                out.append(Started(jid, j.on, j.backfilled))
        return out

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
