"""HTCondor's claim protocol, pure: the startd's slot state machine and the
schedd's side of claiming, running and vacating. No Ray, no clock (every
call takes ``now``), no I/O: methods return decisions; the shells send them.

Why a claim at all: the negotiator only *introduces* a job to a machine,
working from ads that may be minutes old. The schedd then asks the startd
itself (``request_claim``), and the startd, which knows its state now,
refuses a stale match (its owner came back, another schedd claimed it, or
a newer match superseded this one) or a job its Requirements no longer
accept. A claim, once held, is the schedd's to reuse: when a job exits the
schedd starts the same user's next matching idle job on it without a new
negotiation (the claim belongs to that user: another user's job needs its
own match, since the pie slices are per user).

Startd states (HTCondor manual, "Machine States"): Owner (the desktop's
owner is using it), Unclaimed, Matched, Claimed with activity Idle, Busy or
Suspended, Preempting (vacating). Owner policy, the classic desktop one:
the owner returning suspends a running job; if the owner is still there
after ``suspend_grace`` (MaxSuspendTime) the job is vacated and goes back
to its schedd's queue, its run so far badput (checkpointing not modelled);
an owner leaving within the grace resumes the job.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

from schedlab.schedulers.archs.htcondor.classad import evaluate
from schedlab.schedulers.archs.htcondor.negotiator import Machine, Match, acceptable

Ad = Mapping[str, object]
JobId = Hashable
OWNER, UNCLAIMED, MATCHED, CLAIMED, PREEMPTING = "Owner", "Unclaimed", "Matched", "Claimed", "Preempting"
IDLE, BUSY, SUSPENDED, VACATING = "Idle", "Busy", "Suspended", "Vacating"
STALE, REQUIREMENTS = "stale match", "requirements"


@dataclass(frozen=True)
class ClaimReply:
    accepted: bool
    reason: str | None = None  # STALE or REQUIREMENTS when refused
    claim_id: str | None = None


@dataclass(frozen=True)
class Vacated:
    """A job pushed off a slot: back to its schedd; ``ran`` seconds are badput."""

    claim_id: str
    job_id: JobId
    ran: float


@dataclass
class Startd:
    """One execute slot. ``ad``: its machine ad (Requirements = its START)."""

    name: str
    ad: Ad
    suspend_grace: float = 600.0
    state: str = UNCLAIMED
    activity: str = IDLE
    owner_present: bool = False
    match_id: str | None = None  # the latest match; older ones are stale
    claim_id: str | None = None
    user: str | None = None
    job_id: JobId | None = None
    job_ad: Ad | None = None  # the running job's (or the claiming job's) ad
    ran: float = 0.0  # the running job's busy seconds before ``busy_since``
    busy_since: float | None = None
    suspended_at: float | None = None
    # Told of every state change (its shell keeps the few slots whose state
    # runs on a clock, instead of scanning every slot on every poll).
    on_change: Callable[[Startd], None] | None = field(default=None, repr=False, compare=False)

    def _to(self, state: str, activity: str = IDLE) -> None:
        self.state, self.activity = state, activity
        if self.on_change is not None:
            self.on_change(self)
        if state in (OWNER, UNCLAIMED):
            self.match_id = self.claim_id = self.user = self.job_id = self.job_ad = None
            self.busy_since = self.suspended_at = None
            self.ran = 0.0

    def _act(self, activity: str) -> None:
        """A new activity within the same state (every change is told)."""
        self.activity = activity
        if self.on_change is not None:
            self.on_change(self)

    def machine(self) -> Machine:
        """This slot as the collector's ad for the negotiator."""
        return Machine(self.name, self.state, self.ad, self.job_ad if self.state == CLAIMED else None)

    def matched(self, match_id: str, now: float) -> bool:
        """The negotiator's notification; the newest match wins. Ignored
        (False) unless Unclaimed or Matched: the ad it was made on is stale."""
        if self.state not in (UNCLAIMED, MATCHED):
            return False
        self._to(MATCHED)
        self.match_id = match_id
        return True

    def request_claim(self, match_id: str, schedd: str, user: str, job_ad: Ad, now: float) -> ClaimReply:
        """Accept the claim if this match is still the slot's latest and its
        Requirements still accept the job (a refused job leaves it Unclaimed)."""
        if self.state != MATCHED or match_id != self.match_id:
            return ClaimReply(False, STALE)
        if not self.accepts(job_ad):
            self._to(UNCLAIMED)
            return ClaimReply(False, REQUIREMENTS)
        self._to(CLAIMED)
        self.claim_id, self.user, self.job_ad = f"{self.name}#{match_id}", user, job_ad
        return ClaimReply(True, None, self.claim_id)

    def accepts(self, job_ad: Ad) -> bool:
        """The slot's own Requirements (absent: anything) with TARGET = the job."""
        if not any(k.lower() == "requirements" for k in self.ad):
            return True
        return evaluate("MY.Requirements", self.ad, job_ad) is True

    def activate(self, claim_id: str, job_id: JobId, job_ad: Ad, now: float) -> bool:
        """Start a job on an idle claim (Busy). False: no such idle claim."""
        if self.state != CLAIMED or self.activity != IDLE or claim_id != self.claim_id:
            return False
        self.job_id, self.job_ad, self.ran, self.busy_since = job_id, job_ad, 0.0, now
        self._act(BUSY)
        return True

    def job_exited(self, now: float) -> float | None:
        """The job finished: claim Idle again. Returns its busy seconds (None
        if no job was running: a stale report)."""
        if self.state != CLAIMED or self.activity != BUSY or self.busy_since is None:
            return None
        ran = self.ran + now - self.busy_since
        self.job_id, self.busy_since, self.ran = None, None, 0.0
        self._act(IDLE)
        return ran

    def can_reuse(self, job_ad: Ad, user: str | None = None) -> bool:
        """An idle claim may run ``job_ad`` (of ``user``, if given: only the claim's)."""
        if self.state != CLAIMED or self.activity != IDLE or (user is not None and user != self.user):
            return False
        return acceptable(job_ad, self.ad)

    def release(self, now: float) -> bool:
        """The schedd gives up an idle claim or a match it will not use."""
        if not (self.state == MATCHED or (self.state == CLAIMED and self.activity == IDLE)):
            return False
        self._to(UNCLAIMED)
        return True

    @property
    def vacate_at(self) -> float | None:
        """When a suspended job is vacated if the owner is still there."""
        return None if self.suspended_at is None else self.suspended_at + self.suspend_grace

    def owner_returns(self, now: float) -> str:
        """Returns what happened: "suspended" (a running job paused), "claim
        lost" (an idle claim ends: tell the schedd), "owner" (the slot left
        the pool), or "" (nothing changed)."""
        if self.owner_present:
            return ""
        self.owner_present = True
        if self.state == CLAIMED and self.activity == BUSY and self.busy_since is not None:
            self.ran += now - self.busy_since
            self.busy_since, self.suspended_at = None, now
            self._act(SUSPENDED)
            return "suspended"
        if self.state == PREEMPTING or (self.state == CLAIMED and self.activity == SUSPENDED):
            return ""
        lost = self.state == CLAIMED
        self._to(OWNER)
        return "claim lost" if lost else "owner"

    def owner_still_there(self, now: float) -> Vacated | None:
        """The suspend grace expired with the owner back: vacate (Preempting).
        A stale timer (not suspended, grace not over, owner gone) does nothing."""
        if self.activity != SUSPENDED or not self.owner_present or now < (self.vacate_at or 0.0):
            return None
        out = Vacated(str(self.claim_id), self.job_id, self.ran)
        self._to(PREEMPTING, VACATING)
        self.job_id = self.suspended_at = None
        return out

    def vacate_done(self, now: float) -> None:
        """Vacating finished: the claim is gone; Owner, or Unclaimed if the owner left."""
        if self.state == PREEMPTING:
            self._to(OWNER if self.owner_present else UNCLAIMED)

    def owner_leaves(self, now: float) -> Vacated | None:
        """Back in the pool: Owner -> Unclaimed; a suspended job resumes if
        within the grace, else is vacated (the owner stayed the whole grace)."""
        if not self.owner_present:
            return None
        if self.activity == SUSPENDED and self.vacate_at is not None and now >= self.vacate_at:
            out = self.owner_still_there(now)
            self.owner_present = False
            return out
        self.owner_present = False
        if self.activity == SUSPENDED:
            self.busy_since, self.suspended_at = now, None
            self._act(BUSY)
        elif self.state == OWNER:
            self._to(UNCLAIMED)
        return None


# -- the schedd ------------------------------------------------------------------------


@dataclass
class QueuedJob:
    job_id: JobId
    user: str
    ad: Ad
    seq: int
    status: str = "idle"  # idle | matched | running | done | removed
    idle_since: float = 0.0
    matched_at: float | None = None
    claim_id: str | None = None


@dataclass(frozen=True)
class Claim:
    claim_id: str
    machine: str
    user: str
    machine_ad: Ad


@dataclass(frozen=True)
class Shadow:
    """One per running job: made at activation, gone at exit or vacate."""

    job_id: JobId
    claim_id: str
    machine: str
    started: float


@dataclass(frozen=True)
class ClaimRequest:
    machine: str
    match_id: str
    user: str
    job_id: JobId
    job_ad: Ad


@dataclass(frozen=True)
class Activate:
    machine: str
    claim_id: str
    job_id: JobId
    job_ad: Ad
    reused: bool


@dataclass(frozen=True)
class Release:
    machine: str
    id: str  # the claim id, or the match id of a match not claimed


@dataclass
class ScheddStats:
    goodput: float = 0.0  # seconds of runs that completed
    badput: float = 0.0  # seconds of runs vacated
    completed: int = 0
    vacated: int = 0
    reuses: int = 0
    refusals: dict[str, int] = field(default_factory=dict)  # reason -> claims refused
    submit_to_match: list[float] = field(default_factory=list)  # from idle (submit or requeue) to match
    match_to_start: list[float] = field(default_factory=list)


class Schedd:
    """A submit node's queue, claims and shadows, and its replies to the
    negotiator, the startds and the jobs."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.jobs: dict[JobId, QueuedJob] = {}
        self.queues: dict[str, list[tuple[int, JobId]]] = {}  # user -> idle (seq, job), in order
        self.claims: dict[str, Claim] = {}
        self.shadows: dict[JobId, Shadow] = {}
        self.pending: dict[str, tuple[JobId, Match]] = {}  # match id -> job claiming
        self.stats = ScheddStats()

    def submit(self, job_id: JobId, user: str, ad: Ad, now: float) -> None:
        if job_id in self.jobs:
            raise ValueError(f"job {job_id!r} already queued")
        self.jobs[job_id] = QueuedJob(job_id, user, ad, len(self.jobs), idle_since=now)
        self._idle(self.jobs[job_id])

    def remove(self, job_id: JobId, now: float) -> bool:
        """condor_rm of an idle job (False: not idle; a running one needs its startd)."""
        job = self.jobs.get(job_id)
        if job is None or job.status != "idle":
            return False
        self._take(job, "removed")
        return True

    def _idle(self, job: QueuedJob) -> None:
        job.status, job.claim_id, job.matched_at = "idle", None, None
        bisect.insort(self.queues.setdefault(job.user, []), (job.seq, job.job_id))

    def _take(self, job: QueuedJob, status: str) -> None:
        self.queues[job.user].remove((job.seq, job.job_id))
        job.status = status

    def idle(self) -> dict[str, list[tuple[JobId, Ad]]]:
        """user -> idle jobs in queue order: the negotiator's input for this schedd."""
        return {u: [(j, self.jobs[j].ad) for _, j in q] for u, q in self.queues.items() if q}

    def _next_for(self, user: str, machine_ad: Ad) -> QueuedJob | None:
        for _, j in self.queues.get(user, []):
            if acceptable(self.jobs[j].ad, machine_ad):
                return self.jobs[j]
        return None

    def on_match(self, match: Match, now: float) -> ClaimRequest | Release:
        """Claim the matched startd for the job, or (job no longer idle) for
        the user's next idle job that matches it; none: release the match."""
        job = self.jobs.get(match.job_id)
        if job is None or job.status != "idle" or job.user != match.user:
            job = self._next_for(match.user, match.machine_ad)
        if job is None:
            return Release(match.machine, match.match_id)
        self._take(job, "matched")
        job.matched_at = now
        self.stats.submit_to_match.append(now - job.idle_since)
        self.pending[match.match_id] = (job.job_id, match)
        return ClaimRequest(match.machine, match.match_id, job.user, job.job_id, job.ad)

    def on_claim_reply(self, match_id: str, reply: ClaimReply, now: float) -> Activate | None:
        """Accepted: hold the claim and start the job on it. Refused: the job
        is idle again (its wait goes on), the refusal counted by reason.
        A reply to a match this schedd never claimed is a shell bug: KeyError."""
        job_id, match = self.pending.pop(match_id)
        job = self.jobs[job_id]
        if not reply.accepted or reply.claim_id is None:
            reason = reply.reason or "refused"
            self.stats.refusals[reason] = self.stats.refusals.get(reason, 0) + 1
            self._idle(job)
            return None
        self.claims[reply.claim_id] = Claim(reply.claim_id, match.machine, job.user, match.machine_ad)
        self.stats.match_to_start.append(now - (job.matched_at or now))
        return self._start(job, self.claims[reply.claim_id], now, reused=False)

    def _start(self, job: QueuedJob, claim: Claim, now: float, reused: bool) -> Activate:
        job.status, job.claim_id = "running", claim.claim_id
        self.shadows[job.job_id] = Shadow(job.job_id, claim.claim_id, claim.machine, now)
        return Activate(claim.machine, claim.claim_id, job.job_id, job.ad, reused)

    def on_job_exit(self, job_id: JobId, now: float, ran: float | None = None) -> Activate | Release:
        """The job completed (``ran``: its busy seconds, default since start).
        Reuse the claim for the same user's next idle job that matches the
        machine, else release it."""
        shadow = self.shadows.pop(job_id)
        job = self.jobs[job_id]
        job.status = "done"
        self.stats.goodput += now - shadow.started if ran is None else ran
        self.stats.completed += 1
        claim = self.claims[shadow.claim_id]
        nxt = self._next_for(claim.user, claim.machine_ad)
        if nxt is None:
            del self.claims[claim.claim_id]
            return Release(claim.machine, claim.claim_id)
        self._take(nxt, "matched")
        self.stats.reuses += 1
        return self._start(nxt, claim, now, reused=True)

    def on_vacate(self, vacated: Vacated, now: float) -> None:
        """The startd pushed the job off: it is idle again (waiting from now),
        its run so far is badput, and the claim is gone."""
        self.claims.pop(vacated.claim_id, None)
        self.shadows.pop(vacated.job_id, None)
        job = self.jobs[vacated.job_id]
        self.stats.badput += vacated.ran
        self.stats.vacated += 1
        job.idle_since = now
        self._idle(job)

    def on_claim_lost(self, claim_id: str, now: float) -> None:
        """The startd ended a claim with no job running (its owner came back);
        a job whose activation it never took is idle again, nothing run."""
        self.claims.pop(claim_id, None)
        for job_id in [j for j, s in self.shadows.items() if s.claim_id == claim_id]:
            del self.shadows[job_id]
            self._idle(self.jobs[job_id])
