"""Multi-cluster end to end, pure: a tiny heapq event loop (no actors) over
four 4-slot sites and one 10-slot site (2.5x), heavy load (90% of the whole
federation), local users spread evenly over the sites, so the small sites
are overloaded on their own and the big one underused. The same jobs go
through each way of joining the sites:

* observational clients reading a board published every 30 s herd: in
  each window most work lands on whichever site looked best at the last
  publication, so the windowed imbalance is far above the meta-scheduler's,
  although over the whole run both even out;
* the meta-scheduler, counting what it sent since each publication, spreads
  work in proportion to capacity within every window;
* peer-to-peer threshold sharing from home submission moves jobs off the
  overloaded small sites and cuts waits against staying home.
"""
from __future__ import annotations

import heapq
from dataclasses import replace

import numpy as np
import pytest

from schedlab.schedulers.federation import imbalance as im
from schedlab.schedulers.federation.bulletin import Board
from schedlab.schedulers.federation.meta import MetaScheduler
from schedlab.schedulers.federation.observational import ObservationalClient
from schedlab.schedulers.federation.p2p import ThresholdSharing, load_of
from schedlab.schedulers.federation.site import FifoSite, Job

SLOTS = [4, 4, 4, 4, 10]
HORIZON = 1500.0


def federation(mode: str, *, publish: float = 30.0, seed: int = 1) -> tuple[im.WindowStats, im.Imbalance,
                                                                             im.Outcome, float]:
    """Jobs (exp work, mean 10 s) arrive Poisson at 90% of the 26 slots,
    each from a uniformly chosen home site. Events are (time, kind, seq,
    site, job): publications (kind 0) before arrivals (kind 1) at equal
    times. Returns the windowed stats (30 s windows sliding by 15 s: one
    default publish interval), the overall imbalance, the outcome and the
    mean wait."""
    rng = np.random.default_rng(seed)
    times = np.cumsum(rng.exponential(10.0 / (0.9 * sum(SLOTS)), int(0.9 * sum(SLOTS) / 10 * HORIZON * 1.2)))
    times = times[times < HORIZON]
    works, homes = rng.exponential(10.0, times.size), rng.integers(0, len(SLOTS), times.size)
    sites = [FifoSite(i, slots=c, wait_window=publish) for i, c in enumerate(SLOTS)]
    board, client, meta = Board(len(SLOTS), publish), ObservationalClient("start"), MetaScheduler(SLOTS)
    p2p = ThresholdSharing(len(SLOTS), threshold=5.0, probe_limit=2, max_transfers=1, transfer_delay=1.0)
    choice = np.random.default_rng(seed + 100)
    ev: list[tuple[float, int, int, int, Job | None]] = [(k * publish, 0, -1, -1, None)
                                                         for k in range(int(HORIZON / publish) + 1)]
    ev += [(float(t), 1, i, int(homes[i]), Job(i, float(works[i]), int(homes[i]), float(t)))
           for i, t in enumerate(times)]
    heapq.heapify(ev)
    seq, accepted, runs = len(ev), [], []
    while ev:
        t, _kind, _, at, job = heapq.heappop(ev)
        for s in sites:
            s.complete(t)
        if job is None:
            for s in sites:
                pub = s.publish(t)
                board.publish(pub)
                meta.observe(pub)
            continue
        if mode == "observational" and job.transfers == 0:
            at = client.choose(board, choice, home=job.home)
        elif mode == "meta":
            at = meta.route(job.work, t, choice)  # type: ignore[assignment]
        elif mode == "p2p":
            def load(s: int) -> float:
                return load_of("work", jobs=sites[s].load(), queued_work=sites[s].queued_work(),
                               capacity=sites[s].capacity)
            d = p2p.decide(at, job.transfers, load(at), load, t, choice)
            if d.to is not None:
                seq += 1
                heapq.heappush(ev, (d.arrive_at, 1, seq, d.to, replace(job, transfers=job.transfers + 1)))
                continue
        runs.append(sites[at].arrive(job, t))
        accepted.append(im.Accepted(t, at, job.work))
    ws = im.windows(accepted, SLOTS, window=30.0, step=15.0, start=0.0, end=HORIZON)
    waits = [r.wait for r in runs if r.start is not None]
    return im.window_stats(ws), im.overall(accepted, SLOTS), im.outcome(runs, SLOTS, HORIZON), float(np.mean(waits))


@pytest.fixture(scope="module")
def results() -> dict[str, tuple[im.WindowStats, im.Imbalance, im.Outcome, float]]:
    return {mode: federation(mode) for mode in ("observational", "meta", "home", "p2p")}


def test_stale_observational_scheduling_is_far_less_even_per_window_than_the_meta_scheduler(results: dict) -> None:
    obs, meta = results["observational"], results["meta"]
    # Herding: per window, work piles onto one or two sites (max/mean near
    # the 5 of "all on one"); some windows leave a site with nothing.
    assert obs[0].mean_max_mean > 2.5 and obs[0].median_max_min > 10, obs[0]
    assert meta[0].mean_max_mean < 1.3 and meta[0].median_max_min < 2.0, meta[0]
    # Over the whole run both look even: only the windows show the herding.
    assert obs[1].max_min < 1.3 and meta[1].max_min < 1.1, (obs[1], meta[1])
    assert meta[3] * 4 < obs[3], (meta[3], obs[3])  # and the bursts cost waiting


def test_fresher_boards_herd_less() -> None:
    stale = federation("observational", publish=30.0)
    fresh = federation("observational", publish=2.0)
    # Same 30 s windows for both: publishing every 2 s leaves less time to
    # pile onto one site before the next board shows the pile.
    assert fresh[0].mean_max_mean < stale[0].mean_max_mean - 0.8, (fresh[0], stale[0])
    assert fresh[3] * 3 < stale[3], (fresh[3], stale[3])


def test_peer_to_peer_sharing_moves_work_off_the_small_sites(results: dict) -> None:
    home, p2p = results["home"], results["p2p"]
    assert home[1].max_min > 2.0, home[1]  # the big site gets a fifth of the work for 10/26 of the slots
    assert p2p[1].max_min < home[1].max_min * 0.7, (p2p[1], home[1])
    assert p2p[2].jobs_transferred == p2p[2].transfers > 300, p2p[2]  # max_transfers = 1: each moved once
    assert home[2].transfers == 0
    assert p2p[3] * 3 < home[3], (p2p[3], home[3])
    assert p2p[2].goodput > home[2].goodput, (p2p[2], home[2])
