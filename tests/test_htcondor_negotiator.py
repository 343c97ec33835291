"""One HTCondor negotiation cycle: symmetric matching, Rank on both sides,
pie slices by EUP, autoclusters, rank preemption, never_matchable."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from schedlab.schedulers.archs.htcondor.classad import matches, quote, rank
from schedlab.schedulers.archs.htcondor.negotiator import (
    Machine,
    acceptable,
    autocluster_key,
    machine_references,
    negotiate,
    never_matchable,
)
from schedlab.schedulers.archs.htcondor.userprio import UserPrio


def job(owner: str = "alice", requirements: str = "true", rank_: str = "0", **extra: object) -> dict:
    return {"Owner": quote(owner), "Requirements": requirements, "Rank": rank_, **extra}


def machine(name: str, state: str = "Unclaimed", current_job: dict | None = None, **attrs: object) -> Machine:
    ad = {"Name": quote(name), "Cpus": 1, "Memory": 1024, "Arch": quote("X86_64"), **attrs}
    return Machine(name, state, ad, current_job)


def placed(result) -> dict:
    return {m.job_id: m.machine for m in result.matches}


def test_symmetric_machine_refusal_wins_over_job_preference():
    # the job ranks m-big highest, but m-big's Requirements refuse bob
    pool = [machine("m-big", Memory=8192, Requirements='TARGET.Owner != "bob"'), machine("m-small", Memory=512)]
    r = negotiate(pool, {"s": {"bob": [(1, job("bob", rank_="TARGET.Memory"))]}}, UserPrio())
    assert placed(r) == {1: "m-small"}
    r = negotiate(pool, {"s": {"alice": [(1, job("alice", rank_="TARGET.Memory"))]}}, UserPrio())
    assert placed(r) == {1: "m-big"}


def test_job_rank_first_then_machine_rank_then_name():
    pool = [machine("m1", Memory=2048), machine("m2", Memory=4096), machine("m3", Memory=1024)]
    r = negotiate(pool, {"s": {"a": [(1, job(rank_="TARGET.Memory")), (2, job(rank_="TARGET.Memory"))]}}, UserPrio())
    assert placed(r) == {1: "m2", 2: "m1"}
    assert [m.job_rank for m in r.matches] == [4096.0, 2048.0]
    # equal job Rank: the machine's Rank decides, then the name
    pool = [machine("m1"), machine("m2", Rank='TARGET.Owner == "alice"'), machine("m0")]
    r = negotiate(pool, {"s": {"alice": [(1, job()), (2, job()), (3, job())]}}, UserPrio())
    assert placed(r) == {1: "m2", 2: "m0", 3: "m1"}
    assert r.matches[0].machine_rank == 1.0


def test_requests_must_fit_and_owner_slots_are_never_offered():
    pool = [machine("small", Cpus=1, Memory=512), machine("owned", state="Owner", Cpus=8, Memory=8192),
            machine("big", Cpus=4, Memory=4096)]
    r = negotiate(pool, {"s": {"a": [(1, job(RequestCpus=2, RequestMemory=2048)), (2, job(RequestCpus=2))]}},
                  UserPrio())
    assert placed(r) == {1: "big"}
    assert r.rejected == [("s", "a", 2)]
    assert (r.stats.matches, r.stats.rejected) == (1, 1)


def test_better_eup_user_is_served_first_and_slices_follow_eup():
    prio = UserPrio(rup={"a": 1.0, "b": 3.0})
    pool = [machine(f"m{i}") for i in range(8)]
    idle = {"s": {"b": [(f"b{i}", job("b")) for i in range(10)], "a": [(f"a{i}", job("a")) for i in range(10)]}}
    r = negotiate(pool, idle, prio)
    got = {u: sum(1 for m in r.matches if m.user == u) for u in "ab"}
    assert got == {"a": 6, "b": 2}  # 8 * (1/1) / (4/3) = 6
    assert r.matches[0].user == "a"
    assert r.stats.users_considered == 2 and r.stats.pie_spins == 1
    one = negotiate([machine("m0")], idle, prio)  # one slot: it goes to the better EUP
    assert [m.user for m in one.matches] == ["a"]


def test_slots_already_held_count_against_the_slice():
    prio = UserPrio()
    prio.update(0.0, {"a": 3})  # a holds 3 of the 6 claimed slots
    pool = [machine(f"c{i}", state="Claimed") for i in range(6)] + [machine(f"m{i}") for i in range(4)]
    idle = {"s": {"a": [(f"a{i}", job("a")) for i in range(5)], "b": [(f"b{i}", job("b")) for i in range(5)]}}
    r = negotiate(pool, idle, prio)
    # pie 10: quotas 5/5; a may add 2 (5 - 3 held), b up to 5 but only 2 slots are left
    assert sorted(m.user for m in r.matches) == ["a", "a", "b", "b"]


def test_unused_share_goes_round_in_a_later_spin():
    pool = [machine(f"m{i}") for i in range(6)]
    idle = {"s": {"a": [(f"a{i}", job("a")) for i in range(10)], "b": [("b0", job("b"))]}}
    r = negotiate(pool, idle, UserPrio())
    by_spin = [(m.user, m.spin) for m in r.matches]
    assert by_spin.count(("a", 1)) == 3 and by_spin.count(("b", 1)) == 1 and by_spin.count(("a", 2)) == 2
    assert r.stats.pie_spins == 2 and r.stats.matches == 6


def test_autocluster_evaluates_each_kind_once_per_machine():
    pool = [machine(f"m{i}") for i in range(10)]
    idle = {"s": {"a": [(i, job(RequestCpus=1)) for i in range(20)]}}
    cached = negotiate(pool, idle, UserPrio())
    plain = negotiate(pool, idle, UserPrio(), autoclusters=False)
    assert placed(cached) == placed(plain) and len(cached.matches) == 10
    assert cached.stats.evaluations == 10
    assert plain.stats.evaluations == sum(10 - i for i in range(10))  # only free machines are tried
    # a kind that matched nothing is skipped for the rest of the cycle
    idle = {"s": {"a": [(i, job(requirements="TARGET.Memory > 4096")) for i in range(7)]}}
    r = negotiate(pool, idle, UserPrio())
    assert (r.stats.rejected, r.stats.autocluster_skips, r.stats.evaluations) == (1, 6, 10)
    assert len(r.rejected) == 7


def test_autocluster_key_holds_what_machines_look_at():
    pool = [machine("m0", Requirements='TARGET.Owner != "bob"')]
    refs = machine_references(m.ad for m in pool)
    assert "owner" in refs
    assert autocluster_key(job("alice"), refs) != autocluster_key(job("bob"), refs)
    assert autocluster_key(job("alice", ClusterId=1), refs) == autocluster_key(job("alice", ClusterId=2), refs)
    # an attribute the job's Requirements reads is significant too (transitively)
    a = job(requirements="TARGET.Memory >= MY.Need", Need="MY.Base * 2", Base=100)
    b = {**a, "Base": 1000}
    assert autocluster_key(a, frozenset()) != autocluster_key(b, frozenset())
    # bob's rejection must not make alice's identical-looking job skip
    idle = {"s": {"bob": [(1, job("bob"))], "alice": [(2, job("alice"))]}}
    r = negotiate(pool, idle, UserPrio(rup={"bob": 0.5, "alice": 1.0}))
    assert placed(r) == {2: "m0"}


def test_rank_preemption_only_when_flagged_and_strictly_preferred():
    chem = job("carol", Dept=quote("chem"))
    pool = [machine("m0", state="Claimed", current_job=chem, Rank='TARGET.Dept == "physics"')]
    phys = job("alice", Dept=quote("physics"))
    assert negotiate(pool, {"s": {"alice": [(1, phys)]}}, UserPrio()).matches == []
    r = negotiate(pool, {"s": {"alice": [(1, phys)]}}, UserPrio(), rank_preemption=True)
    assert placed(r) == {1: "m0"} and r.matches[0].preempting and r.stats.preemptions == 1
    other = job("alice", Dept=quote("chem"))  # same Rank as the current job: no preemption
    assert negotiate(pool, {"s": {"alice": [(1, other)]}}, UserPrio(), rank_preemption=True).matches == []
    # an unclaimed slot is preferred to preempting, at equal job Rank
    both = pool + [machine("m9")]
    r = negotiate(both, {"s": {"alice": [(1, phys)]}}, UserPrio(), rank_preemption=True)
    assert placed(r) == {1: "m9"} and not r.matches[0].preempting


def test_never_matchable():
    pool = [machine("m0", Memory=4096).ad, machine("m1", Memory=2048, State=quote("Claimed")).ad]
    assert never_matchable(job(requirements=f"TARGET.Memory > {10**9}"), pool)
    assert not never_matchable(job(requirements="TARGET.Memory >= 4096"), pool)
    assert not never_matchable(job(requirements='TARGET.State == "Unclaimed"'), pool[1:])  # judged unclaimed
    assert never_matchable(job(RequestMemory=10_000), pool)
    assert never_matchable(job(), [{"Requirements": "false"}])
    assert never_matchable(job(), [])


# -- properties over random pools and jobs ---------------------------------------------

MACHINE_REQS = ["true", 'TARGET.Owner != "bob"', "TARGET.RequestCpus <= 2", "MY.Cpus >= 2"]
MACHINE_RANKS = ["0", 'TARGET.Owner == "alice"', "TARGET.RequestCpus", "TARGET.Prio"]
JOB_REQS = ["true", 'TARGET.Arch == "X86_64"', "TARGET.Memory >= 2048", "TARGET.Cpus >= MY.RequestCpus", "false"]
JOB_RANKS = ["0", "TARGET.Memory", "-TARGET.Cpus", "TARGET.Cpus * 1000 + TARGET.Memory"]

machines_st = st.lists(st.tuples(
    st.sampled_from(["Unclaimed", "Unclaimed", "Claimed", "Owner"]), st.integers(1, 4),
    st.sampled_from([512, 1024, 2048, 4096]), st.sampled_from(["X86_64", "ARM"]),
    st.sampled_from(MACHINE_REQS), st.sampled_from(MACHINE_RANKS)), min_size=0, max_size=10)
# Few job kinds, drawn independently of the owner: identical-looking jobs of
# different users (which a machine may tell apart) are common, as they must be
# for the autocluster property to bite.
kinds_st = st.tuples(st.sampled_from(JOB_REQS), st.sampled_from(JOB_RANKS), st.integers(1, 3), st.integers(0, 2))
jobs_st = st.lists(kinds_st, min_size=1, max_size=4).flatmap(lambda kinds: st.lists(st.tuples(
    st.sampled_from(["s1", "s2"]), st.sampled_from(["alice", "bob", "carol"]), st.sampled_from(kinds)).map(
    lambda t: (t[0], t[1], *t[2])), min_size=0, max_size=25))


def build(ms, js):
    pool = []
    for i, (state, cpus, mem, arch, req, rk) in enumerate(ms):
        cur = job("carol", RequestCpus=1, Prio=0) if state == "Claimed" else None
        pool.append(Machine(f"m{i:02d}", state, {"Cpus": cpus, "Memory": mem, "Arch": quote(arch),
                                                 "Requirements": req, "Rank": rk}, cur))
    idle: dict = {}
    for i, (schedd, user, req, rk, cpus, p) in enumerate(js):
        idle.setdefault(schedd, {}).setdefault(user, []).append((i, job(user, req, rk, RequestCpus=cpus, Prio=p)))
    return pool, idle


@settings(max_examples=150, deadline=None)
@given(ms=machines_st, js=jobs_st, rups=st.tuples(st.floats(0.5, 5), st.floats(0.5, 5)), pre=st.booleans())
def test_matches_are_valid_and_no_machine_twice(ms, js, rups, pre):
    pool, idle = build(ms, js)
    ads = {m.name: m for m in pool}
    jobs = {j: ad for q in idle.values() for jl in q.values() for j, ad in jl}
    prio = UserPrio(rup={"alice": rups[0], "bob": rups[1]})
    r = negotiate(pool, idle, prio, rank_preemption=pre)
    names = [m.machine for m in r.matches]
    assert len(names) == len(set(names))
    assert len({m.match_id for m in r.matches}) == len(r.matches)
    for m in r.matches:
        mach = ads[m.machine]
        assert matches(jobs[m.job_id], mach.ad) and acceptable(jobs[m.job_id], mach.ad)
        assert mach.state == "Unclaimed" or (pre and mach.state == "Claimed" and m.preempting
                                              and rank(mach.ad, jobs[m.job_id]) > rank(mach.ad, mach.current_job))
    # every rejected job really had no free unclaimed machine left that takes it
    free = [m for m in pool if m.state == "Unclaimed" and m.name not in set(names)]
    for _, _, j in r.rejected:
        assert not any(acceptable(jobs[j], m.ad) for m in free)
    assert len(r.matches) + len(r.rejected) <= len(jobs)


@settings(max_examples=150, deadline=None)
@given(ms=machines_st, js=jobs_st, pre=st.booleans())
def test_autocluster_cache_changes_nothing(ms, js, pre):
    pool, idle = build(ms, js)
    prio = UserPrio(rup={"bob": 2.0})
    a = negotiate(pool, idle, prio, rank_preemption=pre)
    b = negotiate(pool, idle, prio, rank_preemption=pre, autoclusters=False)
    assert a.matches == b.matches
    assert a.rejected == b.rejected
    assert a.stats.evaluations <= b.stats.evaluations
    assert b.stats.autocluster_skips == 0 and a.stats.rejected + a.stats.autocluster_skips == b.stats.rejected
