"""HTCondor's claim protocol: the startd's states, stale matches, claim
reuse per user, suspend/vacate with badput, and the schedd's books."""
from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st
from schedlab.schedulers.archs.htcondor.claims import (
    BUSY,
    CLAIMED,
    IDLE,
    MATCHED,
    OWNER,
    PREEMPTING,
    REQUIREMENTS,
    STALE,
    SUSPENDED,
    UNCLAIMED,
    Activate,
    ClaimReply,
    ClaimRequest,
    Release,
    Schedd,
    Startd,
    Vacated,
)
from schedlab.schedulers.archs.htcondor.classad import quote
from schedlab.schedulers.archs.htcondor.negotiator import negotiate
from schedlab.schedulers.archs.htcondor.userprio import UserPrio

GRACE = 600.0


def job(owner: str, requirements: str = "true", **extra: object) -> dict:
    return {"Owner": quote(owner), "Requirements": requirements, **extra}


def slot(name: str = "m0", **attrs: object) -> Startd:
    return Startd(name, {"Cpus": 2, "Memory": 2048, **attrs}, suspend_grace=GRACE)


def claimed(sd: Startd, user: str = "alice", t: float = 0.0) -> str:
    assert sd.matched("c.0", t)
    reply = sd.request_claim("c.0", "s", user, job(user), t)
    assert reply.accepted
    return str(reply.claim_id)


# -- the startd ----------------------------------------------------------------------


def test_stale_match_refused_after_owner_returns():
    sd = slot()
    assert sd.matched("1.0", 0.0) and sd.state == MATCHED
    assert sd.owner_returns(5.0) == "owner" and sd.state == OWNER
    assert sd.request_claim("1.0", "s", "alice", job("alice"), 6.0) == ClaimReply(False, STALE)
    assert sd.state == OWNER


def test_only_the_latest_match_and_only_once_can_claim():
    sd = slot()
    sd.matched("1.0", 0.0)
    sd.matched("2.3", 10.0)  # a newer cycle matched it again
    assert sd.request_claim("1.0", "s", "alice", job("alice"), 11.0).reason == STALE
    first = sd.request_claim("2.3", "s", "bob", job("bob"), 11.0)
    assert first.accepted and sd.state == CLAIMED and sd.activity == IDLE and sd.user == "bob"
    again = sd.request_claim("2.3", "t", "carol", job("carol"), 12.0)  # claimed by another already
    assert again == ClaimReply(False, STALE)
    assert not sd.matched("3.0", 13.0)  # a claimed slot ignores matches made on an old ad


def test_claim_refused_when_requirements_no_longer_accept_the_job():
    sd = slot(Requirements='TARGET.Owner != "bob"')
    sd.matched("1.0", 0.0)
    assert sd.request_claim("1.0", "s", "bob", job("bob"), 1.0) == ClaimReply(False, REQUIREMENTS)
    assert sd.state == UNCLAIMED and sd.match_id is None


def test_activate_exit_and_reuse_rules():
    sd = slot()
    cid = claimed(sd, "alice")
    assert not sd.activate("wrong", 1, job("alice"), 1.0)
    assert sd.activate(cid, 1, job("alice"), 10.0) and sd.activity == BUSY
    assert not sd.can_reuse(job("alice"), "alice")  # busy
    assert sd.job_exited(70.0) == 60.0 and sd.activity == IDLE
    assert sd.job_exited(71.0) is None
    assert sd.can_reuse(job("alice"), "alice")
    assert not sd.can_reuse(job("bob"), "bob")  # the claim is alice's
    assert not sd.can_reuse(job("alice", "TARGET.Memory > 4096"), "alice")  # no longer matches
    assert not sd.can_reuse(job("alice", RequestCpus=4), "alice")
    assert sd.release(80.0) and sd.state == UNCLAIMED and sd.claim_id is None


def test_suspend_then_vacate_after_the_grace():
    sd = slot()
    cid = claimed(sd)
    sd.activate(cid, 7, job("alice"), 10.0)
    assert sd.owner_returns(40.0) == "suspended" and sd.activity == SUSPENDED
    assert sd.vacate_at == 40.0 + GRACE
    assert sd.owner_still_there(100.0) is None  # timer early: nothing
    out = sd.owner_still_there(40.0 + GRACE)
    assert out == Vacated(cid, 7, 30.0)  # ran 10..40; suspended time is not run time
    assert sd.state == PREEMPTING
    sd.vacate_done(700.0)
    assert sd.state == OWNER
    sd.owner_leaves(900.0)
    assert sd.state == UNCLAIMED


def test_owner_leaving_within_the_grace_resumes():
    sd = slot()
    cid = claimed(sd)
    sd.activate(cid, 7, job("alice"), 10.0)
    sd.owner_returns(40.0)
    assert sd.owner_leaves(100.0) is None and sd.activity == BUSY
    assert sd.owner_still_there(40.0 + GRACE) is None  # the stale timer fires: ignored
    assert sd.job_exited(200.0) == 30.0 + 100.0


def test_owner_leaving_after_the_grace_without_the_timer_vacates():
    sd = slot()
    cid = claimed(sd)
    sd.activate(cid, 7, job("alice"), 0.0)
    sd.owner_returns(50.0)
    assert sd.owner_leaves(50.0 + GRACE + 1) == Vacated(cid, 7, 50.0)
    sd.vacate_done(50.0 + GRACE + 2)
    assert sd.state == UNCLAIMED


def test_owner_ends_an_idle_claim():
    sd = slot()
    claimed(sd)
    assert sd.owner_returns(5.0) == "claim lost" and sd.state == OWNER and sd.claim_id is None
    assert sd.owner_returns(6.0) == ""


EVENTS = st.lists(st.tuples(st.sampled_from(["match", "claim", "activate", "exit", "release", "back", "still",
                                             "leaves", "done"]), st.floats(0, 1000)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(events=EVENTS)
def test_startd_invariants_under_any_event_order(events):
    sd, now = slot(), 0.0
    told: list[tuple[str, str]] = []
    sd.on_change = lambda s: told.append((s.state, s.activity))  # the shell's index of slots on a clock
    for n, (kind, dt) in enumerate(events):
        now += dt
        if kind == "match":
            sd.matched(f"x.{n}", now)
        elif kind == "claim":
            sd.request_claim(str(sd.match_id), "s", "alice", job("alice"), now)
        elif kind == "activate":
            sd.activate(str(sd.claim_id), n, job("alice"), now)
        elif kind == "exit":
            ran = sd.job_exited(now)
            assert ran is None or ran >= 0
        elif kind == "release":
            sd.release(now)
        elif kind == "back":
            sd.owner_returns(now)
        elif kind == "still":
            v = sd.owner_still_there(now)
            assert v is None or v.ran >= 0
        elif kind == "leaves":
            sd.owner_leaves(now)
        else:
            sd.vacate_done(now)
        assert sd.state in (OWNER, UNCLAIMED, MATCHED, CLAIMED, PREEMPTING)
        assert (sd.claim_id is not None) == (sd.state in (CLAIMED, PREEMPTING))
        assert (sd.match_id is not None) == (sd.state in (MATCHED, CLAIMED, PREEMPTING))
        assert sd.activity in ((IDLE, BUSY, SUSPENDED) if sd.state == CLAIMED else
                               (("Vacating",) if sd.state == PREEMPTING else (IDLE,)))
        assert (sd.job_id is not None) == (sd.activity in (BUSY, SUSPENDED))
        assert sd.activity != BUSY or not sd.owner_present  # the owner never shares a running slot
        assert sd.state != OWNER or sd.owner_present
        # Every change of state or activity is told: a shell indexing the
        # slots whose state runs on a clock (suspended, matched) misses none.
        assert (told[-1] if told else (UNCLAIMED, IDLE)) == (sd.state, sd.activity)


# -- the schedd, with the startds and the negotiator -----------------------------------


def cycle(schedd: Schedd, startds: list[Startd], now: float, n: int = 0):
    """One negotiation, every match claimed: what a shell would do, in order."""
    by_name = {s.name: s for s in startds}
    result = negotiate([s.machine() for s in startds], {schedd.name: schedd.idle()}, UserPrio(), cycle=n)
    out = []
    for m in result.matches:
        by_name[m.machine].matched(m.match_id, now)
        req = schedd.on_match(m, now)
        assert isinstance(req, ClaimRequest)
        out.append(req)
    return out


def test_claim_reused_for_the_same_user_only():
    sd, s = slot(), Schedd("s")
    s.submit("a1", "alice", job("alice"), 0.0)
    s.submit("b1", "bob", job("bob"), 1.0)  # queued before alice's second job
    s.submit("a2", "alice", job("alice"), 2.0)
    s.submit("a3", "alice", job("alice", "TARGET.Memory > 4096"), 3.0)  # alice's, but m0 cannot run it
    (req,) = cycle(s, [sd], 10.0)
    assert req.job_id == "a1"  # alice before bob: equal EUP, by name
    act = s.on_claim_reply(req.match_id, sd.request_claim(req.match_id, "s", req.user, req.job_ad, 12.0), 12.0)
    assert isinstance(act, Activate) and not act.reused and act.job_id == "a1"
    assert sd.activate(act.claim_id, act.job_id, act.job_ad, 12.0)
    assert set(s.shadows) == {"a1"}
    assert s.stats.submit_to_match == [10.0] and s.stats.match_to_start == [2.0]
    nxt = s.on_job_exit("a1", 112.0, sd.job_exited(112.0))
    assert nxt == Activate("m0", act.claim_id, "a2", job("alice"), True)  # not bob's b1, not a3
    assert sd.can_reuse(nxt.job_ad, "alice") and sd.activate(nxt.claim_id, nxt.job_id, nxt.job_ad, 112.0)
    assert set(s.shadows) == {"a2"} and s.stats.reuses == 1
    last = s.on_job_exit("a2", 150.0, sd.job_exited(150.0))
    assert last == Release("m0", act.claim_id) and s.claims == {} and s.shadows == {}
    assert sd.release(150.0) and sd.state == UNCLAIMED
    assert s.stats.goodput == 100.0 + 38.0 and s.stats.completed == 2
    assert s.idle() == {"bob": [("b1", job("bob"))], "alice": [("a3", job("alice", "TARGET.Memory > 4096"))]}


def test_refused_claim_leaves_the_job_idle_and_counts_a_stale_match():
    sd, s = slot(), Schedd("s")
    s.submit("a1", "alice", job("alice"), 0.0)
    (req,) = cycle(s, [sd], 5.0)
    assert s.idle() == {}  # matched: not offered to the next cycle
    sd.owner_returns(6.0)
    reply = sd.request_claim(req.match_id, "s", "alice", req.job_ad, 7.0)
    assert s.on_claim_reply(req.match_id, reply, 7.0) is None
    assert s.stats.refusals == {STALE: 1}
    assert s.idle() == {"alice": [("a1", job("alice"))]} and s.claims == {} and s.shadows == {}


def test_vacate_returns_the_job_to_the_queue_with_badput():
    sd, s = slot(), Schedd("s")
    s.submit("a1", "alice", job("alice"), 0.0)
    (req,) = cycle(s, [sd], 0.0)
    act = s.on_claim_reply(req.match_id, sd.request_claim(req.match_id, "s", "alice", req.job_ad, 1.0), 1.0)
    assert act is not None and sd.activate(act.claim_id, act.job_id, act.job_ad, 1.0)
    sd.owner_returns(301.0)
    vac = sd.owner_still_there(301.0 + GRACE)
    assert vac is not None and vac.ran == 300.0
    s.on_vacate(vac, 901.0)
    assert s.stats.badput == 300.0 and s.stats.vacated == 1 and s.stats.goodput == 0.0
    assert s.idle() == {"alice": [("a1", job("alice"))]} and s.claims == {} and s.shadows == {}
    sd.vacate_done(902.0)
    assert sd.machine().state == OWNER  # the negotiator will not offer it
    sd.owner_leaves(1000.0)
    (again,) = cycle(s, [sd], 1000.0, n=1)
    assert again.job_id == "a1" and s.stats.submit_to_match == [0.0, 99.0]  # waiting since the vacate


def test_claim_lost_before_activation_requeues_the_job():
    sd, s = slot(), Schedd("s")
    s.submit("a1", "alice", job("alice"), 0.0)
    (req,) = cycle(s, [sd], 0.0)
    act = s.on_claim_reply(req.match_id, sd.request_claim(req.match_id, "s", "alice", req.job_ad, 1.0), 1.0)
    assert act is not None
    assert sd.owner_returns(2.0) == "claim lost"
    assert not sd.activate(act.claim_id, act.job_id, act.job_ad, 3.0)
    s.on_claim_lost(act.claim_id, 3.0)
    assert s.idle() == {"alice": [("a1", job("alice"))]} and s.claims == {} and s.shadows == {}
    assert s.stats.badput == 0.0


def test_a_match_for_a_job_gone_goes_to_the_users_next_job_or_is_released():
    sd, s = slot(), Schedd("s")
    s.submit("a1", "alice", job("alice"), 0.0)
    s.submit("a2", "alice", job("alice"), 0.0)
    s.submit("b1", "bob", job("bob"), 0.0)
    result = negotiate([sd.machine()], {"s": s.idle()}, UserPrio())
    (m,) = result.matches
    assert m.job_id == "a1" and s.remove("a1", 0.5) and not s.remove("a1", 0.6)
    req = s.on_match(m, 1.0)
    assert isinstance(req, ClaimRequest) and req.job_id == "a2" and req.match_id == m.match_id
    later = replace(m, match_id="1.0")  # another match for alice, none of her jobs idle now
    assert s.on_match(later, 2.0) == Release("m0", "1.0")  # bob's job does not take alice's match
    assert s.idle() == {"bob": [("b1", job("bob"))]}
