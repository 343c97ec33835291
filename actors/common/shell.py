"""Shared shell for every emulation actor: epoch, event batching, stop."""
from __future__ import annotations

import asyncio
import functools
import math
from typing import Any, Callable

from schedlab.actors.common.events import EventLog
from schedlab.actors.engines.runtime import Runtime
from schedlab.schedulers.events.shared import ACTOR_STARTED, LOOP_CRASHED


# Lifecycle and internal coroutines: never delayed by a "slow" fault (the
# actor's own loops call some of them; the driver needs the rest to stop it).
_UNGATED = frozenset({"start", "stop", "ready", "ping", "flush", "on_start", "on_stop"})


def _settle(wake: asyncio.Future) -> None:
    if not wake.done():
        wake.set_result(None)


def _gated(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    async def gate(self: ActorShell, *args: Any, **kwargs: Any) -> Any:
        if not self._started.is_set() and fn.__name__ not in self.BEFORE_START:
            # A peer found this actor (by name, after a restart) before the
            # driver started it: until ``start`` sets the epoch, its clock
            # would read seconds since 1970.
            await self._started.wait()
        delay = self.rt.links.delay() if self.rt.links.delay_until else 0.0
        if delay:
            await asyncio.sleep(delay)
        return await fn(self, *args, **kwargs)
    gate.chaos_gated = True  # type: ignore[attr-defined]  # a marker on the function object (any function takes attributes)
    return gate


def said_before(jobs: list[dict]) -> set[int]:
    """The jobs of a recovery's hand-back that an earlier recovery already
    said scheduled (``ActorShell.vouch``): a recovering scheduler counts them
    scheduled without saying so again."""
    return {int(w["job_id"]) for w in jobs if w.get("scheduled_said")}


class ActorShell:
    """Owns the actor's event buffer and its background loops.

    Contract: ``start(epoch)`` once (messages that come before it wait for
    it); ``stop()`` wakes every loop from its nap
    and waits for it to finish what it was doing (never cancelling a loop
    mid-call: a reply lost to cancellation is a commit or launch lost), then
    flushes every buffered event to the collector and only then returns, so
    when the driver has every stop reply, events.jsonl is complete."""

    STOP_GRACE_S = 30.0

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Every message an actor receives passes the chaos gate (a "slow"
        # fault delays it); one wrapper here instead of a check per method.
        super().__init_subclass__(**kwargs)
        for name, fn in list(vars(cls).items()):
            if not name.startswith(("_", "chaos_")) and name not in _UNGATED and asyncio.iscoroutinefunction(fn):
                # An override that calls super() already passes its base's gate.
                if not any(getattr(vars(b).get(name), "chaos_gated", False) for b in cls.__mro__[1:]):
                    setattr(cls, name, _gated(fn))

    # Messages the driver sends while it sets the actor up, before ``start``
    # (the rest wait for it).
    BEFORE_START: frozenset[str] = frozenset()

    # Events are not urgent: shipping them less often than launches and
    # completions keeps the collector's share of two cores small.
    EVENT_FLUSH_EVERY = 5

    def __init__(self, rt: Runtime, name: str, metrics: Any, flush_interval: float) -> None:
        self.rt = rt
        self.name = name
        self.metrics = metrics
        self.flush_interval = flush_interval
        self._flushes = 0
        self._stopping = asyncio.Event()
        self._naps: set[asyncio.Future] = set()  # naps in progress: stop() ends them
        self._dozes: dict[str, asyncio.Future] = {}  # naps ``wake_early`` ends, by name, while in progress
        self._started = asyncio.Event()
        self.log = EventLog(name, rt.now)
        self._tasks: list[asyncio.Task] = []
        self.running = False

    async def ready(self) -> str:
        return self.name

    async def ping(self) -> None:
        return None

    # ------------------------------------------------ chaos (actors.chaos.timeline)

    def chaos_pause(self, seconds: float) -> None:
        """Freeze the whole actor, timers included, like a stopped process:
        a plain (not async) method blocks the actor's event loop."""
        self.rt.freeze(seconds)

    async def chaos_slow(self, delay_s: float, seconds: float, exempt: list[str]) -> None:
        self.rt.links.exempt = set(exempt)
        self.rt.links.slow(delay_s, seconds)

    async def chaos_partition(self, peers: list[str], seconds: float, at: float | None = None) -> None:
        """``at``: the emulated instant the cut begins, the same for every
        actor of the partition (None: now)."""
        start_in = 0.0 if at is None else self.rt.wall(max(0.0, at - self.rt.now()))
        self.rt.links.partition(peers, seconds, start_in)

    async def chaos_heal(self) -> None:
        self.rt.links.heal()

    async def hosts_stopping(self) -> None:
        """The run is about to stop the machine hosts: a keeper of the cell's
        state stops judging their silence (``watch``: its host watch, if it
        keeps one), or it would write off the whole cell at every run's end."""
        watch = getattr(self, "watch", None)
        if watch is not None:
            watch.stop()

    async def start(self, epoch: float) -> None:
        if self._stopping.is_set():
            # Stopped before it started (a restart's start still queued when
            # the run ended: Ray does not keep an async actor's calls in
            # order): starting now would run loops nobody stops.
            return
        if self.running:
            # Started already: the driver starts an actor once per part it
            # plays (a core actor and a routed one); a second start would
            # run every loop twice (two lease campaigns fought each other).
            return
        self.rt.set_epoch(epoch)
        self.running = True
        self._started.set()
        # Every incarnation says it is up: a restart after a fault shows here.
        self.log.emit(ACTOR_STARTED)
        self.spawn_loop(self._flush_loop())
        await self.on_start()

    def spawn_loop(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        task.add_done_callback(self._loop_ended)
        self._tasks.append(task)

    def _loop_ended(self, task: asyncio.Task) -> None:
        """A loop that dies of an error leaves the actor half alive (a master
        that no longer allocates, answering every call): never silent, it is
        logged and counted as an invariant (``crashed_loops``), so the run
        fails instead of reporting a quiet success."""
        if task.cancelled() or task.exception() is None:
            return
        e = task.exception()
        # Typeshed types get_coro() as an awaitable, which declares no __qualname__; a coroutine has it.
        loop = getattr(task.get_coro(), "__qualname__", task.get_name())
        self.log.emit(LOOP_CRASHED, loop=loop, error=f"{type(e).__name__}: {e}"[:500])

    async def on_start(self) -> None:
        """Subclasses start their own loops here."""

    def on_stopping(self) -> None:
        """Subclasses wake loops that wait on something other than a nap."""

    async def on_stop(self) -> Any:
        """Subclasses settle their state here; the return value goes to the driver."""
        return None

    async def flush(self, final: bool = False) -> None:
        """Send what is buffered; subclasses extend with their own batches and,
        when ``final``, wait for their deliveries before returning."""
        self._flushes += 1
        if not final and self._flushes % self.EVENT_FLUSH_EVERY:
            return
        await self._ship_events()

    async def _ship_events(self) -> None:
        """Hand every buffered event to the collector now, and return once it
        holds them. Events still buffered when the actor is killed die with
        it, so an actor about to tell a peer something the invariant checker
        must see first (a host confirming a kill) ships them before it says so."""
        lines = self.log.drain()
        if lines and self.metrics is not None:
            await self.rt.call(self.metrics, "record", lines)

    async def vouch(self, told: list[int]) -> list[int] | None:
        """A recovery's answer to the submitter (``Submitter.reroute``): the
        jobs it said scheduled, once their events are shipped; None when
        they could not be (the next recovery says them again). The
        submitter marks them ``scheduled_said`` (``said_before``) in later
        recoveries, so a job is re-said at most once, not at every restart:
        every recovery is handed every job ever routed to the scheduler,
        and re-saying them all made a long soak's events grow with restarts
        x jobs."""
        try:
            await self._ship_events()
        except Exception:
            return None
        return told

    async def nap_wall(self, seconds: float, wakeable: bool | str = False) -> bool:
        """Sleep ``seconds`` of wall time; False if stop() came meanwhile.
        ``wakeable``: ``wake_early`` may end it sooner (one such nap at a
        time per name; True is the unnamed one).

        One future and one timer per nap: every loop of every actor naps
        between rounds (a host once per batch interval), and
        ``asyncio.wait_for(event.wait())`` cost a task, its cancellation
        and about eight loop callbacks per nap."""
        if self._stopping.is_set():
            return False
        wake = asyncio.get_running_loop().create_future()
        # An endless nap (a loop waiting for ``wake_early``) sets no timer.
        timer = None if math.isinf(seconds) else wake.get_loop().call_later(max(0.0, seconds), _settle, wake)
        self._naps.add(wake)
        name = None if wakeable is False else "" if wakeable is True else wakeable
        if name is not None:
            self._dozes[name] = wake
        try:
            await wake
        finally:
            if timer is not None:
                timer.cancel()
            self._naps.discard(wake)
            if name is not None and self._dozes.get(name) is wake:
                del self._dozes[name]
        if self._stopping.is_set():
            return False
        await self.rt.sleep_wall(0)  # a frozen actor (a chaos pause on the sim engine) wakes when it thaws
        return self.running

    def wake_early(self, name: str = "") -> None:
        """End the wakeable nap ``name`` in progress, if any (its loop looks
        again at what is due)."""
        doze = self._dozes.get(name)
        if doze is not None:
            _settle(doze)

    async def nap(self, emulated: float) -> bool:
        """Sleep ``emulated`` seconds; False if stop() came meanwhile."""
        return await self.nap_wall(self.rt.wall(emulated))

    async def _flush_loop(self) -> None:
        # An actor with no batches of its own (``flush`` not overridden) has
        # only events to ship, every EVENT_FLUSH_EVERY intervals: waking it
        # in between does nothing, and on the sim engine those empty turns
        # are about a fifth of the event loop's work.
        # It ships only when there are events: it sleeps until the first one
        # of a batch is logged (an idle actor costs nothing), then ships
        # the batch EVENT_FLUSH_EVERY intervals later.
        if type(self).flush is not ActorShell.flush:
            while await self.nap_wall(self.flush_interval):
                await self.flush()
            return
        self.log.on_first = self.wake_early
        while True:
            if not len(self.log):
                if not await self.nap_wall(math.inf, wakeable=True):
                    return
                continue
            if not await self.nap_wall(self.flush_interval * self.EVENT_FLUSH_EVERY):
                return
            await self._ship_events()

    async def stop(self) -> Any:
        self.running = False
        self._stopping.set()
        if not self._started.is_set():
            # Never started: no loop ran, nothing was logged, and its peers
            # (a cell endpoint, a master link) were never bound; flushing
            # would call them unbound and stamp events before the epoch.
            return None
        for wake in list(self._naps):
            _settle(wake)
        self.on_stopping()
        done, late = await asyncio.wait(self._tasks, timeout=self.STOP_GRACE_S) if self._tasks else (set(), set())
        for t in late:  # a loop stuck on a dead peer: nothing left to save
            t.cancel()
        self._tasks.clear()
        result = await self.on_stop()
        await self.flush(final=True)
        return result
