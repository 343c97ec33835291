"""Structured events: structlog renders each to a JSON line into a buffer;
the owning actor ships the buffer to the collector in batches (never one call
per event)."""
from __future__ import annotations

import json
from typing import Any, Callable

import numpy as np
import structlog


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
    launch that fell inside it looked older than the commit that caused it
    (a fault-free bench run reported a lost commit so)."""
    t = round(now, 6)
    return {"t": t, "span": round(t - round(started, 6), 6)}


class _BufferSink:
    """structlog's final "logger": keeps rendered lines until drained."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def msg(self, line: str) -> None:
        self.lines.append(line)

    info = debug = warning = error = critical = msg


class EventLog:
    """``log.emit("txn", committed=3)`` -> one JSON line with ``t`` (emulated
    seconds) and ``actor`` added. ``drain()`` hands the batch over."""

    def __init__(self, actor: str, now: Callable[[], float]) -> None:
        self._sink = _BufferSink()
        self._now = now

        def stamp(_logger: Any, _method: str, event: dict) -> dict:
            event.setdefault("t", round(now(), 6))
            event["actor"] = actor
            return event

        self._log = structlog.wrap_logger(
            self._sink,
            processors=[stamp, structlog.processors.JSONRenderer(serializer=dumps)],
            wrapper_class=structlog.BoundLogger,
            cache_logger_on_first_use=True,
        )

    def emit(self, event: str, **fields: Any) -> None:
        """``t`` defaults to now; pass it when the caller reports the same instant elsewhere."""
        self._log.info(event, **fields)

    def now(self) -> float:
        return round(self._now(), 6)

    def drain(self) -> list[str]:
        lines, self._sink.lines = self._sink.lines, []
        return lines

    def __len__(self) -> int:
        return len(self._sink.lines)
