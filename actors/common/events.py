"""Structured events: each rendered to a JSON line into a buffer; the
owning actor ships the buffer to the collector in batches (never one call
per event)."""
from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np

from schedlab.schedulers.events.contract import EventFieldError, EventType
from schedlab.schedulers.events.shared import COMMITS_DROPPED


def _default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def dumps(obj: Any, **kw: Any) -> str:
    return json.dumps(obj, default=_default, separators=(",", ":"))


def span_stamp(started: float, now: float) -> dict[str, float]:
    """``t`` and ``span`` for an event reporting an interval that began at
    ``started`` and ended at ``now`` (a scheduler's attempt): pass both to
    ``emit``. The invariant checker takes ``t - span`` as the interval's
    start, so ``t`` must be the instant ``span`` was measured to, not the
    later moment the event happens to be stamped: a process descheduled in
    between (two busy cores) would move the start later by that delay, and a
    launch that fell inside it would look older than the commit that caused
    it: a lost commit where none was lost."""
    t = round(now, 6)
    return {"t": t, "span": round(t - round(started, 6), 6)}


def report_held_at_end(log: EventLog, holder: str, launches: list[list], **fields: Any) -> None:
    """Launches an actor still holds for hosts that never pulled them when
    the run stops (a host cut off, or whose last pull came too late): in
    flight, not lost. Said as ``commits_dropped`` (reason 'run ended'), so
    the invariant checker traces every commit to an end; ``launches`` rows
    start [job, task, machine]."""
    if launches:
        log.emit(COMMITS_DROPPED, holder=holder, reason="run ended",
                 tasks=[[int(ln[0]), int(ln[1]), int(ln[2])] for ln in launches], **fields)


class EventLog:
    """``log.emit(TXN, scheduler=..., ...)`` -> one JSON line with ``t``
    (emulated seconds) and ``actor`` added. ``drain()`` hands the batch over.

    The event is a declared ``EventType`` (schedlab.schedulers.events), never
    a plain string: emit raises EventFieldError for a string, a missing
    required field or an undeclared one, so a contract broken at a write
    fails the test that reaches it. The check is two frozenset comparisons
    on the fields' key view (declared per event type, precomputed).

    A line is byte for byte what structlog's ``JSONRenderer`` would make of
    it (the fields in the order given, then ``event``, then ``t`` unless
    given, then ``actor``), rendered directly: structlog's processor chain
    costs about half of an event, and every actor emits on every batch
    interval."""

    def __init__(self, actor: str, now: Callable[[], float]) -> None:
        self._lines: list[str] = []
        self._now = now
        self._actor = actor
        # Called when a line enters an empty buffer: the owner's shipping
        # loop sleeps while there is nothing to ship.
        self.on_first: Callable[[], None] | None = None

    def emit(self, event: EventType, **fields: Any) -> None:
        """``t`` defaults to now; pass it when the caller reports the same instant elsewhere."""
        if event.__class__ is not EventType:
            raise EventFieldError(f"emit({event!r}): an event is a declared EventType (schedlab.schedulers.events), "
                                  f"not a {type(event).__name__}")
        keys = fields.keys()
        if not (keys >= event.required and keys <= event.allowed):
            event.check(fields)
        fields["event"] = event
        if "t" not in fields:
            fields["t"] = round(self._now(), 6)
        fields["actor"] = self._actor
        if not self._lines and self.on_first is not None:
            self.on_first()
        self._lines.append(dumps(fields))

    def now(self) -> float:
        return round(self._now(), 6)

    def echo_to(self, stream: Any) -> None:
        """Also show every event on ``stream`` as it is emitted, one readable
        line each (structlog's console renderer): the driver's own events
        under ``-v`` (faults as they are carried out, failovers, node
        deaths), so a user watching a run sees what was done to it."""
        import structlog

        echo = structlog.wrap_logger(structlog.PrintLogger(stream), processors=[
            structlog.dev.ConsoleRenderer(colors=False, pad_event_to=16)])
        emit = self.emit

        def emit_and_echo(event: EventType, **fields: Any) -> None:
            emit(event, **fields)
            echo.info(event, **{k: v for k, v in fields.items() if k not in ("event", "actor")})

        self.emit = emit_and_echo  # type: ignore[method-assign]

    def drain(self) -> list[str]:
        lines, self._lines = self._lines, []
        return lines

    def __len__(self) -> int:
        return len(self._lines)
