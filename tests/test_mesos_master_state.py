"""The leading Mesos master's soft state and decisions (agents, write-offs,
exchanges, answers to offers, recovery, allocation rounds, revocation), pure."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings, strategies as st

from schedlab.schedulers.archs.mesos.order_policies import drf_order
from schedlab.schedulers.archs.mesos.master_state import MasterConfig, MasterState, machine_spans, spanned_machines
from schedlab.schedulers.model.resources import EPS

SLOT = [4.0, 16.0]
REQ = [1.0, 2.0]


def config(hosts: int = 3, k: int = 2, granularity: str = "agent", **kw: object) -> MasterConfig:
    base: dict = dict(capacity=np.tile(SLOT, (hosts * k, 1)).astype(np.float64), machines_per_host=k, hosts=hosts,
                      frameworks={"fw-a": (1.0, 0, 0.0), "fw-b": (1.0, 0, 0.0)}, policy=drf_order, granularity=granularity,
                      allocation_interval=1.0, offer_timeout=30.0, revocation=False, starvation_timeout=10.0, masters=1,
                      replicas=1, lease_wall_s=1.0, sample_interval=5.0)
    base.update(kw)
    return MasterConfig(**base)


def leader(hosts: int = 3, fws: tuple[str, ...] = ("fw-a",), **kw: object) -> MasterState:
    """A leader of epoch 7 with every agent registered (empty) and ``fws`` registered."""
    s = MasterState(config(hosts, **kw))
    s.take_over(7)
    for h in range(hosts):
        s.register_agent(h, [], [])
    for fw in fws:
        s.register_framework(fw, True, 0.0)
    return s


def launch(s: MasterState, fw: str, offer: dict, tasks: list[tuple[int, int, int]], now: float = 1.0) -> list:
    """Accept ``tasks`` (job, task, machine) on ``offer``; the launched mask."""
    r = s.respond(fw, [(offer["id"], [(j, t, m, REQ, 30.0) for j, t, m in tasks], [])], [], [], True, now)
    return r.results[0][1]


def offers_of(s: MasterState, now: float = 0.0) -> dict[str, list[dict]]:
    return s.allocate_round(now).offers


# ------------------------------------------------------------------ leadership


def test_take_over_starts_empty_and_checks_epochs() -> None:
    s = leader()
    assert s.leads and s.epoch == 7 and s.agents == {0, 1, 2} and s.registered_fws == {"fw-a"}
    assert s.agent_ok(7, 1) and not s.agent_ok(6, 1) and not s.agent_ok(7, 5)
    assert s.framework_ok("fw-a", 7) and not s.framework_ok("fw-b", 7) and not s.framework_ok("fw-a", 8)
    s.lost_updates["fw-a"].append((1, 0))
    s.written_off.add(2)
    offer = offers_of(s)["fw-a"][0]
    assert launch(s, "fw-a", offer, [(4, 0, offer["machines"][0])]) == [True]
    # The accepted launch no agent pulled is gone with the leadership, and said to be.
    assert s.step_down() == [[4, 0, int(offer["machines"][0])]]
    assert not s.leads and s.epoch == 7
    assert s.take_over(9) == []
    assert s.epoch == 9 and not s.agents and not s.registered_fws and not s.lost_updates and not s.written_off
    assert s.alloc is not None and not s.alloc.registered.any()


# ------------------------------------------------------------------ agents


def test_an_agent_reregistering_reports_what_it_runs_and_the_rest_is_lost() -> None:
    s = leader()
    offer = offers_of(s)["fw-a"][0]  # machine 0 (agent granularity: one machine per offer)
    assert launch(s, "fw-a", offer, [(1, 0, 0), (1, 1, 0), (1, 2, 0)]) == [True, True, True]
    s.exchange(0, [])  # pulled
    reg = s.register_agent(0, [[1, 0, 0, REQ, "fw-a"]], [[1, 1]])  # (1, 2) neither runs nor finished
    assert not reg.reset and reg.gone == [(1, 2)] and reg.tasks == 1
    assert s.lost_updates["fw-a"] == [(1, 2)]
    assert set(s.alloc.tasks) == {(1, 0)} and (1, 1) in s.recent_finished


def test_launches_an_agent_never_pulled_are_dropped_when_it_reregisters_and_said() -> None:
    """A paused agent re-registers without what was accepted for it
    meanwhile: those launches are gone like the rest, and returned so the
    shell can trace each commit to its end (a Mesos sim soak, seed 11,
    counted seven such commits lost)."""
    s = leader()
    offer = offers_of(s)["fw-a"][0]
    launch(s, "fw-a", offer, [(1, 0, 0), (1, 1, 0)])  # accepted, never pulled
    reg = s.register_agent(0, [], [])
    assert reg.gone == [(1, 0), (1, 1)] and reg.unpulled == [[1, 0, 0], [1, 1, 0]]
    assert 0 not in s.to_launch


def test_a_written_off_agent_comes_back_empty() -> None:
    s = leader()
    offer = offers_of(s)["fw-a"][0]
    launch(s, "fw-a", offer, [(1, 0, 0)])
    s.exchange(0, [])
    s.write_off([0], 5.0)
    assert 0 in s.written_off and 0 not in s.agents
    s.lost_updates.clear()
    reg = s.register_agent(0, [[1, 0, 0, REQ, "fw-a"]], [[1, 1]])
    assert reg.reset and reg.tasks == 0 and reg.gone == []
    assert not s.alloc.tasks and (1, 1) not in s.recent_finished and 0 not in s.written_off and 0 in s.agents


def test_write_off_rescinds_offers_and_sorts_tasks_into_lost_and_unpulled() -> None:
    s = leader(hosts=2, fws=("fw-a", "fw-b"))
    offers = offers_of(s, 1.0)
    by_machine = {int(o["machines"][0]): (fw, o) for fw, os in offers.items() for o in os}
    fw0, o0 = by_machine[0]
    fw1, o1 = by_machine[1]
    launch(s, fw0, o0, [(1, 0, 0)])
    s.exchange(0, [])  # (1, 0) pulled: running
    launch(s, fw1, o1, [(2, 0, 1)])  # (2, 0) not pulled yet
    s.kills[0].append((9, 9))
    later = offers_of(s, 2.0)  # machines 0 and 1 again (what is left), 2 and 3 too
    touching = sorted(o["id"] for os in later.values() for o in os if set(o["machines"].tolist()) & {0, 1})
    w = s.write_off([0], 4.0)
    assert sorted(r[0] for r in w.rescinded) == touching
    assert all(r[2] == "rescinded" and r[3] == 2.0 for r in w.rescinded)
    assert w.lost == [[1, 0]] and w.unpulled == [[2, 0]]
    assert s.lost_updates[fw0][-1] == (1, 0) and (2, 0) in s.lost_updates[fw1]
    assert 0 not in s.kills and 0 not in s.to_launch and not any(m in (0, 1) for _fw, m, _r in s.alloc.tasks.values())


# ------------------------------------------------------------------ exchange


def test_exchange_hands_launches_out_once_and_takes_finished_in() -> None:
    s = leader()
    offer = offers_of(s)["fw-a"][0]
    launch(s, "fw-a", offer, [(1, 0, 0), (1, 1, 0)])
    launches, kills = s.exchange(0, [])
    assert [ln[:3] for ln in launches] == [[1, 0, 0], [1, 1, 0]] and launches[0][6] == "fw-a" and kills == []
    assert s.running_updates["fw-a"] == [(1, 0), (1, 1)]
    assert s.exchange(0, []) == ([], [])
    s.exchange(0, [[1, 0, False], [1, 1, True], [5, 5, False]])
    assert s.finished_updates["fw-a"] == [(1, 0)] and s.lost_updates["fw-a"] == [(1, 1)]
    assert s.done_by_fw["fw-a"] == {(1, 0)} and not s.alloc.tasks
    assert s.take_status("fw-a") == ([(1, 0), (1, 1), (1, 0)], [(1, 1)]) and s.take_status("fw-a") is None


def test_exchange_ignores_a_report_about_a_copy_placed_elsewhere() -> None:
    s = leader()
    offer = next(o for o in offers_of(s)["fw-a"] if int(o["machines"][0]) == 2)  # host 1
    launch(s, "fw-a", offer, [(1, 0, 2)])
    s.exchange(0, [[1, 0, False]])  # host 0 ran (1, 0) before: not this copy
    assert (1, 0) in s.alloc.tasks and not s.finished_updates


# ------------------------------------------------------------------ respond


def test_respond_declines_accepts_and_closes_each_offer_once() -> None:
    s = leader(fws=("fw-a",))
    o1, o2, o3 = offers_of(s, 1.0)["fw-a"][:3]
    r = s.respond("fw-a", [(o1["id"], [(1, 0, int(o1["machines"][0]), REQ, 30.0)], [])], [(o2["id"], 5.0)], [], True, 3.0)
    assert r.results == [(True, [True], [])]
    assert [c[:4] for c in r.closed] == [[o2["id"], "fw-a", "declined", 2.0], [o1["id"], "fw-a", "accepted", 2.0]]
    assert r.closed[0][4:] == SLOT
    assert s.to_launch[int(o1["machines"][0]) // 2] == [[1, 0, int(o1["machines"][0]), REQ, 30.0, 3.0, "fw-a"]]
    assert s.alloc.refusals("fw-a", 3.0) == {int(o2["machines"][0]): 8.0}
    # An offer rescinded meanwhile: nothing launched, and no second close.
    s.write_off([int(o3["machines"][0]) // 2], 4.0)
    r = s.respond("fw-a", [(o3["id"], [(2, 0, int(o3["machines"][0]), REQ, 30.0)], [])], [(o3["id"], 5.0)], [], True, 5.0)
    assert r.results == [(False, [False], [])] and r.closed == []


def test_respond_unholds_then_sets_wants() -> None:
    s = leader(fws=("fw-a",))
    o = offers_of(s)["fw-a"][0]
    m = int(o["machines"][0])
    r = s.respond("fw-a", [(o["id"], [], [(m, REQ)])], [], [], True, 1.0)
    assert r.results == [(True, [], [True])]
    s.respond("fw-a", [], [], [(m, REQ)], False, 2.0)
    assert not s.alloc.held["fw-a"] and not s.alloc.accounts["fw-a"].wants


# ------------------------------------------------------------------ recovery


def test_recover_tasks_and_reconcile() -> None:
    s = leader(fws=("fw-a", "fw-b"))
    offers = offers_of(s)
    oa, ob = offers["fw-a"][0], offers["fw-b"][0]
    ma, mb = int(oa["machines"][0]), int(ob["machines"][0])
    launch(s, "fw-a", oa, [(1, 0, ma), (1, 1, ma), (3, 0, ma)])
    launch(s, "fw-b", ob, [(2, 0, mb)])
    s.exchange(ma // 2, [[1, 1, False]])  # (1, 0) and (3, 0) pulled, (1, 1) finished... at the same poll
    s.exchange(ma // 2, [[1, 1, False]])
    s.recent_finished.add((1, 4))
    known = s.recover_tasks("fw-a", [1, 2])
    assert {j: sorted(ts) for j, ts in known.items()} == {1: [0, 1, 4]}
    assert s.reconcile([[1, 0], [2, 0], [1, 4], [8, 8]]) == [(8, 8)]
    s.write_off([2], 3.0)
    assert s.reconcile([[8, 8]]) == [(8, 8)]  # a written-off agent is accounted for


def test_a_new_leader_knows_nothing_until_every_agent_is_back_or_written_off() -> None:
    """A restarted framework asking a new leader before agent 2 re-registered
    would take agent 2's running tasks for pending and place them again."""
    s = MasterState(config(3))
    s.take_over(8)
    s.register_framework("fw-a", True, 0.0)
    s.register_agent(0, [[1, 0, 0, REQ, "fw-a"]], [])
    s.register_agent(1, [], [])
    assert not s.settled() and s.recover_tasks("fw-a", [1, 2]) is None and s.reconcile([[2, 0]]) is None
    s.register_agent(2, [[2, 0, 4, REQ, "fw-a"]], [])
    assert s.settled() and s.recover_tasks("fw-a", [1, 2]) == {1: [0], 2: [0]}
    s2 = MasterState(config(3))
    s2.take_over(9)
    s2.register_agent(0, [], [])
    s2.register_agent(1, [], [])
    s2.write_off([2], 5.0)  # never re-registered: written off after the window
    assert s2.settled() and s2.reconcile([[2, 0]]) == [(2, 0)]  # lost with it


# ------------------------------------------------------------------ allocation


def test_allocation_round_expires_offers_only_to_registered_frameworks_and_lists_recipients() -> None:
    s = leader(fws=("fw-a",), offer_timeout=10.0)
    s.alloc.account("fw-x")  # reported by an agent, not registered
    first = s.allocate_round(0.0)
    assert set(first.offers) == {"fw-a"} and first.rescinded == [] and first.revoked is None
    assert [r[:3] for r in first.made] == [[o["id"], "fw-a", machine_spans(o["machines"])] for o in first.offers["fw-a"]]
    assert first.recipients == ["fw-a"]
    s.lost_updates["fw-b"].append((4, 0))
    again = s.allocate_round(10.0)
    assert sorted(r[0] for r in again.rescinded) == sorted(o["id"] for o in first.offers["fw-a"])
    assert all(r[2] == "rescinded" and r[3] == 10.0 for r in again.rescinded)
    # First mention, not a set's order (which moved with PYTHONHASHSEED): new offers, then updates owed.
    assert again.recipients == ["fw-a", "fw-b"] and s.take_status("fw-b") == ([], [(4, 0)])


def test_revocation_withdraws_unpulled_launches_and_kills_running_ones() -> None:
    s = leader(hosts=2, fws=("fw-a",), revocation=True, starvation_timeout=0.0, granularity="cell",
               frameworks={"fw-a": (1.0, 0, 0.0), "fw-b": (1.0, 0, 0.5)})
    o = offers_of(s)["fw-a"][0]
    ms = o["machines"].tolist()
    tasks = [(1, t, ms[t % len(ms)]) for t in range(12)]
    assert all(launch(s, "fw-a", o, tasks))
    s.exchange(0, [])  # host 0's launches pulled (running); host 1's not
    s.register_framework("fw-b", True, 0.0)
    rnd = s.allocate_round(1.0)
    assert rnd.revoked is not None and rnd.revoked.starving == ["fw-b"] and rnd.revoked.victims["fw-a"] == rnd.revoked.tasks
    killed = [key for ks in s.kills.values() for key in ks]
    withdrawn = s.lost_updates["fw-a"]
    assert len(killed) + len(withdrawn) == rnd.revoked.tasks
    assert all(s.alloc.tasks.get(k) is not None and s.alloc.tasks[k][1] // 2 == 0 for k in killed)
    assert all(k not in s.alloc.tasks for k in withdrawn)
    assert not any((ln[0], ln[1]) in withdrawn for ls in s.to_launch.values() for ln in ls)


def test_sample() -> None:
    s = leader(fws=("fw-a",))
    o = offers_of(s)["fw-a"][0]
    launch(s, "fw-a", o, [(1, 0, int(o["machines"][0]))])
    cell, mesos = s.sample()
    assert cell == {"cpu": round(1.0 / 24, 6), "mem": round(2.0 / 96, 6), "version": 7}
    assert mesos["agents"] == 3 and mesos["frameworks"] == 1 and mesos["epoch"] == 7 and set(mesos["shares"]) == {"fw-a"}


# ------------------------------------------------------------------ properties


@st.composite
def busy_masters(draw: st.DrawFn) -> MasterState:
    """A leader with some offers outstanding, some launches pulled (running)
    and some not, over 2-4 agents of 2 machines."""
    hosts = draw(st.integers(2, 4))
    s = leader(hosts=hosts, fws=("fw-a", "fw-b"), granularity=draw(st.sampled_from(["agent", "cell"])))
    job = 0
    for rnd in range(draw(st.integers(1, 3))):
        for fw, offers in s.allocate_round(float(rnd)).offers.items():
            for o in offers:
                if not draw(st.booleans()):
                    continue  # left outstanding
                job += 1
                ms = o["machines"].tolist()
                picks = draw(st.lists(st.sampled_from(ms), max_size=6))
                s.respond(fw, [(o["id"], [(job, t, m, REQ, 30.0) for t, m in enumerate(picks)], [])], [], [], True, float(rnd))
        for h in range(hosts):
            if draw(st.booleans()):
                s.exchange(h, [])
    return s


@settings(max_examples=150, deadline=None)
@given(s=busy_masters(), data=st.data())
def test_a_write_off_rescinds_exactly_the_offers_on_dead_machines_and_reports_each_task_once(s: MasterState, data: st.DataObject) -> None:
    hosts = data.draw(st.lists(st.sampled_from(sorted(s.agents)), min_size=1, unique=True))
    dead = {m for h in hosts for m in s.machines(h).tolist()}
    touching = {oid for oid, o in s.alloc.offers.items() if dead & set(o.machines.tolist())}
    there = {k for k, (_fw, m, _r) in s.alloc.tasks.items() if m in dead}
    unpulled = {(ln[0], ln[1]) for h in hosts for ln in s.to_launch.get(h, [])}
    before = {fw: list(u) for fw, u in s.lost_updates.items()}
    w = s.write_off(hosts, 50.0)
    assert sorted(r[0] for r in w.rescinded) == sorted(touching) and not touching & set(s.alloc.offers)
    reported = [tuple(k) for k in w.lost + w.unpulled]
    assert len(reported) == len(set(reported)) and set(reported) == there
    assert {tuple(k) for k in w.unpulled} == unpulled
    owed = [k for fw, u in s.lost_updates.items() for k in u[len(before.get(fw, [])):]]
    assert sorted(owed) == sorted(there)
    assert not set(hosts) & s.agents and set(hosts) <= s.written_off


@settings(max_examples=150, deadline=None)
@given(s=busy_masters(), data=st.data())
def test_respond_never_launches_more_than_an_offer_held(s: MasterState, data: st.DataObject) -> None:
    offers = s.allocate_round(100.0).offers
    for fw, os in offers.items():
        for o in os:
            ms = o["machines"].tolist()
            free = {m: r.copy() for m, r in zip(ms, np.asarray(o["free"]))}
            picks = data.draw(st.lists(st.tuples(st.sampled_from(ms + [max(ms) + 1]), st.sampled_from([[1.0, 2.0], [3.0, 1.0]])),
                                       max_size=8))
            launches = [(1000 + o["id"], t, m, req, 10.0) for t, (m, req) in enumerate(picks)]
            r = s.respond(fw, [(o["id"], launches, [])], [], [], True, 100.0)
            ok, mask, _held = r.results[0]
            assert ok and len(mask) == len(launches)
            for (_j, _t, m, req, _d), good in zip(launches, mask):
                if good:
                    assert m in free
                    free[m] = free[m] - np.asarray(req)
            assert all((v > -EPS).all() for v in free.values())
            queued = [ln for ls in s.to_launch.values() for ln in ls if ln[0] == 1000 + o["id"]]
            assert len(queued) == sum(mask)


def test_machine_spans_name_an_offers_machines_in_runs_and_back() -> None:
    for ms in ([], [3], [0, 1, 2, 3], [0, 1, 5, 6, 7, 9], [4, 2, 3]):
        spans = machine_spans(np.asarray(ms, dtype=np.int64))
        assert spanned_machines(spans) == ms
    assert machine_spans(np.array([0, 1, 5, 6, 7, 9])) == [[0, 1], [5, 7], [9, 9]]
