"""Multi-cluster, observational scheduling: what sites publish, the board's
staleness rules, a client's choice from a hand-made board under each score,
local preference, tie-breaking, and herding (many clients on one stale
board pick the same site; with fresh publications they spread)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from schedlab.schedulers.federation.bulletin import Board, Publication, WaitWindow
from schedlab.schedulers.federation.observational import ObservationalClient, best_sites, score
from schedlab.schedulers.federation.site import FifoSite, Job

RNG = np.random.default_rng(0)


def pub(site: int, *, at: float = 0.0, q: int = 0, qw: float = 0.0, rw: float = 0.0, cap: float = 1.0,
        wait: float = 0.0) -> Publication:
    return Publication(site=site, at=at, queue_length=q, queued_work=qw, running_work=rw, capacity=cap,
                       recent_wait_p50=wait)


def board_of(*pubs: Publication, interval: float = 10.0) -> Board:
    b = Board(max(p.site for p in pubs) + 1, interval)
    for p in pubs:
        b.publish(p)
    return b


# ------------------------------------------------------------ the bulletin


def test_board_keeps_the_newest_publication_and_ignores_a_late_old_one() -> None:
    b = Board(2, publish_interval=10.0)
    assert b.known() == [] and b.due(0, 0.0) and b.age(0, 5.0) == math.inf
    assert b.publish(pub(0, at=10.0, q=3))
    assert not b.publish(pub(0, at=5.0, q=9))  # reordered: older than the held one
    assert b.latest(0).queue_length == 3  # type: ignore[union-attr]
    assert [p.site for p in b.known()] == [0]  # site 1 never published: unknown
    assert not b.due(0, 19.9) and b.due(0, 20.0) and b.age(0, 14.0) == 4.0
    with pytest.raises(ValueError, match="site 2 is not on this board"):
        b.publish(pub(2))


def test_wait_window_median_covers_only_recent_starts() -> None:
    w = WaitWindow(window=10.0)
    assert w.p50(0.0) == 0.0  # no job started: nothing waited
    for t, wait in [(1.0, 5.0), (2.0, 1.0), (3.0, 9.0), (12.0, 2.0)]:
        w.record(t, wait)
    assert w.p50(3.0) == 5.0  # 1, 5, 9
    assert w.p50(12.5) == 2.0  # (2.5, 12.5]: only the start at 12 is recent
    assert w.p50(30.0) == 0.0


def test_a_fifo_site_publishes_its_queue_and_work() -> None:
    s = FifoSite(0, slots=2, wait_window=100.0)
    for i, work in enumerate([10.0, 4.0, 6.0, 3.0]):
        s.arrive(Job(i, work, home=0, submitted=0.0), 0.0)
    p = s.publish(2.0)
    assert (p.queue_length, p.queued_work, p.running_work, p.capacity) == (2, 9.0, 8.0 + 2.0, 2.0)
    p = s.publish(5.0)  # job 1 finished at 4, job 2 started then (waited 4)
    assert (p.queue_length, p.queued_work, p.running_work) == (1, 3.0, 5.0 + 5.0)
    assert p.recent_wait_p50 == 0.0  # waits 0, 0, 4: nearest-rank median 0
    assert s.load() == 3


@pytest.mark.parametrize("bad", [{"cap": 0.0}, {"cap": math.inf}, {"q": -1}, {"qw": -1.0}])
def test_publication_refuses_nonsense(bad: dict) -> None:
    with pytest.raises(ValueError, match="site 0"):
        pub(0, **bad)


# ------------------------------------------------------------ choices on hand boards


HAND = board_of(pub(0, q=4, qw=40.0, cap=4.0, wait=1.0),   # queue/cap 1,   start 10,  wait 1
                pub(1, q=3, qw=90.0, cap=10.0, wait=30.0),  # queue/cap 0.3, start 9,   wait 30
                pub(2, q=1, qw=12.0, cap=1.0, wait=8.0))    # queue/cap 1,   start 12,  wait 8


@pytest.mark.parametrize(("kind", "want"), [("queue", 1), ("start", 1), ("wait", 0)])
def test_each_score_picks_its_own_best_site(kind: str, want: int) -> None:
    assert ObservationalClient(kind).choose(HAND, RNG) == want


def test_scores_are_per_unit_capacity_where_they_should_be() -> None:
    p = pub(0, q=6, qw=30.0, cap=3.0, wait=7.0)
    assert (score(p, "queue"), score(p, "start"), score(p, "wait")) == (2.0, 10.0, 7.0)
    with pytest.raises(ValueError, match="score must be one of"):
        score(p, "vibes")
    with pytest.raises(ValueError, match="score must be one of"):
        ObservationalClient("vibes")


def test_local_preference_keeps_home_unless_beaten_by_more_than_the_margin() -> None:
    # "start": home 0 scores 10, best (site 1) 9: better by 1.
    assert ObservationalClient("start", margin=0.0).choose(HAND, RNG, home=0) == 1
    assert ObservationalClient("start", margin=0.99).choose(HAND, RNG, home=0) == 1
    assert ObservationalClient("start", margin=1.0).choose(HAND, RNG, home=0) == 0
    assert ObservationalClient("start", margin=3.0).choose(HAND, RNG, home=2) == 2  # 12 - 9 <= 3
    assert ObservationalClient("start", margin=2.9).choose(HAND, RNG, home=2) == 1  # 3 > 2.9
    with pytest.raises(ValueError, match="margin must be >= 0"):
        ObservationalClient(margin=-1.0)


def test_ties_are_broken_by_the_generator_and_home_wins_its_tie() -> None:
    b = board_of(pub(0, qw=5.0), pub(1, qw=2.0), pub(2, qw=2.0), pub(3, qw=2.0))
    assert best_sites(b.known(), "start") == ([1, 2, 3], 2.0)
    client = ObservationalClient("start")
    picks = [client.choose(b, np.random.default_rng(s)) for s in range(40)]
    assert set(picks) == {1, 2, 3}  # never always the lowest id
    assert picks == [client.choose(b, np.random.default_rng(s)) for s in range(40)]  # seeded: repeatable
    assert {client.choose(b, np.random.default_rng(s), home=3) for s in range(20)} == {3}


def test_unknown_sites_are_not_candidates() -> None:
    b = Board(3, 10.0)
    b.publish(pub(1, qw=50.0))
    client = ObservationalClient("start")
    assert client.choose(b, RNG) == 1  # sites 0 and 2 may be idle, but nobody knows
    assert client.choose(b, RNG, home=0) == 1  # home unpublished: anything known beats it
    assert client.choose(Board(3, 10.0), RNG, home=2) == 2  # nothing known at all: home
    with pytest.raises(ValueError, match="no home site"):
        client.choose(Board(3, 10.0), RNG)


# ------------------------------------------------------------ herding

CAPS = [4, 4, 4, 4, 10]


def loaded_sites() -> list[FifoSite]:
    sites = [FifoSite(i, slots=c) for i, c in enumerate(CAPS)]
    for i, site in enumerate(sites):  # every slot busy, different queues per capacity
        for k in range(CAPS[i] + [3, 2, 4, 5, 4][i]):
            site.arrive(Job(100 * i + k, 10.0, home=i, submitted=0.0), 0.0)
    return sites


@pytest.mark.parametrize("kind", ["queue", "start"])
def test_clients_on_one_stale_board_all_pick_the_same_site(kind: str) -> None:
    sites = loaded_sites()
    board = Board(len(sites), publish_interval=30.0)
    for s in sites:
        board.publish(s.publish(0.0))
    client = ObservationalClient(kind)
    picks = []
    for c in range(100):  # 100 clients, each deciding alone in the next second, on the same board
        now = c / 100
        site = client.choose(board, np.random.default_rng(c), home=c % len(sites))
        sites[site].arrive(Job(c, 10.0, home=c % len(sites), submitted=now), now)
        picks.append(site)
    assert set(picks) == {4}  # the big site looked best at 0; it takes every job
    assert sites[4].publish(1.0).queue_length == 104  # and the next publication shows the pile


@pytest.mark.parametrize("kind", ["queue", "start"])
def test_with_fresh_publications_the_same_clients_spread(kind: str) -> None:
    sites = loaded_sites()
    board = Board(len(sites), publish_interval=30.0)
    client = ObservationalClient(kind)
    picks = []
    for c in range(100):
        now = c / 100
        for s in sites:
            board.publish(s.publish(now))  # fresh: the board is up to date at every choice
        site = client.choose(board, np.random.default_rng(c), home=c % len(sites))
        sites[site].arrive(Job(c, 10.0, home=c % len(sites), submitted=now), now)
        picks.append(site)
    counts = np.bincount(picks, minlength=5)
    assert counts.min() >= 10, counts  # every site gets work
    # Queues per slot end level: the big site takes ~2.5x what a small one does.
    q = [s.publish(1.0).queue_length / c for s, c in zip(sites, CAPS)]
    assert max(q) - min(q) <= 0.26, q
    assert 2.0 <= counts[4] / counts[:4].mean() <= 3.0, counts
