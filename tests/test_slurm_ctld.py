"""slurmctld's books with its node daemons: launches and kills go out on
polls, a job's nodes come free with its last task, time limits kill,
failed nodes requeue their jobs (never one task on two nodes), higher
tiers preempt, and a new controller rebuilds from saved state and the
daemons' registrations."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.slurm.controller import Job as SlurmJob
from schedlab.schedulers.archs.slurm.controller import Partition, SlurmCore
from schedlab.schedulers.archs.slurm.ctld import Slurmctld
from schedlab.schedulers.archs.slurm.priority import FairShare, Weights
from schedlab.schedulers.model.jobs import Job, JobKind

CAP = np.array([[4.0, 16.0]] * 8)  # 8 nodes, 2 per host
ALL = Partition("all", tuple(range(8)), max_time=10_000.0, default_time=1000.0)


def job(jid: int, tasks: int, runtime: float, at: float = 0.0, cls: str = "a") -> Job:
    return Job(jid, cls, JobKind.BATCH, 0, at, (1.0, 1.0), (runtime,) * tasks)


def ctld(*parts: Partition, **kw: object) -> Slurmctld:
    core = SlurmCore(parts or (ALL,), 8, Weights(), FairShare({"a": 1.0, "b": 1.0}))
    return Slurmctld(core, CAP, 2, **kw)  # type: ignore[arg-type]


class Daemons:
    """The node daemons as machine hosts behave: each poll takes kills, then
    launches; tasks run until they end or are killed. Checks that no task
    runs twice and no node holds two jobs."""

    def __init__(self, c: Slurmctld) -> None:
        self.c = c
        self.running: dict[tuple[int, int], tuple[int, float]] = {}  # key -> (node, end)
        self.done: dict[int, list[tuple[int, int, bool]]] = {h: [] for h in range(c.hosts)}
        self.dead: set[int] = set()

    def end_due(self, host: int, now: float) -> None:
        """Tasks of ``host`` that ended by ``now``: kept for its next poll."""
        for key, (node, end) in list(self.running.items()):
            if node // 2 == host and end <= now:
                del self.running[key]
                self.done[host].append((*key, False))

    def unreported(self, host: int) -> list[tuple[int, int]]:
        """The ends ``host`` has not delivered (what it tells a registration)."""
        return [(j, t) for j, t, _killed in self.done[host]]

    def poll(self, host: int, now: float) -> None:
        self.end_due(host, now)
        reply = self.c.exchange(host, self.done[host], now)
        self.done[host] = []
        if isinstance(reply, dict):
            assert reply.get("reset")
            for key in [k for k, (n, _) in self.running.items() if n // 2 == host]:
                del self.running[key]
            return
        launches, kills = reply
        for j, t in kills:
            if (j, t) in self.running and self.running[(j, t)][0] // 2 == host:
                del self.running[(j, t)]
                self.done[host].append((j, t, True))
        for j, t, m, req, dur, start in launches:
            assert (j, t) not in self.running, f"task {(j, t)} launched while it runs"
            assert req == CAP[m].tolist()  # a whole node
            self.running[(j, t)] = (m, start + dur)
        by_node: dict[int, set[int]] = {}
        for (j, _t), (m, _e) in self.running.items():
            by_node.setdefault(m, set()).add(j)
        assert all(len(js) == 1 for js in by_node.values()), by_node


def test_a_job_runs_on_whole_nodes_and_frees_them_with_its_last_task() -> None:
    c = ctld()
    d = Daemons(c)
    assert c.submit(job(1, 3, 100.0), "all", 500.0, 0.0) == ""
    [s] = c.schedule(0.0)
    assert s.nodes == (0, 1, 2) and not s.backfilled and s.reserved is None
    for h in range(4):
        d.poll(h, 0.0)
    assert len(d.running) == 3
    d.poll(0, 100.0)  # tasks 0 and 1 end; task 2's daemon has not said so yet
    assert c.ended == [] and c.core.jobs_on({0, 1, 2, 3}) == {1} and c.core.used.sum() == 3
    d.poll(1, 100.0)
    assert [(e.job_id, e.state) for e in c.ended] == [(1, "completed")] and c.core.used.sum() == 0
    assert c.core.fairshare is not None and c.core.fairshare.usage["a"] == 3 * 100.0


def test_a_job_past_its_limit_is_killed_and_its_nodes_start_the_next_job_at_once() -> None:
    c = ctld()
    d = Daemons(c)
    c.submit(job(1, 8, 5000.0), "all", 600.0, 0.0)  # runs past its limit
    c.submit(job(2, 8, 50.0), "all", 100.0, 0.0)
    c.schedule(0.0)
    for h in range(4):
        d.poll(h, 0.0)
    assert c.next_expiry() == 600.0 and c.expire(599.0) == []
    assert c.expire(600.0) == [1]
    assert [(e.job_id, e.state) for e in c.ended] == [(1, "timeout")]
    assert [s.job_id for s in c.schedule(600.0)] == [2]
    for h in range(4):
        d.poll(h, 600.0)  # kills first, then job 2's launches: never two jobs on a node
    assert {k[0] for k in d.running} == {2}


def one_job_running(tasks: int, runtime: float, limit: float) -> tuple[Slurmctld, Daemons]:
    """A controller that started job 1 at 0, its daemons polled once."""
    c = ctld()
    d = Daemons(c)
    c.submit(job(1, tasks, runtime), "all", limit, 0.0)
    c.schedule(0.0)
    for h in range(4):
        d.poll(h, 0.0)
    return c, d


def test_a_failed_node_requeues_its_job_which_waits_for_its_kills() -> None:
    c, d = one_job_running(4, 1000.0, 2000.0)
    lost, unpulled = c.write_off([0], 10.0)
    assert sorted(lost) == [[1, 0], [1, 1]] and unpulled == []
    assert [(e.job_id, e.state, e.reason) for e in c.ended] == [(1, "requeued", "node_fail")]
    assert 1 in c.parked and c.schedule(10.0) == []  # its tasks on host 1 are still being killed
    d.poll(1, 10.0)  # takes the kills
    d.poll(1, 11.0)  # reports them
    assert 1 not in c.parked
    [s] = c.schedule(11.0)
    assert not set(s.nodes) & {0, 1}  # host 0's nodes are down
    assert c.exchange(0, [], 12.0) == {"reset": True, "launches": []}  # back, empty


def test_a_preempting_tier_requeues_the_newest_lower_job() -> None:
    low = Partition("low", tuple(range(8)), 10_000.0, 1000.0, tier=1)
    high = Partition("high", tuple(range(8)), 10_000.0, 1000.0, tier=2, preempt=True)
    c = ctld(low, high)
    d = Daemons(c)
    c.submit(job(1, 4, 1000.0), "low", 2000.0, 0.0)
    c.schedule(0.0)
    c.submit(job(2, 4, 1000.0, at=1.0), "low", 2000.0, 1.0)
    c.schedule(1.0)
    for h in range(4):
        d.poll(h, 1.0)
    c.submit(job(3, 2, 10.0, at=5.0, cls="b"), "high", 100.0, 5.0)
    # Job 2 (the newest) is requeued; job 3 takes its nodes at once, as each
    # daemon takes its kills before its launches.
    assert [(s.job_id, s.nodes) for s in c.schedule(5.0)] == [(3, (4, 5))]
    assert [(e.job_id, e.state, e.reason, e.started) for e in c.ended] == [(2, "requeued", "preempted", 1.0)]
    assert 2 in c.parked
    for h in range(4):
        d.poll(h, 5.0)
        d.poll(h, 6.0)
    assert 2 not in c.parked and c.schedule(6.0) == []  # back in the queue, waiting for room
    assert c.core.reservations == {2: 105.0}  # nodes 6-7 now, 4-5 at job 3's limit


def test_a_new_controller_keeps_running_jobs_from_its_saved_state_and_the_daemons() -> None:
    c = ctld()
    d = Daemons(c)
    c.submit(job(1, 2, 100.0), "all", 500.0, 0.0)
    c.submit(job(2, 2, 100.0), "all", 500.0, 0.0)
    c.schedule(0.0)
    for h in range(4):
        d.poll(h, 0.0)
    # The new controller: job 1 saved running on nodes 0-1, job 2's start not saved in time.
    saved = [SlurmJob(1, "all", 2, 500.0, "a", 0.0, started=0.0, on=(0, 1)), SlurmJob(2, "all", 2, 500.0, "a", 0.0)]
    n = ctld(recovering=True)
    n.restore(saved, {1: job(1, 2, 100.0), 2: job(2, 2, 100.0)})
    d.c = n
    assert n.exchange(0, [], 50.0) == {"register": True} and n.schedule(50.0) == []
    for h in range(4):
        n.register(h, [[j, t, m, CAP[m].tolist()] for (j, t), (m, _e) in d.running.items() if m // 2 == h], [], {},
                   unreported=d.unreported(h))
    assert n.settle(50.0) == [2]  # job 2 runs but its start is unknown: killed, requeued
    for h in range(4):
        d.poll(h, 50.0)
        d.poll(h, 51.0)
    assert [s.job_id for s in n.schedule(51.0)] == [2]
    for h in range(4):
        d.poll(h, 100.0)
    assert (1, "completed") in [(e.job_id, e.state) for e in n.ended]


def test_a_job_the_daemons_run_elsewhere_than_its_saved_start_is_killed_and_requeued() -> None:
    """Saved running on nodes 0-1 by one controller; requeued and started
    again on nodes 2-3 by the next, which died before saving either. A
    third controller restoring the first start must not book nodes 0-1 for
    it while its tasks run on 2-3: those would look free, and another job
    placed there overcommits them (a sim soak, seed 11: 52 overcommits)."""
    _c, d = one_job_running(2, 100.0, 500.0)
    moved = {(1, t): (2 + t, e) for (_j, t), (_m, e) in d.running.items()}
    d.running = moved  # what the lost controller left running
    n = ctld(recovering=True)
    n.restore([SlurmJob(1, "all", 2, 500.0, "a", 0.0, started=0.0, on=(0, 1))], {1: job(1, 2, 100.0)})
    d.c = n
    for h in range(4):
        n.register(h, [[j, t, m, CAP[m].tolist()] for (j, t), (m, _e) in d.running.items() if m // 2 == h], [], {},
                   unreported=d.unreported(h))
    assert n.settle(50.0) == [1]
    n.submit(job(2, 8, 10.0), "all", 500.0, 50.0)
    assert [s.job_id for s in n.schedule(50.0)] == [2]  # every node: job 1's kills go out first
    for h in range(4):
        d.poll(h, 51.0)  # the daemons check that no node holds two jobs
    assert {j for j, _t in d.running} == {2}
    assert [(e.job_id, e.state, e.started) for e in n.ended] == [(1, "requeued", 0.0)]


def test_an_end_a_registration_told_is_stale_when_its_poll_repeats_it() -> None:
    """A controller starts a job on a host and dies before saving its start;
    the job's tasks end while no controller hears the host. The next
    controller restores the job queued and starts it anew on the same
    nodes: the host's delayed report of the first run must not be taken for
    the new run's end (the job would 'complete' at once and its nodes go to
    another job while it runs: overcommit)."""
    c = ctld()
    d = Daemons(c)
    c.submit(job(1, 2, 10.0), "all", 500.0, 0.0)
    assert [s.nodes for s in c.schedule(0.0)] == [(0, 1)]
    d.poll(0, 0.0)
    d.end_due(0, 20.0)  # ended; its poll never reached the controller, which died
    n = ctld(recovering=True)
    n.restore([SlurmJob(1, "all", 2, 500.0, "a", 0.0)], {1: job(1, 2, 10.0)})  # its start not saved
    d.c = n
    for h in range(4):
        n.register(h, [], [(j, t) for j, t, _ in d.done[h]], {}, unreported=d.unreported(h))
    assert n.settle(30.0) == []
    assert [s.nodes for s in n.schedule(30.0)] == [(0, 1)]  # job 1 runs again, same task keys
    d.poll(0, 31.0)  # the stale ends arrive, then the new run is launched
    assert n.ended == [] and n.out == {1: {0, 1}}
    n.submit(job(2, 8, 10.0), "all", 500.0, 31.0)
    assert n.schedule(31.0) == []  # nodes 0-1 are still job 1's
    d.poll(0, 41.0)  # the new run's own ends count
    assert [(e.job_id, e.state) for e in n.ended] == [(1, "completed")]


def test_load_we_did_not_place_holds_its_node_until_it_ends() -> None:
    c = ctld()
    c.add_foreign(0, (-5, 0), 300.0, (1.0, 1.0))
    c.submit(job(1, 8, 10.0), "all", 100.0, 0.0)
    assert c.schedule(0.0) == [] and c.core.reservations == {1: 300.0}
    c.exchange(0, [(-5, 0, False)], 120.0)
    assert [s.job_id for s in c.schedule(120.0)] == [1]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.just("submit"), st.integers(1, 6), st.integers(10, 400), st.integers(20, 600)),
    st.tuples(st.just("poll"), st.integers(0, 3), st.integers(1, 200), st.just(0)),
    st.tuples(st.just("fail"), st.integers(0, 3), st.integers(1, 50), st.just(0)),
), min_size=1, max_size=40))
def test_no_task_runs_twice_and_no_node_holds_two_jobs(ops: list) -> None:
    c = ctld()
    d = Daemons(c)
    now, jid = 0.0, 0
    for op, a, b, lim in ops:
        now += b if op != "submit" else 1.0
        if op == "submit":
            jid += 1
            c.submit(job(jid, a, float(b), at=now), "all", float(lim), now)
        elif op == "poll":
            d.poll(a, now)
        else:
            c.write_off([a], now)
            # As the invariant checker sees it: what ran there is written off
            # (the daemon, if alive, resets when it next polls).
            for key in [k for k, (n, _e) in d.running.items() if n // 2 == a]:
                del d.running[key]
        c.expire(now)
        c.schedule(now)
        assert all(len(c.core.jobs_on({node})) <= 1 for node in range(8)) and c.core.used.max() <= 1.0
        assert not (set(c.parked) & {j for j in c.core.jobs})
    assert math.isinf(c.next_expiry()) or c.next_expiry() > 0
