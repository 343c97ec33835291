"""A user's request to stop (Ctrl-C), taken at safe points.

Ray's own start-up and actor calls do not survive a KeyboardInterrupt
raised anywhere inside them (a traceback, at times a crash on exit). So
while a run is in progress the first SIGINT only records the request; the
driver looks at it between steps (``check``) and stops there: it kills its
actors, shuts its Ray down, and the command exits 130 with one line. A
second Ctrl-C is the usual KeyboardInterrupt, for a driver that is stuck.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

_requested = threading.Event()


class Interrupted(BaseException):
    """The user asked the run to stop. A BaseException, like
    KeyboardInterrupt: handlers that catch a run's failures (a sweep goes on
    after one) must not swallow it."""


def requested() -> bool:
    return _requested.is_set()


def check() -> None:
    """Raise Interrupted at a safe point if the user asked to stop."""
    if _requested.is_set():
        raise Interrupted("interrupted (Ctrl-C)")


def _on_sigint(signum: int, frame: object) -> None:
    if _requested.is_set():
        raise KeyboardInterrupt
    _requested.set()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """SIGINT becomes a request (see the module doc) inside this block, when
    entered from the main thread; elsewhere (a test's thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _requested.clear()
    previous = signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        _requested.clear()
