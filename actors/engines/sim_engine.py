"""The sim engine: every actor of a run in this process, on a virtual clock.

The same shell classes as on Ray, through the same ``Runtime`` protocol.
The differences are the substrate's, by design:

* **Time** is a ``VirtualLoop``'s (a discrete-event kernel behind
  asyncio's interface): it moves only when nothing is ready to run,
  straight to the next timer. Its unit is the live engine's wall
  second, so every shell timer (a host's 0.05 s batch interval, Raft's
  15 ms tick) keeps its meaning; emulated time is that times the scale.
* **Messages** are delivered after a latency drawn from the scenario's
  ``[substrate] latency`` (emulated seconds, each way), from one seeded
  generator in the order messages are sent, and in order per sender and
  receiver (as Ray keeps them). Arguments and replies are copied (pickled),
  as Ray copies them: no actor sees another's objects.
* **Actors** run their methods as tasks on the one loop, interleaving at
  awaits as Ray's async actors do. Killing one cancels every task it owns
  (tasks are tagged with the actor whose code created them); calls to it
  fail with ``SimActorError``. A frozen actor (chaos pause) takes no
  message and wakes from no sleep until it thaws; a method already running
  when it froze runs on to its next await.

Deterministic: same scenario and seed, same events, to the byte (callbacks
and timers due at the same moment run in the order they were scheduled;
nothing reads the wall clock).
"""
from __future__ import annotations

import asyncio
import contextvars
import functools
import itertools
import pickle
import weakref
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, TypeVar

import numpy as np

from schedlab.actors.engines import ClusterUnreachable
from schedlab.actors.engines.link_faults import UNREACHABLE_AFTER_S, LinkFaults, Unreachable
from schedlab.actors.engines.reference_loop import ReferenceLoop
from schedlab.actors.engines.runtime import InlineBeside
from schedlab.actors.engines.virtual_loop import Deadlock, VirtualLoop
from schedlab.schedulers.model.workload import Dist


MIN_WAIT_S = 1e-9  # virtual wall seconds: the shortest positive wait


def _read_exception(fut: asyncio.Future) -> None:
    if not fut.cancelled():
        fut.exception()


def _settle(fut: asyncio.Future, value: Any, exc: BaseException | None) -> None:
    """A reply lands: the caller's future takes it, unless it stopped waiting."""
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
        # A caller killed meanwhile never reads it; like a Ray ObjectRef
        # nobody gets, that is no error to print.
        fut.add_done_callback(_read_exception)
    else:
        fut.set_result(value)


class SimActorError(RuntimeError):
    """The actor is dead (killed, or never started): Ray's RayActorError."""


class SimTimeout(TimeoutError):
    """The driver waited longer than its timeout (virtual seconds)."""


class Pending(Exception):
    """A call that had not answered when ``outcomes`` stopped waiting."""


_ENGINES: weakref.WeakValueDictionary[int, SimEngine] = weakref.WeakValueDictionary()
_ids = itertools.count(1)


def _handle_by_key(engine_id: int, key: str) -> SimHandle:
    return _ENGINES[engine_id].handles[key]


def _runtime_for(engine_id: int, scale: float, namespace: str) -> SimRuntime:
    return SimRuntime(_ENGINES[engine_id], scale, namespace)


@dataclass(eq=False)
class SimHandle:
    """A handle to one incarnation of a named actor. Pickling keeps it a
    reference (a message may carry a handle), never a copy of the actor."""

    engine_id: int
    name: str
    key: str
    actor: Any = None
    # Tasks this incarnation's code created, in creation order (killing it
    # cancels them in that order); done ones are pruned as the dict grows,
    # not each by a done-callback (one more loop callback per message).
    tasks: dict = field(default_factory=dict)
    prune_at: int = 64
    frozen_until: float = 0.0
    context: Any = None  # a Context whose ``current`` is this handle: copied for each message it takes
    namespace: str = ""

    def __reduce__(self) -> tuple:
        return _handle_by_key, (self.engine_id, self.key)

    def __repr__(self) -> str:
        return f"SimHandle({self.key})"


T = TypeVar("T")


class SimRuntime:
    """The Runtime for an actor of the sim engine (see actors.engines.runtime).
    Every actor gets its own (a spawn copies its arguments, this included),
    bound to the actor as its ``owner``."""

    def __init__(self, engine: SimEngine, scale: float, namespace: str) -> None:
        self._engine = engine
        self._scale = scale
        self.namespace = namespace
        self.epoch = 0.0
        self.owner: SimHandle | None = None
        self.links = LinkFaults(clock=engine.loop.time)

    def __reduce__(self) -> tuple:
        return _runtime_for, (self._engine.id, self._scale, self.namespace)

    @property
    def scale(self) -> float:
        return self._scale

    def set_epoch(self, epoch: float) -> None:
        self.epoch = epoch

    def now(self) -> float:
        return (self._engine.loop.time() - self.epoch) * self._scale

    def wall(self, emulated: float) -> float:
        # A wait for a moment due in a rounding error's time must still move
        # the clock: (t - epoch) * scale can sit a hair below a due time that
        # (due - now) / scale, added to t, no longer changes.
        w = emulated / self._scale
        return max(w, MIN_WAIT_S) if w > 0 else w

    def wall_clock(self) -> float:
        return self._engine.loop.time()

    def stamp(self) -> int:
        return self._engine.stamp()

    async def sleep(self, emulated: float) -> None:
        await asyncio.sleep(max(0.0, emulated / self._scale))
        await self._thawed()

    async def sleep_wall(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))
        await self._thawed()

    async def _thawed(self) -> None:
        """Return once this actor is not frozen (at once, mostly)."""
        loop = self._engine.loop
        while self.owner is not None and self.owner.frozen_until > loop.time():
            await asyncio.sleep(self.owner.frozen_until - loop.time())

    def freeze(self, seconds: float) -> None:
        if self.owner is not None:
            self.owner.frozen_until = max(self.owner.frozen_until, self._engine.loop.time() + seconds)

    def call(self, handle: Any, method: str, *args: Any) -> Awaitable[Any]:
        key = handle.key
        if self.links.active and key not in self.links.exempt:
            if self.links.blocked(key):
                return asyncio.ensure_future(self._unreachable(method))
            extra = self.links.delay()
        else:
            extra = 0.0
        return self._engine.request(self.owner, handle, method, args, extra_wall=extra)

    async def _unreachable(self, method: str) -> Any:
        await asyncio.sleep(UNREACHABLE_AFTER_S)
        raise Unreachable(f"{method}: partitioned from the callee")

    def send(self, handle: Any, method: str, *args: Any) -> None:
        key = handle.key
        extra = 0.0
        if self.links.active and key not in self.links.exempt:
            if self.links.blocked(key):
                return
            extra = self.links.delay()
        self._engine.deliver(self.owner, handle, method, args, None, extra_wall=extra)

    def lookup(self, name: str) -> Any | None:
        return self._engine.by_name.get((self.namespace, name))

    def beside(self, make: Callable[[Any], Awaitable[T]]) -> Awaitable[T]:
        """Inline (see ``Runtime.beside``): code takes no virtual time, so
        no pass can make a loop late."""
        return make(InlineBeside(self))


_ATOMS = frozenset({bytes, str, int, float, bool, type(None)})


def _copy(value: Any) -> Any:
    """What Ray's serialization does to a message: a deep copy. Immutable
    values (a plain atom, or a tuple of them: a host's poll is
    ``(host_id, bytes)``) are their own copy, so they skip the pickle."""
    kind = type(value)
    if kind in _ATOMS or (kind is tuple and all(type(v) in _ATOMS for v in value)):
        return value
    return pickle.loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


class SimEngine:
    """The driver's side of the sim engine (``actors.engines.current()``):
    the same calls as the live engine's module, run on the virtual loop."""

    name = "sim"
    deterministic = True
    ActorError = SimActorError
    TimeoutError = SimTimeout

    def __init__(self, scale: float = 1.0, latency: Dist | None = None, seed: int = 0,
                 loop: VirtualLoop | ReferenceLoop | None = None) -> None:
        """``loop``: the kernel to run on (a fresh ``VirtualLoop``; the kernel
        bench passes asyncio's own, ``ReferenceLoop``, to compare)."""
        self.id = next(_ids)
        _ENGINES[self.id] = self
        self.scale = scale
        self.latency = latency or Dist("constant", value=0.0005)
        self.rng = np.random.default_rng([seed, 0x51AE])
        self.loop = loop if loop is not None else VirtualLoop()
        self.loop.set_task_factory(self._task_factory)
        self.current: contextvars.ContextVar[SimHandle | None] = contextvars.ContextVar("sim_actor", default=None)
        self.handles: dict[str, SimHandle] = {}  # every incarnation, by key
        self.by_name: dict[tuple[str, str], SimHandle] = {}  # the live one, by (namespace, name)
        self.incarnations: dict[tuple[str, str], int] = {}
        self.home_namespace: str | None = None  # the driver's: its actors' keys name no namespace
        self.channel_free: dict[tuple[str, str], float] = {}  # (sender, receiver) -> last arrival
        self._stamp = 0
        self._draws: list[float] = []

    # ------------------------------------------------------------- runtime

    def runtime(self, scale: float, namespace: str) -> SimRuntime:
        return SimRuntime(self, scale, namespace)

    def stamp(self) -> int:
        """Grows with virtual time (microseconds) and with every call."""
        self._stamp = max(self._stamp + 1, int(self.loop.time() * 1e6))
        return self._stamp

    def _task_factory(self, loop: asyncio.AbstractEventLoop, coro: Any, context: Any = None) -> asyncio.Task:
        task = asyncio.Task(coro, loop=loop, context=context)
        owner = (context.get(self.current) if context is not None else self.current.get())
        if owner is not None:
            self._own(owner, task)
        return task

    @staticmethod
    def _own(owner: SimHandle, task: asyncio.Task) -> None:
        """``task`` is ``owner``'s: killing it cancels the task."""
        owner.tasks[task] = None
        if len(owner.tasks) >= owner.prune_at:
            owner.tasks = {t: None for t in owner.tasks if not t.done()}
            owner.prune_at = 2 * len(owner.tasks) + 64

    def _latency(self) -> float:
        """One message's delay in virtual wall seconds (the model is emulated)."""
        if not self._draws:
            self._draws = (np.maximum(self.latency.sample(self.rng, 4096), 0.0) / self.scale).tolist()
        return self._draws.pop()

    def request(self, sender: SimHandle | None, target: SimHandle, method: str, args: tuple,
                extra_wall: float = 0.0) -> asyncio.Future:
        """``deliver`` with a reply: the future its answer settles."""
        fut = self.loop.create_future()
        self.deliver(sender, target, method, args, fut, extra_wall)
        return fut

    def deliver(self, sender: SimHandle | None, target: SimHandle, method: str, args: tuple,
                fut: asyncio.Future | None, extra_wall: float = 0.0) -> None:
        """Send ``method(*args)`` to ``target``: it arrives after the latency,
        after the last message on the same channel, and (for a frozen target)
        once it thaws; the reply, if wanted (``fut``), comes back after a latency too."""
        loop = self.loop
        payload = _copy(args)
        channel = (sender.key if sender else "driver", target.key)
        # Not before the channel's last message (the loop runs timers due at
        # the same moment in the order they were set).
        at = max(loop.time() + self._latency() + extra_wall, self.channel_free.get(channel, -1.0))
        self.channel_free[channel] = at
        loop.post_at(at, self._arrive, (sender, target, method, payload, fut))

    def _arrive(self, sender: SimHandle | None, target: SimHandle, method: str, args: tuple,
                fut: asyncio.Future | None) -> None:
        loop = self.loop
        # A caller that stopped waiting (it timed out, or died) still sent
        # the message: as on Ray, the callee takes it; only the answer is
        # dropped (a caller that timed out on a paused callee counts what
        # it sent as sent, so the callee must still receive it).
        if target.actor is None:
            self._answer(fut, exc=SimActorError(f"{target.key} is dead ({method})"))
            return
        if target.frozen_until > loop.time():
            loop.post_at(target.frozen_until, self._arrive, (sender, target, method, args, fut))
            return
        ctx = target.context.copy()
        try:
            result = ctx.run(getattr(target.actor, method), *args)
        except Exception as e:
            self._answer(fut, exc=e)
            return
        if asyncio.iscoroutine(result):
            task = asyncio.Task(result, loop=loop, context=ctx)  # the target's: what the task factory would find in ctx
            self._own(target, task)
            if fut is not None:
                task.add_done_callback(functools.partial(self._finished, target, fut), context=ctx)
        else:
            self._answer(fut, value=result)

    def _finished(self, target: SimHandle, fut: asyncio.Future, task: asyncio.Task) -> None:
        if task.cancelled():
            self._answer(fut, exc=SimActorError(f"{target.key} died during the call"))
        elif task.exception() is not None:
            self._answer(fut, exc=task.exception())
        else:
            self._answer(fut, value=task.result())

    def _answer(self, fut: asyncio.Future | None, value: Any = None, exc: BaseException | None = None) -> None:
        if fut is None or fut.done():
            return
        delay = self._latency()
        payload = None if exc is not None else _copy(value)
        self.loop.post_at(self.loop.time() + delay, _settle, (fut, payload, exc))

    # -------------------------------------------------------------- driver

    def connect(self, address: str | None, namespace: str, loopback_only: bool = False) -> bool:
        if address:
            raise ClusterUnreachable("the sim engine runs every actor in this process: --address is for the live engine")
        asyncio.set_event_loop(self.loop)
        self.home_namespace = namespace
        return True

    def shutdown(self) -> None:
        for h in list(self.by_name.values()):
            self._kill(h)
        pending = [t for t in asyncio.all_tasks(self.loop) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        asyncio.set_event_loop(None)
        self.loop.close()
        _ENGINES.pop(self.id, None)

    def spawn(self, cls: type, name: str, namespace: str, *args: Any, node: str | None = None, **kwargs: Any) -> SimHandle:
        n = self.incarnations.get((namespace, name), 0)
        self.incarnations[(namespace, name)] = n + 1
        # Namespaces keep several cells' actors apart (a federation's sites
        # each have a machine-host-0); the driver's own keep plain keys.
        qualified = name if namespace == self.home_namespace or self.home_namespace is None else f"{namespace}/{name}"
        h = SimHandle(self.id, name, f"{qualified}#{n}", namespace=namespace)
        self.handles[h.key] = h
        args, kwargs = _copy((args, kwargs))
        for a in [*args, *kwargs.values()]:
            if isinstance(a, SimRuntime):
                a.owner = h
        ctx = contextvars.copy_context()
        ctx.run(self.current.set, h)
        h.context = ctx.copy()
        h.actor = ctx.run(cls, *args, **kwargs)
        self.by_name[(namespace, name)] = h
        return h

    def call(self, handle: SimHandle, method: str, *args: Any) -> asyncio.Future:
        return self.request(None, handle, method, args)

    def _run_until(self, aw: Any, timeout: float | None) -> Any:
        async def bounded() -> Any:
            return await asyncio.wait_for(aw, timeout)
        try:
            return self.loop.run_until_complete(bounded())
        except TimeoutError:
            raise SimTimeout(f"no answer within {timeout:g} virtual s") from None
        except Deadlock:
            raise SimTimeout("the run is deadlocked: nothing left to happen") from None

    def gather(self, refs: Any, timeout: float | None = 60.0) -> list[Any]:
        refs = list(refs)
        return self._run_until(asyncio.gather(*refs), timeout) if refs else []

    def outcomes(self, refs: list[Any], timeout: float) -> list[Any]:
        if refs:
            try:
                self._run_until(asyncio.wait(refs), timeout)
            except SimTimeout:
                pass
        out: list[Any] = []
        for r in refs:
            if not r.done():
                out.append(Pending())
            elif r.exception() is not None:
                out.append(r.exception())
            else:
                out.append(r.result())
        return out

    def up(self, live: dict[int, Any], starting: dict[int, Any]) -> dict[int, Any]:
        for i in [i for i, ref in starting.items() if ref.done()]:
            del starting[i]
        return {i: h for i, h in live.items() if i not in starting}

    def _kill(self, h: SimHandle) -> None:
        h.actor = None
        for t in list(h.tasks):
            if not t.done():
                t.cancel()
        # Every incarnation's handle is kept (a message may name it), so it must
        # not keep its tasks: a done task keeps its coroutine, and with it the
        # dead actor and everything it held (a restarted head's whole queue,
        # each time: memory that grows with every kill of a long run).
        h.tasks = {}
        if self.by_name.get((h.namespace, h.name)) is h:
            del self.by_name[(h.namespace, h.name)]

    def kill_all(self, handles: Any) -> None:
        for h in handles:
            self._kill(h)

    def lookup(self, name: str, namespace: str) -> SimHandle | None:
        return self.by_name.get((namespace, name))

    @staticmethod
    def actor_key(handle: SimHandle) -> str:
        return handle.key

    def time(self) -> float:
        return self.loop.time()

    def sleep(self, seconds: float) -> None:
        self.loop.run_until_complete(asyncio.sleep(seconds))

    @staticmethod
    def ship_by_value(fn: Any) -> None:
        """Everything is in this process already."""

    @staticmethod
    def cluster_nodes() -> list[tuple[str, str]]:
        return [("head", "sim")]

    @staticmethod
    def dead_nodes(ids: list[str]) -> set[str]:
        return set()

    @staticmethod
    def set_default_node(node: str | None) -> None:
        pass

    @staticmethod
    def gcs_address() -> str:
        return "sim"

    @staticmethod
    def is_loopback_only() -> bool:
        return True
