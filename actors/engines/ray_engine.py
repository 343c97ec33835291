"""The live engine: the one door to Ray.

Actors receive a ``RayRuntime`` (the ``actors.engines.runtime.Runtime``
protocol) and reach the world only through it; the driver uses the module
functions (``connect``, ``spawn``, ``gather``, ``kill_all``). Every entry
point joins or starts Ray through ``connect``, never ``ray.init``.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterable, TypeVar

if "RAY_AUTH_MODE" not in os.environ and (Path.home() / ".ray" / "auth_token").is_file():
    # Ray starts local clusters with token auth and keeps the token there; a
    # joining driver sends it only when told to, before ray is imported.
    os.environ["RAY_AUTH_MODE"] = "token"

import ray  # noqa: E402
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: E402

from schedlab.actors import engines  # noqa: E402
from schedlab.actors.engines import verbosity  # noqa: E402
from schedlab.actors.engines.clock import Clock  # noqa: E402
from schedlab.actors.engines.link_faults import UNREACHABLE_AFTER_S, LinkFaults, Unreachable


T = TypeVar("T")


class ThreadBeside:
    """``RayRuntime.beside``'s handle for a loop on its own thread."""

    threaded = True

    def __init__(self, rt: RayRuntime, actor_loop: asyncio.AbstractEventLoop) -> None:
        self._rt = rt
        self._actor_loop = actor_loop
        self._failed: BaseException | None = None

    def to_actor(self, fn: Callable[..., Any], *args: Any) -> None:
        self._actor_loop.call_soon_threadsafe(self._run, fn, args)

    def _run(self, fn: Callable[..., Any], args: tuple) -> None:
        try:
            fn(*args)
        except Exception as e:  # the threaded loop ends with it at its next nap, and is reported
            self._failed = e

    async def nap(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        while (left := self._rt.frozen_until - time.monotonic()) > 0:
            await asyncio.sleep(left)
        if self._failed is not None:
            raise self._failed


class RayRuntime:
    """The Runtime (``actors.engines.runtime``) for actors living on Ray, in
    the run's namespace. Picklable: holds the clock, the namespace and the
    chaos tooling's link faults (none when it starts)."""

    def __init__(self, scale: float, namespace: str) -> None:
        self.clock = Clock(scale)
        self.namespace = namespace
        self.links = LinkFaults()
        self.frozen_until = 0.0  # monotonic wall s: loops beside the actor's (``beside``) wait for it too

    @property
    def scale(self) -> float:
        return self.clock.scale

    def set_epoch(self, epoch: float) -> None:
        self.clock.epoch = epoch

    def now(self) -> float:
        return self.clock.now()

    def wall(self, emulated: float) -> float:
        return self.clock.wall(emulated)

    def wall_clock(self) -> float:
        return time.monotonic()

    def stamp(self) -> int:
        return time.time_ns() // 1000

    async def sleep(self, emulated: float) -> None:
        await asyncio.sleep(max(0.0, self.clock.wall(emulated)))

    async def sleep_wall(self, seconds: float) -> None:
        await asyncio.sleep(seconds)

    def freeze(self, seconds: float) -> None:
        self.frozen_until = max(self.frozen_until, time.monotonic() + seconds)
        time.sleep(seconds)  # blocks the actor's event loop: nothing runs, as in a stopped process

    def beside(self, make: Callable[[Any], Awaitable[T]]) -> Awaitable[T]:
        """See ``Runtime.beside``: a daemon thread running its own event
        loop; its result or error comes back to the actor's loop (a loop
        that dies of an error is reported like any other)."""
        actor_loop = asyncio.get_running_loop()
        done: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                done.set_result(asyncio.run(make(ThreadBeside(self, actor_loop))))  # type: ignore[arg-type]
            except BaseException as e:  # handed to the awaiting loop, which reports it
                done.set_exception(e)

        threading.Thread(target=run, name="schedlab-beside", daemon=True).start()
        return asyncio.wrap_future(done)

    def lookup(self, name: str) -> Any | None:
        return lookup(name, self.namespace)

    def call(self, handle: Any, method: str, *args: Any) -> Awaitable[Any]:
        """Send now, await the reply later: the request leaves at call time,
        so a caller cancelled while awaiting has still delivered it."""
        if self.links.active:
            return asyncio.ensure_future(self._faulty_call(handle, method, args))
        return getattr(handle, method).remote(*args)

    async def _faulty_call(self, handle: Any, method: str, args: tuple) -> Any:
        key = actor_key(handle)
        if key not in self.links.exempt:
            if self.links.blocked(key):
                await asyncio.sleep(UNREACHABLE_AFTER_S)
                raise Unreachable(f"{method}: partitioned from the callee")
            delay = self.links.delay()
            if delay:
                await asyncio.sleep(delay)
        return await getattr(handle, method).remote(*args)

    def send(self, handle: Any, method: str, *args: Any) -> None:
        # Fire and forget: ordering between one caller and one actor is kept by
        # Ray (and by a uniform delay when the sender is slowed).
        if self.links.active:
            key = actor_key(handle)
            if key not in self.links.exempt:
                if self.links.blocked(key):
                    return
                delay = self.links.delay()
                if delay:
                    asyncio.get_running_loop().call_later(delay, lambda: getattr(handle, method).remote(*args))
                    return
        getattr(handle, method).remote(*args)


def actor_key(handle: Any) -> str:
    """A stable identity for an actor handle (what partitions are made of)."""
    return handle._actor_id.hex()


ClusterUnreachable = engines.ClusterUnreachable


def _check_reachable(address: str) -> None:
    """Fail in a second, with a clear message, instead of Ray's long retry loop."""
    if address in ("auto", "local") or address.startswith("ray://"):
        return
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=2.0):
            pass
    except (OSError, ValueError) as e:
        raise ClusterUnreachable(f"no Ray cluster at {address} ({e.__class__.__name__}: {e})") from None


# Set for processes a driver starts to join its loopback-only embedded Ray
# (a parallel sweep's runs): they must keep its 127.0.0.1 addresses too.
LOOPBACK_ENV = "SCHEDLAB_RAY_LOOPBACK"


def connect(address: str | None, namespace: str, loopback_only: bool = False) -> bool:
    """Join the cluster at ``address`` (or RAY_ADDRESS), else start an embedded
    local Ray. Returns True when this call started Ray (and so must stop it).
    If Ray is already initialised in this process (tests), it is reused."""
    if ray.is_initialized():
        return False
    address = address or os.environ.get("RAY_ADDRESS") or None
    if address:
        _check_reachable(address)
        if loopback_only or os.environ.get(LOOPBACK_ENV) == "1":
            _keep_loopback()  # joining an embedded run's Ray (see start_local)
        try:
            ray.init(address=address, namespace=namespace, **_log_options())
        except Exception as e:  # Ray raises several types here; the user needs one line
            detail = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            if "InvalidAuthToken" in str(e):
                detail = ("InvalidAuthToken: the cluster rejected this machine's Ray auth token "
                          "(a stale ~/.ray/auth_token from another cluster? move it aside and retry)")
            raise ClusterUnreachable(f"cannot join the Ray cluster at {address}: {detail[:300]}") from None
    else:
        # "local": a fresh embedded Ray, even if `ray start` left a cluster
        # (or its address file) on this machine; --address is how to join one.
        start_local(namespace=namespace)
    return True


def _keep_loopback() -> None:
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False


def is_loopback_only() -> bool:
    """Whether this process's Ray was started (or joined) loopback-only."""
    from ray._private import ray_constants

    return not ray_constants.ENABLE_RAY_CLUSTER


def _log_options() -> dict[str, Any]:
    """Actors' stdout/stderr and Ray's own logs to this terminal with ``-v``."""
    return {"logging_level": "INFO" if verbosity.verbose else "ERROR", "log_to_driver": verbosity.verbose}


def start_local(**kwargs: Any) -> None:
    """An embedded single-node Ray whose servers all listen on 127.0.0.1 only.
    Ray 2.60 swaps a loopback node IP for the machine's LAN address (and
    its servers then listen on every interface) unless Ray clusters are
    disabled, a flag services.py reads at call time; multi-node clusters
    (scripts/cluster.sh) cannot use this and listen as Ray decides."""
    _keep_loopback()
    ray.init(address="local", _node_ip_address="127.0.0.1", include_dashboard=False, **{**_log_options(), **kwargs})


def shutdown() -> None:
    ray.shutdown()


def gcs_address() -> str:
    """Where another process (the chaos script) joins this Ray."""
    return str(ray.get_runtime_context().gcs_address)


def current_namespace() -> str:
    return ray.get_runtime_context().namespace


def ship_by_value(fn: Any) -> None:
    """Make Ray pickle ``fn``'s module by value, so a user's policy defined in a
    script or a module that is not installed (importable here, not on the
    workers) still reaches the scheduler actors. Installed schedlab modules
    keep travelling by reference."""
    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    if module is None or module.__name__ == "__main__":
        return  # __main__ is pickled by value already
    root = module.__name__.split(".")[0]
    if root in ("schedlab", "numpy"):
        return
    try:
        ray.cloudpickle.register_pickle_by_value(module)
    except ValueError:
        pass  # a package without a file, already registered, etc.


_default_node: str | None = None


def set_default_node(node: str | None) -> None:
    """Where ``spawn`` puts actors not given a node (None: wherever Ray likes)."""
    global _default_node
    _default_node = node


def spawn(cls: type, name: str, namespace: str, *args: Any, node: str | None = None, **kwargs: Any) -> Any:
    """Start ``cls`` as a named async actor, on ``node`` (a node id) if given.
    Actors take no CPU slot: emulated machines are mostly asleep, and a
    2-core laptop must hold dozens of them."""
    remote_cls: Any = ray.remote(cls)
    opts: dict[str, Any] = dict(name=name, namespace=namespace, num_cpus=0, max_restarts=0, lifetime=None)
    node = node or _default_node
    if node is not None:
        opts["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id=node, soft=False)
    return remote_cls.options(**opts).remote(*args, **kwargs)


def cluster_nodes() -> list[tuple[str, str]]:
    """(label, node id) of every alive node, sorted by label. The label is
    the node's ``node-<i>`` resource (scripts/cluster.sh gives each node
    one), else a prefix of its id; the driver's own node sorts first
    otherwise."""
    out = []
    here = node_id()
    for n in ray.nodes():
        if not n.get("Alive"):
            continue
        tags = sorted(k for k in n.get("Resources", {}) if k.startswith("node-") and k[5:].isdigit())
        label = tags[0] if tags else ("head" if n["NodeID"] == here else n["NodeID"][:8])
        out.append((label, n["NodeID"]))
    return sorted(out, key=lambda x: (x[0] != "head", int(x[0][5:]) if x[0].startswith("node-") else 0, x[0]))


def dead_nodes(ids: list[str]) -> set[str]:
    """Which of these node ids Ray now reports dead."""
    alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")}
    return {i for i in ids if i not in alive}


def lookup(name: str, namespace: str) -> Any | None:
    """The live actor with this name, or None (dead, or never started)."""
    try:
        return ray.get_actor(name, namespace=namespace)
    except ValueError:
        return None


def call(handle: Any, method: str, *args: Any) -> Any:
    """Start a call from the driver; returns an object ref."""
    return getattr(handle, method).remote(*args)


def gather(refs: Iterable[Any], timeout: float | None = 60.0) -> list[Any]:
    """Wait for many refs at once (fan out, then wait; never get in a loop)."""
    return ray.get(list(refs), timeout=timeout)


class Pending(Exception):
    """A call that had not answered when ``outcomes`` stopped waiting."""


def outcomes(refs: list[Any], timeout: float) -> list[Any]:
    """Wait once, up to ``timeout`` in all, for many calls that may fail on
    their own (a dead actor): each entry is its result, the exception it
    raised, or ``Pending()``. One wait for all, not a get per call."""
    ready, _ = ray.wait(list(refs), num_returns=len(refs), timeout=timeout) if refs else ([], [])
    done = set(ready)
    out: list[Any] = []
    for ref in refs:
        if ref not in done:
            out.append(Pending())
            continue
        try:
            out.append(ray.get(ref))  # ready: returns (or raises) at once
        except Exception as e:  # the call's own failure, reported, not raised
            out.append(e)
    return out


def up(live: dict[int, Any], starting: dict[int, Any]) -> dict[int, Any]:
    """The members of ``live`` whose start call (in ``starting``, pruned here
    once answered) has returned. A member still starting cannot lead, and a
    call to it waits until Ray has started its worker (seconds when loaded)."""
    if starting:
        ready, _ = ray.wait(list(starting.values()), num_returns=len(starting), timeout=0)
        done = set(ready)
        for i in [i for i, ref in starting.items() if ref in done]:
            del starting[i]
    return {i: h for i, h in live.items() if i not in starting}


def kill_all(handles: Iterable[Any]) -> None:
    for h in handles:
        try:
            ray.kill(h, no_restart=True)
        except Exception:  # already dead: nothing to clean up
            pass


def node_id() -> str:
    return ray.get_runtime_context().get_node_id()


GetTimeoutError = ray.exceptions.GetTimeoutError
RayError = ray.exceptions.RayError


class RayEngine:
    """The live engine for the driver (``actors.engines.current()``): the
    module functions above, and the wall clock the driver keeps time by."""

    name = "ray"
    deterministic = False
    ActorError = RayError
    TimeoutError = GetTimeoutError

    def __init__(self, scale: float = 1.0, latency: Any = None, seed: int = 0) -> None:
        """``scale``, ``latency`` and ``seed`` are the sim engine's; Ray has
        its own latency, measured, not modelled."""

    def runtime(self, scale: float, namespace: str) -> RayRuntime:
        return RayRuntime(scale, namespace)

    def time(self) -> float:
        return time.time()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    connect = staticmethod(connect)
    shutdown = staticmethod(shutdown)
    spawn = staticmethod(spawn)
    call = staticmethod(call)
    gather = staticmethod(gather)
    outcomes = staticmethod(outcomes)
    up = staticmethod(up)
    kill_all = staticmethod(kill_all)
    lookup = staticmethod(lookup)
    actor_key = staticmethod(actor_key)
    ship_by_value = staticmethod(ship_by_value)
    cluster_nodes = staticmethod(cluster_nodes)
    dead_nodes = staticmethod(dead_nodes)
    set_default_node = staticmethod(set_default_node)
    gcs_address = staticmethod(gcs_address)
    is_loopback_only = staticmethod(is_loopback_only)
