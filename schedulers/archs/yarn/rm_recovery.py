"""A ResourceManager's work-preserving restart (YARN's RM recovery): a new
active RM starts empty and rebuilds its books from the application records
the coordinator replicated, the NodeManagers re-registering with what they
run and the AMs resyncing; nothing is scheduled until the window closes.
A mixin of :class:`rm_state.RMState`, kept apart because it is a phase of
its own with its own rules."""
from __future__ import annotations

from typing import TYPE_CHECKING

from schedlab.schedulers.archs.yarn.events import (
    APP_RESTORED, APP_RESYNCED, CONTAINER_FINISHED, NODE_RECOVERED, RECOVERY_SETTLED,
)
from schedlab.schedulers.archs.yarn.locality import OFF_SWITCH, placement_level
from schedlab.schedulers.archs.yarn.messages import (
    AM_PRIORITY,
    AM_TASK,
    FINISHED,
    GONE,
    LOST,
    OK,
    RESYNC,
    Admission,
    AllocateReply,
    AppRecord,
    ContainerStatus,
    RunningReport,
    as_vector,
)
from schedlab.schedulers.archs.yarn.requests import TaskAsk
from schedlab.schedulers.archs.yarn.rm_books import (
    APP_FINISHED,
    RUNNING,
    STARTED,
    TERMINAL,
    AppBook,
    Held,
)
from schedlab.schedulers.archs.yarn.scheduler import Container

if TYPE_CHECKING:  # the host these methods need (typing only)
    from schedlab.schedulers.archs.yarn.rm_host import RMHost


class RecoveryMixin:
    """RMState's restart calls; see the module doc."""

    def restore_app(self: RMHost, record: AppRecord, now: float, *, attempt: int | None = 1, failures: int = 0,
                    finished: list[int] | tuple[int, ...] = (), am_launched: bool = True) -> Admission:
        """Know an admitted application again (its record replicated by the
        coordinator, re-submitted by the shell on take-over, with its
        attempt, counted failures and job history ``finished``: tasks the
        previous RM saw finish, which nodes' recent-completion reports then
        do not count again). No AM ask here: its AM container may be
        running; containers already reported for it are adopted. ``attempt``
        None: not known (no state store kept it: a single ResourceManager
        restarted alone): the AM's resync tells it. Once the recovery window closes
        (:meth:`settle_recovery`, or at once if it already has) an
        application whose AM container no node reported gets a new attempt
        (a counted failure if ``am_launched``: its AM had run)."""
        leaf, why = self._check(record)
        if why:
            return Admission(record.app_id, False, why)
        book = self._admit(record, leaf)
        book.attempt, book.failures, book.synced = int(attempt or 1), int(failures), False
        book.attempt_known = attempt is not None
        book.am_launched_before = bool(am_launched)
        book.finished.update(dict.fromkeys(int(t) for t in finished))
        for task, node in self.orphan_finished.pop(record.app_id, {}).items():
            self._learned_finished(book, task, node, now)
        for node, rep in self.orphans.pop(record.app_id, []):
            if not self._adopt(node, rep, now):
                self._kill_on(node, rep)
        self._event(APP_RESTORED, app=record.app_id, attempt=book.attempt, at=now)
        if not self.recovering:
            self._settle_app(book, now)
        return Admission(record.app_id, True, queue=leaf)

    def _learned_finished(self: RMHost, book: AppBook, task: int, node: int, now: float) -> None:
        """A re-registering node saw ``task`` finish while no RM listened.
        Reported once: a task already in the application's history (given
        to ``restore_app``) was counted by the previous RM."""
        if task == AM_TASK or task not in book.tasks or task in book.finished:
            return
        book.finished[task] = None
        self._event(CONTAINER_FINISHED, app=book.record.app_id, task=task, container=None, node=node,
                    recovered=True, at=now)

    def _kill_on(self: RMHost, node: int, rep: RunningReport) -> None:
        self.kills.setdefault(node, []).append([rep.app_id, rep.task_id])
        key = (rep.app_id, rep.task_id)
        self.kill_pending[key] = self.kill_pending.get(key, 0) + 1

    def _adopt(self: RMHost, node: int, rep: RunningReport, now: float) -> bool:
        """Take a reported running container into the books; False if it
        must be killed (its application ended, its task finished or already
        held elsewhere, a second AM, an unknown task)."""
        book = self.apps[rep.app_id]
        key = (rep.app_id, rep.task_id)
        is_am = rep.task_id == AM_TASK
        if (book.state in TERMINAL or rep.container_id in self.held or key in self.task_container
                or rep.task_id in book.finished or (not is_am and rep.task_id not in book.tasks)):
            return False
        spec = None if is_am else book.tasks[rep.task_id]
        level = OFF_SWITCH if spec is None else placement_level(spec.preferred, node, self.state.rack_of)
        c = Container(rep.container_id, rep.app_id, node, as_vector(rep.resources),
                      now if rep.start is None else rep.start, rep.task_id,
                      AM_PRIORITY if spec is None else spec.priority, level, is_am)
        self.state.adopt(c)
        self.held[c.container_id] = Held(rep.app_id, rep.task_id, node, STARTED)
        self.task_container[key] = c.container_id
        self.by_node.setdefault(node, {})[c.container_id] = None
        self.started_on.setdefault(node, {})[key] = c.container_id
        if is_am:
            book.am_container = c.container_id
            book.state = RUNNING
            self.am_heard[rep.app_id] = now  # its AM has until the expiry to resync
        return True

    def recover_node(self: RMHost, node: int, running: list[RunningReport], now: float, *,
                     finished: list[tuple[int, int]] | tuple[tuple[int, int], ...] = (),
                     foreign: list[tuple[tuple[int, int], list[float]]] | tuple = ()) -> tuple[int, int]:
        """A NodeManager (re-)registers with what it runs and the (app,
        task) pairs it saw finish recently (YARN's NM reports completed
        containers not yet acknowledged: a task that ended while no RM
        listened is finished, not lost). During the recovery window its
        containers are adopted (work-preserving), or kept aside until their
        application is restored; otherwise (a node back after being lost,
        or too late) it starts empty and everything it reports is killed at
        its next heartbeat. ``foreign``: ((job, task), request) of load on
        the node that is not YARN's (the prefill): it keeps its room.
        (adopted, killed).

        A node already registered that registers again is taken to have
        restarted: it is first handled as lost."""
        if node in self.registered:
            self.node_lost(node, now)
        fresh = self.recovering and node not in self.written_off
        self.foreign[node] = {(int(k[0]), int(k[1])): as_vector(tuple(r)) for k, r in foreign}
        self._register(node)
        if fresh:
            for app_id, task in finished:
                book = self.apps.get(int(app_id))
                if book is None:
                    self.orphan_finished.setdefault(int(app_id), {})[int(task)] = node
                elif book.state not in TERMINAL:
                    self._learned_finished(book, int(task), node, now)
        adopted = killed = 0
        for rep in sorted(running, key=lambda r: r.container_id):
            if fresh and rep.app_id not in self.apps:
                self.orphans.setdefault(rep.app_id, []).append((node, rep))
            elif fresh and self._adopt(node, rep, now):
                adopted += 1
            else:
                self._kill_on(node, rep)
                killed += 1
        self._event(NODE_RECOVERED, node=node, adopted=adopted, killed=killed, at=now)
        return adopted, killed

    def recover_app(self: RMHost, app_id: int, asks: list[TaskAsk], *, attempt: int, containers: dict[int, int],
                    finished: list[int] | tuple[int, ...] = (), now: float) -> AllocateReply:
        """An AM resyncs with a restarted RM: its attempt, outstanding
        asks, the containers it believes it holds and the tasks it knows
        finished. Believed containers no node reported are LOST (reported
        when the recovery window closes, or at once after it); recovered
        task containers it does not believe in are stopped. Answers like
        :meth:`am_allocate` (RESYNC for an unknown application means it was
        never restored: GONE)."""
        book, status = self._check_caller(app_id, attempt)
        if book is None:
            return AllocateReply(GONE if status == RESYNC else status)
        if not book.attempt_known:
            book.attempt, book.attempt_known = int(attempt), True
        self.am_heard[app_id] = now
        book.finished.update(dict.fromkeys(int(t) for t in finished))
        book.synced, book.calls = True, 1  # the AM counts its calls from its resync
        book.believed = {int(c): int(t) for c, t in containers.items()}
        refused = self._add_asks(book, list(asks), now)
        self._event(APP_RESYNCED, app=app_id, attempt=book.attempt, asks=len(asks) - len(refused),
                    containers=len(containers), at=now)
        if not self.recovering:
            self._reconcile(book, now)
        reply = AllocateReply(OK, book.attempt, tuple(book.allocated), tuple(book.completed), (), tuple(refused))
        book.allocated, book.completed = [], []
        return reply

    def _reconcile(self: RMHost, book: AppBook, now: float) -> None:
        """Compare a resynced AM's belief with the recovered books."""
        if book.believed is None:
            return
        app_id = book.record.app_id
        for cid, task in sorted(book.believed.items()):
            h = self.held.get(cid)
            if h is None or h.app_id != app_id:
                state = FINISHED if task in book.finished else LOST
                book.completed.append(ContainerStatus(cid, task, -1, state, now))
        for cid in list(self.state.apps[app_id].containers):
            if cid not in book.believed and self.held[cid].task_id != AM_TASK:
                self._stop(cid)
        book.believed = None

    def _settle_app(self: RMHost, book: AppBook, now: float) -> None:
        if book.state in TERMINAL:
            return
        book.attempt_known = True
        if book.am_container is None and len(book.finished) == len(book.tasks):
            # every task known finished (its AM unregistered while no RM
            # listened, or just before the restart): it is done, not rerun
            self._end_app(book, APP_FINISHED, now)
            return
        if book.am_container is None:
            if book.am_launched_before:
                self._am_failed(book, now, counted=self.config.lost_am_counts, reason="am_not_recovered")
            elif AM_TASK not in self.state.apps[book.record.app_id].asks:
                # its AM had not started yet (or it was submitted during the
                # window): ask for it again, no attempt spent
                book.synced = True
                self._ask_am(book, now)
            return
        if book.synced:
            self._reconcile(book, now)

    def settle_recovery(self: RMHost, now: float) -> None:
        """Close the recovery window (the shell's timer, YARN's
        work-preserving scheduling wait): containers of applications never
        restored are killed, applications without a recovered AM get a new
        attempt, resynced AMs hear which of their containers were lost, and
        scheduling resumes."""
        if not self.recovering:
            return
        self.recovering = False
        for app_id in sorted(self.orphans):
            for node, rep in self.orphans[app_id]:
                self._kill_on(node, rep)
        self.orphans.clear()
        self.orphan_finished.clear()
        for book in list(self.apps.values()):
            self._settle_app(book, now)
        # An AM's silence is counted from here: while the window was open
        # its heartbeats were told to wait, not heard, and a window longer
        # than the expiry would otherwise fail every AM that waited.
        for app_id in self.am_heard:
            self.am_heard[app_id] = max(self.am_heard[app_id], now)
        self._event(RECOVERY_SETTLED, apps=len(self.apps), nodes=len(self.registered), at=now)
