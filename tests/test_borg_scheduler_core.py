"""The Borgmaster leader's decisions (next job, think time, placement and
preemption, back-off bookkeeping), pure: hand-made cells, no Ray."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from schedlab.schedulers.archs.borg.cell_machine import BorgStateMachine
from schedlab.schedulers.archs.borg.placement import PlacementParams
from schedlab.schedulers.archs.borg.scheduler import BorgParams, BorgScheduler, hosts_down, on_path, paths
from schedlab.schedulers.model.resources import EPS


def params(n: int = 4, **kw: object) -> BorgParams:
    base: dict = dict(t_job=1.0, t_task=0.5, batch_t_job=0.1, batch_t_task=0.01, placement=PlacementParams("best_fit"),
                      spread_service=False, preemption=True, multi_path=False, poll_interval=1.0, missed_polls=3,
                      hosts=n // 2, racks=np.zeros(n, dtype=np.int64), eligible={}, retry_backoff=10.0)
    base.update(kw)
    return BorgParams(**base)


def cell(n: int = 4, cpu: float = 4.0, prefill: list | None = None) -> BorgStateMachine:
    cap = np.tile([cpu, cpu * 2], (n, 1)).astype(np.float64)
    free = cap.copy()
    for _j, _t, m, req, _p in prefill or []:
        free[m] -= req
    return BorgStateMachine(cap, free, 2, {}, 10, prefill)


def wire(job_id: int, tasks: int, priority: int = 0, req: tuple[float, float] = (1.0, 1.0), user: str = "u",
         kind: str = "batch", job_class: str = "c") -> dict:
    return {"job_id": job_id, "user": user, "priority": priority, "request": list(req), "durations": [10.0] * tasks,
            "job_class": job_class, "kind": kind}


def submit(sm: BorgStateMachine, *jobs: dict) -> None:
    assert all(ok for _j, ok, _r in sm.apply(("submit", list(jobs), 0.0)))


def sched(p: BorgParams | None = None, seed: int = 0) -> BorgScheduler:
    return BorgScheduler(p or params(), np.random.default_rng(seed))


# ------------------------------------------------------------------ next job


def test_next_job_follows_the_queue_and_skips_inflight_and_backing_off() -> None:
    sm = cell()
    submit(sm, wire(1, 1), wire(2, 1), wire(3, 1, priority=150))
    s = sched()
    assert s.next_job(sm, "all", 0.0) == 3  # highest priority first
    s.begin(3)
    assert s.next_job(sm, "all", 0.0) == 1
    s.settle(1, [False], "waiting", now=5.0)  # placed nothing: backs off until 15
    assert s.next_job(sm, "all", 14.9) == 2
    s.end(3)
    assert s.next_job(sm, "all", 14.9) == 3
    s.begin(3)
    s.begin(2)
    assert s.next_job(sm, "all", 14.9) is None
    assert s.next_job(sm, "all", 15.0) == 1  # backed off exactly retry_backoff


def test_paths_split_jobs_by_priority_band() -> None:
    sm = cell()
    submit(sm, wire(1, 1, priority=250), wire(2, 1, priority=150), wire(3, 1, priority=10))
    s = sched()
    assert paths(params(multi_path=True)) == ["service", "batch"] and paths(params()) == ["all"]
    assert s.next_job(sm, "service", 0.0) == 1
    assert s.next_job(sm, "batch", 0.0) == 2
    s.begin(2)
    assert s.next_job(sm, "batch", 0.0) == 3  # best effort goes with batch
    s.begin(1)
    assert s.next_job(sm, "service", 0.0) is None
    assert on_path("all", 400) and on_path("service", 400) and not on_path("batch", 360) and on_path("batch", 99)


def test_settle_backs_off_only_a_waiting_job_that_got_nothing() -> None:
    s = sched()
    s.settle(1, [False, False], "waiting", 3.0)
    s.settle(2, [True, False], "waiting", 3.0)
    s.settle(3, [], "abandoned", 3.0)
    assert s.fruitless == {1: 3.0}
    s.settle(1, [True], "scheduled", 4.0)
    assert s.fruitless == {}
    s.settle(4, [False], "stale", 5.0)  # refused as stale: tried again at once
    s.settle(5, [], "waiting", 5.0)  # nothing to place at all still backs off
    assert s.fruitless == {5: 5.0}
    s.begin(9)
    s.reset()
    assert s.fruitless == {} and s.inflight == set()


def test_think_time_per_path() -> None:
    s = sched()
    job = {"pending": [0, 1, 2]}
    assert s.think_time("all", job) == 1.0 + 0.5 * 3
    assert s.think_time("service", job) == 1.0 + 0.5 * 3
    assert s.think_time("batch", job) == 0.1 + 0.01 * 3


# ------------------------------------------------------------------ decide


def test_decide_places_on_up_eligible_machines_only() -> None:
    sm = cell(n=4)
    sm.apply(("down", [0], 0.0))  # machines 0 and 1
    p = params(eligible={"c": np.array([True, True, True, False])})
    submit(sm, wire(1, 3, req=(2.0, 2.0)))
    placements, victims = sched(p).decide(sm, sm.jobs[1])
    assert victims == [] and sorted(placements) == [[0, 2], [1, 2]]  # two fit on machine 2, none elsewhere
    assert sm.free[2].tolist() == [4.0, 8.0]  # the cell is read, not changed


def test_decide_preempts_lower_priority_for_what_did_not_fit() -> None:
    standing = [[100 + m, 0, m, [4.0, 4.0], 50 + m] for m in range(4)]  # every machine busy with best-effort work
    sm = cell(n=4, prefill=standing)
    submit(sm, wire(1, 3, priority=250, req=(2.0, 2.0)))
    placements, victims = sched().decide(sm, sm.jobs[1])
    # Cheapest victim (lowest priority) first, one per task that did not fit.
    # (A machine a victim left room on is not reused by the next task: each
    # one that did not fit preempts; pinned as it stands.)
    assert victims == [[100, 0], [101, 0], [102, 0]]
    assert placements == [[0, 0], [1, 1], [2, 2]]
    no = sched(params(preemption=False)).decide(sm, sm.jobs[1])
    assert no == ([], [])


def test_prod_never_preempts_prod() -> None:
    sm = cell(n=2, prefill=[[100 + m, 0, m, [4.0, 4.0], 200] for m in range(2)])
    submit(sm, wire(1, 1, priority=300, req=(2.0, 2.0)))
    assert sched().decide(sm, sm.jobs[1]) == ([], [])


def test_spread_service_spreads_over_racks() -> None:
    sm = cell(n=4, cpu=16.0)
    p = params(racks=np.array([0, 0, 1, 1]), spread_service=True)
    submit(sm, wire(1, 4, kind="service"), wire(2, 4, kind="batch"))
    service, _ = sched(p).decide(sm, sm.jobs[1])
    batch, _ = sched(p).decide(sm, sm.jobs[2])
    racks = p.racks
    assert sorted(int(racks[m]) for _t, m in service) == [0, 0, 1, 1]
    assert len({int(racks[m]) for _t, m in batch}) == 1  # best fit packs a batch job


def test_hosts_down() -> None:
    sm = cell(n=6)
    sm.apply(("down", [1], 0.0))
    assert hosts_down(sm, 3) == {1}


# ------------------------------------------------------------------ properties


@st.composite
def scenes(draw: st.DrawFn) -> tuple[BorgStateMachine, BorgParams, list[int]]:
    n = draw(st.integers(2, 8)) // 2 * 2
    standing = []
    for m in range(n):
        for t in range(draw(st.integers(0, 2))):
            standing.append([100 + m, t, m, [draw(st.sampled_from([0.5, 1.0, 2.0])), 1.0], draw(st.integers(0, 399))])
    sm = cell(n=n, prefill=standing)
    for m in range(n):
        if (sm.free[m] < -EPS).any():  # overfilled by the draw: drop the machine's standing load
            for key in [k for k, e in sm.running.items() if e[0] == m]:
                del sm.running[key]
            sm.free[m] = sm.capacity[m]
    down = draw(st.lists(st.integers(0, n // 2 - 1), max_size=n // 2, unique=True))
    if down:
        sm.apply(("down", down, 0.0))
    jobs = []
    for j in range(draw(st.integers(1, 5))):
        submit(sm, wire(j + 1, draw(st.integers(1, 6)), priority=draw(st.integers(0, 399)),
                        req=(draw(st.sampled_from([0.5, 1.0, 3.0])), draw(st.sampled_from([1.0, 4.0])))))
        jobs.append(j + 1)
    eligible = np.asarray(draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    p = params(n=n, eligible={"c": eligible}, preemption=draw(st.booleans()),
               placement=PlacementParams(draw(st.sampled_from(["best_fit", "worst_fit", "hybrid"])), draw(st.sampled_from([None, 2]))))
    return sm, p, jobs


@settings(max_examples=150, deadline=None)
@given(scene=scenes(), seed=st.integers(0, 10))
def test_placements_never_overfill_nor_use_a_down_or_ineligible_machine(scene: tuple, seed: int) -> None:
    sm, p, jobs = scene
    s = sched(p, seed)
    for job_id in jobs:
        job = sm.jobs[job_id]
        before = (sm.free.copy(), sm.up.copy())
        placements, victims = s.decide(sm, job)
        np.testing.assert_array_equal(sm.free, before[0])  # read only
        assert sorted(t for t, _m in placements) == sorted(set(t for t, _m in placements))  # a task once
        assert {t for t, _m in placements} <= set(job["pending"])
        free = sm.free.copy()
        for vj, vt in victims:
            m, prio, req = sm.running[(vj, vt)]
            assert prio < job["priority"] and not (prio >= 200 and job["priority"] >= 200)
            free[m] += np.asarray(req)
        for _t, m in placements:
            assert sm.up[m] and p.eligible["c"][m]
            free[m] -= np.asarray(job["request"])
        assert (free > -EPS).all()
        # What the leader writes is what the state machine accepts (nothing changed meanwhile).
        accepted, _pre, _status = sm.apply(("place", job_id, placements, victims, 1.0))
        assert all(accepted)


@settings(max_examples=150, deadline=None)
@given(scene=scenes(), data=st.data())
def test_next_job_is_never_inflight_nor_backing_off_and_is_the_first_such(scene: tuple, data: st.DataObject) -> None:
    sm, p, jobs = scene
    s = sched(p)
    for j in jobs:
        if data.draw(st.booleans()):
            s.begin(j)
        if data.draw(st.booleans()):
            s.settle(j, [False], "waiting", data.draw(st.floats(0.0, 30.0)))
    now = data.draw(st.floats(0.0, 40.0))
    path = data.draw(st.sampled_from(["all", "service", "batch"]))
    got = s.next_job(sm, path, now)
    ok = [j for j in sm.queue.order() if j not in s.inflight and now - s.fruitless.get(j, -1e18) >= p.retry_backoff
          and on_path(path, sm.jobs[j]["priority"])]
    assert got == (ok[0] if ok else None)
