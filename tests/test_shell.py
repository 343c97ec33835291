"""The actor shell's lifecycle contract (actors/common/shell.py), in plain
asyncio: a message that reaches an actor before the driver starts it (a
peer that found a restarted actor by name) waits for ``start``, so it never
reads the clock before the run's epoch is set."""
from __future__ import annotations

import asyncio

from schedlab.actors.common.shell import ActorShell
from schedlab.actors.engines.clock import Clock
from schedlab.actors.engines.link_faults import LinkFaults
from schedlab.schedulers.events.shared import LOOP_CRASHED


class WallRuntime:
    """Enough of the Runtime protocol for a shell: a real clock at scale 1."""

    scale = 1.0

    def __init__(self) -> None:
        self.clock = Clock(scale=1.0)
        self.links = LinkFaults()

    def set_epoch(self, epoch: float) -> None:
        self.clock.epoch = epoch

    def now(self) -> float:
        return self.clock.now()

    def wall(self, emulated: float) -> float:
        return emulated / self.scale

    async def sleep_wall(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class Echo(ActorShell):
    BEFORE_START = frozenset({"configure"})

    async def stamp(self) -> float:
        return self.rt.now()

    async def configure(self) -> str:
        return "configured"


def test_a_message_before_start_waits_for_the_epoch_and_setup_messages_do_not() -> None:
    async def scenario() -> None:
        import time

        actor = Echo(WallRuntime(), "echo", None, 1.0)
        early = asyncio.ensure_future(actor.stamp())
        assert await asyncio.wait_for(actor.configure(), 5) == "configured"
        await asyncio.sleep(0.05)
        assert not early.done()  # still waiting: its clock has no epoch yet
        await actor.start(time.time())
        stamped = await asyncio.wait_for(early, 5)
        assert 0.0 <= stamped < 5.0  # seconds since the epoch, not since 1970
        actor.running = False
        for task in actor._tasks:
            task.cancel()

    asyncio.run(scenario())


class HeldCell:
    """A cell endpoint whose rejoin answers only when the test says (the
    cell paused), failing first; it records the order of the host's calls."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.answer = asyncio.Event()
        self.fail_first = True

    def bind(self, *args: object) -> None:
        pass

    async def rejoin(self, host: int) -> list:
        self.calls.append("rejoin")
        if self.fail_first:
            self.fail_first = False
            raise ConnectionError("cut off")
        await self.answer.wait()
        return [[[7, 0]], []]

    async def exchange(self, host: int, finished: bytes) -> list:
        self.calls.append("exchange")
        return [[7, 0, 0, [1.0, 1.0], 5.0, 0.0]]  # its predecessor's launch, still in the cell's outbox


def test_a_restarted_host_polls_only_after_the_cell_heard_its_rejoin() -> None:
    """A restarted host's rejoin that fails is retried, and no poll goes out
    before one is answered: a poll overtaking it would hand the new
    incarnation its predecessor's launches (behind a paused head: tasks
    running twice)."""
    import time

    import numpy as np

    from schedlab.actors.common.machine_host import MachineHost

    async def scenario() -> list[str]:
        cell = HeldCell()
        host = MachineHost(WallRuntime(), 0, 0, np.full((1, 2), 4.0), cell, None, 0.01, rejoin=True)
        await host.start(time.time())
        await asyncio.sleep(0.1)  # many poll intervals while the rejoin waits
        before = list(cell.calls)
        cell.answer.set()
        for _ in range(500):
            if "exchange" in cell.calls:
                break
            await asyncio.sleep(0.01)
        host.running = False
        for task in host._tasks:
            task.cancel()
        return before + ["|"] + cell.calls[len(before):]

    calls = asyncio.run(scenario())
    assert calls[:2] == ["rejoin", "rejoin"], calls  # the failed one, then again at the next poll
    assert "exchange" not in calls[:calls.index("|")], calls
    assert "exchange" in calls, calls


def test_a_loop_that_dies_of_an_error_is_logged_and_counted_as_an_invariant() -> None:
    import json
    import time

    import numpy as np

    from schedlab.actors.analysis.invariants import invariants
    from schedlab.schedulers.model.cluster import Cell

    async def broken() -> None:
        raise ValueError("demands must be finite and >= 0")

    async def scenario() -> list[dict]:
        actor = Echo(WallRuntime(), "echo", None, 1.0)
        await actor.start(time.time())
        actor.spawn_loop(broken())
        await asyncio.sleep(0.05)
        actor.running = False
        for task in actor._tasks:
            task.cancel()
        return [json.loads(line) for line in actor.log.drain()]

    crashed = [e for e in asyncio.run(scenario()) if e["event"] == LOOP_CRASHED]
    assert len(crashed) == 1 and crashed[0]["loop"] == "test_a_loop_that_dies_of_an_error_is_logged_and_counted_as_an_invariant.<locals>.broken"
    assert "ValueError" in crashed[0]["error"] and crashed[0]["actor"] == "echo"
    cell = Cell(np.full((1, 2), 4.0), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), ())
    assert invariants({"loop_crashed": crashed}, cell, 1, None)["crashed_loops"] == 1


class ScriptedCell:
    """A cell endpoint that launches task (7, 0), then revokes it, then
    takes whatever the host reports; each exchange records the killed keys
    it carried and what the collector held when it arrived."""

    def __init__(self, collector: list[dict]) -> None:
        self.collector = collector
        self.replies: list[object] = [[[7, 0, 0, [1.0, 1.0], float("inf"), 0.0]], ([], [[7, 0]])]
        self.confirmed: list[tuple[list[tuple[int, int]], list[str]]] = []

    def bind(self, *args: object) -> None:
        pass

    async def exchange(self, host: int, finished: bytes) -> object:
        from schedlab.schedulers.model.wire import unpack_release_keys

        killed = [(j, t) for j, t, k in unpack_release_keys(finished) if k] if finished else []
        if killed:
            self.confirmed.append((killed, [e["event"] for e in self.collector]))
        return self.replies.pop(0) if self.replies else []


class CollectorRuntime(WallRuntime):
    """WallRuntime plus the one call a shell makes: shipping events to the collector."""

    def __init__(self, collector: list[dict]) -> None:
        super().__init__()
        self.collector = collector

    async def call(self, handle: object, method: str, *args: object) -> None:
        import json

        assert method == "record"
        self.collector.extend(json.loads(line) for line in args[0])  # type: ignore[attr-defined]


def test_a_host_ships_its_kill_events_before_it_confirms_the_kill() -> None:
    """Once the cell hears of a kill it may place the task again on another
    host at once; if this host is then killed before its next event batch,
    a tasks_killed still in its buffer dies with it and the checker sees the
    task on two machines (a false double placement: a preempted task placed
    again elsewhere and its first host killed soon after). So the kill is
    shipped first."""
    import time

    import numpy as np

    from schedlab.actors.common.machine_host import MachineHost

    async def scenario() -> ScriptedCell:
        collector: list[dict] = []
        cell = ScriptedCell(collector)
        host = MachineHost(CollectorRuntime(collector), 0, 0, np.full((1, 2), 4.0), cell, object(), 0.01)
        await host.start(time.time())
        for _ in range(500):
            if cell.confirmed:
                break
            await asyncio.sleep(0.01)
        host.running = False
        for task in host._tasks:
            task.cancel()
        return cell

    cell = asyncio.run(scenario())
    assert cell.confirmed, "the host never reported the kill"
    killed, shipped = cell.confirmed[0]
    assert killed == [(7, 0)]
    assert "tasks_launched" in shipped and "tasks_killed" in shipped, shipped


class UnboundCell:
    """A cell endpoint that fails any call made before ``bind`` (the
    replicated endpoint keeps its runtime only from ``bind``)."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def bind(self, *args: object) -> None:
        self.calls.append("bind")

    async def rejoin(self, host: int) -> list:
        self.calls.append("rejoin")
        return [[], []]

    async def exchange(self, host: int, finished: bytes) -> list:
        self.calls.append("exchange")
        return []


def test_an_actor_stopped_before_it_started_stays_stopped_and_calls_nobody() -> None:
    """An actor restarted just before the run ends can be stopped before its
    ``start`` runs (Ray keeps no order among an async actor's calls): its
    final flush must not call peers it never bound, nor stamp events at
    seconds since 1970. Stop before start is a no-op, and a start that comes
    after it starts nothing."""
    import time

    import numpy as np

    from schedlab.actors.common.machine_host import MachineHost

    async def scenario() -> tuple[object, UnboundCell, MachineHost]:
        cell = UnboundCell()
        host = MachineHost(WallRuntime(), 2, 10, np.full((5, 2), 8.0), cell, None, 0.01, rejoin=True)
        result = await asyncio.wait_for(host.stop(), 5)
        await asyncio.wait_for(host.start(time.time()), 5)
        await asyncio.sleep(0.05)  # many poll intervals, had a loop started
        return result, cell, host

    result, cell, host = asyncio.run(scenario())
    assert result is None
    assert cell.calls == [], cell.calls
    assert host._tasks == [] and not host.running
    assert host.log.drain() == []
