"""The YARN ResourceManager's books and decisions, pure.

The RM shell keeps the timers (node liveness, the preemption monitor's
interval, global scheduling's timer, the recovery window), does the calls
and the event log; everything the RM knows and decides lives here, over one
scheduler core (Capacity, Fair or FIFO) and its :class:`ClusterState`. No
clock: every call takes ``now``. No I/O: events are appended to
``RMState.events`` as plain dicts (``{"event": kind, ...}``) for the shell to
emit (:meth:`RMState.take_events`).

The flow, as YARN's:

* **Admission** (ApplicationsManager): :meth:`RMState.submit` resolves the
  leaf queue and checks the asks could ever fit; it then asks the scheduler
  for the application's AM container (task ``AM_TASK``, priority
  ``AM_PRIORITY``, anywhere).
* **NodeManager heartbeats** (:meth:`RMState.node_heartbeat`): finished
  containers are released, then (node-by-node mode) the scheduler allocates
  on that node, and the node gets what it must kill and start. The RM
  starts AM containers itself as soon as they are allocated (AMLauncher).
* **AM heartbeats** (:meth:`RMState.am_allocate`): asks in, releases and
  start requests in; containers newly allocated and completion statuses
  out. In YARN the AM starts a container by calling its NodeManager
  directly; here the start is queued for that node's next heartbeat, since
  the house's hosts *pull* their launches (as kubelets watch an API server).
* **Preemption** (:meth:`RMState.preempt`), **global scheduling**
  (:meth:`RMState.schedule`), **application end** (:meth:`RMState.finish_app`),
  **node loss** with AM attempt retry (:meth:`RMState.node_lost`).
* **Work-preserving restart**: a new RM starts with ``recovering=True`` and
  no registered node; :meth:`restore_app` (records replicated by the
  coordinator), :meth:`recover_node` (NodeManagers re-registering with
  what runs) and :meth:`recover_app` (AMs resyncing) rebuild the books, and
  :meth:`settle_recovery` closes the window (YARN's scheduling wait):
  nothing is scheduled before it.

Invariants kept: a task has at most one container at a time (allocated,
start queued or running); a launch of a task is held while a kill of an
older copy of the same task is still unconfirmed on another node (not yet
handed out, or handed out and that node has not polled since), so a task
never runs twice; a launch is handed out once and stays queued until its
node pulls it; node kills are delivered before launches in one reply.
"""
from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from schedlab.schedulers.archs.yarn.events import (
    AM_ALLOCATED, AM_EXITED, AM_LAUNCHED, APP_REJECTED, APP_SUBMITTED, ASKED, CONTAINER_ALLOCATED,
    CONTAINER_FINISHED, CONTAINER_LAUNCHED, CONTAINER_LOST, CONTAINER_RELEASED, NODE_LOST,
)
from schedlab.schedulers.archs.yarn.messages import (
    AM_PRIORITY,
    AM_TASK,
    FINISHED,
    GONE,
    LOST,
    OK,
    RESYNC,
    STALE,
    Admission,
    AllocateReply,
    Allocation,
    AppRecord,
    ContainerStatus,
    NodeReply,
    RunningReport,
    as_vector,
    container_owner,
)
from schedlab.schedulers.archs.yarn.queues import QueueError
from schedlab.schedulers.archs.yarn.requests import TaskAsk
from schedlab.schedulers.archs.yarn.rm_books import (
    ALLOCATED,
    EPOCH_SHIFT,
    QUEUED,
    RUNNING,
    STARTED,
    TERMINAL,
    AppBook,
    Held,
    RMConfig,
    _t,
)
from schedlab.schedulers.archs.yarn.rm_ends import EndsMixin
from schedlab.schedulers.archs.yarn.rm_queries import QueriesMixin
from schedlab.schedulers.archs.yarn.rm_recovery import RecoveryMixin
from schedlab.schedulers.archs.yarn.scheduler import Container, YarnScheduler
from schedlab.schedulers.events.contract import EventType
from schedlab.schedulers.model.resources import fits


class RMState(QueriesMixin, EndsMixin, RecoveryMixin):
    """A ResourceManager's state machine over ``scheduler`` (and its
    ``scheduler.state``). ``epoch``: the RM's incarnation (0 first; a
    restarted RM takes the next), which keeps container ids unique across
    restarts. ``recovering``: a restarted RM, waiting for nodes and AMs."""

    def __init__(self, scheduler: YarnScheduler, config: RMConfig | None = None, *, epoch: int = 0,
                 recovering: bool = False) -> None:
        self.scheduler = scheduler
        self.state = scheduler.state
        self.config = config or RMConfig()
        self.epoch = int(epoch)
        glob = self.config.global_scheduling
        self.global_scheduling = bool(getattr(getattr(scheduler, "config", None), "global_scheduling", False)
                                      if glob is None else glob)
        self.node_capacity = self.state.capacity.copy()  # configured; the state's drops to 0 while a node is out
        self._fits_cache: dict[tuple[float, ...], bool] = {}  # container size -> fits some configured node
        self.state.reserve_ids((self.epoch << EPOCH_SHIFT) + 1)
        self.apps: dict[int, AppBook] = {}
        self.held: dict[int, Held] = {}
        self.task_container: dict[tuple[int, int], int] = {}  # (app, task) -> its one container
        self.by_node: dict[int, dict[int, None]] = {}  # node -> container ids held there
        self.started_on: dict[int, dict[tuple[int, int], int]] = {}  # node -> (app, task) -> started container
        self.to_launch: dict[int, dict[int, None]] = {}  # node -> container ids queued to start there
        self.kills: dict[int, list[list[int]]] = {}  # node -> [app, task] to kill at its next heartbeat
        self.kill_pending: dict[tuple[int, int], int] = {}  # (app, task) -> unconfirmed kills of it
        # node -> kills handed out in its last reply: done once it heartbeats again
        self.kills_sent: dict[int, list[list[int]]] = {}
        self.recovering = bool(recovering)
        self.registered: dict[int, None] = {} if recovering else dict.fromkeys(range(self.state.n_nodes))
        self.written_off: dict[int, None] = {}
        self.orphans: dict[int, list[tuple[int, RunningReport]]] = {}  # app -> reports from nodes, app unknown yet
        self.orphan_finished: dict[int, dict[int, int]] = {}  # app -> task -> node that saw it finish, app unknown yet
        self.preemptions: dict[str, int] = {q: 0 for q in self.state.tree.leaves()}
        self.events: list[dict] = []
        # Load on the nodes that is not YARN's (the run's prefill): node ->
        # (job, task) -> its request. It takes room until its node reports
        # it ended, and dies with its node.
        self.foreign: dict[int, dict[tuple[int, int], np.ndarray]] = {}
        # app -> when its current AM last called (or was launched): the AM
        # liveness monitor (``expire_ams``).
        self.am_heard: dict[int, float] = {}
        if recovering:
            self.state.set_node_capacities(np.arange(self.state.n_nodes), np.zeros((self.state.n_nodes, self.state.width)))

    # ------------------------------------------------------------ events

    def take_events(self) -> list[dict]:
        """The events recorded since the last call (the shell emits them)."""
        out, self.events = self.events, []
        return out

    # ------------------------------------------------------------ foreign load

    def _effective(self, node: int) -> np.ndarray:
        load = self.foreign.get(node, {})
        cap = self.node_capacity[node] - sum(load.values(), np.zeros(self.state.width))
        return np.maximum(cap, 0.0)

    def add_foreign(self, node: int, key: tuple[int, int], request: np.ndarray | list[float]) -> None:
        """Load not placed by this RM (the run's prefill) runs on ``node``:
        it takes room until the node reports ``key`` ended."""
        self.add_foreign_many([(node, key, request)])

    def add_foreign_many(self, rows: Iterable[tuple[int, tuple[int, int], Any]]) -> None:
        """``add_foreign`` for each ``(node, key, request)`` of ``rows``, each
        node's capacity set once (the prefill of a whole cell: tens of
        thousands of rows when an RM starts)."""
        touched: dict[int, None] = {}
        for node, key, request in rows:
            node = int(node)
            self.foreign.setdefault(node, {})[(int(key[0]), int(key[1]))] = np.asarray(request, dtype=np.float64)
            touched[node] = None
        nodes = [n for n in touched if n in self.registered]
        if nodes:
            self.state.set_node_capacities(nodes, np.array([self._effective(n) for n in nodes]))

    def _foreign_ended(self, node: int, key: tuple[int, int]) -> bool:
        load = self.foreign.get(node)
        if not load or key not in load:
            return False
        del load[key]
        if node in self.registered:
            self.state.set_node_capacity(node, self._effective(node))
        return True

    def _event(self, kind: EventType, **fields: object) -> None:
        """Queue one of the core's declared events (schedulers.archs.yarn.events),
        checked against its declaration here, so the core's own tests fail on
        a field it forgets, not only a run's emit."""
        kind.check(fields)
        self.events.append({"event": kind, **fields})

    # ------------------------------------------------------------ admission

    def _check(self, record: AppRecord) -> tuple[str, str]:
        """(leaf, "") or ("", why the record cannot be admitted)."""
        if record.app_id in self.apps:
            return "", f"application {record.app_id} was already admitted"
        try:
            leaf = self.state.tree.leaf(record.queue)
        except QueueError as e:
            return "", str(e)
        if not (record.weight > 0 and math.isfinite(record.weight)):
            return "", f"weight must be > 0, got {record.weight!r}"
        if not self._fits_some_node(record.am_resources):
            return "", "the AM container fits on no node"
        for t in record.tasks:
            if not self._fits_some_node(t.capability):
                return "", f"task {t.task_id} fits on no node"
            if any(n < 0 or n >= self.state.n_nodes for n in t.preferred):
                return "", f"task {t.task_id} prefers an unknown node"
        return leaf, ""

    def _fits_some_node(self, capability: Any) -> bool:
        """Whether a container of ``capability`` fits on some node as
        configured: asked once per distinct size (every task of every
        admitted application asks, and a scan of ten thousand nodes each
        time made admitting a cell's applications a pass of seconds)."""
        key = tuple(float(x) for x in as_vector(capability))
        got = self._fits_cache.get(key)
        if got is None:
            got = self._fits_cache[key] = bool(fits(self.node_capacity, as_vector(capability)).any())
        return got

    def _admit(self, record: AppRecord, leaf: str) -> AppBook:
        self.state.submit(record.app_id, leaf, record.user, weight=record.weight)
        book = AppBook(record, leaf, record.task_map())
        self.apps[record.app_id] = book
        return book

    def submit(self, record: AppRecord, now: float) -> Admission:
        """Admit an application and ask for its AM container. A rejection
        (unknown or parent queue, duplicate id, an ask no node could ever
        hold) is returned, not raised: a bad submission is the user's."""
        leaf, why = self._check(record)
        if why:
            self._event(APP_REJECTED, app=record.app_id, queue=record.queue, reason=why, at=now)
            return Admission(record.app_id, False, why)
        book = self._admit(record, leaf)
        self._ask_am(book, now)
        self._event(APP_SUBMITTED, app=record.app_id, queue=leaf, user=record.user, tasks=len(record.tasks),
                    submitted_at=record.submitted_at, at=now)
        return Admission(record.app_id, True, queue=leaf)

    def _ask_am(self, book: AppBook, now: float) -> None:
        ask = TaskAsk(AM_TASK, as_vector(book.record.am_resources), priority=AM_PRIORITY, is_am=True)
        self.state.add_tasks(book.record.app_id, [ask])
        book.asked_at[AM_TASK] = now

    # ------------------------------------------------------------ container books

    def _granted(self, containers: list[Container], now: float) -> list[int]:
        """Book what the scheduler just allocated: AM containers are queued
        to start at once (the RM's AMLauncher), task containers go to their
        AM's next reply."""
        for c in containers:
            book = self.apps[c.app_id]
            key = (c.app_id, c.task_id)
            self.held[c.container_id] = Held(c.app_id, c.task_id, c.node, ALLOCATED)
            self.task_container[key] = c.container_id
            self.by_node.setdefault(c.node, {})[c.container_id] = None
            asked = book.asked_at.pop(c.task_id, now)
            if c.is_am:
                book.am_container = c.container_id
                self._queue_launch(c.container_id)
                self._event(AM_ALLOCATED, app=c.app_id, attempt=book.attempt, container=c.container_id,
                            node=c.node, wait=round(now - asked, 9), at=now)
            else:
                level = c.locality.name.lower()
                book.allocated.append(Allocation(c.container_id, c.task_id, c.node, _t(c.resources), level))
                self._event(CONTAINER_ALLOCATED, app=c.app_id, task=c.task_id, container=c.container_id,
                            node=c.node, queue=book.leaf, locality=level, latency=round(now - asked, 9),
                            attempt=book.attempt, at=now)
        return [c.container_id for c in containers]

    def _queue_launch(self, cid: int) -> None:
        h = self.held[cid]
        h.phase = QUEUED
        self.to_launch.setdefault(h.node, {})[cid] = None

    def _drop(self, cid: int) -> Held:
        """Forget a container and release its resources (no kill sent)."""
        h = self.held.pop(cid)
        key = (h.app_id, h.task_id)
        if self.task_container.get(key) == cid:
            del self.task_container[key]
        self.by_node[h.node].pop(cid, None)
        if h.phase == QUEUED:
            self.to_launch[h.node].pop(cid, None)
        elif h.phase == STARTED and self.started_on.get(h.node, {}).get(key) == cid:
            del self.started_on[h.node][key]
        self.state.release(cid)
        book = self.apps[h.app_id]
        if book.am_container == cid:
            book.am_container = None
        return h

    def _stop(self, cid: int) -> Held:
        """Stop a container: a started one is killed at its node's next
        heartbeat, a queued launch is withdrawn; resources are released at
        once (YARN frees a killed container in the scheduler immediately;
        the node's reply delivers kills before launches, so nothing new
        lands there before the kill)."""
        h = self.held[cid]
        if h.phase == STARTED:
            self.kills.setdefault(h.node, []).append([h.app_id, h.task_id])
            key = (h.app_id, h.task_id)
            self.kill_pending[key] = self.kill_pending.get(key, 0) + 1
        return self._drop(cid)

    def _forget_kills(self, node: int) -> None:
        for app, task in self.kills.pop(node, []) + self.kills_sent.pop(node, []):
            self._kill_delivered((app, task))

    def _kills_confirmed(self, node: int) -> None:
        """The node heartbeats again: the kills its last reply carried are
        done (a host carries out a reply's kills, and reports them, before
        it polls again)."""
        for app, task in self.kills_sent.pop(node, []):
            self._kill_delivered((app, task))

    def _kill_delivered(self, key: tuple[int, int]) -> None:
        n = self.kill_pending.get(key, 0) - 1
        if n > 0:
            self.kill_pending[key] = n
        else:
            self.kill_pending.pop(key, None)

    # ------------------------------------------------------------ node heartbeats

    def node_heartbeat(self, node: int, finished: list[tuple[int, int]], now: float) -> NodeReply:
        """A NodeManager's heartbeat: ``finished`` (app, task) pairs ended
        on it since its last one. Reports of containers the RM already
        stopped (killed, preempted, lost) or does not know are ignored.
        Then, in node-by-node mode and outside a recovery window, the
        scheduler allocates on the node. The reply: kills first, then the
        launches queued for this node (held back while a kill of an older
        copy of the same task is unconfirmed on another node: not handed
        out yet, or that node has not polled since).

        An unregistered node gets ``reset`` if it had been declared lost
        (it is registered again, empty), else ``resync`` (a restarted RM:
        it must re-register through :meth:`recover_node`)."""
        reset = False
        self._kills_confirmed(node)
        if node not in self.registered:
            if node not in self.written_off:
                return NodeReply(resync=True)
            self._register(node)
            reset = True
        else:
            for app_id, task in finished:
                if not self._foreign_ended(node, (int(app_id), int(task))):
                    self._ended(node, int(app_id), int(task), now)
        if not self.global_scheduling and not self.recovering:
            self._granted(self.scheduler.allocate_on_node(node, now), now)
        return self._reply(node, now, reset)

    def hearing(self, machines: range, finished: Iterable[int]) -> Iterable[int]:
        """The machines of ``machines`` whose heartbeats can change anything,
        in order: every one while the scheduler allocates node by node and
        something is asked; else those that reported a finished container
        (``finished``), are not registered, or have a kill or launch waiting
        or a kill unconfirmed. A heartbeat from any other would hand out
        nothing and change nothing, so the RM's shell skips it: an idle
        cell's heartbeats cost the RM nothing per machine (its host watch
        still hears the host)."""
        if not (self.global_scheduling or self.recovering) and self.scheduler.state.has_pending():
            return machines
        lo, hi = machines.start, machines.stop
        some = set(finished)
        for queued in (self.kills, self.kills_sent, self.to_launch):
            some.update(m for m, xs in queued.items() if xs and lo <= m < hi)
        if len(self.registered) < self.state.n_nodes:
            some.update(m for m in machines if m not in self.registered)
        return sorted(some)

    def _register(self, node: int) -> None:
        self.written_off.pop(node, None)
        self.registered[node] = None
        self.state.set_node_capacity(node, self._effective(node))

    def _ended(self, node: int, app_id: int, task: int, now: float) -> None:
        cid = self.started_on.get(node, {}).get((app_id, task))
        if cid is None:
            return
        self._drop(cid)
        book = self.apps[app_id]
        if task == AM_TASK:  # an AM runs until it is stopped: it exited on its own
            self._event(AM_EXITED, app=app_id, attempt=book.attempt, container=cid, node=node, at=now)
            self._am_failed(book, now, counted=True, reason="am_exited")
            return
        book.finished[task] = None
        book.completed.append(ContainerStatus(cid, task, node, FINISHED, now))
        self._event(CONTAINER_FINISHED, app=app_id, task=task, container=cid, node=node, at=now)

    def _reply(self, node: int, now: float, reset: bool) -> NodeReply:
        kills = self.kills.pop(node, [])
        if kills:
            # A launch of the same task elsewhere waits until the node polls
            # again: handed out is not yet carried out (another host could
            # start the new copy before this one stops the old).
            self.kills_sent.setdefault(node, []).extend(kills)
        launches: list[list] = []
        am_started: list[tuple[int, int]] = []
        queue = self.to_launch.get(node, {})
        for cid in list(queue):
            h = self.held[cid]
            key = (h.app_id, h.task_id)
            # Kills on this node go first in its own reply: only those elsewhere hold it.
            if self.kill_pending.get(key, 0) > sum(1 for k in self.kills_sent.get(node, ()) if tuple(k) == key):
                continue
            del queue[cid]
            h.phase = STARTED
            self.started_on.setdefault(node, {})[key] = cid
            book = self.apps[h.app_id]
            res = self.state.containers[cid].resources.tolist()
            if h.task_id == AM_TASK:
                launches.append([h.app_id, AM_TASK, node, res, math.inf, now, container_owner(cid)])
                book.state = RUNNING
                self.am_heard[h.app_id] = now
                book.am_launched_before = True
                am_started.append((h.app_id, book.attempt))
                self._event(AM_LAUNCHED, app=h.app_id, attempt=book.attempt, container=cid, node=node,
                            delay=round(now - book.record.submitted_at, 9), at=now)
            else:
                launches.append([h.app_id, h.task_id, node, res, book.tasks[h.task_id].duration, now,
                                 container_owner(cid)])
                self._event(CONTAINER_LAUNCHED, app=h.app_id, task=h.task_id, container=cid, node=node, at=now)
        return NodeReply(launches, kills, reset=reset, am_started=am_started)

    def schedule(self, now: float) -> list[int]:
        """Global scheduling (the shell's timer): allocate across all
        nodes; the ids granted. Nothing during a recovery window."""
        if self.recovering:
            return []
        return self._granted(self.scheduler.allocate_global(now), now)

    # ------------------------------------------------------------ AM heartbeats

    def _add_asks(self, book: AppBook, asks: list[TaskAsk], now: float) -> list[int]:
        """Add an AM's asks; the ids refused: not a task of the application
        (or the AM's), finished, already asked, holding a container, or
        malformed."""
        refused: list[int] = []
        accepted: list[int] = []
        app_id = book.record.app_id
        app = self.state.apps[app_id]
        for t in asks:
            tid = int(t.task_id)
            if (tid not in book.tasks or tid in book.finished or tid in app.asks
                    or (app_id, tid) in self.task_container or t.is_am
                    or not fits(self.node_capacity, np.asarray(t.capability, dtype=np.float64)).any()):
                refused.append(tid)
                continue
            try:
                self.state.add_tasks(app_id, [t])
            except ValueError:
                refused.append(tid)
                continue
            book.asked_at[tid] = now
            accepted.append(tid)
        if asks:
            # What the AM asked for and what became of it (tests/test_run_yarn.py
            # accounts for every ask: allocated, still outstanding, or gone
            # with its attempt or application).
            self._event(ASKED, app=app_id, attempt=book.attempt, tasks=accepted, refused=refused, at=now)
        return refused

    def _check_caller(self, app_id: int, attempt: int | None) -> tuple[AppBook | None, str]:
        book = self.apps.get(app_id)
        if book is None:
            return None, RESYNC
        if book.state in TERMINAL:
            return None, GONE
        if attempt is not None and attempt != book.attempt and book.attempt_known:
            return None, STALE
        return book, OK

    def am_allocate(self, app_id: int, asks: list[TaskAsk], releases: list[int], starts: list[tuple[int, int]],
                    now: float, *, attempt: int | None = None) -> AllocateReply:
        """An AM's heartbeat. In order: ``releases`` (its containers it does
        not need: stopped, no status sent back), ``asks`` (new outstanding
        tasks; see ``_add_asks`` for refusals), ``starts`` ((container,
        task): start the task in a container allocated to it for that task,
        at the node's next heartbeat; any other start is refused and the
        container released, since asks are tasks). The reply carries every
        allocation and completion since the previous call, once.

        An application the RM does not know, or not yet resynced after a
        restart, answers RESYNC; an ended one GONE; a call naming an older
        ``attempt`` STALE."""
        book, status = self._check_caller(app_id, attempt)
        if book is None:
            return AllocateReply(status)
        if not book.synced:
            return AllocateReply(RESYNC, book.attempt)
        self.am_heard[app_id] = now
        book.calls += 1
        for cid in releases:
            h = self.held.get(cid)
            if h is not None and h.app_id == app_id and h.task_id != AM_TASK:
                self._release(book, cid, now, "released")
        refused_asks = self._add_asks(book, list(asks), now)
        refused_starts: list[int] = []
        for cid, task in starts:
            h = self.held.get(cid)
            if h is None or h.app_id != app_id:
                refused_starts.append(cid)
                continue
            if h.phase != ALLOCATED or h.task_id != task or task in book.finished:
                refused_starts.append(cid)
                if h.phase == ALLOCATED:
                    self._release(book, cid, now, "start_refused")
                continue
            self._queue_launch(cid)
        reply = AllocateReply(OK, book.attempt, tuple(book.allocated), tuple(book.completed),
                              tuple(refused_starts), tuple(refused_asks))
        book.allocated, book.completed = [], []
        return reply

    def _release(self, book: AppBook, cid: int, now: float, reason: str) -> None:
        """Stop a container its AM gave back (or started for another task)."""
        h = self._stop(cid)
        self._event(CONTAINER_RELEASED, app=h.app_id, task=h.task_id, container=cid, attempt=book.attempt,
                    reason=reason, at=now)

    # ------------------------------------------------------------ nodes lost

    def node_lost(self, node: int, now: float) -> list[int]:
        """The shell's watch found ``node`` silent: every container held
        there is lost (reported LOST to its AM; an AM container starts a new
        attempt), its undelivered launches and kills are dropped, and its
        capacity leaves the cluster until it comes back (empty: ``reset``).
        The lost container ids."""
        if node not in self.registered:
            return []
        cids = sorted(self.by_node.get(node, {}))
        self._forget_kills(node)
        ams: list[AppBook] = []
        for cid in cids:
            h = self._drop(cid)
            book = self.apps[h.app_id]
            if h.task_id == AM_TASK:
                ams.append(book)
            else:
                book.completed.append(ContainerStatus(cid, h.task_id, node, LOST, now))
            self._event(CONTAINER_LOST, app=h.app_id, task=h.task_id, container=cid, node=node, at=now)
        del self.registered[node]
        self.written_off[node] = None
        self.foreign.pop(node, None)  # it dies with its node (the node comes back empty)
        self.state.set_node_capacity(node, np.zeros(self.state.width))
        self._event(NODE_LOST, node=node, containers=len(cids), at=now)
        for book in ams:
            if book.state not in TERMINAL:
                self._am_failed(book, now, counted=self.config.lost_am_counts, reason="node_lost")
        return cids
