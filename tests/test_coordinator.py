"""Coordinator replicas on a real local Ray: election, replication through
the client, leader failover and restart from disk, nothing lost."""
from __future__ import annotations

import asyncio
import time
import uuid
from pathlib import Path
import pytest

from schedlab.actors.engines import ray_engine
from schedlab.schedulers.consensus.statemachine import KVStateMachine
from schedlab.actors.coordinator.replica import replica_name
from schedlab.actors.coordinator.client import CoordinatorClient
from schedlab.actors.coordinator.group import CoordinatorGroup
from schedlab.schedulers.scenario.parse import CoordinatorSpec

pytestmark = pytest.mark.ray


def make_group(n: int, root: Path, snapshot_threshold: int = 1000) -> CoordinatorGroup:
    """The driver-side group run.py uses, over the example KV state machine."""
    ns = f"schedlab-test-{uuid.uuid4().hex[:6]}"
    g = CoordinatorGroup(CoordinatorSpec(replicas=n, snapshot_threshold=snapshot_threshold, heartbeat_ms=45.0,
                                         election_ms=(150.0, 300.0)), ns, root, KVStateMachine,
                         ray_engine.RayRuntime(1.0, ns), None, 1, None, lambda h: None)
    g.spawn_all()
    g.start(time.time())
    return g


def client(g: CoordinatorGroup, cid: str) -> CoordinatorClient:
    return CoordinatorClient(cid, g.spec.replicas, ray_engine.RayRuntime(1.0, g.namespace))


def applied_once(records: list[tuple]) -> dict[tuple[str, int], int]:
    """(client, request) -> distinct log index it was applied at (not as a
    duplicate). A replay of the same index after a restart is not a second
    application; the same request at two indices would be."""
    at: dict[tuple[str, int], set[int]] = {}
    for index, _term, client, rid, flag in records:
        if client is not None and not flag:
            at.setdefault((client, rid), set()).add(index)
    for key, indices in at.items():
        assert len(indices) == 1, f"{key} applied at {sorted(indices)}"
    return {k: next(iter(v)) for k, v in at.items()}


@pytest.fixture
def group3(ray_session: None, tmp_path: Path):
    g = make_group(3, tmp_path)
    yield g
    ray_engine.kill_all(list(g.live.values()))


@pytest.fixture
def group3_snap(ray_session: None, tmp_path: Path):
    g = make_group(3, tmp_path, snapshot_threshold=5)
    yield g
    ray_engine.kill_all(list(g.live.values()))


@pytest.fixture
def group5(ray_session: None, tmp_path: Path):
    g = make_group(5, tmp_path)
    yield g
    ray_engine.kill_all(list(g.live.values()))


def test_elects_one_leader_and_replicates_in_order(group3: CoordinatorGroup) -> None:
    group3.wait_leader()
    c = client(group3, "c1")

    async def go() -> list[int]:
        return [await c.submit(("incr", "x")) for _ in range(20)]

    assert asyncio.run(go()) == list(range(1, 21))
    time.sleep(0.3)  # followers learn the last commit index on the next heartbeat
    per_replica = {i: applied_once(r) for i, r in group3.applied().items()}
    acked = {("c1", a.request_id) for a in c.acks}
    for i, applied in per_replica.items():
        assert acked <= set(applied), f"replica {i} misses acknowledged commits"
    # State machine safety: every replica applied the same request at the same index.
    assert len({tuple(sorted(a.items())) for a in per_replica.values()}) == 1


def test_leader_failover_loses_nothing_and_applies_nothing_twice(group5: CoordinatorGroup) -> None:
    """Kill the leader twice while a client keeps writing; every command the
    client saw acknowledged is applied exactly once on every survivor."""
    c = client(group5, "c2")

    async def write(n: int) -> None:
        for _ in range(n):
            await c.submit(("incr", "y"), deadline=20.0)

    group5.wait_leader()
    asyncio.run(write(10))
    killed = []
    for _ in range(2):
        leader = group5.wait_leader()
        t0 = time.time()
        group5.kill(leader["replica"])
        killed.append(leader["replica"])
        asyncio.run(write(10))  # blocks across the election
        new = group5.wait_leader(newer_than=leader["term"])
        assert new["replica"] != leader["replica"] and new["term"] > leader["term"]
        assert time.time() - t0 < 15
    assert [a.result for a in c.acks] == list(range(1, 31))
    time.sleep(0.3)
    for i, records in group5.applied().items():
        applied = applied_once(records)
        missing = {("c2", a.request_id) for a in c.acks} - set(applied)
        assert not missing, f"replica {i} lost acknowledged commits {sorted(missing)}"


@pytest.mark.parametrize("fixture", ["group3", "group3_snap"])
def test_restarted_replica_recovers_from_disk_and_catches_up(fixture: str, request: pytest.FixtureRequest) -> None:
    """With a snapshot every 5 entries, the leader has compacted past what the
    restarted follower holds: it catches up by InstallSnapshot, and every
    replica's snapshot is on disk."""
    group3: CoordinatorGroup = request.getfixturevalue(fixture)
    c = client(group3, "c3")
    group3.wait_leader()
    asyncio.run(c.submit(("set", "k", 1)))
    follower = next(s["replica"] for s in group3.statuses() if s["role"] != "leader")
    group3.kill(follower)

    async def more() -> None:
        for v in range(2, 12):
            await c.submit(("set", "k", v))

    asyncio.run(more())
    group3.restart(follower)  # same name, same directory: a new incarnation
    end = time.time() + 30  # the new actor takes seconds to start on a busy machine

    def caught_up() -> bool:
        st = {s["replica"]: s for s in group3.statuses()}
        return follower in st and st[follower]["last_applied"] >= max(s["last_applied"] for s in st.values()) > 0

    while time.time() < end and not caught_up():
        time.sleep(0.05)
    st = {s["replica"]: s for s in group3.statuses()}
    assert st[follower]["last_applied"] == max(s["last_applied"] for s in st.values())
    records = group3.applied()[follower]
    if group3.spec.snapshot_threshold < 1000:
        assert all((group3.dir / replica_name(i) / "snapshot").exists() for i in range(3))
        # The follower caught up by a snapshot covering what it missed.
        assert any(flag == "snapshot" for *_x, flag in records)
    else:
        applied = applied_once(records)
        assert {("c3", a.request_id) for a in c.acks} <= set(applied)
