"""What the ResourceManager's books answer without changing them: an
application's state, attempt and finished tasks, queue usage and
entitlements, utilization, what a node holds. A mixin of
:class:`rm_state.RMState`, kept apart so the decisions read on their own."""
from __future__ import annotations

from typing import TYPE_CHECKING

from schedlab.schedulers.archs.yarn.messages import (
    AM_TASK,
    AppRecord,
)
from schedlab.schedulers.archs.yarn.rm_books import (
    QUEUED,
    STARTED,
    TERMINAL,
    QueueSample,
    _t,
)
from schedlab.schedulers.model.resources import used_shares

if TYPE_CHECKING:  # the host these methods need (typing only)
    from schedlab.schedulers.archs.yarn.rm_host import RMHost


class QueriesMixin:
    """RMState's read-only queries; see the module doc."""

    def app_state(self: RMHost, app_id: int) -> str | None:
        book = self.apps.get(app_id)
        return None if book is None else book.state

    def attempt(self: RMHost, app_id: int) -> int:
        return self.apps[app_id].attempt

    def finished_tasks(self: RMHost, app_id: int) -> list[int]:
        """Tasks of the application known finished (for a new AM attempt:
        the job history a MapReduce AM would recover)."""
        return list(self.apps[app_id].finished)

    def active_records(self: RMHost) -> list[AppRecord]:
        """Records of the applications not yet ended: what the coordinator
        replicates and a new RM restores."""
        return [b.record for b in self.apps.values() if b.state not in TERMINAL]

    def queue_usage(self: RMHost) -> list[QueueSample]:
        """Every queue (tree order) with its usage and entitlement, on demand."""
        st = self.state
        fair = getattr(self.scheduler, "fair_shares", None)
        shares = fair() if callable(fair) else {q: st.tree[q].abs_capacity * st.total for q in st.tree}
        out = []
        for q in st.tree:
            n = self.preemptions.get(q, 0) if st.tree[q].is_leaf else sum(
                v for leaf, v in self.preemptions.items() if leaf.startswith(q + "."))
            out.append(QueueSample(q, _t(st.queue_used[q]), _t(st.queue_pending[q]), _t(shares[q]), n))
        return out

    def utilization(self: RMHost) -> list[float]:
        """The fraction of the configured cell in use per resource: containers and
        foreign load; a node out of the cluster counts as fully used (as
        the other architectures' keepers count a machine down)."""
        total = self.node_capacity.sum(axis=0)
        used = total - self.state.free.sum(axis=0)
        return used_shares(used, total)

    def scheduled_tasks(self: RMHost, app_id: int) -> set[int]:
        """Tasks of the application that have started (a container handed
        to its node) or finished: the job counts as scheduled once this is
        every task."""
        book = self.apps[app_id]
        out = set(book.finished)
        for task in book.tasks:
            cid = self.task_container.get((app_id, task))
            if cid is not None and self.held[cid].phase == STARTED:
                out.add(task)
        return out

    def node_contents(self: RMHost, node: int) -> tuple[list[list[int]], list[list[int]]]:
        """([app, task] started on ``node``, [app, task] queued to start
        there): what ``node_lost`` would lose, as the shell reports it."""
        started, queued = [], []
        for cid in sorted(self.by_node.get(node, {})):
            h = self.held[cid]
            if h.phase == STARTED:
                started.append([h.app_id, h.task_id])
            elif h.phase == QUEUED:
                queued.append([h.app_id, h.task_id])
        return started, queued

    def open_books(self: RMHost) -> list[list]:
        """Every application not ended, as the books hold it now (the RM's
        word at the end of a run, the ``yarn_books`` event): ``[app, attempt,
        state, outstanding task asks, {container: task} held for tasks,
        [container, task] allocated but not yet told its AM, [container,
        task, state] completions not yet told it, calls of this attempt
        answered, AM container asked for]``."""
        out = []
        for app_id, book in sorted(self.apps.items()):
            if book.state in TERMINAL:
                continue
            app = self.state.apps[app_id]
            asks = sorted(int(t.task_id) for t in app.asks.tasks() if t.task_id != AM_TASK)
            held = {str(cid): self.held[cid].task_id for cid in sorted(app.containers)
                    if self.held[cid].task_id != AM_TASK}
            out.append([app_id, book.attempt, book.state, asks, held,
                        [[a.container_id, a.task_id] for a in book.allocated],
                        [[c.container_id, c.task_id, c.state] for c in book.completed],
                        book.calls, AM_TASK in app.asks])
        return out
