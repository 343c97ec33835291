"""Lost-commit judgements: runs that lost no commit must not be judged to
have lost one. Pure asyncio and synthetic events, no Ray."""
from __future__ import annotations

import asyncio
import collections
import json
import math
from typing import Any

import numpy as np

from schedlab.schedulers.archs.omega.cell_machine import CellStateMachine
from schedlab.actors.analysis.invariants import invariants, untraced_commits
from schedlab.actors.engines.link_faults import LinkFaults
from schedlab.actors.archs.mesos.framework import MesosFramework
from schedlab.actors.archs.mesos.link import MasterLink
from schedlab.actors.archs.omega.scheduler import OmegaScheduler
from schedlab.schedulers.events.shared import ACTOR_STARTED, FAULT, MACHINES_DOWN, TASKS_LAUNCHED, TXN
from schedlab.schedulers.model.cluster import Cell
from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.archs.mesos.framework import Decision, FrameworkParams, JobProgress
from schedlab.schedulers.archs.omega.scheduler import OmegaSchedulerCore, SchedulerParams
from schedlab.schedulers.placement.policies import first_fit
from schedlab.schedulers.shared_state.cell import LocalCopy


class ManualClock:
    """Emulated time that moves only when the test says (time_scale 1)."""

    def __init__(self) -> None:
        self.t = 10.0

    def now(self) -> float:
        return self.t

    def wall(self, emulated: float) -> float:
        return 0.0  # naps end at once; the test moves time itself


class FakeRuntime:
    """The Runtime protocol on a manual clock (wall time = emulated time)."""

    scale = 1.0

    def __init__(self) -> None:
        self.clock = ManualClock()
        self.links = LinkFaults()
        self.sent: list[tuple] = []  # one-way messages: (handle, method, *args)

    def now(self) -> float:
        return self.clock.now()

    def wall(self, emulated: float) -> float:
        return self.clock.wall(emulated)

    def wall_clock(self) -> float:
        return self.clock.now()

    async def sleep_wall(self, seconds: float) -> None:
        await asyncio.sleep(0)  # time moves when the test says

    def lookup(self, name: str) -> str:
        """Every actor is up; its handle is its name."""
        return name

    def send(self, handle: str, method: str, *args: Any) -> None:
        self.sent.append((handle, method, *args))


class CellWithEagerHost:
    """The cell state machine behind an endpoint whose host polls the moment a
    commit applies: the launch is logged 2 ms after the commit, while the
    scheduler still waits 10 ms for its reply (a host's poll can beat the
    commit's reply; at a 50 ms batch interval it often does)."""

    def __init__(self, rt: FakeRuntime, machines: int) -> None:
        self.rt = rt
        self.machine = CellStateMachine(np.full((machines, 2), 4.0), np.full((machines, 2), 4.0), "resource", "incremental", 1)
        self.host_events: list[dict] = []

    async def sync(self, version: int) -> bytes:
        return self.machine.query(("sync", version))

    async def commit(self, scheduler: str, claims: bytes, since: int, job_id: int, tasks: bytes, now: float,
                     n_tasks: int, gang: bool = False) -> list:
        reply = self.machine.apply(("commit", claims, since, job_id, tasks, now, n_tasks, gang))
        for host in list(self.machine.to_launch):
            launches = self.machine.apply(("exchange", host, b""))
            self.host_events.append({"event": TASKS_LAUNCHED, "t": round(now + 0.002, 6), "actor": f"machine-host-{host}",
                                     "host": host, "prefill": False,
                                     "tasks": [[j, t, m, *req, start] for j, t, m, req, _d, start in launches]})
        self.rt.clock.t += 0.010  # the reply's way back
        return reply


def by_event(lines: list[dict]) -> dict[str, list[dict]]:
    ev: dict[str, list[dict]] = collections.defaultdict(list)
    for e in lines:
        ev[e["event"]].append(e)
    return ev


def test_a_scheduler_descheduled_after_its_commit_still_owns_the_launch_it_caused() -> None:
    """On two busy cores a scheduler can be descheduled between reading the
    time its attempt ended and stamping the txn event; stamped late, ``t -
    span`` would put the attempt's start after the launch it caused. The
    txn's ``t`` must be the instant its span ends, so ``t - span`` is when
    the attempt began and the launch is found."""
    async def main() -> tuple[list[dict], list[dict]]:
        rt = FakeRuntime()
        cell = CellWithEagerHost(rt, machines=2)
        params = SchedulerParams(name="batch", t_job=0.0, t_task=0.0, policy=first_fit)
        sched = OmegaScheduler(rt, "scheduler-batch-0", params, 1, cell, metrics=None, flush_interval=1.0)  # type: ignore[arg-type]
        core = OmegaSchedulerCore(params, LocalCopy(cell.machine.cell.full()), np.random.default_rng(0))
        sched.core, sched.running = core, True
        core.submit([Job(7, "batch", JobKind.BATCH, 0, 0.0, (1.0, 1.0), (30.0, 30.0))])
        settle = core.settle

        def descheduled_settle(*args: Any) -> Any:
            rt.clock.t += 0.050  # the scheduler's process loses the CPU right after reading `now`
            return settle(*args)

        core.settle = descheduled_settle  # type: ignore[method-assign]
        jp = core.next_job(rt.now())
        assert jp is not None
        await sched._attempt(core, jp)
        return [json.loads(line) for line in sched.log.drain()], cell.host_events

    sched_events, host_events = asyncio.run(main())
    txn = next(e for e in sched_events if e["event"] == TXN)
    assert txn["committed"] == 2 and host_events[0]["t"] < txn["t"]
    assert untraced_commits(by_event(sched_events + host_events), 1) == 0
    assert txn["t"] - txn["span"] == 10.0  # when the attempt began


def mesos_framework(rt: FakeRuntime) -> MesosFramework:
    params = FrameworkParams(name="batch", t_job=0.0, t_task=0.0, policy=first_fit)
    return MesosFramework(rt, params, 8, 1, MasterLink(1, 1), metrics=None, flush_interval=1.0,  # type: ignore[arg-type]
                          lease_wall_s=1.0)


def decision(tasks: list[int], machines: list[int]) -> Decision:
    n = len(tasks)
    return Decision(np.asarray(tasks), np.zeros(n, dtype=np.int64), np.asarray(machines), np.zeros(n, dtype=bool),
                    np.zeros(0, dtype=np.int64))


def test_mesos_launches_accepted_for_a_dead_agent_are_not_lost_commits() -> None:
    """A framework has launches accepted on the machines of a host that
    already died, logs them, and is itself killed before the master writes
    the host off: the loss reports go nowhere, no ``tasks_lost`` is logged,
    and its successor re-queues the tasks on recovery (the master no longer
    knows them). A count (committed - launched - re-queued) would call such
    commits lost whenever the killed framework's unlogged txns and
    double-counted losses do not happen to offset them. So the txns say
    where each launch went, and each is followed like Omega's: a launch
    meant for a host killed meanwhile is excused by the host's death."""
    async def main() -> list[dict]:
        rt = FakeRuntime()
        fw = mesos_framework(rt)
        rt.clock.t = 107.9
        for job_id, task, machine in ((19, 2, 0), (20, 1, 1), (22, 0, 0)):
            jp = JobProgress(Job(job_id, "batch", JobKind.BATCH, 0, 90.0, (0.5, 1.0), (30.0,) * 3), np.asarray([task]),
                             np.zeros((3, 0), dtype=np.int64))
            fw._record(jp, decision([task], [machine]), np.asarray([True]), 0.0, rt.now() - 0.5, 4.0, 0)
        rt.clock.t = 109.0  # one launch that did start, on a live host
        jp = JobProgress(Job(23, "batch", JobKind.BATCH, 0, 95.0, (0.5, 1.0), (30.0,)), np.asarray([0]), np.zeros((1, 0), dtype=np.int64))
        fw._record(jp, decision([0], [5]), np.asarray([True]), 0.0, rt.now() - 0.5, 4.0, 0)
        return [json.loads(line) for line in fw.log.drain()]

    events = asyncio.run(main()) + [
        {"event": FAULT, "t": 100.521, "actor": "driver", "role": "machine", "kind": "kill", "target": "machine-host-0"},
        {"event": TASKS_LAUNCHED, "t": 109.2, "actor": "machine-host-1", "host": 1, "prefill": False,
         "tasks": [[23, 0, 5, 0.5, 1.0, 108.9]]},
        {"event": FAULT, "t": 120.09, "actor": "driver", "role": "framework", "kind": "kill", "target": "framework-batch"},
        {"event": MACHINES_DOWN, "t": 136.421, "actor": "master-0", "hosts": [0], "tasks_lost": 0, "lost": [], "unpulled": 3},
    ]
    cell = Cell(capacity=np.full((8, 2), 4.0), rack=np.zeros(8, dtype=np.int64), machine_class=np.zeros(8, dtype=np.int64), classes=())
    assert invariants(by_event(events), cell, 4, None)["lost_commits"] == 0


def test_mesos_gang_launch_span_starts_before_its_launch_call() -> None:
    """A rigid job's gang is launched by a second call; its txn's span must
    begin before that call, or a launch its agent starts before the reply
    comes looks older than the attempt (the misjudgement of the descheduled
    scheduler above)."""
    async def main() -> list[dict]:
        rt = FakeRuntime()
        fw = mesos_framework(rt)

        async def respond(method: str, sections: list, *args: Any) -> dict:
            rt.clock.t += 0.010  # the agent polls and starts the gang before the reply is back
            return {"results": [(True, [True] * len(sections[0][1]), [])]}

        fw.link.call = respond  # type: ignore[method-assign]
        jp = JobProgress(Job(9, "batch", JobKind.BATCH, 0, 0.0, (1.0, 1.0), (30.0, 30.0)), np.asarray([0, 1]),
                         np.zeros((2, 0), dtype=np.int64))
        fw.core.jobs[9] = jp
        await fw._launch_gang(jp, decision([0, 1], [2, 3]))
        return [json.loads(line) for line in fw.log.drain()]

    events = asyncio.run(main())
    launched = {"event": TASKS_LAUNCHED, "t": 10.004, "actor": "machine-host-0", "host": 0, "prefill": False,
                "tasks": [[9, 0, 2, 1.0, 1.0, 10.0], [9, 1, 3, 1.0, 1.0, 10.0]]}
    assert untraced_commits(by_event(events + [launched]), 4) == 0


class ReplicasOfALostLog:
    """The cell's write-off log as replicas at different points answer it:
    each read is served from the next replica in ``order`` (a prefix of the
    log of the given length, as a stale leader's applied state is)."""

    def __init__(self, log: list[list[int]], order: list[int]) -> None:
        self.log, self.order = log, order

    async def lost(self, cursor: int) -> list:
        applied = self.log[: self.order.pop(0)]
        return [len(applied), applied[cursor:]]


def test_a_stale_read_of_the_write_off_log_never_moves_the_cursor_back() -> None:
    """A fresh leader has written off tasks 0..3 of job 7; a stale one has
    applied only the first two. Reading fresh, then stale, then fresh must
    requeue each task once: the stale read must not wind the cursor back, or
    tasks placed again since would be placed a third time."""
    async def main() -> list[list[int]]:
        rt = FakeRuntime()
        log = [[7, 0], [7, 1], [7, 2], [7, 3]]
        params = SchedulerParams(name="batch", t_job=0.0, t_task=0.0, policy=first_fit)
        sched = OmegaScheduler(rt, "scheduler-batch-0", params, 1, ReplicasOfALostLog(log, [4, 2, 4]),  # type: ignore[arg-type]
                               metrics=None, flush_interval=1.0)
        cell = CellStateMachine(np.full((2, 2), 4.0), np.full((2, 2), 4.0), "resource", "incremental", 1).cell
        sched.core = OmegaSchedulerCore(params, LocalCopy(cell.full()), np.random.default_rng(0))
        sched.jobs[7] = Job(7, "batch", JobKind.BATCH, 0, 0.0, (1.0, 1.0), (30.0,) * 4)
        requeued: list[list[int]] = []
        sched.core.resume = lambda job, tasks: requeued.append(list(map(int, tasks)))  # type: ignore[method-assign]
        for _ in range(3):
            await sched._poll_lost()
        return requeued

    assert asyncio.run(main()) == [[0, 1, 2, 3]]


def test_a_mesos_leader_whose_lease_renewal_was_late_does_not_write_off_the_agents_it_refused() -> None:
    """A leader whose lease renewals come late again and again answers
    agents 'not the leader' whenever they poll in a lapse; between lapses
    (same epoch, no new election) that silence is its own, and counted
    against the agents it writes off healthy ones. A leader that refused
    agents since its last look restarts their clocks instead; once its lease
    is steady, a silent agent is judged."""
    from schedlab.actors.archs.mesos.master import MesosMaster
    from tests.test_mesos_master_state import config

    async def main() -> tuple[list, list]:
        rt = FakeRuntime()
        master = MesosMaster(rt, 0, config(hosts=4, masters=2), metrics=None, flush_interval=1.0)  # type: ignore[arg-type]
        master._started.set()  # as if started (its loops are driven by hand here)
        master._take_over(7)
        master.rereg_until = -1.0
        master.lease_until = rt.clock.t + 1.0
        for h in range(4):
            assert (await master.register_agent(f"machine-host-{h}", h, [], []))["ok"]
        step = master.watch.timeout / 4
        for _ in range(20):  # five timeouts of a flapping lease
            rt.clock.t += step
            master.lease_until = rt.clock.t - 0.01  # lapsed: hosts 0 and 1 poll now and are refused
            for h in (0, 1):
                assert not (await master.exchange(f"machine-host-{h}", 7, h, []))["ok"]
            master.lease_until = rt.clock.t + step / 2  # renewed: 2 and 3 poll now; the watch looks
            for h in (2, 3):
                assert (await master.exchange(f"machine-host-{h}", 7, h, []))["ok"]
            master._judge_agents()
        spared = [json.loads(x) for x in master.log.drain()]
        master.lease_until = math.inf  # steady from here: 0 and 1 stay silent and are judged
        for _ in range(24):
            rt.clock.t += step
            for h in (2, 3):
                assert (await master.exchange(f"machine-host-{h}", 7, h, []))["ok"]
            master._judge_agents()
        judged = [json.loads(x) for x in master.log.drain()]
        return spared, judged, rt.sent

    spared, judged, sent = asyncio.run(main())
    assert not [e for e in spared if e["event"] == MACHINES_DOWN], spared
    assert sorted(h for e in judged if e["event"] == MACHINES_DOWN for h in e["hosts"]) == [0, 1], judged
    # Written off while alive: each is rung, so its next poll re-registers it, empty.
    assert sorted(sent) == [("machine-host-0", "ring"), ("machine-host-1", "ring")], sent


def test_an_agent_tries_the_last_lease_holder_even_when_its_lease_looks_expired() -> None:
    """After a coordinator failover an agent may read the masters' lease as
    expired (a stale read, or a renewal just late) while its holder leads
    all along; concluding 'no leading master', it would stay silent until
    written off. The agent tries the last holder: the master, not the agent,
    decides whether it still leads."""
    from schedlab.actors.archs.mesos.link import lease_identity

    class StaleLease:
        async def query(self, command: tuple, deadline: float) -> tuple:
            return lease_identity("master-1", 5), 26, -1.0  # expired long ago

    link = MasterLink(2, 3)
    link.rt, link.coord = FakeRuntime(), StaleLease()  # type: ignore[assignment]
    assert asyncio.run(link.leader()) == "master-1"


def test_a_lost_log_poll_during_recovery_requeues_nothing() -> None:
    """A restarted Omega scheduler learns its jobs, then asks the cell what is
    placed (through the log: slow). A lost-log poll in between must read
    nothing: from cursor 0 it would requeue every task of those jobs ever
    lost, once per loss, and place one task several times in one
    transaction."""
    class SlowRecovery(ReplicasOfALostLog):
        def __init__(self) -> None:
            super().__init__([[4, 6]] * 5, [5, 5, 5])
            self.answer = asyncio.Event()

        async def recover(self, job_ids: list[int]) -> list:
            await self.answer.wait()
            return [5, {4: [0, 1, 2, 3, 4, 5, 6]}, []]

    async def main() -> list[list[int]]:
        rt = FakeRuntime()
        cell = SlowRecovery()
        params = SchedulerParams(name="batch", t_job=0.0, t_task=0.0, policy=first_fit)
        sched = OmegaScheduler(rt, "scheduler-batch-0", params, 1, cell, metrics=None, flush_interval=1.0)  # type: ignore[arg-type]
        machine = CellStateMachine(np.full((2, 2), 4.0), np.full((2, 2), 4.0), "resource", "incremental", 1).cell
        sched.core = OmegaSchedulerCore(params, LocalCopy(machine.full()), np.random.default_rng(0))
        requeued: list[list[int]] = []
        sched.core.resume = lambda job, tasks: requeued.append(list(map(int, tasks)))  # type: ignore[method-assign]
        job = Job(4, "batch", JobKind.BATCH, 0, 0.0, (1.0, 1.0), (30.0,) * 7).to_wire()
        recovery = asyncio.ensure_future(sched._recover([job]))
        await asyncio.sleep(0)
        await sched._poll_lost()  # while the cell has not answered the recovery
        cell.answer.set()
        await recovery
        await sched._poll_lost()  # after: from the recovery's cursor
        return requeued

    assert asyncio.run(main()) == []


def test_a_commit_to_a_host_restarted_but_not_yet_up_is_not_lost() -> None:
    """A machine host is killed and its restart asked for, but on a loaded
    machine the new process has not started when the run ends; a commit to
    one of its machines meanwhile waits in the cell state for a pull that
    cannot come. The host is back when its new incarnation starts
    (``actor_started``), not when the driver asks; once it has started, a
    commit it never pulls is lost again."""
    txn = {"event": TXN, "job_id": 105, "t": 342.06, "span": 1.33, "committed": 1, "placed": [[1, 14]],
           "actor": "scheduler-batch-1"}
    faults = [{"event": FAULT, "t": 298.88, "kind": "kill", "target": "machine-host-2", "role": "machine"},
              {"event": FAULT, "t": 325.35, "kind": "restart", "target": "machine-host-2", "role": "machine"}]
    first = {"event": ACTOR_STARTED, "t": 0.5, "actor": "machine-host-2"}
    assert untraced_commits(by_event([txn, *faults, first]), 5) == 0
    again = {"event": ACTOR_STARTED, "t": 326.1, "actor": "machine-host-2"}
    assert untraced_commits(by_event([txn, *faults, first, again]), 5) == 1
    # Started again after the commit: the commit went to a host not yet up.
    late = {"event": ACTOR_STARTED, "t": 345.0, "actor": "machine-host-2"}
    assert untraced_commits(by_event([txn, *faults, first, late]), 5) == 0
