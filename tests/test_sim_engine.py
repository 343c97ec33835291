"""The sim engine (actors/engines/sim_engine.py, virtual_loop.py): a virtual
clock that moves only when nothing is ready, messages after a modelled
latency and in order per channel, copies like Ray's, killed actors' tasks
cancelled, frozen actors deaf until they thaw, and runs that are the same
to the byte whatever the process (its hash seed) or the machine."""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from schedlab.actors.engines.sim_engine import SimActorError, SimEngine, SimTimeout
from schedlab.actors.engines.virtual_loop import Deadlock, VirtualLoop
from schedlab.actors.common.event_files import read_events
from schedlab.schedulers.events.shared import FAULT
from schedlab.schedulers.model.workload import Dist

ROOT = Path(__file__).resolve().parent.parent


def test_virtual_time_moves_only_to_the_next_timer() -> None:
    loop = VirtualLoop()
    seen: list[tuple[float, str]] = []

    async def tick(name: str, period: float, n: int) -> None:
        for _ in range(n):
            await asyncio.sleep(period)
            seen.append((round(loop.time(), 9), name))

    async def both() -> None:
        await asyncio.gather(tick("a", 1.0, 3), tick("b", 1.5, 2))

    loop.run_until_complete(both())
    assert seen == [(1.0, "a"), (1.5, "b"), (2.0, "a"), (3.0, "b"), (3.0, "a")]
    async def forever() -> None:
        await asyncio.Event().wait()  # nothing will ever set it

    with pytest.raises(Deadlock):
        loop.run_until_complete(forever())
    loop.close()


class Echo:
    def __init__(self, rt: object) -> None:
        self.rt = rt
        self.got: list = []

    async def take(self, x: list) -> list:
        self.got.append(x)
        x.append("touched")  # a copy: the sender's list stays as it was
        return x

    async def slow(self) -> str:
        await self.rt.sleep_wall(10.0)  # type: ignore[attr-defined]
        return "done"

    def pause(self, seconds: float) -> None:
        self.rt.freeze(seconds)  # type: ignore[attr-defined]


def test_calls_copy_arrive_in_order_and_take_the_modelled_latency() -> None:
    eng = SimEngine(scale=1.0, latency=Dist("constant", value=0.25), seed=1)
    eng.connect(None, "t")
    h = eng.spawn(Echo, "echo", "t", eng.runtime(1.0, "t"))
    arg = [1]
    t0 = eng.time()
    refs = [eng.call(h, "take", arg), eng.call(h, "take", [2]), eng.call(h, "take", [3])]
    assert eng.gather(refs) == [[1, "touched"], [2, "touched"], [3, "touched"]]
    assert arg == [1]
    assert eng.time() - t0 == pytest.approx(0.5)  # there and back
    assert [x[0] for x in h.actor.got] == [1, 2, 3]  # one channel: in order
    eng.shutdown()


def test_a_killed_actor_fails_calls_and_its_running_work_is_cancelled() -> None:
    eng = SimEngine(scale=1.0, seed=2)
    eng.connect(None, "t")
    h = eng.spawn(Echo, "echo", "t", eng.runtime(1.0, "t"))
    ref = eng.call(h, "slow")
    eng.sleep(1.0)
    eng.kill_all([h])
    assert isinstance(eng.outcomes([ref], timeout=5.0)[0], SimActorError)
    assert isinstance(eng.outcomes([eng.call(h, "take", [1])], timeout=5.0)[0], SimActorError)
    assert eng.lookup("echo", "t") is None
    again = eng.spawn(Echo, "echo", "t", eng.runtime(1.0, "t"))  # a restart: a new incarnation, same name
    assert again.key != h.key and eng.lookup("echo", "t") is again
    with pytest.raises(SimTimeout):
        eng.gather([eng.call(again, "slow")], timeout=2.0)
    eng.shutdown()


def test_a_killed_incarnation_is_freed_with_everything_it_held() -> None:
    """Every incarnation's handle stays known (a message may name it), but
    not its tasks, nor through them the dead actor: otherwise a restarted
    actor's predecessors pile up and a long run runs out of memory."""
    import gc
    import weakref

    eng = SimEngine(scale=1.0, seed=4)
    eng.connect(None, "t")
    h = eng.spawn(Echo, "echo", "t", eng.runtime(1.0, "t"))
    eng.gather([eng.call(h, "take", [1])])  # a finished task, kept in the handle's list
    eng.call(h, "slow")  # one still running when it dies
    eng.sleep(1.0)
    dead = weakref.ref(h.actor)
    eng.kill_all([h])
    eng.sleep(1.0)
    gc.collect()
    assert dead() is None
    eng.shutdown()


def test_a_frozen_actor_takes_no_message_until_it_thaws() -> None:
    eng = SimEngine(scale=1.0, latency=Dist("constant", value=0.001), seed=3)
    eng.connect(None, "t")
    h = eng.spawn(Echo, "echo", "t", eng.runtime(1.0, "t"))
    eng.gather([eng.call(h, "pause", 5.0)])
    t0 = eng.time()
    eng.gather([eng.call(h, "take", [1])])
    assert eng.time() - t0 == pytest.approx(5.0, abs=0.01)
    eng.shutdown()


def test_same_scenario_and_seed_give_the_same_files_to_the_byte(tmp_path: Path) -> None:
    """Each architecture of the flagship comparison, twice on the sim engine,
    in two processes with different hash seeds (a set of strings iterates
    in a different order in each): events.jsonl and summary.json identical.
    One process per hash seed runs them all (a process each would cost 2 s
    of imports, 28 s of the test with seven architectures)."""
    import tomllib

    archs = tomllib.loads((ROOT / "scenarios/architectures.toml").read_text())["architectures"]
    a, b = tmp_path / "a", tmp_path / "b"
    for out, salt in ((a, "1"), (b, "2")):
        env = {**os.environ, "PYTHONHASHSEED": salt}
        env.pop("RAY_ADDRESS", None)
        r = subprocess.run([sys.executable, "-m", "schedlab", "compare", "architectures", "--engine", "sim", "-q",
                            "--set", "duration=300", "--out", str(out)],
                           capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
    for arch in archs:
        for name in ("events.jsonl", "summary.json"):
            assert (a / arch / name).read_bytes() == (b / arch / name).read_bytes(), f"{arch}: {name} differs"
        assert (a / arch / "events.jsonl").stat().st_size > 10_000


def test_two_mesos_frameworks_give_the_same_files_whatever_the_hash_seed(tmp_path: Path) -> None:
    """The flagship comparison's Mesos has one framework; with two, the
    master's sends must not go in the order of a set of their names, or the
    run changes with PYTHONHASHSEED (two salts may agree for ~1,000
    emulated s: hence the whole 1,500 s scenario, ~3 s each)."""
    outs = []
    for salt in ("1", "4"):
        out = tmp_path / salt
        env = {**os.environ, "PYTHONHASHSEED": salt}
        env.pop("RAY_ADDRESS", None)
        r = subprocess.run([sys.executable, "-m", "schedlab", "run", "mesos_offers", "--engine", "sim", "-q", "--no-progress",
                            "--out", str(out)], capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stderr[-2000:]
        outs.append(out)
    for name in ("events.jsonl", "summary.json"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), f"{name} differs"


def test_a_fault_on_the_leader_during_an_election_waits_for_the_next_leader(tmp_path: Path) -> None:
    """``pause coordinator-leader`` a moment after the leader was killed: no
    leader exists while the group elects one, and the fault means whoever
    leads next, so it waits for the election (``waited_s``) and is carried
    out on the new leader, not skipped."""
    from schedlab.actors.run import run_scenario
    from schedlab.schedulers.scenario.parse import parse_scenario
    from tests.conftest import small_scenario_data

    data = small_scenario_data(duration=120.0) | {"engine": "sim", "coordinator": {"replicas": 3}}
    data["faults"] = [{"at": 40.0, "action": "kill_leader"},
                      {"at": 40.01, "action": "pause", "target": "coordinator-leader", "duration": 5.0}]
    summary = run_scenario(parse_scenario(data, "leader_wait.toml"), tmp_path)
    kill, pause = summary["faults"][:2]
    assert kill["kind"] == "kill_leader" and not kill.get("skipped"), kill
    assert pause["kind"] == "pause" and not pause.get("skipped"), pause
    assert pause["target"] != kill["target"]  # the new leader
    assert all(v == 0 for v in summary["invariants"].values()), summary["invariants"]
    faults = [e for e in read_events(tmp_path / "events.jsonl") if e["event"] == FAULT]
    assert faults[1]["waited_s"] > 0 and faults[1]["t"] > faults[0]["t"], faults[:2]
