"""An asyncio event loop on a virtual clock: time moves only when nothing is
ready to run, and then straight to the next timer.

The sim engine runs every actor of a run on one such loop, so the shells'
own asyncio code (``asyncio.sleep``, ``wait_for`` timeouts, events, tasks)
keeps its meaning with no real waiting. The loop's unit is the live
engine's *wall second* (an actor's ``nap_wall(0.05)`` is 0.05 virtual wall
seconds); emulated time is that times the scenario's time scale.

How: a ``SelectorEventLoop`` whose selector never waits. asyncio asks the
selector to wait until the next timer is due; this one advances the
virtual clock by that long instead and returns at once, and the loop then
runs the timers that fell due. Ordering is asyncio's own (ready callbacks
first in, first out; timers by due time, then by when they were set), so
the same program gives the same interleaving every time. A loop with
nothing ready and no timer set has deadlocked: it raises instead of
waiting forever.
"""
from __future__ import annotations

import asyncio
import selectors
from typing import Any


MIN_STEP_S = 1e-9


class Deadlock(RuntimeError):
    """Nothing is ready to run and no timer is set: nothing ever will."""


class _NoWaitSelector(selectors.BaseSelector):
    """Holds registrations (asyncio registers its self-pipe) but never
    waits: ``select(timeout)`` moves the virtual clock by ``timeout``."""

    def __init__(self, loop_clock: VirtualClock) -> None:
        self._clock = loop_clock
        self._map: dict[Any, selectors.SelectorKey] = {}

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = selectors.SelectorKey(fileobj, fileobj if isinstance(fileobj, int) else fileobj.fileno(), events, data)
        self._map[fileobj] = key
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._map.pop(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        self.unregister(fileobj)
        return self.register(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list:
        if timeout is None:
            raise Deadlock("no task is ready and no timer is set")
        if timeout > 0:
            self._clock.now += max(timeout, MIN_STEP_S)  # a positive wait always moves the clock
        return []

    def get_map(self) -> Any:
        return self._map

    def close(self) -> None:
        self._map.clear()


class VirtualClock:
    def __init__(self, start: float = 0.0) -> None:
        self.now = start


class VirtualLoop(asyncio.SelectorEventLoop):
    """``time()`` is the virtual clock; see the module doc."""

    def __init__(self, start: float = 0.0) -> None:
        self.clock = VirtualClock(start)
        super().__init__(_NoWaitSelector(self.clock))
        # Timers due within this much of "now" run now: none, on a virtual clock.
        self._clock_resolution = 1e-9

    def time(self) -> float:
        return self.clock.now
