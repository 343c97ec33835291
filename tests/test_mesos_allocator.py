"""The Mesos allocator: offer books, filters, accept/hold accounting, ordering policies."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from schedlab.schedulers.archs.mesos.allocator import Allocator, Launch
from schedlab.schedulers.archs.mesos.order_policies import (
    drf_order, get_allocation_policy, priority_order, register_allocation_policy, weighted_order,
)
from schedlab.schedulers.model.resources import EPS

SLOT = np.array([4.0, 16.0])


def make(granularity: str = "cell", policy=drf_order, m: int = 4, fws=("A", "B"), timeout: float = 30.0, tasks=()) -> Allocator:
    """``fws``: names, or name -> add_framework keywords; ``tasks``: what the agents report running."""
    a = Allocator(np.tile(SLOT, (m, 1)), policy, granularity, timeout)
    for f in fws:
        a.add_framework(f, **(fws[f] if isinstance(fws, dict) else {}))
    a.add_agent(np.arange(m), list(tasks))
    return a


def check_books(a: Allocator) -> None:
    """free >= -EPS; free + offered + used + held == capacity per registered machine (nothing on others);
    each account's allocated == its tasks + held + offered."""
    offered, used, held = (np.zeros_like(a.capacity) for _ in range(3))
    per_fw = {n: np.zeros_like(a.total) for n in a.accounts}
    for o in a.offers.values():
        np.add.at(offered, o.machines, o.resources)
        per_fw[o.framework] += o.resources.sum(axis=0)
    for fw, mach, req in a.tasks.values():
        used[mach] += req
        per_fw[fw] += req
    for fw, mach, r in ((fw, mach, r) for fw, h in a.held.items() for mach, r in h.items()):
        held[mach] += r
        per_fw[fw] += r
    assert (a.free >= -EPS).all()
    np.testing.assert_allclose(np.where(a.registered[:, None], a.free + offered + used + held, 0.0),
                               np.where(a.registered[:, None], a.capacity, 0.0), atol=1e-6)
    assert not (a.free + offered + used + held)[~a.registered].any()
    for n, acct in a.accounts.items():
        np.testing.assert_allclose(acct.allocated, per_fw[n], atol=1e-6)
    np.testing.assert_allclose(a.locked() + a.held_total() + a.used(), sum(per_fw.values(), np.zeros(2)), atol=1e-6)


# ------------------------------------------------------------------ deterministic


def test_bad_granularity_and_policy_registry() -> None:
    with pytest.raises(ValueError, match="granularity"):
        Allocator(np.tile(SLOT, (1, 1)), drf_order, "rack", 1.0)
    with pytest.raises(KeyError, match="unknown allocation policy 'nope'"):
        get_allocation_policy("nope")
    with pytest.raises(TypeError):
        register_allocation_policy("bad", 3)  # type: ignore[arg-type]
    assert get_allocation_policy("drf") is drf_order


def test_cell_one_framework_gets_everything_then_the_other_after_decline() -> None:
    a = make("cell")
    (o,) = a.allocate(0.0)
    assert o.framework == "A" and o.machines.tolist() == [0, 1, 2, 3] and (o.resources == SLOT).all()
    assert a.allocate(1.0) == []  # B gets nothing while A holds the whole cell
    assert a.decline(o.offer_id, "A", 5.0, 1.0)
    (o2,) = a.allocate(2.0)
    assert o2.framework == "B" and o2.machines.tolist() == [0, 1, 2, 3]
    assert a.decline(o2.offer_id, "B", 0.0, 3.0)
    assert [x.framework for x in a.allocate(3.0)] == ["B"]  # A still refusing until t=6
    assert a.decline(max(a.offers), "B", 0.0, 6.0)
    assert [x.framework for x in a.allocate(6.0)] == ["A"]  # refuse time over: A first again (tie: registration order)
    check_books(a)


def test_cell_second_framework_gets_what_comes_back() -> None:
    a = make("cell")
    (o,) = a.allocate(0.0)
    r = a.accept(o.offer_id, "A", [Launch((1, 0), 0, SLOT), Launch((1, 1), 1, SLOT / 2)], [])
    assert r.ok and r.launched.tolist() == [True, True]
    np.testing.assert_allclose(r.returned, SLOT * 2.5)
    (o2,) = a.allocate(1.0)  # B has the lower share now
    assert o2.framework == "B" and o2.machines.tolist() == [1, 2, 3]
    assert a.allocate(1.5) == []
    assert a.release([(1, 0), (9, 9)]) == 1
    (o3,) = a.allocate(2.0)
    assert o3.framework == "A" and o3.machines.tolist() == [0]
    check_books(a)


def test_agent_weights_and_priorities() -> None:
    w = make("agent", weighted_order, fws={"A": {"weight": 3.0}, "B": {}})
    assert [o.framework for o in w.allocate(0.0)] == ["A", "B", "A", "A"]
    p = make("agent", priority_order, fws={"A": {}, "B": {"priority": 5}})
    assert {o.framework for o in p.allocate(0.0)} == {"B"}


def test_agent_declined_machine_goes_to_other_framework_until_refuse_time() -> None:
    a = make("agent", m=1, fws=("A", "B"))
    (o,) = a.allocate(0.0)
    a.decline(o.offer_id, "A", 10.0, 0.0)
    (o2,) = a.allocate(1.0)
    assert (o.framework, o2.framework) == ("A", "B")
    a.decline(o2.offer_id, "B", 10.0, 1.0)
    assert a.allocate(9.99) == []
    assert [x.framework for x in a.allocate(10.0)] == ["A"]


def test_decline_expire_and_reaccept_are_refused() -> None:
    a = make("cell", timeout=30.0)
    (o,) = a.allocate(0.0)
    assert not a.decline(o.offer_id, "B", 1.0, 0.0)  # not B's offer
    assert not a.accept(o.offer_id, "B", [Launch((1, 0), 0, SLOT)], []).ok
    assert a.expire(29.9) == []
    assert [x.offer_id for x in a.expire(30.0)] == [o.offer_id]
    r = a.accept(o.offer_id, "A", [Launch((1, 0), 0, SLOT)], [(1, SLOT)])
    assert not r.ok and not r.launched.any() and not r.held.any() and not r.returned.any()
    assert a.tasks == {} and not a.decline(o.offer_id, "A", 1.0, 31.0)
    (o2,) = a.allocate(31.0)
    assert a.accept(o2.offer_id, "A", [], []).ok
    assert not a.accept(o2.offer_id, "A", [Launch((1, 0), 0, SLOT)], []).ok
    check_books(a)


def test_accept_refuses_oversized_duplicate_and_foreign_machine_launches() -> None:
    a = make("agent", m=2, fws=("A",))
    o0, o1 = a.allocate(0.0)
    r = a.accept(o0.offer_id, "A", [Launch((1, 0), 0, SLOT * [1, 2]), Launch((1, 1), 0, SLOT / 2),
                                    Launch((1, 1), 0, SLOT / 4), Launch((1, 2), 1, SLOT / 4),
                                    Launch((1, 3), 0, SLOT / 2 + 1e-3)], [])
    assert r.launched.tolist() == [False, True, False, False, False]
    np.testing.assert_allclose(r.returned, SLOT / 2)
    check_books(a)


def test_holds_then_launch_from_held_and_unhold() -> None:
    a = make("agent", m=2, fws=("A",))
    o0, o1 = a.allocate(0.0)
    r = a.accept(o0.offer_id, "A", [], [(0, SLOT / 2), (0, SLOT / 4), (0, SLOT), (1, SLOT / 4)])
    assert r.held.tolist() == [True, True, False, False]
    np.testing.assert_allclose(a.held["A"][0], SLOT * 0.75)
    check_books(a)
    before = a.accounts["A"].allocated.copy()
    r = a.accept(None, "A", [Launch((2, 0), 0, SLOT / 2), Launch((2, 1), 0, SLOT / 2)], [(0, SLOT / 4)])
    assert r.ok and r.launched.tolist() == [True, False] and not r.held.any()
    np.testing.assert_allclose(a.accounts["A"].allocated, before)  # held turned into running: same share
    r = a.accept(o1.offer_id, "A", [Launch((2, 1), 0, SLOT / 2)], [])
    assert r.launched.tolist() == [False]  # machine 0 is not in o1; the hold has only SLOT/4 left
    a.unhold("A", 0, SLOT)  # more than held: gives back what there is
    a.unhold("A", 3, SLOT)  # nothing held there: ignored
    assert 0 not in a.held["A"]
    check_books(a)
    assert sorted(o.machines[0] for o in a.allocate(1.0)) == [0, 1]


def test_a_launch_on_an_offer_does_not_take_what_the_framework_holds_there() -> None:
    # What a framework holds on a machine is a gang gathering its slots: a
    # task of another job launched on an offer must not take it from under it.
    a = make("agent", m=1, fws=("A",))
    (o,) = a.allocate(0.0)
    a.accept(o.offer_id, "A", [], [(0, SLOT / 4)])
    (o2,) = a.allocate(1.0)
    np.testing.assert_allclose(o2.resources[0], SLOT * 0.75)
    r = a.accept(o2.offer_id, "A", [Launch((5, 0), 0, SLOT)], [])
    assert r.launched.tolist() == [False] and r.returned.any()
    np.testing.assert_allclose(a.held["A"][0], SLOT / 4)
    check_books(a)
    r = a.accept(None, "A", [Launch((6, 0), 0, SLOT / 4)], [])  # the gang's own launch takes it
    assert r.launched.tolist() == [True] and 0 not in a.held["A"]
    check_books(a)


def test_remove_and_readd_agent() -> None:
    a = make("cell", m=3, fws=("A", "B"))
    (o,) = a.allocate(0.0)
    a.accept(o.offer_id, "A", [Launch((1, 0), 0, SLOT / 2), Launch((1, 1), 2, SLOT / 2)], [(0, SLOT / 4)])
    (ob,) = a.allocate(1.0)
    assert ob.framework == "B"
    lost = a.remove_agent(np.array([0]))
    assert lost == [(1, 0)] and ob.offer_id not in a.offers and 0 not in a.held["A"]
    assert not a.registered[0] and not a.free[0].any()
    check_books(a)
    # Re-registration reports the task still running elsewhere and a task of an unknown framework.
    a.add_agent(np.array([2]), [((1, 1), "A", 2, SLOT / 2), ((7, 0), "C", 2, SLOT / 4)])
    assert "C" in a.accounts and (7, 0) in a.tasks
    check_books(a)
    a.add_agent(np.array([0]), [])
    check_books(a)


def test_set_wants_suppresses_and_revive_clears_filters() -> None:
    a = make("cell", fws=("A",))
    (o,) = a.allocate(0.0)
    a.decline(o.offer_id, "A", 100.0, 0.0)
    a.set_wants("A", False)
    assert a.allocate(1.0) == []
    a.set_wants("A", True)
    assert len(a.allocate(1.0)) == 1


def test_starving_waits_for_timeout_and_offers_reset_it() -> None:
    a = make("agent", fws={"A": {"guarantee": 0.5}, "B": {}}, tasks=[((j, 0), "B", j, SLOT) for j in range(3)])
    assert a.starving(0.0, 10.0) == [] and a.starving(4.0, 10.0) == []
    assert [o.framework for o in a.allocate(5.0)] == ["A"]  # share 0.25: still below its guarantee
    assert a.starving(10.0, 10.0) == [] and a.starving(15.0, 10.0) == ["A"]
    a.set_wants("A", False)
    assert a.starving(11.0, 10.0) == []
    assert a.accounts["A"].starving_since is None


def test_revocations_take_newest_jobs_and_stop_at_guarantee() -> None:
    a = make("agent", fws={"A": {"guarantee": 0.5}, "B": {"guarantee": 0.25}}, tasks=[((j, 0), "B", j, SLOT) for j in range(4)])
    assert a.revocations([]) == []
    assert a.revocations(["A"]) == [(3, 0), (2, 0)]
    a.release([(3, 0), (2, 0)])
    assert not a.revoking
    a.add_framework("B", guarantee=0.75)
    a.add_agent(np.arange(4), [((j, 0), "B", j, SLOT) for j in range(4)])
    assert a.revocations(["A"]) == [(3, 0)]  # B keeps its own guarantee


def test_repeated_revocations_never_take_victim_below_guarantee() -> None:
    a = make("agent", fws={"A": {"guarantee": 0.5}, "B": {"guarantee": 0.5}}, tasks=[((j, 0), "B", j, SLOT) for j in range(4)])
    first = a.revocations(["A"])
    second = a.revocations(["A"])  # kills not confirmed yet; A's and B's shares unchanged
    assert len(first) + len(second) <= 2  # B (share 1.0, guarantee 0.5) can lose at most 2 of its 4 tasks


def test_released_resources_on_an_offered_machine_are_offered_again_separately() -> None:
    """As in Mesos, freed resources on a machine already in someone's offer are
    offered on their own: offers are disjoint in resources, not in machines."""
    a = make("cell", m=2, fws=("A", "B"))
    (o,) = a.allocate(0.0)
    a.accept(o.offer_id, "A", [Launch((1, 0), 0, SLOT / 2)], [])
    (ob,) = a.allocate(1.0)  # B: the rest of machine 0 and all of machine 1
    assert ob.framework == "B" and ob.machines.tolist() == [0, 1]
    a.release([(1, 0)])
    (again,) = a.allocate(2.0)  # A is offered machine 0's released half while B's offer still covers machine 0
    assert again.framework == "A" and again.machines.tolist() == [0]
    np.testing.assert_allclose(again.resources[0], SLOT / 2)


# ------------------------------------------------------------------ properties


@settings(max_examples=100, deadline=None)
@given(st.integers(2, 3), st.integers(1, 9), st.integers(0, 8))
def test_agent_drf_round_robins_identical_agents(n_fw: int, m: int, cursor: int) -> None:
    a = make("agent", m=m, fws=[f"f{i}" for i in range(n_fw)])
    a._agent_cursor = cursor
    made = a.allocate(0.0)
    assert [o.framework for o in made] == [f"f{i % n_fw}" for i in range(m)]
    assert sorted(o.machines[0] for o in made) == list(range(m))


CAPS = np.array([[4.0, 16.0], [8.0, 32.0], [2.0, 8.0], [4.0, 4.0], [1.0, 2.0]])
AGENTS = [np.array([0, 1]), np.array([2]), np.array([3]), np.array([4])]
FRACS = st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5])
OPS = st.sampled_from(["allocate"] * 3 + ["accept"] * 3 + ["accept_held", "decline", "expire", "release", "unhold", "agent", "time"])


def _random_accept(a: Allocator, o, data, next_job: int) -> int:
    avail = {int(m): r for m, r in zip(o.machines.tolist(), o.resources)}
    for m, r in a.held.get(o.framework, {}).items():
        avail[m] = avail.get(m, 0) + r
    launches = []
    for _ in range(data.draw(st.integers(0, 4))):
        m = data.draw(st.sampled_from(sorted(avail) + [4]))
        req = avail.get(m, SLOT) * np.array([data.draw(FRACS), data.draw(FRACS)]) / 2
        if a.tasks and data.draw(st.integers(0, 3)) == 0:
            key = data.draw(st.sampled_from(sorted(a.tasks)))  # a running task: must be refused
        else:
            key, next_job = (next_job, 0), next_job + 1
        launches.append(Launch(key, m, req))
    holds = [(m, avail[m] * data.draw(FRACS) / 2) for m in data.draw(st.lists(st.sampled_from(o.machines.tolist()), max_size=2))]
    running = set(a.tasks)
    r = a.accept(o.offer_id, o.framework, launches, holds)
    got = [ln for ln, ok in zip(launches, r.launched) if ok]
    assert r.ok and len({ln.key for ln in got}) == len(got) and not running & {ln.key for ln in got}
    assert all(a.tasks[ln.key][:2] == (o.framework, ln.machine) for ln in got)
    return next_job


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["cell", "agent"]), st.sampled_from([drf_order, weighted_order, priority_order]),
       st.lists(st.integers(1, 3), min_size=3, max_size=3), st.data())
def test_random_operations_keep_the_books(gran: str, policy, weights, data) -> None:
    a, fws = Allocator(CAPS, policy, gran, offer_timeout=10.0), ["f0", "f1", "f2"]
    for f, w in zip(fws, weights):
        a.add_framework(f, weight=float(w), priority=w)
    for ms in AGENTS[:3]:
        a.add_agent(ms, [])
    now, next_job = 0.0, 0
    refused: dict[tuple[str, int], float] = {}
    made: dict[int, str] = {}
    for _ in range(data.draw(st.integers(5, 30))):
        op = data.draw(OPS)
        if op == "allocate":
            new = a.allocate(now)
            made.update((o.offer_id, o.framework) for o in new)
            in_round = [m for o in new for m in o.machines.tolist()]
            assert len(in_round) == len(set(in_round))  # one offer per machine per round
            for o in new:
                assert (o.resources.sum(axis=1) > 0).all() and (gran == "cell" or o.machines.size == 1)
                assert all(refused.get((o.framework, m), -1.0) <= now for m in o.machines.tolist())
            busy = {o.framework for o in a.offers.values()}
            assert gran == "agent" or len(busy) == len(a.offers)  # cell: one offer per framework
            free_rows = np.flatnonzero((a.free > EPS).any(axis=1) & a.registered).tolist()
            for f in fws:  # nothing left that an eligible framework would have taken
                if gran == "agent" or f not in busy:
                    assert all(refused.get((f, m), -1.0) > now for m in free_rows)
        elif op == "accept" and a.offers:
            next_job = _random_accept(a, a.offers[data.draw(st.sampled_from(sorted(a.offers)))], data, next_job)
        elif op == "decline" and a.offers:
            o = a.offers[data.draw(st.sampled_from(sorted(a.offers)))]
            secs = data.draw(st.sampled_from([0.0, 2.0, 20.0]))
            assert a.decline(o.offer_id, o.framework, secs, now)
            refused.update({(o.framework, m): now + secs for m in o.machines.tolist() if secs > 0})
        elif op == "accept_held":
            f = data.draw(st.sampled_from(fws))
            launches = [Launch((next_job + i, 0), m, r * data.draw(FRACS)) for i, (m, r) in enumerate(sorted(a.held.get(f, {}).items()))]
            next_job += len(launches)
            r = a.accept(None, f, launches, [(0, SLOT)])
            assert r.ok and not r.held.any() and not r.returned.any()
        elif op == "expire":
            now += 10.0
            a.expire(now)
            assert all(o.expires_at > now for o in a.offers.values())
        elif op == "release" and a.tasks:
            keys = data.draw(st.lists(st.sampled_from(sorted(a.tasks)), max_size=3, unique=True))
            assert a.release(keys + [(-1, 0)]) == len(keys)
        elif op == "unhold":
            a.unhold(data.draw(st.sampled_from(fws)), m := data.draw(st.integers(0, 4)), CAPS[m] * data.draw(FRACS))
        elif op == "agent":
            ms = AGENTS[data.draw(st.integers(0, 3))]
            if a.registered[ms].all() and data.draw(st.booleans()):
                lost = a.remove_agent(ms)
                assert not any(k in a.tasks for k in lost)
                assert not any(set(o.machines.tolist()) & set(ms.tolist()) for o in a.offers.values())
            else:  # (re-)registration reporting the tasks still running there
                a.add_agent(ms, [(k, f, m, req) for k, (f, m, req) in a.tasks.items() if m in ms.tolist()])
        else:
            now += data.draw(st.sampled_from([0.5, 1.0, 5.0]))
        check_books(a)
        closed = sorted((oid, f) for oid, f in made.items() if oid not in a.offers)
        if closed:  # an accepted, declined or rescinded offer is never accepted or declined again
            oid, f = data.draw(st.sampled_from(closed))
            free, tasks = a.free.copy(), dict(a.tasks)
            r = a.accept(oid, f, [Launch((10**6, 0), 0, np.zeros(2))], [])
            assert not r.ok and not r.launched.any() and not a.decline(oid, f, 1.0, now)
            np.testing.assert_array_equal(a.free, free)
            assert a.tasks == tasks


def test_float_dust_from_many_returns_never_makes_an_allocation_negative() -> None:
    """Seven 0.0017-cpu tasks given and given back leave -1.3e-18 in float
    arithmetic; DRF refuses negative demands, and the master's allocation
    loop died of it (CSS's tiny tasks). An allocation is never below zero."""
    a = make("cell")
    acct = a.accounts["A"]
    for _ in range(7):
        acct.allocated += np.array([0.0017, 0.0])
    for _ in range(7):
        acct.give_back(np.array([0.0017, 0.0]))
    assert (acct.allocated >= 0).all() and acct.allocated[0] == 0.0
    drf_order(np.vstack([acct.allocated, a.accounts["B"].allocated]), a.total, np.ones(2), np.zeros(2))
