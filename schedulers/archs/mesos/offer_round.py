"""One Mesos framework's round of offers, from their arrival to the answer, pure.

The framework's shell (``actors.archs.mesos.framework``) receives the offers
of one allocation round, and for each job this round gives it spends the
job's think time (really waiting, the offered resources locked at the
master meanwhile), then sends one answer. What it decides lives here:

* which offers are usable (``FrameworkCore.usable``: minimum size, preferred
  machines); the others are declined with the framework's refuse time;
* the pool: the usable offers' machines and free resources, concatenated
  into one view, with the offer each row came from;
* which job it considers next (``OfferRound.next``): the queue as it stood
  when the round began, while resources are left and only if the job's
  think time ends early enough for the answer to reach the master before
  the first offer would be rescinded (``reply_s``, the time an answer
  takes: the framework's measure of its link to the master); the first job
  is tried even when it cannot (an offer that came late would not come
  sooner next time: handing late offers back livelocks a loaded machine at
  x50, where the 30 s timeout is 0.6 wall s); a job of which not one task
  fits ends the round (a failed attempt that needs no thought);
* the answer (``answer``): per offer used, its launches and holds, in the
  order they were packed; the usable offers nothing was packed on are
  declined too;
* each job's share of the master's reply (``split``).

A framework that wants nothing declines every offer for
``SUPPRESS_REFUSE_S`` (``suppress``), until new work revives offers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.archs.mesos.framework import Decision, FrameworkCore, JobProgress
from schedlab.schedulers.model.resources import EPS

SUPPRESS_REFUSE_S = 60.0  # a framework with nothing to run refuses offers this long (revived by new work)

Decline = tuple[int, float]  # (offer id, refuse seconds)
Section = tuple[int, list, list]  # (offer id, launches (job, task, machine, request, duration), holds (machine, request))
Result = tuple[bool, list[bool], list[bool]]  # the master's answer per section: (offer ok, launched, held)


def suppress(offers: list[dict]) -> list[Decline]:
    """Every offer declined for ``SUPPRESS_REFUSE_S``: the answer of a framework with nothing to run."""
    return [(o["id"], SUPPRESS_REFUSE_S) for o in offers]


@dataclass
class Considered:
    """A job decided on in this round: its decision on the pool, the think
    time it spent and when its attempt began (emulated s)."""

    jp: JobProgress
    decision: Decision
    spent: float
    started: float


@dataclass
class Step:
    """The job to consider next. ``first``: its first attempt ever (the shell
    logs it). ``fits`` False: not one task fits in what is left; the round
    recorded the failed attempt and is over, nothing to think about."""

    jp: JobProgress
    first: bool
    fits: bool


class OfferRound:
    """The pool of one round's usable offers and the decisions made on it.

    Rows of ``machines``/``free`` are the usable offers' machines, offer
    after offer; ``offer_of[row]`` is the index (in ``usable``) of the offer
    the row came from. ``free`` is what is left after the decisions so far.
    Contract: every launch and hold in ``answer`` is on a machine of the
    offer its section answers."""

    def __init__(self, core: FrameworkCore, offers: list[dict], reply_s: float = 0.0) -> None:
        self.core = core
        ok = [core.usable(np.asarray(o["machines"]), np.asarray(o["free"])) for o in offers]
        self.usable = [o for o, good in zip(offers, ok) if good]
        self.unusable: list[Decline] = [(o["id"], core.p.refuse_seconds) for o, good in zip(offers, ok) if not good]
        usable = self.usable
        self.machines = np.concatenate([np.asarray(o["machines"], dtype=np.int64) for o in usable]) if usable else np.zeros(0, np.int64)
        width = np.asarray(offers[0]["free"]).shape[-1] if offers else 0
        self.free = np.vstack([np.asarray(o["free"], dtype=np.float64) for o in usable]) if usable else np.zeros((0, width))
        self.offer_of = (np.concatenate([np.full(len(o["machines"]), i) for i, o in enumerate(usable)])
                         if usable else np.zeros(0, np.int64))
        # The answer must reach the master before the first offer would be
        # rescinded: a framework that thinks until the offers' expiry
        # answers a round trip late (emulated seconds on a loaded machine
        # at a high time scale), every round, and schedules nothing.
        self.deadline = min((o["expires"] for o in usable), default=0.0) - reply_s
        self.decisions: list[Considered] = []
        self._queue = list(core.queue)  # the queue as the round found it
        self._cursor = 0
        self._over = False
        self._order: list[int] = []  # offers answered, by index in ``usable`` (set by ``answer``)
        self._sections: dict[int, tuple[list, list]] = {}

    def next(self, now: float) -> Step | None:
        """The next job to consider at ``now``, begun (``FrameworkCore.begin``);
        None when the round is over: the queue is exhausted, nothing is left
        in the pool, or (after the first decision) the job's think time would
        run past the deadline, so it waits for the next round."""
        if self._over or self._cursor >= len(self._queue) or not (self.free > EPS).any():
            self._over = True
            return None
        jp = self._queue[self._cursor]
        core = self.core
        if self.decisions and now + core.think_time(jp) >= self.deadline:
            self._over = True
            return None
        self._cursor += 1
        first = core.begin(jp, now)
        if not core.fits(jp, self.free):
            # Jobs are tried in order, as the queue stands: the end of the round.
            self.decisions.append(Considered(jp, core.nothing(), 0.0, now))
            self._over = True
            return Step(jp, first, False)
        return Step(jp, first, True)

    def stop(self) -> None:
        """End the round early (the shell was stopped while thinking)."""
        self._over = True

    def place(self, jp: JobProgress, spent: float, started: float, now: float) -> Considered:
        """Decide on ``jp`` after its think time (``FrameworkCore.place``);
        what it takes is gone from the pool for later jobs."""
        c = Considered(jp, self.core.place(jp, self.machines, self.free, now), spent, started)
        self.decisions.append(c)
        return c

    def answer(self) -> tuple[list[Section], list[Decline]]:
        """The ``respond`` call's sections (offers used, in offer order) and
        declines (unusable offers, then usable ones nothing was packed on)."""
        used = set()
        sections: dict[int, tuple[list, list]] = {}
        offer_of, machines = self.offer_of, self.machines
        for c in self.decisions:
            jp, d = c.jp, c.decision
            dur = jp.job.durations
            for t, r, m in zip(d.tasks.tolist(), d.rows.tolist(), d.machines.tolist()):
                sections.setdefault(int(offer_of[r]), ([], []))[0].append((jp.job.job_id, t, m, list(jp.job.request), dur[t]))
                used.add(int(offer_of[r]))
            for r in d.hold_rows.tolist():
                sections.setdefault(int(offer_of[r]), ([], []))[1].append((int(machines[r]), list(jp.job.request)))
                used.add(int(offer_of[r]))
        declines = self.unusable + [(o["id"], self.core.p.refuse_seconds) for i, o in enumerate(self.usable) if i not in used]
        self._order, self._sections = sorted(sections), sections
        return [(self.usable[i]["id"], *sections[i]) for i in self._order], declines

    def split(self, results: list[Result] | None) -> list[tuple[Considered, np.ndarray, np.ndarray]]:
        """Each decision with its launched and held masks, cut from the
        master's per-section ``results`` in the order ``answer`` packed
        them; ``results`` None (no answer): nothing launched or held."""
        order, sections = self._order, self._sections
        by_offer = {i: (results[n] if results is not None else (False, [False] * len(sections[i][0]), [False] * len(sections[i][1])))
                    for n, i in enumerate(order)}
        cursor: dict[int, list[int]] = {i: [0, 0] for i in order}
        out = []
        for c in self.decisions:
            d = c.decision
            launched = np.zeros(d.tasks.size, dtype=bool)
            held = np.zeros(d.hold_rows.size, dtype=bool)
            for n, r in enumerate(d.rows.tolist()):
                i = int(self.offer_of[r])
                launched[n] = by_offer[i][1][cursor[i][0]]
                cursor[i][0] += 1
            for n, r in enumerate(d.hold_rows.tolist()):
                i = int(self.offer_of[r])
                held[n] = by_offer[i][2][cursor[i][1]]
                cursor[i][1] += 1
            out.append((c, launched, held))
        return out
