"""One application's ApplicationMaster, pure: what it asks for, what it
does with the containers it gets, and when it is done.

The AM shell calls ``next_call()`` on its heartbeat, sends it to the RM's
``am_allocate`` and feeds the reply to ``on_reply``. Asks are tasks (see
``requests.py``): an allocation names the task it was asked for, so the AM
starts exactly that task in it, and releases a container for a task that no
longer needs one (finished meanwhile, or already holding another). A
preempted or lost container's task is asked for again. ``done`` once every
task finished; the shell then calls the RM's ``finish_app``.

A new attempt (after the AM was lost) is a new ``AppMasterCore`` built with
the tasks already finished (the job history a MapReduce AM recovers), so it
asks only for the rest.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
from schedlab.schedulers.archs.yarn.messages import (
    FINISHED,
    GONE,
    OK,
    RESYNC,
    STALE,
    AllocateReply,
    AMResync,
    AppRecord,
    TaskSpec,
)
from schedlab.schedulers.archs.yarn.requests import TaskAsk


@dataclass(frozen=True)
class AMConfig:
    """How the AM asks (per scenario). ``locality``: prefer the nodes
    holding a task's data (False: ask anywhere). ``relax_locality``: may
    the scheduler fall back to the rack and then anywhere (YARN's
    ``relaxLocality``; False pins tasks to their data nodes)."""

    locality: bool = True
    relax_locality: bool = True


@dataclass(frozen=True)
class AllocateCall:
    """One allocate call's arguments for ``RMState.am_allocate``."""

    attempt: int
    asks: list[TaskAsk]
    releases: list[int]
    starts: list[tuple[int, int]]


class AppMasterCore:
    """The AM of ``record``'s application, attempt ``attempt``.

    Books: ``finished`` tasks; ``to_ask`` (not yet sent) and ``asked``
    (outstanding at the RM); ``holding`` container -> task for containers
    it was allocated and started (or is about to start). A task is in
    exactly one of: finished, to_ask, asked, holding."""

    def __init__(self, record: AppRecord, *, attempt: int = 1, finished: Iterable[int] = (),
                 config: AMConfig | None = None) -> None:
        self.record = record
        self.attempt = int(attempt)
        self.config = config or AMConfig()
        self.tasks: dict[int, TaskSpec] = record.task_map()
        done = {int(t) for t in finished}
        self.finished: dict[int, None] = {t.task_id: None for t in record.tasks if t.task_id in done}
        self.to_ask: dict[int, None] = {t.task_id: None for t in record.tasks if t.task_id not in done}
        self.asked: dict[int, None] = {}
        self.holding: dict[int, int] = {}
        self._by_task: dict[int, int] = {}
        self._starts: dict[int, int] = {}  # container -> task: to start in the next call
        self._releases: list[int] = []
        self.stopped = False  # STALE or GONE: this AM must stop
        self.needs_resync = False
        self.reasked = 0  # tasks asked again after a preemption, a loss or a refusal
        self.released = 0  # containers given back unused
        self.calls = 0  # OK replies since it started or last resynced (the RM counts the same)

    @property
    def done(self) -> bool:
        """Every task finished: the AM unregisters (the shell calls ``finish_app``)."""
        return len(self.finished) == len(self.tasks)

    def ask_for(self, task_id: int) -> TaskAsk:
        """A fresh ask for a task (``Asks.add`` stamps the object it is given)."""
        t = self.tasks[task_id]
        preferred = t.preferred if self.config.locality else ()
        return TaskAsk(t.task_id, np.asarray(t.capability, dtype=np.float64), priority=t.priority,
                       preferred=preferred, relax_locality=self.config.relax_locality or not preferred)

    def next_call(self) -> AllocateCall:
        """The next allocate call: new asks, releases and start requests
        accumulated since the last one (each sent once)."""
        asks = [self.ask_for(t) for t in self.to_ask]
        self.asked.update(self.to_ask)
        self.to_ask = {}
        call = AllocateCall(self.attempt, asks, self._releases, list(self._starts.items()))
        self._releases, self._starts = [], {}
        return call

    def undo(self, call: AllocateCall) -> None:
        """``call`` never reached the RM (it was dead or gone): what it
        carried goes into the next call again."""
        for a in call.asks:
            if a.task_id in self.asked:
                del self.asked[a.task_id]
                self.to_ask[a.task_id] = None
        self._releases = [*call.releases, *self._releases]
        for cid, task in call.starts:
            if self.holding.get(cid) == task:
                self._starts.setdefault(cid, task)

    def _again(self, task: int) -> None:
        if task not in self.finished and task not in self._by_task and task not in self.asked:
            self.to_ask[task] = None
            self.reasked += 1

    def on_reply(self, reply: AllocateReply) -> str:
        """Take an allocate (or resync) reply in; returns its status. On
        STALE or GONE the AM stops; on RESYNC the shell sends ``resync()``
        to the RM's ``recover_app`` and feeds its answer here too."""
        if reply.status in (STALE, GONE):
            self.stopped = True
            return reply.status
        if reply.status == RESYNC:
            self.needs_resync = True
            return reply.status
        assert reply.status == OK, reply.status
        self.calls += 1
        for tid in reply.refused_asks:
            # The RM holds a container for it, knows it finished, or cannot
            # place it: not outstanding any more. A container for it will
            # come in an allocation or its completion in a status.
            self.asked.pop(tid, None)
        for a in reply.allocated:
            task = a.task_id
            self.asked.pop(task, None)
            if task in self.finished or task in self._by_task or task not in self.tasks:
                self._releases.append(a.container_id)
                self.released += 1
                continue
            self.to_ask.pop(task, None)
            self.holding[a.container_id] = task
            self._by_task[task] = a.container_id
            self._starts[a.container_id] = task
        for cid in reply.refused_starts:
            held = self.holding.pop(cid, None)
            if held is not None:
                del self._by_task[held]
                self._again(held)
        for s in reply.completed:
            held = self.holding.pop(s.container_id, None)
            if held is None:
                continue  # released by us, or already accounted for
            del self._by_task[held]
            self._starts.pop(s.container_id, None)
            if s.state == FINISHED:
                self.finished[held] = None
            else:
                self._again(held)
        return reply.status

    def resync(self) -> AMResync:
        """What to send a restarted RM: every outstanding ask (those not yet
        sent included, which become outstanding), the containers held, the
        tasks finished. Start requests not yet sent are sent afterwards."""
        self.asked.update(self.to_ask)
        self.to_ask = {}
        self.needs_resync = False
        self.calls = 0
        return AMResync(self.attempt, tuple(self.ask_for(t) for t in self.asked), dict(self.holding),
                        tuple(self.finished))

    def books(self) -> list:
        """What this AM holds now (the pool's ``am_books`` event at the end
        of a run): ``[app, attempt, outstanding asks, asks not sent yet,
        {container: task} held, containers to release, calls answered,
        tasks finished]``."""
        return [self.record.app_id, self.attempt, sorted(self.asked), sorted(self.to_ask),
                {str(c): t for c, t in sorted(self.holding.items())}, sorted(self._releases), self.calls,
                sorted(self.finished)]
