"""A Mesos framework's pure decisions: elastic/rigid placement, delay scheduling, settle, lost."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.archs.mesos.framework import Decision, FrameworkCore, FrameworkParams
from schedlab.schedulers.placement.policies import get_policy

POLICIES = ["first_fit", "random_first_fit", "best_fit", "worst_fit"]


def job(jid: int, tasks: int, req: tuple[float, float] = (1.0, 2.0)) -> Job:
    return Job(jid, "batch", JobKind.BATCH, 0, 0.0, req, (10.0,) * tasks)


def core(n: int = 4, seed: int = 0, policy: str = "first_fit", **kw) -> FrameworkCore:
    return FrameworkCore(FrameworkParams("fw", 0.1, 0.01, get_policy(policy), **kw), n, np.random.default_rng(seed))


def pool(n: int, cpu: float = 4.0, mem: float = 8.0) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n, dtype=np.int64), np.tile([cpu, mem], (n, 1)).astype(np.float64)


def accept_all(fc: FrameworkCore, jp, d: Decision, machines: np.ndarray, now: float) -> str:
    return fc.settle(jp, d, np.ones(d.tasks.size, bool), np.ones(d.hold_rows.size, bool), machines, now)


# ------------------------------------------------------------------ deterministic


def test_submit_queue_and_data_replicas() -> None:
    fc = core(n=5, data_replicas=3)
    assert not fc.wants()
    fc.submit([job(1, 4), job(2, 1)])
    assert fc.wants() and [jp.job.job_id for jp in fc.queue] == [1, 2] and set(fc.jobs) == {1, 2}
    d = fc.jobs[1].data
    assert d.shape == (4, 3) and all(len(set(r)) == 3 for r in d.tolist()) and d.min() >= 0 and d.max() < 5
    assert fc.think_time(fc.jobs[1]) == 0.1 + 0.04
    few = core(n=2, data_replicas=3)
    few.submit([job(1, 2)])
    assert few.jobs[1].data.shape == (2, 2)
    none = core()
    none.submit([job(1, 3)])
    assert none.jobs[1].data.shape == (3, 0)


def test_usable_min_offer_and_preferred() -> None:
    fc = core(min_offer=(2.0, 4.0))
    ms, free = pool(2, cpu=1.0, mem=2.0)
    assert fc.usable(ms, free)  # sums 2 cpu, 4 mem
    assert not fc.usable(ms[:1], free[:1])
    assert core().usable(ms[:1], free[:1] * 0)
    pref = core(preferred=np.array([False, False, True, True]))
    assert not pref.usable(ms, free) and pref.usable(np.array([1, 2]), free)


def test_begin_marks_first_attempt_and_wait_once() -> None:
    fc = core()
    fc.submit([job(1, 1)])
    jp = fc.queue[0]
    assert fc.begin(jp, 3.0) and not fc.begin(jp, 7.0)
    assert jp.first_attempt_at == 3.0 and jp.wait_since == 3.0


def test_elastic_places_what_fits_and_updates_pool() -> None:
    fc = core()
    fc.submit([job(1, 5, (2.0, 4.0))])
    jp = fc.queue[0]
    fc.begin(jp, 0.0)
    ms, free = pool(2)  # two slots per machine... of which 4 in all
    d = fc.place(jp, ms + 10, free, 0.0)
    assert d.tasks.tolist() == [0, 1, 2, 3] and d.rows.tolist() == [0, 0, 1, 1] and d.machines.tolist() == [10, 10, 11, 11]
    assert not d.local.any() and d.hold_rows.size == 0 and not free.any()
    assert fc.settle(jp, d, np.array([True, True, True, False]), np.zeros(0, bool), ms + 10, 1.0) == "waiting"
    assert jp.pending.tolist() == [3, 4] and jp.attempts == 1 and jp.first_slot_at == 1.0
    d2 = fc.place(jp, *pool(1), 2.0)
    assert accept_all(fc, jp, d2, pool(1)[0], 2.0) == "scheduled"
    assert not fc.queue and 1 in fc.jobs  # kept so a lost task can bring it back


def test_elastic_preferred_zeroes_other_rows() -> None:
    fc = core(preferred=np.array([False, True, False, False]))
    fc.submit([job(1, 4)])
    jp = fc.queue[0]
    fc.begin(jp, 0.0)
    ms, free = pool(3)
    d = fc.place(jp, ms, free, 0.0)
    assert set(d.machines.tolist()) == {1} and d.tasks.size == 4
    assert not free[0].any() and not free[2].any()


def test_rigid_holds_until_gang_fits_then_launches_all_from_holds() -> None:
    fc = core(mode="rigid")
    fc.submit([job(1, 3, (4.0, 8.0))])
    jp = fc.queue[0]
    fc.begin(jp, 0.0)
    assert fc.gang(jp) is None
    ms = np.array([5], dtype=np.int64)
    d = fc.place(jp, ms, pool(1)[1], 0.0)
    assert d.tasks.size == 0 and d.hold_rows.tolist() == [0] and not d.empty
    assert accept_all(fc, jp, d, ms, 0.0) == "waiting" and jp.held == [5] and fc.gang(jp) is None
    ms2 = np.array([6, 7, 8], dtype=np.int64)
    free = pool(3)[1]
    d2 = fc.place(jp, ms2, free, 1.0)  # needs only two more slots
    assert d2.tasks.size == 0 and d2.hold_rows.tolist() == [0, 1] and free[2].all() and not free[:2].any()
    assert accept_all(fc, jp, d2, ms2, 1.0) == "waiting" and jp.held == [5, 6, 7]
    assert fc.place(jp, ms2, pool(3)[1], 2.0).empty  # holds the whole gang: nothing more to hold
    g = fc.gang(jp)
    assert g.tasks.tolist() == [0, 1, 2] and g.rows.tolist() == [-1, -1, -1] and g.machines.tolist() == [5, 6, 7]
    assert g.hold_rows.size == 0 and not g.local.any()
    assert accept_all(fc, jp, g, ms2, 3.0) == "scheduled" and jp.held == [] and jp.first_slot_at == 0.0
    assert core().gang(jp) is None  # elastic frameworks never gang-launch


def test_rigid_refused_hold_is_not_recorded() -> None:
    fc = core(mode="rigid")
    fc.submit([job(1, 2, (4.0, 8.0))])
    jp = fc.queue[0]
    fc.begin(jp, 0.0)
    d = fc.place(jp, np.array([3]), pool(1)[1], 0.0)
    assert fc.settle(jp, d, np.zeros(0, bool), np.zeros(1, bool), np.array([3]), 0.0) == "waiting"
    assert jp.held == [] and jp.first_slot_at is None


def test_delay_scheduling_waits_then_goes_non_local() -> None:
    fc = core(n=6, delay=10.0, data_replicas=2)
    fc.submit([job(1, 2, (4.0, 8.0))])
    jp = fc.queue[0]
    jp.data = np.array([[0, 1], [2, 3]])
    fc.begin(jp, 100.0)
    far = np.array([4, 5], dtype=np.int64)
    assert fc.place(jp, far, pool(2)[1], 109.9).empty
    d = fc.place(jp, far, pool(2)[1], 110.0)
    assert sorted(d.machines.tolist()) == [4, 5] and not d.local.any()
    # A local slot launches at once and restarts the wait for the other task.
    mixed = np.array([2, 4], dtype=np.int64)
    d = fc.place(jp, mixed, pool(2)[1], 111.0)
    assert d.tasks.tolist() == [1] and d.machines.tolist() == [2] and d.local.tolist() == [True]
    assert jp.wait_since == 111.0


def test_settle_abandons_after_max_attempts() -> None:
    fc = core(max_attempts=2)
    fc.submit([job(1, 1, (9.0, 9.0)), job(2, 1)])
    jp = fc.queue[0]
    fc.begin(jp, 0.0)
    for expect in ("waiting", "abandoned"):
        d = fc.place(jp, *pool(1), 0.0)
        assert d.empty
        assert fc.settle(jp, d, np.zeros(0, bool), np.zeros(0, bool), pool(1)[0], 0.0) == expect
    assert [j.job.job_id for j in fc.queue] == [2] and 1 not in fc.jobs
    assert fc.lost([(1, 0)]) == []  # abandoned: nothing to bring back


def test_lost_requeues_scheduled_jobs_at_front() -> None:
    fc = core()
    fc.submit([job(1, 2), job(2, 3)])
    jp1 = fc.queue[0]
    fc.begin(jp1, 0.0)
    assert accept_all(fc, jp1, fc.place(jp1, *pool(1), 0.0), pool(1)[0], 0.0) == "scheduled"
    jp2 = fc.queue[0]
    fc.begin(jp2, 0.0)
    d = fc.place(jp2, *pool(1, cpu=1.0, mem=2.0), 0.0)
    fc.settle(jp2, d, np.ones(1, bool), np.zeros(0, bool), pool(1)[0], 0.0)
    assert jp2.pending.tolist() == [1, 2]
    assert fc.lost([(1, 1), (1, 1), (2, 0), (2, 2), (9, 0)]) == [1]
    assert [j.job.job_id for j in fc.queue] == [1, 2]
    assert jp1.pending.tolist() == [1] and jp2.pending.tolist() == [0, 1, 2]
    fc.task_done(1)
    assert 1 not in fc.jobs and fc.lost([(1, 0)]) == []


# ------------------------------------------------------------------ properties

free_rows = st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5, 4.0]), st.sampled_from([0.0, 1.0, 2.0, 4.0, 8.0])),
                     min_size=1, max_size=6)
requests = st.tuples(st.sampled_from([0.5, 1.0, 2.0]), st.sampled_from([1.0, 2.0, 3.0]))


@settings(max_examples=150, deadline=None)
@given(free_rows, requests, st.integers(1, 12), st.sampled_from(POLICIES), st.integers(0, 2**16))
def test_elastic_never_overplaces_or_overfills(rows, req, n_tasks, policy, seed) -> None:
    fc = core(n=8, seed=seed, policy=policy)
    fc.submit([job(1, n_tasks, req)])
    jp = fc.queue[0]
    jp.pending = jp.pending[::2].copy() if seed % 3 == 0 else jp.pending  # sometimes a partly launched job
    fc.begin(jp, 0.0)
    free = np.array(rows, dtype=np.float64)
    before = free.copy()
    ms = np.arange(len(rows), dtype=np.int64) + 2
    d = fc.place(jp, ms, free, 0.0)
    assert d.tasks.size <= jp.pending.size and set(d.tasks.tolist()) <= set(jp.pending.tolist())
    assert len(set(d.tasks.tolist())) == d.tasks.size and d.rows.size == d.tasks.size == d.local.size
    assert ((d.rows >= 0) & (d.rows < len(rows))).all() and (d.machines == ms[d.rows]).all()
    assert (free >= -1e-9).all()
    took = np.zeros_like(before)
    np.add.at(took, d.rows, np.asarray(req))
    np.testing.assert_allclose(before - free, took, atol=1e-9)
    capacity = sum(int(min((r[0] + 1e-9) // req[0], (r[1] + 1e-9) // req[1])) for r in rows)
    assert d.tasks.size == min(capacity, jp.pending.size)  # elastic takes whatever fits


@settings(max_examples=150, deadline=None)
@given(free_rows, requests, st.integers(1, 8), st.integers(0, 8), st.sampled_from(POLICIES), st.integers(0, 2**16))
def test_rigid_only_holds_and_gang_launches_all_or_nothing(rows, req, n_tasks, held, policy, seed) -> None:
    fc = core(n=8, seed=seed, policy=policy, mode="rigid")
    fc.submit([job(1, n_tasks, req)])
    jp = fc.queue[0]
    jp.held = [7] * min(held, n_tasks)
    fc.begin(jp, 0.0)
    free = np.array(rows, dtype=np.float64)
    before = free.copy()
    ms = np.arange(len(rows), dtype=np.int64)
    d = fc.place(jp, ms, free, 0.0)
    assert d.tasks.size == 0 and d.rows.size == 0 and (free >= -1e-9).all()
    assert d.hold_rows.size <= n_tasks - len(jp.held) and ((d.hold_rows >= 0) & (d.hold_rows < len(rows))).all()
    took = np.zeros_like(before)
    np.add.at(took, d.hold_rows, np.asarray(req))
    np.testing.assert_allclose(before - free, took, atol=1e-9)
    fc.settle(jp, d, np.zeros(0, bool), np.ones(d.hold_rows.size, bool), ms, 0.0)
    g = fc.gang(jp)
    if len(jp.held) < n_tasks:
        assert g is None
    else:
        assert g.tasks.tolist() == list(range(n_tasks)) and (g.rows == -1).all() and g.machines.size == n_tasks
        assert fc.settle(jp, g, np.ones(n_tasks, bool), np.zeros(0, bool), ms, 1.0) == "scheduled"


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 6), st.integers(1, 3), st.floats(0.5, 50.0), st.floats(0.0, 100.0), st.integers(0, 2**16),
       st.lists(st.integers(0, 9), min_size=1, max_size=6, unique=True))
def test_delay_scheduling_locality(n_tasks, replicas, delay, waited, seed, offered) -> None:
    fc = core(n=10, seed=seed, delay=delay, data_replicas=replicas)
    fc.submit([job(1, n_tasks, (1.0, 1.0))])
    jp = fc.queue[0]
    fc.begin(jp, 0.0)
    ms = np.array(offered, dtype=np.int64)
    free = np.ones((ms.size, 2))  # one slot per offered machine
    d = fc.place(jp, ms, free, waited)
    has_local = any(m in jp.data[t].tolist() for t in range(n_tasks) for m in offered)
    for t, m, loc in zip(d.tasks.tolist(), d.machines.tolist(), d.local.tolist()):
        assert loc == (m in jp.data[t].tolist())
    if has_local:  # local slots are taken at once; the local launch restarts the wait, so no non-local ones
        assert d.tasks.size >= 1 and d.local.all() and jp.wait_since == waited
    elif waited < delay:
        assert d.empty and jp.wait_since == 0.0
    else:  # waited long enough: any machine
        assert d.tasks.size == min(n_tasks, ms.size) and not d.local.any()


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 20))
def test_settle_abandons_exactly_at_max_attempts(max_attempts) -> None:
    fc = core(max_attempts=max_attempts)
    fc.submit([job(1, 2)])
    jp = fc.queue[0]
    empty = Decision(*(np.zeros(0, np.int64),) * 3, np.zeros(0, bool), np.zeros(0, np.int64))
    out = [fc.settle(jp, empty, np.zeros(0, bool), np.zeros(0, bool), np.zeros(0, np.int64), float(i))
           for i in range(max_attempts)]
    assert out == ["waiting"] * (max_attempts - 1) + ["abandoned"]
    assert not fc.queue and not fc.jobs


def test_a_framework_notices_its_master_restarted_and_elected_again_under_the_same_name() -> None:
    """Live, a framework with no offers calls nothing: when the master it
    registered with was killed, restarted and elected again (same name, a
    later lease epoch), only the lease tells it the new incarnation does not
    know it. Unnoticed, the framework would schedule nothing for the rest
    of the run."""
    import asyncio

    from schedlab.actors.archs.mesos.link import MasterLink

    class Lease:
        def __init__(self) -> None:
            self.now = ["master-0@1", 2, 100.0]

        async def query(self, command: tuple, deadline: float = 1.0) -> list:
            return self.now

    link = MasterLink(masters=2, replicas=3)
    link.coord = Lease()
    link.handle, link.master, link.epoch = object(), "master-0", 2

    async def check() -> list[bool]:
        out = [await link.stale()]
        link.coord.now = ["master-0@7", 3, 130.0]  # the same name, a new incarnation's epoch
        out.append(await link.stale())
        link.coord.now = ["master-1@2", 3, 130.0]
        out.append(await link.stale())
        return out

    assert asyncio.run(check()) == [False, True, True]
