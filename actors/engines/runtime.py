"""The Runtime: everything an actor shell may use of the world.

A shell (an actor of the emulated system: machine host, scheduler,
framework, master, replica) is given a Runtime when it is built and reaches
clocks, sleeps, other actors and its own freezing only through it: no
``import ray``, no ``time.*``, no lookups of its own. That is what lets one
shell class run on every engine: ``actors.engines.ray_engine`` (live, Ray,
wall time scaled) and ``actors.engines.sim_engine`` (one process, a virtual
clock whose unit is the live engine's wall second). Asyncio primitives
(``asyncio.wait_for``, events, tasks) are fine: an engine runs the shell's
event loop.

Time comes in two kinds. *Emulated* seconds are the scenario's (``now``,
``sleep``). *Wall* seconds are the substrate's: Ray's round trips, a
timer's lateness, a lease's expiry; constants like "a host silent for 1
wall second is gone" are wall seconds, turned into emulated ones with
``scale`` (emulated seconds per wall second).
"""
from __future__ import annotations

from typing import Any, Awaitable, Callable, Protocol, TypeVar

from schedlab.actors.engines.link_faults import LinkFaults


T = TypeVar("T")


class Beside(Protocol):
    """What a loop run by ``Runtime.beside`` uses of its actor."""

    threaded: bool  # True: on its own thread and event loop, beside the actor's

    def to_actor(self, fn: Callable[..., Any], *args: Any) -> None:
        """``fn(*args)`` on the actor's own event loop (its state is that
        loop's: a threaded loop reads it, and changes it only through this)."""
        ...

    async def nap(self, seconds: float) -> None:
        """Sleep ``seconds`` of wall time, and on while the actor is frozen
        (a stopped process stops every thread)."""
        ...


class InlineBeside:
    """A ``Beside`` on the actor's own loop (``threaded`` False): what the
    sim engine's ``beside`` hands out, where nothing can make a loop late."""

    threaded = False

    def __init__(self, rt: Runtime) -> None:
        self._rt = rt

    @staticmethod
    def to_actor(fn: Callable[..., Any], *args: Any) -> None:
        fn(*args)

    async def nap(self, seconds: float) -> None:
        await self._rt.sleep_wall(seconds)


class Runtime(Protocol):
    links: LinkFaults  # the chaos tooling's partitions and slow links for this actor

    @property
    def scale(self) -> float:
        """Emulated seconds per wall second."""
        ...

    def set_epoch(self, epoch: float) -> None:
        """The run's start (every actor gets the same one with its start call)."""
        ...

    def now(self) -> float:
        """Emulated seconds since the run's epoch."""
        ...

    def wall(self, emulated: float) -> float:
        """Wall seconds that ``emulated`` seconds take."""
        ...

    def wall_clock(self) -> float:
        """A monotonic wall-clock reading in seconds, for measuring round
        trips and wall-time deadlines (differences only)."""
        ...

    def stamp(self) -> int:
        """A number larger than any this run's actors were handed before
        (within a millisecond's resolution): epochs and request-id bases that
        must grow across incarnations of an actor."""
        ...

    async def sleep(self, emulated: float) -> None: ...

    async def sleep_wall(self, seconds: float) -> None: ...

    def freeze(self, seconds: float) -> None:
        """Block this actor entirely (timers and calls included) for
        ``seconds`` wall seconds: a chaos pause, like a stopped process."""
        ...

    def call(self, handle: Any, method: str, *args: Any) -> Awaitable[Any]: ...

    def send(self, handle: Any, method: str, *args: Any) -> None: ...

    def lookup(self, name: str) -> Any | None:
        """The actor named ``name`` in this run, or None if there is none now."""
        ...

    def beside(self, make: Callable[[Beside], Awaitable[T]]) -> Awaitable[T]:
        """Run ``make(beside)`` where a busy actor does not delay it, and
        await its end: live, on its own thread with its own event loop (a
        long pass holds the actor's loop, and only the GIL's switch interval
        stands between such a thread and the CPU), as real systems keep a
        lease's renewal off the scheduling thread (a ZooKeeper client's
        session thread, an etcd keepalive stream); on the sim engine, where
        code takes no virtual time and nothing can be late, inline on the
        actor's loop (``threaded`` False: the same decisions, in the same
        order, as before this existed)."""
        ...
