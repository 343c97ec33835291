"""Lost-commit reports explained (issue 13): runs that lost no commit must not
be judged to have lost one. Pure asyncio and synthetic events, no Ray."""
from __future__ import annotations

import asyncio
import collections
import json
from typing import Any

import numpy as np

from actors.cell_machine import CellStateMachine
from actors.invariants import untraced_commits
from actors.link_faults import LinkFaults
from actors.omega_scheduler import OmegaScheduler
from schedulers.jobs import Job, JobKind
from schedulers.omega_scheduler import OmegaSchedulerCore, SchedulerParams
from schedulers.placement import first_fit
from schedulers.shared_state import LocalCopy


class ManualClock:
    """Emulated time that moves only when the test says (time_scale 1)."""

    def __init__(self) -> None:
        self.t = 10.0

    def now(self) -> float:
        return self.t

    def wall(self, emulated: float) -> float:
        return 0.0  # naps end at once; the test moves time itself


class FakeRuntime:
    def __init__(self) -> None:
        self.clock = ManualClock()
        self.links = LinkFaults()

    def now(self) -> float:
        return self.clock.now()


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

    async def commit(self, scheduler: str, claims: bytes, since: int, job_id: int, tasks: bytes, now: float) -> list:
        reply = self.machine.apply(("commit", claims, since, job_id, tasks, now))
        for host in list(self.machine.to_launch):
            launches = self.machine.apply(("exchange", host, b""))
            self.host_events.append({"event": "tasks_launched", "t": round(now + 0.002, 6), "actor": f"machine-host-{host}",
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
    """Report A (a fault-free bench run, one lost commit): on two busy cores
    a scheduler can be descheduled between reading the time its attempt ended
    and stamping the txn event (32 ms in a kept run: job 14's task 1 launched
    at 1.213142, the txn said t 1.273380 with span 0.042993, so the checker
    put the attempt's start at 1.230387, after the launch, though the attempt
    began at 1.198572 and the cell applied the commit at 1.203322). The txn's
    ``t`` must be the instant its span ends, so ``t - span`` is when the
    attempt began and the launch is found."""
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
    txn = next(e for e in sched_events if e["event"] == "txn")
    assert txn["committed"] == 2 and host_events[0]["t"] < txn["t"]
    assert untraced_commits(by_event(sched_events + host_events), 1) == 0
    assert txn["t"] - txn["span"] == 10.0  # when the attempt began
