"""slurmctld's saved state (StateSaveLocation), pure: what a new controller
(restarted, or the backup taking over) reads to carry on. One record per
job, keyed by its id: a queued or running job with its submission, or a
tombstone saying how it ended (so the jobs the submitter hands a new
controller again are not run twice); and the accounts' fair-share usage
(key -1), which SLURM also saves.

``StateMirror`` is the active controller's view of what it saved: it takes
the jobs its books marked changed (``Slurmctld.dirty``) and turns them into
records; ``Restored`` is what a new controller reads back.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from schedlab.schedulers.archs.slurm.controller import Job as SlurmJob
from schedlab.schedulers.archs.slurm.ctld import Slurmctld
from schedlab.schedulers.model.jobs import Job

FAIRSHARE = -1  # the record key of the accounts' usage


def job_record(ctld: Slurmctld, jid: int) -> list | None:
    """The record of job ``jid`` now: live, ended, or None if unknown."""
    j = ctld.core.jobs.get(jid) or ctld.parked.get(jid)
    spec = ctld.specs.get(jid)
    if j is None or spec is None:
        return ["ended"] if spec is not None else None
    return ["job", j.partition, j.nodes, j.limit, j.account, j.submitted, j.started, list(j.on), j.backfilled,
            list(j.request), spec.to_wire()]


@dataclass
class Restored:
    jobs: list[SlurmJob] = field(default_factory=list)
    specs: dict[int, Job] = field(default_factory=dict)
    ended: set[int] = field(default_factory=set)
    usage: dict[str, float] | None = None
    usage_at: float = 0.0

    @staticmethod
    def of(records: dict[int, list]) -> Restored:
        r = Restored()
        for key, rec in records.items():
            if key == FAIRSHARE:
                r.usage, r.usage_at = {a: float(u) for a, u in rec[1]}, float(rec[2])
            elif rec[0] == "ended":
                r.ended.add(key)
            else:
                _, part, nodes, limit, account, submitted, started, on, backfilled, request, spec = rec
                r.jobs.append(SlurmJob(key, part, int(nodes), float(limit), account, float(submitted),
                                       None if started is None else float(started), tuple(int(n) for n in on),
                                       bool(backfilled), tuple(float(x) for x in request)))
                r.specs[key] = Job.from_wire(spec)
        return r

    def into(self, ctld: Slurmctld) -> None:
        """The new controller's books from what was saved. A job saved as
        requeued and waiting for its kills is restored queued: what its
        daemons still run is killed when they register (``settle``)."""
        ctld.restore(self.jobs, self.specs)
        ctld.gone |= self.ended
        fs = ctld.core.fairshare
        if fs is not None and self.usage is not None:
            fs.usage, fs.at = dict(self.usage), self.usage_at


class StateMirror:
    """What the active controller saved, as the fenced-store link (or the
    state file) wants it: ``take_dirty`` and ``put_back``. ``loaded``: the
    records read at take-over, until the controller restores them;
    ``ctld``: its books, once it has them."""

    def __init__(self, loaded: dict[int, list]) -> None:
        self.loaded: dict[int, list] | None = loaded
        self.ctld: Slurmctld | None = None
        self.saved_usage: Any = None
        self.retry: set[int] = set()

    def take_dirty(self) -> dict[int, list]:
        c = self.ctld
        if c is None:
            return {}
        keys = c.dirty | self.retry
        c.dirty, self.retry = set(), set()
        out = {jid: job_record(c, jid) for jid in sorted(keys)}
        fs = c.core.fairshare
        if fs is not None:
            usage = sorted(fs.usage.items())
            if usage != self.saved_usage:
                self.saved_usage = usage
                out[FAIRSHARE] = ["fairshare", [[a, u] for a, u in usage], fs.at]
        return {k: v for k, v in out.items() if v is not None}

    def put_back(self, updates: dict[int, Any]) -> None:
        self.retry |= {k for k in updates if k != FAIRSHARE}
        if FAIRSHARE in updates:
            self.saved_usage = None
