"""How the ResourceManager ends what it started: the AM liveness monitor,
an AM's failure and the application's next attempt (or its failure past
``max_am_attempts``), preemption, and an application's end (finished,
killed, failed). A mixin of :class:`rm_state.RMState`, kept apart because
these rules (what counts as a failure, what a new attempt keeps) are
YARN's own and read best together."""
from __future__ import annotations

from typing import TYPE_CHECKING

from schedlab.schedulers.archs.yarn.events import AM_ATTEMPT, AM_EXPIRED, APP_ENDED
from schedlab.schedulers.archs.yarn.messages import (
    AM_TASK,
    PREEMPTED,
    ContainerStatus,
)
from schedlab.schedulers.archs.yarn.rm_books import (
    ACCEPTED,
    APP_FAILED,
    APP_FINISHED,
    APP_KILLED,
    RUNNING,
    TERMINAL,
    AppBook,
)
from schedlab.schedulers.events.shared import PREEMPTED as PREEMPTED_EVENT

if TYPE_CHECKING:  # the host these methods need (typing only)
    from schedlab.schedulers.archs.yarn.rm_host import RMHost


class EndsMixin:
    """RMState's attempt and end rules; see the module doc."""

    def expire_ams(self: RMHost, now: float, expiry: float) -> list[int]:
        """YARN's AM liveness monitor: an application whose AM has run (its
        container handed out) but has not called for ``expiry`` emulated
        seconds is taken to have died; a new attempt starts (a counted
        failure, as YARN's expired AM). Nothing during a recovery window.
        The applications expired."""
        if self.recovering:
            return []
        out = []
        for app_id, heard in sorted(self.am_heard.items()):
            book = self.apps.get(app_id)
            if book is None or book.state != RUNNING:
                self.am_heard.pop(app_id, None)
                continue
            if now - heard >= expiry:
                del self.am_heard[app_id]
                out.append(app_id)
                self._event(AM_EXPIRED, app=app_id, attempt=book.attempt, silent=round(now - heard, 9), at=now)
                self._am_failed(book, now, counted=True, reason="am_expired")
        return out

    def deaf(self: RMHost, span: float, now: float) -> None:
        """The RM itself heard nobody for ``span`` emulated seconds (the
        shell's monitor ran that late: the RM was frozen, or starved): its
        AMs' calls waited on it, so that span is not their silence. Every
        AM's clock moves on by it (never past ``now``), as a leader restarts
        its agents' clocks after its own lapse."""
        if span <= 0:
            return
        for app_id, heard in self.am_heard.items():
            self.am_heard[app_id] = min(heard + span, now)

    def _end_app(self: RMHost, book: AppBook, state: str, now: float) -> list[int]:
        app_id = book.record.app_id
        stopped = list(self.state.apps[app_id].containers)
        for cid in stopped:
            self._stop(cid)
        self.state.finish(app_id)
        self.scheduler.counters.forget(app_id)
        book.state = state
        book.allocated, book.completed, book.asked_at, book.believed = [], [], {}, None
        self._event(APP_ENDED[state], app=app_id, attempt=book.attempt, queue=book.leaf,
                    finished_tasks=len(book.finished), at=now)
        return stopped

    def finish_app(self: RMHost, app_id: int, now: float) -> list[int]:
        """The AM unregistered (all its tasks finished): its AM container
        and any leftover container are stopped. The stopped ids."""
        book = self.apps.get(app_id)
        if book is None or book.state in TERMINAL:
            return []
        return self._end_app(book, APP_FINISHED, now)

    def kill_app(self: RMHost, app_id: int, now: float) -> list[int]:
        """The user killed the application: as ``finish_app``, state killed."""
        book = self.apps.get(app_id)
        if book is None or book.state in TERMINAL:
            return []
        return self._end_app(book, APP_KILLED, now)

    def _am_failed(self: RMHost, book: AppBook, now: float, *, counted: bool, reason: str) -> None:
        """The current attempt's AM is gone. Past ``max_am_attempts``
        counted failures the application fails; otherwise a new attempt:
        every container of the old one is stopped (YARN's default,
        keep-containers-across-application-attempts = false), its asks
        dropped, and a new AM ask made."""
        app_id = book.record.app_id
        if counted:
            book.failures += 1
        if book.failures >= self.config.max_am_attempts:
            self._end_app(book, APP_FAILED, now)
            return
        for cid in list(self.state.apps[app_id].containers):
            self._stop(cid)
        self.state.cancel_tasks(app_id, [t.task_id for t in list(self.state.apps[app_id].asks.tasks())])
        self.scheduler.counters.forget(app_id)
        book.attempt += 1
        book.state = ACCEPTED
        book.allocated, book.completed, book.asked_at, book.believed = [], [], {}, None
        book.synced, book.calls = True, 0
        self._ask_am(book, now)
        self._event(AM_ATTEMPT, app=app_id, attempt=book.attempt, reason=reason, counted=counted,
                    failures=book.failures, at=now)

    def preempt(self: RMHost, now: float) -> list[int]:
        """Ask the scheduler for victims and stop them: kills queued to
        their nodes, PREEMPTED reported to their AMs, counted per leaf. A
        preempted AM starts a new attempt that does not count as a failure."""
        if self.recovering:
            return []
        taken: list[int] = []
        for cid in self.scheduler.preemption(now):
            if cid not in self.held:
                continue  # gone with an AM preempted earlier in this list
            h = self._stop(cid)
            book = self.apps[h.app_id]
            self.preemptions[book.leaf] += 1
            taken.append(cid)
            self._event(PREEMPTED_EVENT, app=h.app_id, task=h.task_id, container=cid, node=h.node, queue=book.leaf,
                        am=h.task_id == AM_TASK, at=now)
            if h.task_id == AM_TASK:
                self._am_failed(book, now, counted=False, reason="am_preempted")
            else:
                book.completed.append(ContainerStatus(cid, h.task_id, h.node, PREEMPTED, now))
        return taken
