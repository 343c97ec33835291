"""A Mesos framework's round of offers (usable offers, the pool, which jobs
are considered before the deadline, the answer's sections and declines,
each decision's share of the reply), pure."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from schedlab.schedulers.archs.mesos.framework import FrameworkCore, FrameworkParams
from schedlab.schedulers.archs.mesos.offer_round import SUPPRESS_REFUSE_S, OfferRound, suppress
from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.placement.policies import best_fit, first_fit, worst_fit


def job(jid: int, tasks: int, req: tuple[float, float] = (1.0, 2.0)) -> Job:
    return Job(jid, "batch", JobKind.BATCH, 0, 0.0, req, tuple(10.0 + t for t in range(tasks)))


def core(n: int = 16, policy=first_fit, t_job: float = 1.0, t_task: float = 0.0, **kw: object) -> FrameworkCore:
    return FrameworkCore(FrameworkParams("fw", t_job, t_task, policy, **kw), n, np.random.default_rng(0))  # type: ignore[arg-type]


def offer(oid: int, machines: list[int], cpu: float = 4.0, mem: float = 8.0, expires: float = 100.0) -> dict:
    return {"id": oid, "machines": np.asarray(machines, dtype=np.int64),
            "free": np.tile([cpu, mem], (len(machines), 1)).astype(np.float64), "expires": expires}


def run(rnd: OfferRound, now: float = 0.0) -> None:
    """The shell's loop with think time spent at once (no clock moves)."""
    while (step := rnd.next(now)) is not None:
        if step.fits:
            rnd.place(step.jp, 0.0, now, now)


# ------------------------------------------------------------------ deterministic


def test_suppressed_framework_declines_everything_long() -> None:
    assert suppress([offer(3, [0]), offer(4, [1])]) == [(3, SUPPRESS_REFUSE_S), (4, SUPPRESS_REFUSE_S)]


def test_pool_concatenates_usable_offers_and_remembers_where_rows_came_from() -> None:
    fc = core(min_offer=(5.0, 0.0), refuse_seconds=7.0)
    rnd = OfferRound(fc, [offer(1, [3, 4]), offer(2, [9]), offer(3, [5, 6], expires=50.0)])
    assert [o["id"] for o in rnd.usable] == [1, 3] and rnd.unusable == [(2, 7.0)]
    assert rnd.machines.tolist() == [3, 4, 5, 6] and rnd.offer_of.tolist() == [0, 0, 1, 1]
    assert rnd.free.shape == (4, 2) and rnd.deadline == 50.0
    empty = OfferRound(fc, [offer(2, [9])])
    assert empty.machines.size == 0 and empty.free.shape == (0, 2) and empty.deadline == 0.0
    assert empty.next(0.0) is None
    assert empty.answer() == ([], [(2, 7.0)])


def test_sections_per_offer_in_offer_order_and_unused_offers_declined() -> None:
    fc = core(refuse_seconds=5.0)
    fc.submit([job(1, 3, (4.0, 8.0)), job(2, 1, (2.0, 2.0))])
    rnd = OfferRound(fc, [offer(10, [0]), offer(11, [1, 2]), offer(12, [3]), offer(13, [4])])
    run(rnd)
    sections, declines = rnd.answer()
    # first fit: job 1 fills machines 0, 1, 2 (offers 10, 11); job 2 goes to machine 3 (offer 12).
    assert sections == [
        (10, [(1, 0, 0, [4.0, 8.0], 10.0)], []),
        (11, [(1, 1, 1, [4.0, 8.0], 11.0), (1, 2, 2, [4.0, 8.0], 12.0)], []),
        (12, [(2, 0, 3, [2.0, 2.0], 10.0)], []),
    ]
    assert declines == [(13, 5.0)]
    split = rnd.split([(True, [True], []), (True, [True, False], []), (False, [False], [])])
    assert [c.jp.job.job_id for c, _l, _h in split] == [1, 2]
    assert [(launched.tolist(), held.tolist()) for _c, launched, held in split] == [([True, True, False], []), ([False], [])]
    assert [launched.tolist() for _c, launched, _h in rnd.split(None)] == [[False, False, False], [False]]


def test_rigid_holds_go_into_their_offers_sections() -> None:
    fc = core(mode="rigid")
    fc.submit([job(1, 3, (4.0, 8.0))])
    rnd = OfferRound(fc, [offer(1, [7]), offer(2, [8, 9])])
    run(rnd)
    sections, declines = rnd.answer()
    assert sections == [(1, [], [(7, [4.0, 8.0])]), (2, [], [(8, [4.0, 8.0]), (9, [4.0, 8.0])])] and declines == []
    (c, launched, held), = rnd.split([(True, [], [True]), (True, [], [False, True])])
    assert launched.size == 0 and held.tolist() == [True, False, True]


def test_jobs_considered_while_time_and_resources_last() -> None:
    fc = core(t_job=1.0, t_task=1.0)
    fc.submit([job(1, 1), job(2, 1), job(3, 1)])  # think 2 s each
    rnd = OfferRound(fc, [offer(1, [0], expires=10.0)])
    a = rnd.next(5.0)
    assert a is not None and a.first and a.fits and a.jp.job.job_id == 1  # the first job is always considered
    rnd.place(a.jp, 2.0, 5.0, 7.0)
    b = rnd.next(7.0)
    assert b is not None and b.jp.job.job_id == 2
    rnd.place(b.jp, 2.0, 7.0, 9.0)
    assert rnd.next(8.0) is None  # 8 + 2 >= 10: job 3 waits for the next round
    assert fc.jobs[3].first_attempt_at is None and len(rnd.decisions) == 2


def test_the_answer_leaves_time_to_reach_the_master() -> None:
    # Think time 2 s per job, answers take up to 3 s to arrive, offers expire at 20.
    fc = core(t_job=1.0, t_task=1.0)
    fc.submit([job(1, 1), job(2, 1), job(3, 1), job(4, 1)])
    rnd = OfferRound(fc, [offer(1, [0], expires=20.0)], reply_s=3.0)
    now = 10.0
    while (step := rnd.next(now)) is not None:
        rnd.place(step.jp, 2.0, now, now + 2.0)
        now += 2.0
    # Jobs begin at 10, 12 and 14; 16 + 2 >= 20 - 3, so job 4 waits (without the margin it would have begun).
    assert [c.jp.job.job_id for c in rnd.decisions] == [1, 2, 3]
    assert rnd.answer()[0][0][0] == 1


def test_a_first_job_is_tried_even_when_its_offer_came_late() -> None:
    """Handing late offers back (to come again with a whole timeout) would
    livelock Mesos on a loaded machine at a high time scale: when every
    offer arrives late, every offer goes back. The first job is tried
    regardless; the master rescinds the offer if the answer is late, as
    real Mesos does."""
    fc = core(t_job=1.0, t_task=1.0)
    fc.submit([job(1, 1), job(2, 1)])
    rnd = OfferRound(fc, [offer(1, [0], expires=30.0)], reply_s=3.0)
    step = rnd.next(27.0)
    assert step is not None and step.first and step.fits
    rnd.place(step.jp, 2.0, 27.0, 29.0)
    assert rnd.next(29.0) is None  # no second job past the deadline


def test_a_job_that_does_not_fit_ends_the_round_as_a_failed_attempt() -> None:
    fc = core()
    fc.submit([job(1, 1, (8.0, 1.0)), job(2, 1)])
    rnd = OfferRound(fc, [offer(1, [0])])
    step = rnd.next(3.0)
    assert step is not None and step.first and not step.fits
    assert rnd.next(3.0) is None
    (c,) = rnd.decisions
    assert c.decision.empty and c.spent == 0.0 and c.started == 3.0 and fc.jobs[1].first_attempt_at == 3.0
    sections, declines = rnd.answer()
    assert sections == [] and declines == [(1, 5.0)]
    (_c, launched, held), = rnd.split(None)
    assert launched.size == 0 and held.size == 0


def test_a_pool_used_up_ends_the_round() -> None:
    fc = core()
    fc.submit([job(1, 2, (4.0, 8.0)), job(2, 1)])
    rnd = OfferRound(fc, [offer(1, [0, 1])])
    run(rnd)
    assert [c.jp.job.job_id for c in rnd.decisions] == [1] and fc.jobs[2].first_attempt_at is None


def test_the_queue_as_the_round_found_it() -> None:
    fc = core()
    fc.submit([job(1, 1)])
    rnd = OfferRound(fc, [offer(1, [0, 1])])
    fc.submit([job(2, 1)])  # arrives while the round is on
    run(rnd)
    assert [c.jp.job.job_id for c in rnd.decisions] == [1]


def test_give_back_and_forget_holds() -> None:
    fc = core(mode="rigid")
    fc.submit([job(1, 3), job(2, 2)])
    fc.jobs[1].held = [4, 5]
    fc.jobs[2].held = [6]
    assert fc.give_back(fc.jobs[1]) == [(4, [1.0, 2.0]), (5, [1.0, 2.0])] and fc.jobs[1].held == []
    fc.forget_holds()
    assert fc.jobs[2].held == []


# ------------------------------------------------------------------ properties


@st.composite
def rounds(draw: st.DrawFn) -> tuple[FrameworkCore, list[dict]]:
    mode = draw(st.sampled_from(["elastic", "rigid"]))
    fc = core(policy=draw(st.sampled_from([first_fit, best_fit, worst_fit])), mode=mode,
              t_job=draw(st.sampled_from([0.0, 1.0])), min_offer=draw(st.sampled_from([(), (3.0, 0.0)])),
              preferred=draw(st.sampled_from([None, np.arange(16) % 3 != 0])))
    fc.submit([job(j, draw(st.integers(1, 5)), draw(st.sampled_from([(1.0, 2.0), (2.0, 1.0), (4.0, 4.0)])))
               for j in range(draw(st.integers(0, 6)))])
    machines = draw(st.permutations(range(16)))
    offers, at = [], 0
    for oid in range(draw(st.integers(0, 5))):
        n = draw(st.integers(1, 3))
        ms = list(machines[at: at + n])
        at += n
        if not ms:
            break
        offers.append({"id": 100 + oid, "machines": np.asarray(ms, dtype=np.int64),
                       "free": np.asarray([[draw(st.sampled_from([0.0, 1.0, 4.0])), draw(st.sampled_from([0.0, 2.0, 8.0]))] for _ in ms]),
                       "expires": draw(st.sampled_from([0.5, 3.0, 100.0]))})
    return fc, offers


@settings(max_examples=200, deadline=None)
@given(scene=rounds(), data=st.data())
def test_packing_never_puts_a_task_outside_its_offer_nor_beyond_what_it_offered(scene: tuple, data: st.DataObject) -> None:
    fc, offers = scene
    rnd = OfferRound(fc, offers, data.draw(st.sampled_from([0.0, 1.0, 5.0])))
    now = data.draw(st.sampled_from([0.0, 2.0]))
    while (step := rnd.next(now)) is not None:
        if step.fits:
            spent = fc.think_time(step.jp)
            rnd.place(step.jp, spent, now, now + spent)
            now += spent
    sections, declines = rnd.answer()
    by_id = {o["id"]: o for o in offers}
    answered = [s[0] for s in sections]
    # Every offer is answered exactly once: used (a section) or declined.
    assert sorted(answered + [d[0] for d in declines]) == sorted(by_id) and len(set(answered)) == len(answered)
    for oid, launches, holds in sections:
        o = by_id[oid]
        left = {int(m): f.copy() for m, f in zip(o["machines"].tolist(), o["free"])}
        assert launches or holds
        for _j, _t, m, req, _d in launches:
            assert m in left
            left[m] -= np.asarray(req)
        for m, req in holds:
            assert m in left
            left[m] -= np.asarray(req)
        assert all((v > -1e-6).all() for v in left.values())
    # Each task is launched at most once in the round.
    keys = [(j, t) for _o, ls, _h in sections for j, t, *_ in ls]
    assert len(keys) == len(set(keys))
    # The reply is cut back into exactly the decisions' launches and holds.
    results = [(True, [data.draw(st.booleans()) for _ in ls], [data.draw(st.booleans()) for _ in hs]) for _o, ls, hs in sections]
    split = rnd.split(results)
    assert sum(int(l_.sum()) for _c, l_, _h in split) == sum(sum(r[1]) for r in results)
    assert sum(int(h.sum()) for _c, _l, h in split) == sum(sum(r[2]) for r in results)
    for c, launched, held in split:
        assert launched.size == c.decision.tasks.size and held.size == c.decision.hold_rows.size
