"""Balancer policies: exact round-robin and smooth weighted round-robin
sequences, least loaded on stale and fresh load, power of d choices, session
stickiness vs cookie state, health checks; and a tiny event-driven farm
showing what the policies are for (heterogeneous pool at 80% load)."""
from __future__ import annotations

import heapq
import math

import numpy as np
import pytest

from schedlab.schedulers.archs.webfarm.balancer import Balancer
from schedlab.schedulers.archs.webfarm.metrics import latencies, percentile
from schedlab.schedulers.archs.webfarm.policies import (LeastLoaded, LoadBook, PowerOfD, RoundRobin,
                                                         WeightedRoundRobin, build)
from schedlab.schedulers.archs.webfarm.server import Record, Server
from schedlab.schedulers.archs.webfarm.workload import Arrivals, Dist, Workload

RNG = np.random.default_rng(0)


def seq(policy: object, healthy: list[int], n: int, book: LoadBook | None = None) -> list[int]:
    b = book or LoadBook(max(healthy) + 1)
    return [policy.pick(healthy, b, RNG) for _ in range(n)]  # type: ignore[attr-defined]


def take_down(bal: Balancer, server: int) -> None:
    for _ in range(bal.health.fall):
        bal.check(server, False)
    assert server not in bal.health.healthy()


# ------------------------------------------------------------ round robin


def test_round_robin_cycles_and_skips_a_server_out_of_the_pool() -> None:
    rr = RoundRobin()
    assert seq(rr, [0, 1, 2], 7) == [0, 1, 2, 0, 1, 2, 0]
    assert seq(rr, [0, 2], 3) == [2, 0, 2]  # 1 left: the rotation goes on from 0 without it
    # 1 back: the cursor is the last server chosen (2), so the next is 0,
    # then 1 in its place: nobody skipped or served twice in a row.
    assert seq(rr, [0, 1, 2], 3) == [0, 1, 2]


def test_smooth_weighted_round_robin_interleaves_as_nginx_does() -> None:
    wrr = WeightedRoundRobin([5, 1, 1])
    assert "".join("abc"[s] for s in seq(wrr, [0, 1, 2], 14)) == "aabacaa" * 2


def test_smooth_wrr_other_weights_and_a_server_down() -> None:
    assert seq(WeightedRoundRobin([2, 1]), [0, 1], 6) == [0, 1, 0, 0, 1, 0]
    assert seq(WeightedRoundRobin([1, 1, 1]), [0, 1, 2], 6) == [0, 1, 2, 0, 1, 2]  # equal weights = RR
    assert seq(WeightedRoundRobin([5, 1, 1]), [1, 2], 4) == [1, 2, 1, 2]  # a out: b and c alternate
    w = [3, 7, 2, 5]
    picks = seq(WeightedRoundRobin(w), [0, 1, 2, 3], 10 * sum(w))
    assert np.bincount(picks).tolist() == [10 * x for x in w]  # exact shares every cycle


@pytest.mark.parametrize("weights", [[1, 0, 2], [1, -1], [float("nan")], []])
def test_weights_must_be_positive(weights: list[float]) -> None:
    with pytest.raises(ValueError, match="weights must"):
        WeightedRoundRobin(weights)
    if weights:
        with pytest.raises(ValueError, match="weights must be positive"):
            LeastLoaded("fresh", weights)


# ------------------------------------------------------------ least loaded


def test_least_loaded_on_stale_reports_herds_and_sent_counts_correct_it() -> None:
    true = [2, 0, 1]  # what the servers hold; every request sent adds one (nothing finishes here)
    picks: dict[str, list[int]] = {}
    for info in ("reported", "reported+sent", "fresh"):
        load = list(true)
        book = LoadBook(3, fresh=lambda s, load=load: load[s])  # type: ignore[misc]
        for s in range(3):
            book.report(s, true[s], at=0.0)
        ll = LeastLoaded(info)
        picks[info] = []
        for _ in range(4):
            s = ll.pick([0, 1, 2], book, RNG)
            assert (info == "reported" and len(picks[info]) >= 2) or load[s] == min(load), (info, s, load)
            picks[info].append(s)
            load[s] += 1
            book.sent_to(s)
    # Stale: server 1 reported 0, so it gets everything until the next report,
    # even when it is no longer the least loaded (its load 2 vs server 2's 1).
    assert picks["reported"] == [1, 1, 1, 1]
    # Counting its own sends since the report, the balancer tracks the truth
    # (nothing finished meanwhile, so reported + sent is the true load here).
    assert picks["reported+sent"] == picks["fresh"] == [1, 2, 1, 2]  # ties rotate after the last pick


def test_a_new_report_resets_the_sent_count_and_a_late_old_one_is_ignored() -> None:
    book = LoadBook(2)
    book.report(0, 5, at=1.0)
    book.sent_to(0)
    assert book.estimate(0, "reported+sent") == 6
    book.report(0, 2, at=2.0)
    assert book.estimate(0, "reported+sent") == 2
    book.report(0, 9, at=1.5)  # taken before the one we have: stale, reordered
    assert book.estimate(0, "reported") == 2


def test_least_loaded_weighs_load_per_capacity_and_rotates_ties() -> None:
    book = LoadBook(3)
    for s, load in enumerate([2, 1, 2]):
        book.report(s, load, 0.0)
    assert LeastLoaded("reported", weights=[4, 1, 1]).pick([0, 1, 2], book, RNG) == 0  # 2/4 < 1/1
    idle = LeastLoaded("reported")
    assert seq(idle, [0, 1, 2], 4, LoadBook(3)) == [0, 1, 2, 0]  # all equal: rotation, not all at 0


def test_fresh_load_needs_a_source() -> None:
    with pytest.raises(ValueError, match="fresh-load source"):
        LeastLoaded("fresh").pick([0], LoadBook(1), RNG)
    with pytest.raises(ValueError, match="load information must be one of"):
        LeastLoaded("psychic")


# ------------------------------------------------------------ power of d


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(("d", "healthy"), [(1, [0, 1, 2]), (2, [0, 1, 2, 3, 4]), (3, [1, 3, 4, 6]), (2, [5, 6])])
def test_power_of_d_matches_a_direct_computation(seed: int, d: int, healthy: list[int]) -> None:
    loads = np.random.default_rng(100 + seed).integers(0, 4, size=7).tolist()  # ties included
    book = LoadBook(7)
    for s, x in enumerate(loads):
        book.report(s, x, 0.0)
    pod, rng, ref = PowerOfD(d, "reported"), np.random.default_rng(seed), np.random.default_rng(seed)
    for _ in range(5):
        got = pod.pick(healthy, book, rng)
        sample = ref.choice(np.asarray(healthy), size=d, replace=False).tolist()
        best = min(loads[s] for s in sample)
        want = next(s for s in sample if loads[s] == best)  # first sampled among the least loaded
        assert got == want


def test_power_of_d_with_d_equal_to_the_pool_is_least_loaded() -> None:
    book = LoadBook(4)
    for s, x in enumerate([3, 1, 4, 2]):
        book.report(s, x, 0.0)
    assert {PowerOfD(4).pick([0, 1, 2, 3], book, np.random.default_rng(s)) for s in range(10)} == {1}


def test_power_of_d_samples_every_healthy_server_when_fewer_than_d_are_left() -> None:
    """A pool shrunk by failed health checks below d: route on, choosing
    the least loaded of those left (the pool's d is checked at parse time)."""
    book = LoadBook(5)
    for s, x in enumerate([5, 5, 5, 5, 1]):
        book.report(s, x, 0.0)
    assert {PowerOfD(3).pick([0, 4], book, np.random.default_rng(s)) for s in range(10)} == {4}
    assert PowerOfD(3).pick([2], book, RNG) == 2


def test_power_of_d_refuses_more_choices_than_servers() -> None:
    with pytest.raises(ValueError, match="d=5 is more than the 4 servers"):
        build("pod", 4, d=5)
    with pytest.raises(ValueError, match="d >= 1"):
        PowerOfD(0)


def test_build_checks_its_words() -> None:
    assert isinstance(build("wrr", 3, weights=[1, 2, 3]), WeightedRoundRobin)
    with pytest.raises(ValueError, match="2 weights for 3 servers"):
        build("wrr", 3, weights=[1, 2])
    with pytest.raises(ValueError, match="policy must be one of"):
        build("random", 3)
    with pytest.raises(ValueError, match="at least one server"):
        build("rr", 0)


# ------------------------------------------------------------ sessions and health


def test_sticky_sessions_stay_put_and_a_dead_server_loses_its_sessions() -> None:
    bal = Balancer(3, LeastLoaded("reported"), sessions="sticky", fall=2, rise=1)
    first = [bal.route(sess, RNG).server for sess in range(5)]  # type: ignore[union-attr]
    assert first == [0, 1, 2, 0, 1]  # first requests: round robin
    for _ in range(3):
        assert [bal.route(sess, RNG).server for sess in range(5)] == first  # type: ignore[union-attr]
    take_down(bal, 1)
    routes = [bal.route(sess, RNG) for sess in range(5)]
    assert [r.session_lost for r in routes] == [False, True, False, False, True]  # type: ignore[union-attr]
    assert bal.sessions_lost == 2
    moved = [r.server for r in routes]  # type: ignore[union-attr]
    assert 1 not in moved and [moved[i] for i in (0, 2, 3)] == [0, 2, 0]
    bal.check(1, True)  # back: the moved sessions stay where they went, losing nothing more
    assert [bal.route(sess, RNG).server for sess in range(5)] == moved  # type: ignore[union-attr]
    assert bal.sessions_lost == 2 and not any(r.carries_state for r in routes)  # type: ignore[union-attr]


def test_cookie_state_balances_every_request_and_each_pays_the_transfer() -> None:
    servers = [Server(i, workers=4, transfer_cost=0.5) for i in range(3)]
    bal = Balancer(3, RoundRobin(), sessions="cookie")
    recs = []
    for i in range(6):  # one session, six requests
        r = bal.route(7, RNG)
        assert r is not None and r.carries_state and not r.session_lost
        recs.append(servers[r.server].arrive(i, 1.0, float(i), carries_state=r.carries_state))
    assert [x.server for x in recs] == [0, 1, 2, 0, 1, 2]  # the session is spread
    assert all(x.service == 1.5 for x in recs)
    assert [s.transfers for s in servers] == [2, 2, 2]
    take_down(bal, 0)
    assert bal.route(7, RNG).server != 0 and bal.sessions_lost == 0  # type: ignore[union-attr]


def test_health_checks_remove_after_fall_failures_and_restore_after_rise() -> None:
    bal = Balancer(3, RoundRobin(), fall=3, rise=2)
    assert [bal.check(1, False), bal.check(1, False), bal.check(1, True)] == [None, None, None]
    assert bal.check(1, False) is None and bal.check(1, False) is None  # the success reset the streak
    assert bal.health.healthy() == [0, 1, 2]
    assert bal.check(1, False) is False  # third in a row
    assert bal.health.healthy() == [0, 2]
    assert [bal.route(0, RNG).server for _ in range(4)] == [0, 2, 0, 2]  # type: ignore[union-attr]
    assert bal.check(1, True) is None and bal.check(1, False) is None and bal.check(1, True) is None
    assert bal.check(1, True) is True  # two successes in a row
    assert bal.health.healthy() == [0, 1, 2]


def test_no_healthy_server_means_refused() -> None:
    bal = Balancer(1, RoundRobin(), fall=1)
    bal.check(0, False)
    assert bal.route(0, RNG) is None and bal.refused == 1


@pytest.mark.parametrize(("kw", "msg"), [
    ({"sessions": "magic"}, "session mode must be one of"),
    ({"fall": 0}, "fall and rise must be >= 1"),
    ({"rise": 0}, "fall and rise must be >= 1"),
])
def test_bad_balancer_configs_are_refused(kw: dict, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        Balancer(3, RoundRobin(), **kw)


# ------------------------------------------------------------ a tiny farm

SPEEDS = [2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 0.5, 0.5]  # heterogeneous: total capacity 9


def farm(policy: object, *, report_every: float | None = None, horizon: float = 1500.0,
         seed: int = 3) -> list[Record]:
    """Poisson requests at 80% of the pool's capacity through one balancer
    to single-worker servers; loads reported by every server at once each
    ``report_every`` seconds. A heap of (time, kind, seq) drives it:
    reports (kind 0) before arrivals (kind 1) at equal times; servers run
    their own completions up to each event."""
    rng = np.random.default_rng(seed)
    servers = [Server(i, workers=1, speed=v) for i, v in enumerate(SPEEDS)]
    bal = Balancer(len(servers), policy, fresh=lambda s: servers[s].load())  # type: ignore[arg-type]
    wl = Workload(Arrivals("poisson", rate=0.8 * sum(SPEEDS)), Dist("const", 1.0), demand=Dist("exp", 1.0))
    reqs = wl.generate(horizon, np.random.default_rng(seed))  # the same requests for every policy
    events: list[tuple[float, int, int]] = [(r.time, 1, i) for i, r in enumerate(reqs)]
    if report_every:
        events += [(k * report_every, 0, -1) for k in range(int(horizon / report_every) + 1)]
    heapq.heapify(events)
    records = []
    while events:
        t, kind, i = heapq.heappop(events)
        for s in servers:
            s.complete(t)
        if kind == 0:
            for s in servers:
                bal.report(s.report(t))
        else:
            route = bal.route(reqs[i].session, rng)
            assert route is not None
            records.append(servers[route.server].arrive(i, reqs[i].demand, t))
    for s in servers:
        s.complete(math.inf)
    return records


def p99(records: list[Record]) -> float:
    assert all(r.finish is not None for r in records)
    return percentile(latencies(records), 99)


def test_least_loaded_fresh_beats_round_robin_on_a_heterogeneous_pool() -> None:
    rr, ll = p99(farm(RoundRobin())), p99(farm(LeastLoaded("fresh")))
    # Round robin gives the 0.5-speed servers 0.9 req/s: more than they can
    # serve, so their queues grow for the whole run.
    assert ll * 5 < rr, (ll, rr)
    assert ll < 10, ll


def test_power_of_two_on_stale_reports_beats_least_loaded_on_the_same_reports() -> None:
    # Reports every 4 s (4 mean service times; about 29 arrivals between
    # two reports), all servers at once: Mitzenmacher's periodic-update
    # model. Below ~2 s the heterogeneous pool favours full least-loaded
    # (power of 2 ignores speeds and often samples two slow servers).
    stale = 4.0
    herd = p99(farm(LeastLoaded("reported"), report_every=stale))
    po2 = p99(farm(PowerOfD(2, "reported"), report_every=stale))
    counted = p99(farm(LeastLoaded("reported+sent"), report_every=stale))
    fresh = p99(farm(LeastLoaded("fresh")))
    assert po2 * 1.5 < herd, (po2, herd)  # herding: a report's least loaded server takes every request
    assert counted < herd and fresh <= counted, (fresh, counted, herd)
