"""A Sparrow worker (the paper's node monitor), pure: ``slots`` concurrent
task slots and one FIFO queue of entries.

An entry is either a :class:`Task`, placed eagerly by a scheduler that
already chose this worker for it, or a :class:`Reservation` (late binding:
"some task of job J, ask scheduler S which one"). The queue is served in
order whenever a slot is free:

* a task at the head starts at once and holds its slot for its duration;
* a reservation at the head makes the worker send :class:`GetTask` to its
  scheduler and hold the slot until the answer comes (Sparrow pays that
  round trip with an idle slot: it is why late binding costs a little at
  low load). The answer is a task, which starts in the held slot, or a
  cancel (``None``: the job has no task left), which frees the slot for
  the next entry.

No clock: every method takes ``now`` and returns :class:`Outputs`
(messages to send, tasks started with their end times); the shell delivers
the messages and sets the timers that call :meth:`Worker.complete`.
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass, field
from collections.abc import Iterable

TaskKey = tuple[int, int]  # (job, task index)


@dataclass(frozen=True)
class Task:
    """One task. ``long``: its job was classified long (Hawk); plain
    Sparrow leaves it False."""

    job_id: int
    index: int
    duration: float
    long: bool = False

    @property
    def key(self) -> TaskKey:
        return (self.job_id, self.index)


@dataclass(frozen=True)
class Reservation:
    """A late-binding placeholder for some task of ``job_id``, to be asked
    of ``scheduler``. Reservations of one job are interchangeable (equal)."""

    job_id: int
    scheduler: int
    long: bool = False


Entry = Task | Reservation


@dataclass(frozen=True)
class GetTask:
    """Worker -> scheduler: "a slot is yours, which task of ``job_id``?"
    ``request`` numbers the question per worker; the answer quotes it."""

    worker: int
    request: int
    job_id: int
    scheduler: int


@dataclass(frozen=True)
class Started:
    worker: int
    task: Task
    start: float
    end: float


@dataclass
class Outputs:
    """What one call produced, in the order it happened."""

    messages: list[GetTask] = field(default_factory=list)
    started: list[Started] = field(default_factory=list)

    def extend(self, other: Outputs) -> Outputs:
        self.messages.extend(other.messages)
        self.started.extend(other.started)
        return self


@dataclass(frozen=True)
class QueueView:
    """A snapshot of a worker for a peer or a scheduler with full state
    (Hawk's stealing, the omniscient reference): its waiting entries in
    order and what its slots hold."""

    worker: int
    slots: int
    busy: int  # slots running a task or waiting for a GetTask answer
    running_long: int  # slots running a long task
    entries: tuple[Entry, ...]

    @property
    def idle(self) -> bool:
        return self.busy < self.slots and not self.entries


class Worker:
    def __init__(self, worker_id: int, slots: int = 1) -> None:
        if slots < 1:
            raise ValueError(f"worker {worker_id}: slots must be >= 1, got {slots}")
        self.id = worker_id
        self.slots = slots
        self.queue: collections.deque[Entry] = collections.deque()
        self.running: dict[TaskKey, Started] = {}
        self.asking: dict[int, Reservation] = {}  # request -> the reservation that holds a slot
        self._next_request = 0

    # ------------------------------------------------------------- inputs

    def enqueue(self, entries: Iterable[Entry], now: float) -> Outputs:
        """Append entries at the tail (a scheduler's placement, a probe's
        reservation, stolen entries) and serve what a free slot can."""
        self.queue.extend(entries)
        return self._serve(now)

    def answer(self, request: int, task: Task | None, now: float) -> Outputs:
        """The scheduler's answer to GetTask ``request``: a task of the
        reservation's job starts in the held slot; ``None`` (cancel) frees
        the slot. An unknown request or a task of another job is a protocol
        error (ValueError): it would run a task nobody reserved room for."""
        res = self.asking.pop(request, None)
        if res is None:
            raise ValueError(f"worker {self.id}: no GetTask {request} outstanding")
        out = Outputs()
        if task is not None:
            if task.job_id != res.job_id:
                self.asking[request] = res
                raise ValueError(f"worker {self.id}: request {request} was for job {res.job_id}, got {task.key}")
            out.started.append(self._start(task, now))
        return out.extend(self._serve(now))

    def complete(self, key: TaskKey, now: float) -> Outputs:
        """Task ``key`` ended (its timer fired): its slot serves the next
        entry. Raises if it is not running or ``now`` is before its end."""
        s = self.running.get(key)
        if s is None:
            raise ValueError(f"worker {self.id}: task {key} is not running")
        if now < s.end - 1e-9 * max(1.0, abs(s.end)):
            raise ValueError(f"worker {self.id}: task {key} ends at {s.end}, not {now}")
        del self.running[key]
        return self._serve(now)

    def remove(self, entries: Iterable[Entry]) -> list[Entry]:
        """Take waiting entries out of the queue (a thief's steal), each at
        most once; returns those that were still waiting (between a view and
        the steal some may have been served)."""
        taken = []
        for e in entries:
            try:
                self.queue.remove(e)
            except ValueError:
                continue
            taken.append(e)
        return taken

    # ------------------------------------------------------------- probes

    def queue_length(self) -> int:
        """What a probe answers: entries waiting plus slots busy (the
        supermarket model's "tasks at the server", service included)."""
        return len(self.queue) + len(self.running) + len(self.asking)

    def estimated_work(self, now: float, reservation_estimate: float = 0.0) -> float:
        """Work ahead of a new entry: remaining time of running tasks plus
        the durations of waiting tasks; each reservation (waiting or asking)
        counts ``reservation_estimate``, as its task is not known yet."""
        running = sum(max(0.0, s.end - now) for s in self.running.values())
        queued = sum(e.duration if isinstance(e, Task) else reservation_estimate for e in self.queue)
        return running + queued + reservation_estimate * len(self.asking)

    def view(self) -> QueueView:
        return QueueView(self.id, self.slots, len(self.running) + len(self.asking),
                         sum(1 for s in self.running.values() if s.task.long), tuple(self.queue))

    def free_slots(self) -> int:
        return self.slots - len(self.running) - len(self.asking)

    # ------------------------------------------------------------ serving

    def _start(self, task: Task, now: float) -> Started:
        if task.key in self.running:
            raise ValueError(f"worker {self.id}: task {task.key} already runs here")
        s = Started(self.id, task, now, now + task.duration if math.isfinite(task.duration) else math.inf)
        self.running[task.key] = s
        return s

    def _serve(self, now: float) -> Outputs:
        out = Outputs()
        while self.free_slots() > 0 and self.queue:
            e = self.queue.popleft()
            if isinstance(e, Task):
                out.started.append(self._start(e, now))
            else:
                req = self._next_request
                self._next_request += 1
                self.asking[req] = e
                out.messages.append(GetTask(self.id, req, e.job_id, e.scheduler))
        return out
