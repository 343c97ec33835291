"""Measure the substrate's message latency: ``schedlab calibrate``'s actors.

Two probe actors, async like every schedlab actor and talking through the
same Runtime (``send`` and ``call``) the shells use, measure on the wall
clock they share (one machine, one monotonic clock):

* **one-way**: the sender stamps each ``send`` with ``wall_clock()``; the
  receiver subtracts the stamp from its own reading on arrival;
* **round trip**: the sender times ``await call(...)`` to an echo.

Messages go one every ``gap_s`` from each of ``senders`` senders at once,
each carrying ``payload`` launch-like tuples, as the shells' batched
exchanges do (a host's launches and completions once a batch interval,
one message per batch, never per task). Paced, not flooded: a sender
firing a thousand messages back to back measures the receiver's queue
(~30 ms p50 here), which no shell builds. The first ``WARMUP`` messages of
each kind open the connections and are not counted.

Runs on any engine (on the sim engine it measures the latency model, which
is how the measuring is tested without Ray).
"""
from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Any

from schedlab.actors import engines, interrupt

WARMUP = 20
GAP_S = 0.002  # between one sender's messages: paced, as the shells' batched exchanges are, not a flood
PAYLOAD = 10  # launch-like tuples per message: a typical batch
COLLECT_TIMEOUT_S = 10.0
FLOOR_S = 1e-6  # one monotonic clock for both ends: a delay is > 0 but for the clock's resolution


def batch(size: int) -> list[tuple]:
    """A payload like a batch of launches: (job, task, machine, request, duration, at, tag)."""
    return [(1000 + i, i, i % 40, [0.5, 2.0], 120.0, 12.5, "batch") for i in range(size)]


class Probe:
    """One end of the measurement: sends, echoes, records arrivals."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt
        self.arrivals: list[float] = []
        self._want = 0
        self._enough = asyncio.Event()

    async def ready(self) -> str:
        return "probe"

    async def arrive(self, sent_at: float, payload: Any) -> None:
        self.arrivals.append(self.rt.wall_clock() - sent_at)
        if len(self.arrivals) >= self._want:
            self._enough.set()

    async def echo(self, payload: Any) -> None:
        return None

    async def one_way(self, peer: Any, n: int, gap_s: float, payload: Any) -> None:
        for _ in range(n):
            self.rt.send(peer, "arrive", self.rt.wall_clock(), payload)
            await self.rt.sleep_wall(gap_s)

    async def round_trips(self, peer: Any, n: int, gap_s: float, payload: Any) -> list[float]:
        out = []
        for _ in range(n):
            t0 = self.rt.wall_clock()
            await self.rt.call(peer, "echo", payload)
            out.append(self.rt.wall_clock() - t0)
            await self.rt.sleep_wall(gap_s)
        return out

    async def collect(self, n: int, timeout_s: float) -> list[float]:
        """The one-way delays recorded so far, once ``n`` have arrived (or
        ``timeout_s`` wall seconds passed); forgets them."""
        self._want = n
        if len(self.arrivals) < n:
            self._enough.clear()
            try:
                await asyncio.wait_for(self._enough.wait(), timeout_s)
            except TimeoutError:
                pass
        out, self.arrivals = self.arrivals, []
        self._enough.clear()
        return out


@dataclass(frozen=True)
class Measured:
    """Wall seconds (> 0), one entry per message (one-way) or per call (round trip)."""

    one_way: list[float]
    round_trip: list[float]
    senders: int
    gap_s: float
    payload: int


def measure(messages: int, senders: int = 1, gap_s: float = GAP_S, payload: int = PAYLOAD, timeout: float = 120.0) -> Measured:
    """Measure on the driver's current engine (``engines.current()``; the
    caller connects and shuts it down): ``messages`` one-way messages and
    ``messages`` round trips in all, spread over ``senders`` senders.
    Stops at the next phase on Ctrl-C (``actors.interrupt``); its probes
    are killed whatever happens."""
    eng = engines.current()
    namespace = f"schedlab-calibrate-{uuid.uuid4().hex[:8]}"
    rt = eng.runtime(1.0, namespace)
    started: list[Any] = []
    try:
        receiver = eng.spawn(Probe, "calibrate-receiver", namespace, rt)
        started.append(receiver)
        for i in range(senders):
            started.append(eng.spawn(Probe, f"calibrate-sender-{i}", namespace, rt))
        sources = started[1:]
        each = max(1, -(-messages // senders))
        body = batch(payload)

        def phase(method: str, n: int) -> list:
            interrupt.check()
            return eng.gather([eng.call(s, method, receiver, n, gap_s, body) for s in sources], timeout=timeout)

        def arrived(n: int) -> list[float]:
            return eng.gather([eng.call(receiver, "collect", n, COLLECT_TIMEOUT_S)], timeout=timeout)[0]

        eng.gather([eng.call(h, "ready") for h in started], timeout=timeout)
        # Warm up every channel both ways (connections open); not counted.
        phase("one_way", WARMUP)
        arrived(WARMUP * senders)
        phase("round_trips", WARMUP)
        phase("one_way", each)
        one_way = arrived(each * senders)
        rtts = phase("round_trips", each)
    finally:
        eng.kill_all(started)
    return Measured([max(float(x), FLOOR_S) for x in one_way], [max(float(x), FLOOR_S) for r in rtts for x in r],
                    senders, gap_s, payload)
