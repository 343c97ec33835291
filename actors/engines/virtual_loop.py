"""A discrete-event kernel behind asyncio's event-loop interface: time moves
only when nothing is ready to run, and then straight to the next timer.

The sim engine runs every actor of a run on one such loop, so the shells'
own asyncio code (``asyncio.sleep``, ``wait_for`` and ``timeout``, events,
tasks, futures) keeps its meaning with no real waiting. The loop's unit is
the live engine's *wall second* (an actor's ``nap_wall(0.05)`` is 0.05
virtual wall seconds); emulated time is that times the scenario's time scale.

What it keeps of asyncio: ``BaseEventLoop``'s driving (``run_forever``,
``run_until_complete``, ``stop``), futures and tasks (the C ones), the task
factory and the exception handler. What it owns is the hot path, which in
asyncio's ``SelectorEventLoop`` cost a Python ``Handle`` per callback
(made, then run through its ``_run``), a Python ``__lt__`` per heap
compare and a selector poll per iteration:

* **Entries are plain tuples** ``(when, seq, callback, args, context,
  handle)``: the timer heap compares them in C, and ``seq`` (one counter
  for the loop) makes the order total, so timers due at the same moment run
  first in, first out. The ready queue holds the same tuples.
* **Handles only where asyncio asks for one**: ``call_at``/``call_later``
  and a ``call_soon`` without a context return a ``Handle`` (a cancelled
  flag and a due time); a ``call_soon`` with a context (how asyncio's C
  tasks and futures schedule their steps and callbacks, which drop the
  handle) returns ``NOT_CANCELLABLE`` and makes none.
  Cancelled timers are deleted lazily, and the heap is compacted when they
  are most of it.
* **Contexts as asyncio's**: a callback runs in the context it was given,
  else in a copy of its scheduler's (the sim engine reads which actor's
  code is running from it, so a task started from a plain callback still
  belongs to that actor); the engine's own deliveries take none.
* **One batch at a time, as asyncio**: each turn moves the timers due now
  behind the callbacks already ready and runs exactly those; what they
  schedule runs next turn. ``stop()`` ends the run after the turn.

A loop with nothing ready and no timer set has deadlocked: it raises
``Deadlock`` instead of waiting forever. The loop is single-threaded: no
I/O, no signals, no other thread to wake it (``call_soon_threadsafe`` is
``call_soon``).
"""
from __future__ import annotations

import asyncio
import functools
import itertools
from collections import deque
from contextvars import copy_context
from heapq import heapify, heappop, heappush
from typing import Any, Callable

MIN_STEP_S = 1e-9  # timers due within this of now run now; a clock that moves, moves at least this far
COMPACT_MIN = 256  # cancelled timers in the heap before compaction is considered


class Deadlock(RuntimeError):
    """Nothing is ready to run and no timer is set: nothing ever will."""


class Handle:
    """What ``call_at``/``call_later`` (and ``call_soon`` without a context)
    return: ``cancel()`` stops the callback if it has not run yet."""

    __slots__ = ("_cancelled", "_when", "_loop")

    def __init__(self, when: float | None, loop: VirtualLoop | None) -> None:
        self._cancelled = False
        self._when = when
        self._loop = loop  # set while the timer waits in the heap: its cancel is counted there

    def cancel(self) -> None:
        if not self._cancelled:
            self._cancelled = True
            loop = self._loop
            if loop is not None:
                self._loop = None
                loop._cancelled_timers += 1

    def cancelled(self) -> bool:
        return self._cancelled

    def when(self) -> float | None:
        return self._when


class _NotCancellable:
    """``call_soon(..., context=ctx)``'s return: asyncio's C tasks and
    futures, the callers that pass a context, never keep the handle, so
    none is made; one that tries to cancel through it hears so."""

    __slots__ = ()

    def cancel(self) -> None:
        raise RuntimeError("a callback scheduled with an explicit context cannot be cancelled on the virtual loop")

    def cancelled(self) -> bool:
        return False


NOT_CANCELLABLE = _NotCancellable()

Entry = tuple  # (when, seq, callback, args, context | None, Handle | None)


class VirtualLoop(asyncio.BaseEventLoop):
    """``time()`` is the virtual clock; see the module doc. Its ``call_*``
    return this module's handles, not asyncio's classes (typeshed names
    those; the ``override`` ignores below say so)."""

    _closed: bool  # BaseEventLoop's own state, read on the hot path
    _stopping: bool

    def __init__(self, start: float = 0.0) -> None:
        super().__init__()
        self._now = float(start)
        self._ready: deque[Entry] = deque()
        self._scheduled: list[Entry] = []  # the timer heap
        self._seq = itertools.count().__next__
        self._cancelled_timers = 0
        self._clock_resolution = MIN_STEP_S

    def time(self) -> float:
        return self._now

    def set_debug(self, enabled: bool) -> None:
        """As asyncio's; and ``get_debug`` becomes a C call: asyncio's C
        futures and tasks ask it each time one is made (a Python frame each,
        ~2% of a sim run)."""
        super().set_debug(enabled)
        self.get_debug = functools.partial(bool, enabled)  # type: ignore[method-assign]

    # ------------------------------------------------------------ scheduling

    def call_soon(self, callback: Callable[..., Any], *args: Any, context: Any = None) -> Any:  # type: ignore[override]
        if self._closed:
            raise RuntimeError("Event loop is closed")
        if context is not None:
            self._ready.append((0.0, 0, callback, args, context, None))
            return NOT_CANCELLABLE
        h = Handle(None, None)
        self._ready.append((0.0, 0, callback, args, copy_context(), h))
        return h

    call_soon_threadsafe = call_soon  # type: ignore[assignment]

    def call_at(self, when: float, callback: Callable[..., Any], *args: Any,  # type: ignore[override]
                context: Any = None) -> Handle:
        if self._closed:
            raise RuntimeError("Event loop is closed")
        h = Handle(when, self)
        heappush(self._scheduled, (when, self._seq(), callback, args, context if context is not None else copy_context(), h))
        return h

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any,  # type: ignore[override]
                   context: Any = None) -> Handle:
        if self._closed:
            raise RuntimeError("Event loop is closed")
        when = self._now + delay
        h = Handle(when, self)
        heappush(self._scheduled, (when, self._seq(), callback, args, context if context is not None else copy_context(), h))
        return h

    def post_at(self, when: float, callback: Callable[..., Any], args: tuple) -> None:
        """``callback(*args)`` at ``when`` with no handle, outside any task's
        context: for the engine's own timers, which nobody cancels and which
        read no context variable (a delivery enters its target's context)."""
        heappush(self._scheduled, (when, self._seq(), callback, args, None, None))

    # -------------------------------------------------------------- running

    def _run_once(self) -> None:
        """Run turns until ``stop()`` is called (``BaseEventLoop.run_forever``
        calls this in a loop until then, so a whole run is one call)."""
        ready, timers = self._ready, self._scheduled
        popleft, append = ready.popleft, ready.append
        while True:
            if not ready and not self._stopping:
                self._advance()
            end = self._now + MIN_STEP_S
            while timers and timers[0][0] < end:
                entry = heappop(timers)
                h = entry[5]
                if h is not None:
                    if h._cancelled:
                        self._cancelled_timers -= 1
                        continue
                    h._loop = None
                append(entry)
            for _ in range(len(ready)):
                _, _, callback, args, ctx, h = popleft()
                if h is not None and h._cancelled:
                    continue
                try:
                    if ctx is None:
                        callback(*args)
                    else:
                        ctx.run(callback, *args)
                except (SystemExit, KeyboardInterrupt):
                    raise
                except BaseException as exc:
                    self.call_exception_handler({"message": f"Exception in callback {callback!r}{args!r}",
                                                 "exception": exc})
            if self._stopping:
                return

    def _advance(self) -> None:
        """Nothing is ready: move the clock to the first live timer, and at
        least one step if it is in the future (asyncio's loop on this clock
        does the same: a positive wait moves it at least one step). Left
        where it was, a timer due under a step ahead would run before its
        time, and a task sleeping until that time would sleep forever."""
        timers = self._scheduled
        if self._cancelled_timers > COMPACT_MIN and 2 * self._cancelled_timers > len(timers):
            self._compact()
        while timers:
            h = timers[0][5]
            if h is None or not h._cancelled:
                when = timers[0][0]
                if when > self._now:
                    self._now = max(when, self._now + MIN_STEP_S)
                return
            heappop(timers)
            self._cancelled_timers -= 1
        raise Deadlock("no task is ready and no timer is set")

    def _compact(self) -> None:
        """Drop every cancelled timer (order is (when, seq): any heap of the
        same entries pops in the same order)."""
        timers = self._scheduled
        timers[:] = [e for e in timers if e[5] is None or not e[5]._cancelled]
        heapify(timers)
        self._cancelled_timers = 0

    def _process_events(self, event_list: Any) -> None:
        """No I/O on a virtual clock."""

    def _write_to_self(self) -> None:
        """No other thread to wake."""
