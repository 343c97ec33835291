"""asyncio's own ``SelectorEventLoop`` on a virtual clock: the loop the sim
engine ran on before its discrete-event kernel (``virtual_loop``), kept as
the reference that kernel is measured against (``schedlab bench kernel``)
and checked against (tests/test_sim_kernel.py: same order where asyncio's
is defined).

Its selector never waits: asked to wait until the next timer, it moves the
virtual clock by that long instead and returns at once; asked to wait with
no timer set, it raises ``Deadlock``.
"""
from __future__ import annotations

import asyncio
import selectors
from typing import Any, Callable

from schedlab.actors.engines.virtual_loop import MIN_STEP_S, Deadlock


class _NoWaitSelector(selectors.BaseSelector):
    """Holds registrations (asyncio registers its self-pipe) but never
    waits: ``select(timeout)`` moves the virtual clock by ``timeout``."""

    def __init__(self, loop: ReferenceLoop) -> None:
        self._loop = loop
        self._map: dict[Any, selectors.SelectorKey] = {}

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = selectors.SelectorKey(fileobj, fileobj if isinstance(fileobj, int) else fileobj.fileno(), events, data)
        self._map[fileobj] = key
        return key

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._map.pop(fileobj)

    def select(self, timeout: float | None = None) -> list:
        if timeout is None:
            raise Deadlock("no task is ready and no timer is set")
        if timeout > 0:
            self._loop.now += max(timeout, MIN_STEP_S)  # a positive wait always moves the clock
        return []

    def get_map(self) -> Any:
        return self._map


class ReferenceLoop(asyncio.SelectorEventLoop):
    """``time()`` is the virtual clock; see the module doc."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        super().__init__(_NoWaitSelector(self))
        self._clock_resolution = MIN_STEP_S  # timers due within this much of "now" run now

    def time(self) -> float:
        return self.now

    def post_at(self, when: float, callback: Callable[..., Any], args: tuple) -> None:
        """``VirtualLoop.post_at``, through asyncio's ``call_at``."""
        self.call_at(when, callback, *args)
