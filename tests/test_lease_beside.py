"""A leader-by-lease on the live engine keeps its lease through a long pass
that holds its event loop (its campaign renews from its own thread,
``Runtime.beside``, as a real coordination client renews from its own),
and loses it when its process is stopped (a chaos pause stops every thread).

The same member with its campaign on its own loop (as before ``beside``)
is run too: it must lose the lease through the same pass, or the first
test shows nothing."""
from __future__ import annotations

import asyncio
import math
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from schedlab.actors.coordinator.group import CoordinatorGroup
from schedlab.actors.coordinator.lease import LeaseCampaign
from schedlab.actors.engines import ray_engine
from schedlab.actors.engines.runtime import InlineBeside
from schedlab.schedulers.consensus.lease import LeaseMachineFactory
from schedlab.schedulers.scenario.parse import CoordinatorSpec

pytestmark = pytest.mark.ray

LEASE_WALL_S = 0.4
HELD_FOR_S = 5 * LEASE_WALL_S  # a pass, or a pause, several leases long


class Member:
    """The smallest leader-by-lease: a ``LeaseCampaign`` and the books it
    keeps (the attributes and callbacks the Mesos masters, YARN RMs, SLURM
    controllers and web balancers give theirs)."""

    def __init__(self, rt: Any, name: str, replicas: int, on_its_loop: bool) -> None:
        self.rt = rt
        if on_its_loop:
            rt.beside = lambda make: make(InlineBeside(rt))  # the campaign on the actor's own loop
        self.running = True
        self.lease_until = -math.inf
        self.leader_hint: str | None = None
        self.leads = False
        self.epoch = 0
        self.took: list[int] = []
        self.stepped: list[int] = []
        self.campaign = LeaseCampaign(name, replicas, rt, LEASE_WALL_S)

    async def start(self, epoch: float) -> None:
        self.rt.set_epoch(epoch)
        self.task = asyncio.get_running_loop().create_task(
            self.campaign.run(self, lambda: self.leads, lambda: self.epoch, self._take_over, self._step_down))

    async def nap_wall(self, seconds: float) -> bool:
        await asyncio.sleep(seconds)
        return self.running

    def _take_over(self, epoch: int) -> None:
        self.leads, self.epoch = True, epoch
        self.took.append(epoch)

    def _step_down(self) -> None:
        self.leads = False
        self.stepped.append(self.epoch)

    async def busy(self, seconds: float) -> None:
        """A long synchronous pass: the event loop is held throughout."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            sum(range(1000))

    async def pause(self, seconds: float) -> None:
        self.rt.freeze(seconds)

    async def state(self) -> dict:
        return {"leads": self.leads and self.rt.now() < self.lease_until, "took": list(self.took),
                "stepped": list(self.stepped)}

    async def stop(self) -> None:
        self.running = False


@pytest.fixture
def lease_group(ray_session: None, tmp_path: Path) -> Iterator[CoordinatorGroup]:
    import ray

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import a test module
    ns = f"schedlab-test-{uuid.uuid4().hex[:6]}"
    g = CoordinatorGroup(CoordinatorSpec(replicas=3, heartbeat_ms=45.0, election_ms=(150.0, 300.0)), ns, tmp_path,
                         LeaseMachineFactory(), ray_engine.RayRuntime(1.0, ns), None, 1, None, lambda h: None)
    g.spawn_all()
    g.start(time.time())
    yield g
    ray_engine.kill_all(list(g.live.values()))
    ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _members(g: CoordinatorGroup, names: list[str], on_its_loop: bool = False) -> list[Any]:
    hs = [ray_engine.spawn(Member, n, g.namespace, ray_engine.RayRuntime(1.0, g.namespace), n, 3, on_its_loop)
          for n in names]
    ray_engine.gather([h.start.remote(g.epoch) for h in hs])
    return hs


def _state(h: Any) -> dict:
    return ray_engine.gather([h.state.remote()])[0]


def _until(cond: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not cond():
        assert time.monotonic() < deadline, f"not within {within:g} s: {what}"
        time.sleep(0.05)


def _held_through_a_long_pass(g: CoordinatorGroup, on_its_loop: bool) -> dict:
    (a,) = _members(g, ["leader-a"], on_its_loop)
    try:
        _until(lambda: _state(a)["leads"], "the member wins the lease")
        ray_engine.gather([a.busy.remote(HELD_FOR_S)])
        # Three campaign periods: any lapse is seen and acted on by then.
        time.sleep(3 * LEASE_WALL_S / 4)
        _until(lambda: _state(a)["leads"], "the member leads after the pass")
        return _state(a)
    finally:
        ray_engine.gather([a.stop.remote()])
        ray_engine.kill_all([a])


def test_a_leader_keeps_its_lease_through_a_pass_that_holds_its_loop(lease_group: CoordinatorGroup) -> None:
    s = _held_through_a_long_pass(lease_group, on_its_loop=False)
    assert s["took"] == [1] and s["stepped"] == [], s


def test_on_its_own_loop_the_same_pass_loses_the_lease(lease_group: CoordinatorGroup) -> None:
    s = _held_through_a_long_pass(lease_group, on_its_loop=True)
    assert len(s["took"]) == 2 and s["took"][0] == 1 and s["took"][1] > 1, s  # lapsed: won again, a new epoch


def test_a_paused_leader_loses_its_lease_to_a_standby(lease_group: CoordinatorGroup) -> None:
    a, b = _members(lease_group, ["leader-a", "leader-b"])
    try:
        _until(lambda: _state(a)["leads"] or _state(b)["leads"], "one member wins the lease")
        first, second = (a, b) if _state(a)["leads"] else (b, a)
        paused = first.pause.remote(HELD_FOR_S)
        _until(lambda: _state(second)["leads"], "the standby takes over while the leader is paused")
        ray_engine.gather([paused])
        _until(lambda: _state(first)["stepped"] == [1], "the paused leader steps down once it runs again")
        assert _state(second)["took"] == [2] and not _state(first)["leads"]
    finally:
        ray_engine.gather([a.stop.remote(), b.stop.remote()])
        ray_engine.kill_all([a, b])
