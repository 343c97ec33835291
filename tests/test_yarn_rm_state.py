"""The YARN ResourceManager's state machine (schedulers.archs.yarn.rm_state)
driven end to end with ApplicationMaster cores and a tiny fake node loop on
a manual clock: admission, AM launch, the allocate protocol, preemption,
node loss with AM attempt retry, work-preserving RM restart, and the
invariants (no overcommit, no container handed out twice, nothing running
twice, every task finished exactly once)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from schedlab.schedulers.archs.yarn.app_master import AMConfig, AppMasterCore
from schedlab.schedulers.archs.yarn.capacity import (
    CapacityConfig,
    CapacityPreemption,
    CapacityScheduler,
)
from schedlab.schedulers.archs.yarn.events import AM_ALLOCATED, AM_ATTEMPT, AM_LAUNCHED, CONTAINER_FINISHED
from schedlab.schedulers.archs.yarn.fair import FairConfig, FairScheduler
from schedlab.schedulers.archs.yarn.fifo import FifoScheduler
from schedlab.schedulers.archs.yarn.locality import LocalityDelay
from schedlab.schedulers.archs.yarn.messages import (
    AM_TASK,
    GONE,
    LOST,
    OK,
    PREEMPTED,
    RESYNC,
    STALE,
    AppRecord,
    RunningReport,
    TaskSpec,
    owner_container,
)
from schedlab.schedulers.archs.yarn.queues import QueueSpec, QueueTree
from schedlab.schedulers.archs.yarn.requests import TaskAsk
from schedlab.schedulers.archs.yarn.rm_books import APP_FAILED, APP_FINISHED, STARTED, RMConfig
from schedlab.schedulers.archs.yarn.rm_state import RMState
from schedlab.schedulers.archs.yarn.scheduler import ClusterState
from schedlab.schedulers.model.resources import EPS

NODE = (4.0, 8.0)
AM = (1.0, 1.0)


def tree(capacity: bool = True) -> QueueTree:
    return QueueTree.build([QueueSpec("root.a", capacity=50, user_limit_factor=2),
                            QueueSpec("root.b", capacity=50, user_limit_factor=2)], check_capacity=capacity)


def make_scheduler(kind: str, nodes: int = 4, node: tuple[float, float] = NODE, *, global_scheduling: bool = False,
                   preemption: CapacityPreemption | None = None) -> CapacityScheduler | FairScheduler | FifoScheduler:
    state = ClusterState(np.array([node] * nodes), np.arange(nodes) // 2, tree(kind != "fair"))
    if kind == "capacity":
        return CapacityScheduler(state, CapacityConfig(locality=LocalityDelay(2, 1), global_scheduling=global_scheduling,
                                                       preemption=preemption or CapacityPreemption()))
    if kind == "fair":
        return FairScheduler(state, FairConfig(locality=LocalityDelay(1, 1), assign_multiple=True,
                                               global_scheduling=global_scheduling))
    return FifoScheduler(state)


def record(app: int, queue: str, n: int, *, duration: float = 3.0, size: tuple[float, float] = (1.0, 2.0),
           at: float = 0.0, nodes: int = 4, am: tuple[float, float] = AM) -> AppRecord:
    tasks = tuple(TaskSpec(i, size, duration + (i % 3), preferred=((app + i) % nodes, (app + i + 1) % nodes))
                  for i in range(n))
    return AppRecord(app, queue, f"u{app % 2}", tasks, am, submitted_at=at)


@dataclass
class FakeNode:
    """A NodeManager: runs what it is told for its duration."""

    capacity: np.ndarray
    running: dict[tuple[int, int], tuple[float, np.ndarray, int]] = field(default_factory=dict)  # -> (end, req, cid)
    unsent: list[tuple[int, int]] = field(default_factory=list)
    recently_done: list[tuple[int, int]] = field(default_factory=list)
    alive: bool = True

    def used(self) -> np.ndarray:
        return sum((r for _e, r, _c in self.running.values()), np.zeros(2))


class Loop:
    """RMState + AM cores + fake nodes on a manual clock; checks the
    invariants as it goes (assertions inside, so any test driving it can
    fail on them)."""

    def __init__(self, rm: RMState, *, seed: int = 0, am_config: AMConfig | None = None) -> None:
        self.rm = rm
        self.rng = np.random.default_rng(seed)
        self.now = 0.0
        self.nodes = [FakeNode(c.copy()) for c in rm.node_capacity]
        self.ams: dict[int, AppMasterCore] = {}
        self.am_config = am_config or AMConfig()
        self.records: dict[int, AppRecord] = {}
        self.pending: list[AppRecord] = []
        self.launched_cids: set[int] = set()
        self.launches: dict[tuple[int, int], int] = {}  # (app, task) -> times launched
        self.kills_delivered = 0
        self.done_apps: set[int] = set()
        self.events: list[dict] = []
        self.preempt = False
        self.am_launches: dict[int, int] = {}

    # -------------------------------------------------------------- driving

    def submit(self, rec: AppRecord) -> None:
        self.pending.append(rec)
        self.records[rec.app_id] = rec

    def drain(self) -> None:
        self.events += self.rm.take_events()

    def heartbeat(self, n: int) -> None:
        node = self.nodes[n]
        if not node.alive:
            return
        for key, (end, _req, _cid) in list(node.running.items()):
            if end <= self.now + 1e-9:
                del node.running[key]
                node.unsent.append(key)
                node.recently_done.append(key)
        reply = self.rm.node_heartbeat(n, node.unsent, self.now)
        node.unsent = []
        if reply.resync:
            reports = [RunningReport(cid, a, t, tuple(req.tolist())) for (a, t), (_e, req, cid) in node.running.items()]
            self.rm.recover_node(n, reports, self.now, finished=list(node.recently_done))
            return
        if reply.reset:
            for key in list(node.running):
                self._gone(n, key)
        for app, task in reply.kills:
            if (app, task) in node.running:
                self.kills_delivered += app not in self.done_apps  # not the clean-up of a finished app
                self._gone(n, (app, task))
        for app, task, m, req, duration, start, owner in reply.launches:
            assert m == n
            key = (app, task)
            assert not any(key in other.running for other in self.nodes if other.alive), f"{key} runs twice"
            cid = owner_container(owner)
            assert cid is not None and cid not in self.launched_cids, f"container {cid} handed out twice"
            self.launched_cids.add(cid)
            self.launches[key] = self.launches.get(key, 0) + 1
            r = np.asarray(req)
            node.running[key] = (start + duration, r, cid)
            assert np.all(node.used() <= node.capacity + EPS), f"node {n} over capacity"
        for app, attempt in reply.am_started:
            self.am_launches[app] = self.am_launches.get(app, 0) + 1
            self.ams[app] = AppMasterCore(self.records[app], attempt=attempt, finished=self.rm.finished_tasks(app),
                                          config=self.am_config)

    def _gone(self, n: int, key: tuple[int, int]) -> None:
        del self.nodes[n].running[key]
        if key[1] == AM_TASK:
            self.ams.pop(key[0], None)  # the AM's process ends with its container

    def am_step(self, app: int) -> None:
        am = self.ams[app]
        call = am.next_call()
        reply = self.rm.am_allocate(app, call.asks, call.releases, call.starts, self.now, attempt=call.attempt)
        status = am.on_reply(reply)
        if status == RESYNC:
            r = am.resync()
            am.on_reply(self.rm.recover_app(app, list(r.asks), attempt=r.attempt, containers=r.containers,
                                            finished=r.finished, now=self.now))
        if am.stopped:
            del self.ams[app]
            return
        if am.done:
            self.rm.finish_app(app, self.now)
            self.done_apps.add(app)
            del self.ams[app]

    def tick(self, dt: float = 1.0) -> None:
        self.now += dt
        for rec in [r for r in self.pending if r.submitted_at <= self.now]:
            self.pending.remove(rec)
            assert self.rm.submit(rec, self.now).accepted
        for n in self.rng.permutation(len(self.nodes)):
            self.heartbeat(int(n))
        for app in self.rng.permutation(sorted(self.ams)):
            if int(app) in self.ams:
                self.am_step(int(app))
        if self.preempt:
            self.rm.preempt(self.now)
        if self.rm.global_scheduling:
            self.rm.schedule(self.now)
        self.drain()
        self.check()

    def run(self, until: float = 300.0, apps: int | None = None) -> None:
        want = len(self.records) if apps is None else apps
        while len(self.done_apps) < want and self.now < until:
            self.tick()

    # -------------------------------------------------------------- invariants

    def check(self) -> None:
        rm, st_ = self.rm, self.rm.state
        used = np.zeros_like(st_.capacity)
        for c in st_.containers.values():
            used[c.node] += c.resources
        assert np.allclose(st_.capacity - st_.free, used), "RM node books drifted"
        assert np.all(st_.free >= -EPS), "RM over-allocated a node"
        for cid, h in rm.held.items():
            node = self.nodes[h.node]
            if h.phase == STARTED and node.alive:
                got = node.running.get((h.app_id, h.task_id))
                assert got is not None and got[2] == cid, f"RM thinks {cid} runs on {h.node}"
        for am in self.ams.values():
            sets = [set(am.finished), set(am.to_ask), set(am.asked), set(am.holding.values())]
            assert sum(len(s) for s in sets) == len(am.tasks) and set().union(*sets) == set(am.tasks)

    def finished_once(self) -> None:
        """Every task of every app finished exactly once (as the RM counted)."""
        done: dict[tuple[int, int], int] = {}
        for e in self.events:
            if e["event"] == CONTAINER_FINISHED:
                k = (e["app"], e["task"])
                done[k] = done.get(k, 0) + 1
        want = {(a, t.task_id) for a, r in self.records.items() for t in r.tasks}
        assert set(done) == want and set(done.values()) == {1}

    def kinds(self, kind: str) -> list[dict]:
        return [e for e in self.events if e["event"] == kind]


def fresh(kind: str = "capacity", nodes: int = 4, seed: int = 0, **kw: object) -> Loop:
    glob = bool(kw.pop("global_scheduling", False))
    rm = RMState(make_scheduler(kind, nodes, global_scheduling=glob, **kw))  # type: ignore[arg-type]
    return Loop(rm, seed=seed)


# ------------------------------------------------------------ admission and the basic flow

def test_unknown_queue_is_rejected_not_raised() -> None:
    rm = RMState(make_scheduler("capacity"))
    adm = rm.submit(record(1, "nope", 2), 0.0)
    assert not adm.accepted and "unknown queue" in adm.reason
    assert not rm.submit(record(2, "root", 2), 0.0).accepted  # a parent queue
    assert not rm.submit(AppRecord(3, "a", "u", (TaskSpec(0, (9.0, 1.0), 1.0),), AM), 0.0).accepted
    assert rm.submit(record(4, "a", 2), 0.0).accepted and rm.apps[4].leaf == "root.a"
    assert not rm.submit(record(4, "a", 2), 0.0).accepted  # duplicate
    assert [e["event"] for e in rm.take_events()] == ["app_rejected"] * 3 + ["app_submitted", "app_rejected"]


def test_admission_asks_for_the_am_which_the_rm_launches_itself() -> None:
    rm = RMState(make_scheduler("capacity", nodes=2))
    assert rm.submit(record(1, "a", 2, at=0.0, nodes=2), 0.0).accepted
    assert [t.task_id for t in rm.state.apps[1].asks.tasks()] == [AM_TASK]
    reply = rm.node_heartbeat(0, [], 2.5)
    (launch,) = reply.launches
    assert launch[:3] == [1, AM_TASK, 0] and launch[4] == float("inf") and reply.am_started == [(1, 1)]
    assert rm.node_heartbeat(0, [], 3.0).launches == []  # handed out once
    ev = {e["event"]: e for e in rm.take_events()}
    assert ev[AM_ALLOCATED]["wait"] == 2.5 and ev[AM_LAUNCHED]["delay"] == 2.5


def test_task_containers_flow_through_the_am_and_are_handed_out_once() -> None:
    rm = RMState(make_scheduler("fifo", nodes=2))
    rec = AppRecord(1, "a", "u", (TaskSpec(0, (1.0, 1.0), 5.0, preferred=(1,)),), AM)
    rm.submit(rec, 0.0)
    rm.node_heartbeat(0, [], 1.0)
    am = AppMasterCore(rec)
    call = am.next_call()
    assert [a.task_id for a in call.asks] == [0] and list(call.asks[0].preferred) == [1]
    assert am.on_reply(rm.am_allocate(1, call.asks, [], [], 1.0)) == OK
    assert rm.node_heartbeat(1, [], 2.0).launches == []  # allocated, but the AM has not asked to start it
    am.on_reply(rm.am_allocate(1, [], [], [], 2.0))
    (cid,) = am.holding
    call = am.next_call()
    assert call.starts == [(cid, 0)]
    am.on_reply(rm.am_allocate(1, [], [], call.starts, 2.0))
    (ln,) = rm.node_heartbeat(1, [], 3.0).launches
    assert ln[:2] == [1, 0] and ln[4] == 5.0 and ln[5] == 3.0 and owner_container(ln[6]) == cid
    assert rm.node_heartbeat(1, [], 3.5).launches == []
    assert rm.node_heartbeat(1, [(1, 0)], 8.0).kills == []
    am.on_reply(rm.am_allocate(1, [], [], [], 8.0))
    assert am.done
    stopped = rm.finish_app(1, 8.0)
    assert rm.node_heartbeat(0, [], 9.0).kills == [[1, AM_TASK]] and len(stopped) == 1
    assert rm.app_state(1) == APP_FINISHED and rm.state.apps == {} and not rm.held
    kinds = [e["event"] for e in rm.take_events()]
    assert kinds.count("container_allocated") == 1 and kinds[-1] == "app_finished"


def test_allocation_events_carry_latency_and_locality() -> None:
    loop = fresh("capacity")
    loop.submit(record(1, "a", 4))
    loop.run()
    allocs = loop.kinds("container_allocated")
    assert len(allocs) == 4 and all(e["latency"] >= 0 for e in allocs)
    assert {e["locality"] for e in allocs} <= {"node_local", "rack_local", "off_switch"}
    assert "node_local" in {e["locality"] for e in allocs}


def test_starts_that_do_not_match_the_allocation_are_refused_and_released() -> None:
    rm = RMState(make_scheduler("fifo", nodes=1))
    rec = record(1, "a", 2, nodes=1)
    rm.submit(rec, 0.0)
    rm.node_heartbeat(0, [], 0.0)
    rm.am_allocate(1, [TaskAsk(0, np.array([1.0, 2.0])), TaskAsk(1, np.array([1.0, 2.0]))], [], [], 0.0)
    rm.node_heartbeat(0, [], 1.0)
    reply = rm.am_allocate(1, [], [], [], 1.0)
    a0, a1 = reply.allocated
    used = rm.state.free[0].copy()
    r = rm.am_allocate(1, [], [], [(a0.container_id, a1.task_id), (999, 0)], 1.0)
    assert set(r.refused_starts) == {a0.container_id, 999}
    assert a0.container_id not in rm.held and np.allclose(rm.state.free[0], used + np.array([1.0, 2.0]))
    # asks for a held task, an unknown task, a duplicate, or as the AM are refused
    r = rm.am_allocate(1, [TaskAsk(1, np.array([1.0, 2.0])), TaskAsk(7, np.array([1.0, 1.0])),
                           TaskAsk(AM_TASK, np.array([1.0, 1.0]))], [], [], 1.0)
    assert set(r.refused_asks) == {1, 7, AM_TASK}


def test_callers_unknown_stale_or_gone() -> None:
    rm = RMState(make_scheduler("fifo"))
    assert rm.am_allocate(9, [], [], [], 0.0).status == RESYNC
    rm.submit(record(1, "a", 1), 0.0)
    assert rm.am_allocate(1, [], [], [], 0.0, attempt=2).status == STALE
    rm.kill_app(1, 0.0)
    assert rm.am_allocate(1, [], [], [], 0.0).status == GONE
    assert rm.finish_app(1, 0.0) == []


# ------------------------------------------------------------ end to end

@pytest.mark.parametrize("kind", ["capacity", "fair", "fifo"])
@pytest.mark.parametrize("glob", [False, True])
def test_every_app_completes(kind: str, glob: bool) -> None:
    loop = fresh(kind, global_scheduling=glob, seed=3)
    for app in range(1, 6):
        loop.submit(record(app, "a" if app % 2 else "b", 5, at=float(app)))
    loop.run()
    assert loop.done_apps == set(range(1, 6))
    loop.finished_once()
    assert all(n == 1 for n in loop.launches.values())  # no loss, no preemption: nothing ran twice
    assert not loop.rm.held and not loop.rm.state.containers
    assert sorted(e["app"] for e in loop.kinds("am_launched")) == [1, 2, 3, 4, 5]


def test_am_containers_count_against_the_cell() -> None:
    loop = fresh("fifo", nodes=1)
    loop.submit(record(1, "a", 8, size=(1.0, 1.0), nodes=1))
    most = 0
    while not loop.done_apps and loop.now < 200:
        loop.tick()
        tasks = [k for k in loop.nodes[0].running if k[1] != AM_TASK]
        most = max(most, len(tasks))
        if 1 not in loop.done_apps and (1, AM_TASK) in loop.nodes[0].running:  # the AM's share is in the queue's usage
            assert np.all(loop.rm.state.queue_used["root.a"] >= loop.nodes[0].used() - EPS)
    assert most == 3  # 4 cpus, one for the AM
    loop.finished_once()


def test_queue_usage_samples_used_and_entitlement() -> None:
    for kind, want in (("capacity", 8.0), ("fair", 7.0)):
        loop = fresh(kind)
        loop.submit(record(1, "a", 6, duration=50.0))
        for _ in range(6):
            loop.tick()
        samples = {s.queue: s for s in loop.rm.queue_usage()}
        assert samples["root.a"].used[0] > 0 and samples["root.b"].used == (0.0, 0.0)
        assert samples["root.a"].entitlement[0] == pytest.approx(want)  # guarantee 50% of 16, or fair share = its demand


# ------------------------------------------------------------ preemption

def test_capacity_preemption_takes_back_a_burst() -> None:
    pre = CapacityPreemption(enabled=True, max_wait_before_kill=0.0, natural_termination_factor=1.0,
                             total_preemption_per_round=0.5)
    loop = fresh("capacity", preemption=pre, seed=1)
    loop.preempt = True
    # The AM is (1, 2) so usage meets the guarantee exactly: the Capacity core checks the
    # user limit with the container added, and a lone user just below the guarantee stalls there.
    loop.submit(record(1, "a", 14, duration=40.0, size=(1.0, 2.0), am=(1.0, 2.0)))
    for _ in range(8):
        loop.tick()
    assert loop.rm.state.queue_used["root.a"][0] > 8.0  # burst past its 50% guarantee into idle capacity
    loop.submit(record(2, "b", 6, duration=5.0, size=(1.0, 2.0), at=loop.now))
    loop.run(until=600)
    assert loop.done_apps == {1, 2}
    pre_ev = loop.kinds("preempted")
    assert pre_ev and {e["queue"] for e in pre_ev} == {"root.a"} and not any(e["am"] for e in pre_ev)
    assert loop.rm.preemptions == {"root.a": len(pre_ev), "root.b": 0}
    assert {s.queue: s.preemptions for s in loop.rm.queue_usage()}["root"] == len(pre_ev)
    assert loop.kills_delivered >= 1  # kills reached the nodes
    loop.finished_once()  # preempted tasks were asked again and finished once
    victims = {(e["app"], e["task"]) for e in pre_ev}
    assert all(loop.launches[k] >= 2 for k in victims)


def test_preempted_status_reaches_the_am_and_it_asks_again() -> None:
    pre = CapacityPreemption(enabled=True, max_wait_before_kill=0.0, natural_termination_factor=1.0,
                             total_preemption_per_round=0.5)
    loop = fresh("capacity", preemption=pre)
    # The AM is (1, 2) so usage meets the guarantee exactly: the Capacity core checks the
    # user limit with the container added, and a lone user just below the guarantee stalls there.
    loop.submit(record(1, "a", 14, duration=40.0, size=(1.0, 2.0), am=(1.0, 2.0)))
    for _ in range(8):
        loop.tick()
    loop.submit(record(2, "b", 6, duration=5.0, size=(1.0, 2.0), at=loop.now))
    loop.tick()
    taken = loop.rm.preempt(loop.now)
    assert taken
    am = loop.ams[1]
    call = am.next_call()
    reply = loop.rm.am_allocate(1, call.asks, call.releases, call.starts, loop.now, attempt=am.attempt)
    assert {s.container_id for s in reply.completed if s.state == PREEMPTED} == set(taken)
    before = am.reasked
    am.on_reply(reply)
    assert am.reasked - before == len(taken) and len(am.to_ask) == len(taken)


# ------------------------------------------------------------ node loss

def _am_node(loop: Loop, app: int) -> int:
    return next(n for n, node in enumerate(loop.nodes) if (app, AM_TASK) in node.running)


def test_node_loss_retries_the_am_and_the_app_completes() -> None:
    loop = fresh("capacity", seed=2)
    loop.submit(record(1, "a", 6, duration=6.0))
    while 1 not in loop.ams or not loop.ams[1].holding:
        loop.tick()
    for _ in range(2):
        loop.tick()
    n = _am_node(loop, 1)
    loop.nodes[n].alive = False
    loop.nodes[n].running.clear()
    loop.ams.pop(1)
    lost = loop.rm.node_lost(n, loop.now)
    assert lost and loop.rm.attempt(1) == 2
    loop.drain()
    (att,) = loop.kinds("am_attempt")
    assert att["reason"] == "node_lost" and att["counted"]
    assert loop.rm.state.capacity[n].sum() == 0 and loop.rm.state.total[0] == 12.0
    loop.run()
    assert loop.done_apps == {1} and loop.am_launches[1] == 2
    assert [e["attempt"] for e in loop.kinds("am_launched")] == [1, 2]
    loop.finished_once()
    # the node comes back: reset, registered empty, capacity back
    loop.nodes[n].alive = True
    reply = loop.rm.node_heartbeat(n, [], loop.now)
    assert reply.reset and loop.rm.state.total[0] == 16.0


def test_second_am_loss_fails_the_app() -> None:
    loop = fresh("fifo", seed=4)
    loop.submit(record(1, "a", 4, duration=30.0))
    for attempt in (1, 2):
        while 1 not in loop.ams:
            loop.tick()
        assert loop.ams[1].attempt == attempt
        n = _am_node(loop, 1)
        loop.nodes[n].alive = False
        loop.nodes[n].running.clear()
        loop.ams.pop(1)
        loop.rm.node_lost(n, loop.now)
    loop.drain()
    assert loop.rm.app_state(1) == APP_FAILED and loop.kinds("app_failed")
    assert not loop.rm.state.apps and all(h.app_id != 1 for h in loop.rm.held.values())
    for _ in range(3):
        loop.tick()
    assert not any(node.running for node in loop.nodes if node.alive)  # its leftover containers were killed


def test_lost_task_containers_are_reported_lost_and_asked_again() -> None:
    loop = fresh("fair", seed=5)
    loop.submit(record(1, "a", 8, duration=8.0))
    while 1 not in loop.ams or not any(node.running for node in loop.nodes if (1, AM_TASK) not in node.running):
        loop.tick()
    n = next(i for i, node in enumerate(loop.nodes) if (1, AM_TASK) not in node.running and node.running)
    lost_tasks = {t for (a, t) in loop.nodes[n].running if a == 1}
    loop.nodes[n].alive = False
    loop.nodes[n].running.clear()
    loop.rm.node_lost(n, loop.now)
    assert loop.rm.attempt(1) == 1
    reply = loop.rm.am_allocate(1, [], [], [], loop.now, attempt=1)
    assert {s.task_id for s in reply.completed if s.state == LOST} == lost_tasks
    loop.ams[1].on_reply(reply)
    assert set(loop.ams[1].to_ask) == lost_tasks
    loop.run()
    assert loop.done_apps == {1}
    loop.finished_once()


def test_preempted_am_starts_an_uncounted_attempt() -> None:
    rm = RMState(make_scheduler("fifo", nodes=1))
    rm.submit(record(1, "a", 2, nodes=1), 0.0)
    rm.node_heartbeat(0, [], 0.0)
    cid = rm.apps[1].am_container

    class Victims:
        def __init__(self, inner: FifoScheduler) -> None:
            self.inner, self.state, self.counters = inner, inner.state, inner.counters

        def preemption(self, now: float) -> list[int]:
            return [cid]

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

    rm.scheduler = Victims(rm.scheduler)  # type: ignore[assignment]
    assert rm.preempt(1.0) == [cid]
    assert rm.attempt(1) == 2 and rm.apps[1].failures == 0
    rm.scheduler = rm.scheduler.inner  # type: ignore[attr-defined]
    # the old AM's kill and the new AM's launch in one reply: kill first
    reply = rm.node_heartbeat(0, [], 2.0)
    assert reply.kills == [[1, AM_TASK]] and reply.am_started == [(1, 2)]
    assert [e["reason"] for e in rm.take_events() if e["event"] == AM_ATTEMPT] == ["am_preempted"]


def test_launch_waits_for_the_kill_of_an_older_copy_elsewhere() -> None:
    rm = RMState(make_scheduler("fifo", nodes=2))
    rec = AppRecord(1, "a", "u", (TaskSpec(0, (3.0, 1.0), 50.0, preferred=(0,)),), AM)
    rm.submit(rec, 0.0)
    rm.node_heartbeat(1, [], 0.0)  # the AM lands on node 1
    rm.am_allocate(1, [TaskAsk(0, np.array([3.0, 1.0]), preferred=(0,))], [], [], 0.0)
    rm.node_heartbeat(0, [], 1.0)
    (a,) = rm.am_allocate(1, [], [], [], 1.0).allocated
    rm.am_allocate(1, [], [], [(a.container_id, 0)], 1.0)
    assert rm.node_heartbeat(0, [], 2.0).launches
    rm._stop(a.container_id)  # as a preemption does
    rm.am_allocate(1, [TaskAsk(0, np.array([3.0, 1.0]))], [], [], 2.0)
    rm.node_heartbeat(1, [], 3.0)  # node 1 has room for the task (the AM leaves 3 cpus)
    (b,) = rm.am_allocate(1, [], [], [], 3.0).allocated
    assert b.node == 1
    rm.am_allocate(1, [], [], [(b.container_id, 0)], 3.0)
    assert rm.node_heartbeat(1, [], 4.0).launches == []  # node 0 still runs the old copy
    assert rm.node_heartbeat(0, [], 5.0).kills == [[1, 0]]
    # Handed out is not carried out: node 1 waits until node 0 polls again.
    assert rm.node_heartbeat(1, [], 5.5).launches == []
    rm.node_heartbeat(0, [], 5.7)
    assert [ln[1] for ln in rm.node_heartbeat(1, [], 6.0).launches] == [0]


# ------------------------------------------------------------ work-preserving restart

def restart(loop: Loop, kind: str) -> RMState:
    """A new RM (next epoch) from the old one's replicated records only."""
    old = loop.rm
    new = RMState(make_scheduler(kind, len(loop.nodes)), epoch=old.epoch + 1, recovering=True)
    for rec in old.active_records():
        b = old.apps[rec.app_id]
        # the job history (tasks known finished) travels with the records
        assert new.restore_app(rec, loop.now, attempt=b.attempt, failures=b.failures, finished=list(b.finished),
                               am_launched=b.am_launched_before).accepted
    loop.rm = new
    return new


@pytest.mark.parametrize("kind", ["capacity", "fair"])
def test_work_preserving_restart_loses_nothing_and_runs_nothing_twice(kind: str) -> None:
    loop = fresh(kind, seed=6)
    for app in (1, 2, 3):
        loop.submit(record(app, "a" if app != 2 else "b", 6, duration=5.0, at=float(app)))
    for _ in range(6):
        loop.tick()
    running_before = {k for node in loop.nodes for k in node.running}
    assert len(running_before) > 3
    new = restart(loop, kind)
    loop.tick()  # nodes resync and re-register, AMs resync
    assert new.recovering and new.node_heartbeat(0, [], loop.now).launches == []
    assert all(h.phase == STARTED for h in new.held.values())
    adopted = {(h.app_id, h.task_id) for h in new.held.values()}
    assert running_before - adopted <= {k for node in loop.nodes for k in node.recently_done}
    loop.tick()
    new.settle_recovery(loop.now)
    loop.run()
    assert loop.done_apps == {1, 2, 3}
    assert loop.kills_delivered == 0  # no running container was lost to the restart
    assert set(loop.launches.values()) == {1} and set(loop.am_launches.values()) == {1}
    assert min(loop.launched_cids) < (1 << 32) <= max(loop.launched_cids)  # the new epoch's ids
    fin = {(e["app"], e["task"]) for e in loop.events if e["event"] == CONTAINER_FINISHED}
    want = {(a, t.task_id) for a, r in loop.records.items() for t in r.tasks}
    # each task finished once: under the old RM or the new one (the old RM's events were drained too)
    assert fin == want


def test_restart_with_the_am_node_gone_starts_a_new_attempt() -> None:
    loop = fresh("fifo", seed=7)
    loop.submit(record(1, "a", 4, duration=20.0))
    while 1 not in loop.ams or not loop.ams[1].holding:
        loop.tick()
    loop.tick()
    n = _am_node(loop, 1)
    loop.nodes[n].alive = False
    loop.nodes[n].running.clear()
    loop.ams.pop(1)
    new = restart(loop, "fifo")
    loop.tick()
    loop.tick()
    assert new.apps[1].am_container is None
    new.settle_recovery(loop.now)
    assert new.attempt(1) == 2 and new.apps[1].failures == 1
    loop.run()
    assert loop.done_apps == {1}


@pytest.mark.parametrize("launched", [False, True])
def test_restart_without_a_recovered_am(launched: bool) -> None:
    """No node reports the AM: if it never started, it is simply asked for
    again; if it had run, that attempt failed (counted)."""
    rec = record(1, "a", 3)
    new = RMState(make_scheduler("capacity"), epoch=1, recovering=True)
    new.restore_app(rec, 0.0, am_launched=launched)
    assert len(new.state.apps[1].asks) == 0
    new.settle_recovery(1.0)
    assert [t.task_id for t in new.state.apps[1].asks.tasks()] == [AM_TASK]
    assert (new.attempt(1), new.apps[1].failures) == ((2, 1) if launched else (1, 0))
    loop = Loop(new)
    loop.records[1] = rec
    loop.run()
    assert loop.done_apps == {1}
    loop.finished_once()


def test_recovery_orders_and_orphans() -> None:
    old_loop = fresh("capacity")
    old_loop.submit(record(1, "a", 3, duration=50.0))
    for _ in range(5):
        old_loop.tick()
    node = _am_node(old_loop, 1)
    fn = old_loop.nodes[node]
    reports = [RunningReport(cid, a, t, tuple(r.tolist())) for (a, t), (_e, r, cid) in fn.running.items()]
    reports.append(RunningReport(77, 9, 0, (1.0, 1.0)))  # an app nobody restores
    new = RMState(make_scheduler("capacity"), epoch=1, recovering=True)
    assert new.node_heartbeat(node, [], 6.0).resync
    assert new.recover_node(node, reports, 6.0) == (0, 0)  # apps unknown yet: kept aside
    new.restore_app(old_loop.records[1], 6.0)  # adopted now, AM container included
    assert new.apps[1].am_container is not None
    assert len(new.state.apps[1].asks) == 0  # no second AM ask
    assert new.am_allocate(1, [], [], [], 6.0).status == RESYNC
    assert new.node_heartbeat(node, [], 7.0).launches == []  # no scheduling during recovery
    new.settle_recovery(7.0)
    assert new.node_heartbeat(node, [], 8.0).kills == [[9, 0]]  # the orphan of an unknown app
    assert len(new.state.apps[1].asks) == 0 and new.apps[1].attempt == 1


# ------------------------------------------------------------ properties

@st.composite
def workloads(draw: st.DrawFn) -> tuple:
    kind = draw(st.sampled_from(["capacity", "fair", "fifo"]))
    glob = draw(st.booleans())
    apps = draw(st.lists(st.tuples(st.integers(1, 6), st.integers(0, 6), st.sampled_from([(1.0, 1.0), (2.0, 3.0)]),
                                   st.integers(1, 4)), min_size=1, max_size=4))
    fault = draw(st.sampled_from(["none", "node_loss", "restart"]))
    seed = draw(st.integers(0, 2**16))
    return kind, glob, apps, fault, seed


@settings(max_examples=30, deadline=None)
@given(workloads())
def test_invariants_hold_on_random_workloads(w: tuple) -> None:
    kind, glob, apps, fault, seed = w
    loop = fresh(kind, global_scheduling=glob, seed=seed)
    rng = np.random.default_rng(seed)
    for i, (n, at, size, dur) in enumerate(apps, start=1):
        tasks = tuple(TaskSpec(t, size, float(dur + t % 2), preferred=tuple(int(x) for x in rng.choice(4, 2, replace=False)))
                      for t in range(n))
        loop.submit(AppRecord(i, "a" if i % 2 else "b", f"u{i}", tasks, AM, submitted_at=float(at)))
    fault_at = 4.0 + seed % 5
    while len(loop.done_apps) < len(apps) and loop.now < 300:
        loop.tick()
        if fault != "none" and loop.now == fault_at:
            if fault == "node_loss":
                n = int(rng.integers(4))
                loop.nodes[n].alive = False
                for key in list(loop.nodes[n].running):
                    loop._gone(n, key)
                loop.rm.node_lost(n, loop.now)
            else:
                restart(loop, kind)
        if fault == "restart" and loop.rm.recovering and loop.now == fault_at + 2:
            loop.rm.settle_recovery(loop.now)
    assert loop.done_apps == set(range(1, len(apps) + 1))
    loop.finished_once()
    if fault == "none":
        assert set(loop.launches.values()) == {1}
    if fault == "restart":
        assert loop.kills_delivered == 0
    alive = [n for n in loop.nodes if n.alive]
    for _ in range(2):
        loop.tick()  # deliver the last kills (AM containers of finished apps)
        loop.rm.settle_recovery(loop.now)  # (a restart in the last tick: orphans are killed once it closes)
    assert not any(n.running for n in alive)


def test_the_loop_catches_a_launch_handed_out_twice() -> None:
    """The loop's own checks can fail: a broken RM handing a launch out twice."""
    loop = fresh("fifo")
    loop.submit(record(1, "a", 2))
    loop.tick()
    loop.tick()
    real = loop.rm._reply

    def twice(node: int, now: float, reset: bool):  # type: ignore[no-untyped-def]
        r = real(node, now, reset)
        r.launches.extend(list(r.launches))
        return r

    loop.rm._reply = twice  # type: ignore[method-assign]
    with pytest.raises(AssertionError):
        loop.run(until=50)


def test_global_mode_does_not_allocate_on_heartbeats() -> None:
    rm = RMState(make_scheduler("capacity", global_scheduling=True))
    assert rm.global_scheduling
    rm.submit(record(1, "a", 2), 0.0)
    assert rm.node_heartbeat(0, [], 0.0).launches == []
    assert len(rm.schedule(0.0)) == 1
    assert RMState(make_scheduler("capacity"), RMConfig(global_scheduling=True)).global_scheduling
