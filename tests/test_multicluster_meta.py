"""Multi-cluster, the meta-scheduler: its backlog book (publication + sends
since, drained at capacity), no herding within a publication interval,
work in proportion to capacity on a steady stream (flat and as a
hierarchy), and the failure semantics (jobs wait at clients or go home)."""
from __future__ import annotations

import numpy as np
import pytest

from schedlab.schedulers.federation.bulletin import Publication
from schedlab.schedulers.federation.meta import MetaScheduler

RNG = np.random.default_rng(0)


def pub(site: int, at: float, queued: float, running: float = 0.0, cap: float = 1.0) -> Publication:
    return Publication(site=site, at=at, queue_length=int(queued > 0), queued_work=queued, running_work=running,
                       capacity=cap, recent_wait_p50=0.0)


def test_the_book_adds_sends_drains_at_capacity_and_restarts_from_a_publication() -> None:
    m = MetaScheduler([2.0])
    m.observe(pub(0, at=0.0, queued=6.0, running=4.0, cap=2.0))
    assert m.backlog(0, 0.0) == 10.0 and m.estimated_start(0, 0.0) == 5.0
    assert m.backlog(0, 3.0) == 4.0  # 2 slots drain 6 slot-seconds in 3 s
    assert m.backlog(0, 9.0) == 0.0  # never negative: idle capacity is not banked
    assert m.route(5.0, 3.0, RNG) == 0 and m.routed == [1] and m.sent_work == [5.0]
    assert m.backlog(0, 3.0) == 9.0 and m.backlog(0, 4.0) == 7.0
    # A publication at 2 (before that send) replays the send; one at 5 includes it.
    m.observe(pub(0, at=2.0, queued=1.0, cap=2.0))
    assert m.backlog(0, 3.0) == 5.0  # 1 drained to 0 by 2.5, + 5 at 3
    m.observe(pub(0, at=5.0, queued=3.0, cap=2.0))
    assert m.backlog(0, 5.0) == 3.0
    m.observe(pub(0, at=4.0, queued=50.0, cap=2.0))  # late and older: ignored
    assert m.backlog(0, 5.0) == 3.0


def test_without_drain_the_book_is_reported_plus_sent() -> None:
    m = MetaScheduler([1.0, 1.0], drain=False)
    m.observe(pub(0, 0.0, 3.0))
    m.observe(pub(1, 0.0, 0.0))
    sites = [m.route(1.0, 100.0, RNG) for _ in range(5)]
    assert sites[:3] == [1, 1, 1] and sorted(sites[3:]) == [0, 1], sites  # 1 fills up to 3, then they alternate
    assert m.backlog(0, 1e6) + m.backlog(1, 1e6) == 3.0 + 5.0


def test_the_meta_scheduler_does_not_herd_between_publications() -> None:
    caps = [4.0, 4.0, 4.0, 4.0, 10.0]
    m = MetaScheduler(caps)
    for s, c in enumerate(caps):  # the same stale state that made every observational client pick site 4
        m.observe(pub(s, 0.0, queued=[3, 2, 4, 5, 4][s] * 10.0, running=c * 10.0, cap=c))
    picks = [m.route(10.0, i / 100, np.random.default_rng(i)) for i in range(100)]
    counts = np.bincount(picks, minlength=5)  # type: ignore[arg-type]
    assert counts.min() >= 10 and counts[4] < 50, counts
    starts = [m.estimated_start(s, 1.0) for s in range(5)]
    assert max(starts) - min(starts) < 2.6, starts  # levelled to within one job's share of the big site


def steady(m: MetaScheduler, caps: list[float], *, rho: float, seconds: float, publish: float | None,
           seed: int) -> np.ndarray:
    """Poisson jobs (exp work, mean 5) at ``rho`` of capacity through ``m``;
    every site publishes every ``publish`` s its *true* fluid backlog
    (the meta-scheduler's own drained sends stand in for the truth here:
    the point is the routing, not a site model). Returns work per site."""
    rng = np.random.default_rng(seed)
    rate = rho * sum(caps) / 5.0
    t, nxt, work = 0.0, 0.0, np.zeros(len(caps))
    while t < seconds:
        t += rng.exponential(1 / rate)
        while publish and nxt <= t:
            for s, c in enumerate(caps):
                m.observe(pub(s, nxt, m.backlog(s, nxt), cap=c))
            nxt += publish
        w = float(rng.exponential(5.0))
        site = m.route(w, t, rng)
        assert site is not None
        work[site] += w
    return work


@pytest.mark.parametrize("publish", [None, 20.0])
def test_work_goes_in_proportion_to_capacity_on_a_steady_stream(publish: float | None) -> None:
    caps = [4.0, 4.0, 4.0, 10.0]  # one site 2.5x the others
    work = steady(MetaScheduler(caps), caps, rho=0.9, seconds=2000.0, publish=publish, seed=7)
    ratio = work[3] / work[:3].mean()
    assert 2.3 <= ratio <= 2.7, (ratio, work)
    assert work[:3].max() / work[:3].min() < 1.1, work


def test_a_hierarchy_spreads_in_proportion_too_and_each_level_sees_summed_groups() -> None:
    caps = [4.0, 4.0, 4.0, 10.0]
    m = MetaScheduler(caps, tree=[[0, 1], [2, 3]])  # groups of capacity 8 and 14
    work = steady(m, caps, rho=0.9, seconds=2000.0, publish=20.0, seed=7)
    assert 2.3 <= work[3] / work[:3].mean() <= 2.7, work
    # An upper level sees sums: group [0, 1] holding an idle site loses to
    # the less loaded group as a whole (40/8 = 5 > 18/14), and inside that
    # group site 3 (10/10) beats site 2 (8/4); flat, the idle site 0 wins.
    flat = MetaScheduler(caps)
    for mm in (m, flat):
        for s, q in enumerate([0.0, 40.0, 8.0, 10.0]):
            mm.observe(pub(s, 5000.0, q, cap=caps[s]))
    assert m.choose(5000.0, RNG) == 3
    assert flat.choose(5000.0, RNG) == 0


@pytest.mark.parametrize("tree", [[0, 1], [[0, 1], [1, 2]], [[0], [1], 3], 0])
def test_the_tree_must_hold_every_site_once(tree: object) -> None:
    with pytest.raises(ValueError, match="every site 0..2 exactly once"):
        MetaScheduler([1.0, 1.0, 1.0], tree=tree)  # type: ignore[arg-type]


def test_when_dead_jobs_wait_at_their_clients_or_go_home() -> None:
    wait = MetaScheduler([1.0, 1.0], on_failure="wait")
    home = MetaScheduler([1.0, 1.0], on_failure="home")
    for m in (wait, home):
        m.fail()
    assert wait.route(1.0, 0.0, RNG, home=1) is None and wait.held == 1
    assert home.route(1.0, 0.0, RNG, home=1) == 1 and home.fell_back == 1
    assert home.routed == [0, 0] and home.backlog(1, 0.0) == 0.0  # it never saw the job
    with pytest.raises(ValueError, match="no home site to fall back to"):
        home.route(1.0, 0.0, RNG)
    wait.recover()
    assert wait.route(1.0, 0.0, RNG, home=1) in (0, 1) and sum(wait.routed) == 1


@pytest.mark.parametrize(("kw", "msg"), [({"capacities": []}, "capacities must be positive"),
                                         ({"capacities": [1.0, 0.0]}, "capacities must be positive"),
                                         ({"capacities": [1.0], "on_failure": "panic"}, "on_failure must be")])
def test_bad_configs_are_refused(kw: dict, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        MetaScheduler(**kw)
