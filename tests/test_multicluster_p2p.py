"""Multi-cluster, peer-to-peer load sharing (Eager, Lazowska and Zahorjan's
sender-initiated threshold policy): transfers only from a site above the
threshold, only to a probed peer below it, at most ``probe_limit`` probes,
never more than ``max_transfers`` moves per job, and the transfer delay."""
from __future__ import annotations

import heapq
from dataclasses import replace

import numpy as np
import pytest

from schedlab.schedulers.federation.p2p import ThresholdSharing, load_of
from schedlab.schedulers.federation.site import FifoSite, Job

RNG = np.random.default_rng(0)


def test_a_site_at_or_below_the_threshold_keeps_its_job_without_probing() -> None:
    p = ThresholdSharing(4, threshold=3, probe_limit=3)
    probed: list[int] = []
    for own in (0, 2, 3):  # "passes" the threshold means strictly above it
        d = p.decide(0, 0, own, lambda s: probed.append(s) or 0.0, 5.0, RNG)  # type: ignore[func-returns-value]
        assert d.to is None and d.probed == () and d.arrive_at == 5.0
    assert probed == [] and p.probes == 0


def test_above_the_threshold_the_first_probed_peer_below_it_gets_the_job_after_the_delay() -> None:
    loads = [9.0, 5.0, 3.0, 1.0, 0.0]  # threshold 3: sites 3 and 4 are below it, 2 is at it
    p = ThresholdSharing(5, threshold=3, probe_limit=4, transfer_delay=2.5)
    for seed in range(30):
        d = p.decide(0, 0, loads[0], lambda s: loads[s], 10.0, np.random.default_rng(seed))
        assert 0 not in d.probed and len(set(d.probed)) == len(d.probed) <= 4
        below = [s for s in d.probed if loads[s] < 3]
        assert d.to == below[0] and d.probed[-1] == d.to  # stops probing at the first one below
        assert d.arrive_at == 12.5
    assert p.transfers == 30


def test_no_peer_below_the_threshold_within_the_probe_limit_keeps_the_job() -> None:
    loads = [9.0, 3.0, 4.0, 8.0, 0.0]
    p = ThresholdSharing(5, threshold=3, probe_limit=2)
    outcomes = set()
    for seed in range(40):
        d = p.decide(0, 0, 9.0, lambda s: loads[s], 0.0, np.random.default_rng(seed))
        assert len(d.probed) <= 2
        assert (d.to == 4) == (4 in d.probed) and d.to in (None, 4)
        outcomes.add(d.to)
    assert outcomes == {None, 4} and p.kept_over > 0  # site 4 is found only when probed
    assert ThresholdSharing(5, threshold=3, probe_limit=0).decide(0, 0, 9.0, lambda s: 0.0, 0.0, RNG).to is None


def test_a_job_that_moved_max_transfers_times_stays() -> None:
    p = ThresholdSharing(3, threshold=1, max_transfers=2)
    assert p.decide(1, 1, 5.0, lambda s: 0.0, 0.0, RNG).to is not None
    assert p.decide(1, 2, 5.0, lambda s: 0.0, 0.0, RNG).to is None
    assert ThresholdSharing(3, threshold=1, max_transfers=0).decide(1, 0, 5.0, lambda s: 0.0, 0.0, RNG).to is None


def test_load_measures() -> None:
    assert load_of("jobs", jobs=7, queued_work=30.0, capacity=3.0) == 7.0
    assert load_of("work", jobs=7, queued_work=30.0, capacity=3.0) == 10.0
    with pytest.raises(ValueError, match="load measure must be one of"):
        load_of("mood", jobs=1, queued_work=0.0, capacity=1.0)


@pytest.mark.parametrize(("kw", "msg"), [({"probe_limit": -1}, "must be >= 0"), ({"max_transfers": -1}, "must be >= 0"),
                                         ({"transfer_delay": -1.0}, "transfer delay")])
def test_bad_configs_are_refused(kw: dict, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        ThresholdSharing(3, threshold=2, **kw)


@pytest.mark.parametrize(("max_transfers", "seed"), [(1, 0), (2, 1), (3, 2)])
def test_in_an_overloaded_federation_no_job_moves_more_than_max_transfers(max_transfers: int, seed: int) -> None:
    """Six one-slot sites, all arrivals at sites 0-2 at 183% of their
    capacity (92% of the whole), 2 s transfers: loads change while a job is
    on its way, so jobs arriving from a transfer are often candidates again. Each decision is
    checked against the loads the policy saw. Events are (time, seq, site
    the job arrives at, job)."""
    rng = np.random.default_rng(seed)
    sites = [FifoSite(i, slots=1) for i in range(6)]
    p = ThresholdSharing(6, threshold=2, probe_limit=2, max_transfers=max_transfers, transfer_delay=2.0)
    times = np.cumsum(rng.exponential(1 / 5.5, 1500))
    ev = [(float(t), i, i % 3, Job(i, 1.0, home=i % 3, submitted=float(t))) for i, t in enumerate(times)]
    heapq.heapify(ev)
    seq = len(ev)
    while ev:
        t, _, at, job = heapq.heappop(ev)
        for s in sites:
            s.complete(t)
        own = sites[at].load()
        d = p.decide(at, job.transfers, own, lambda s: sites[s].load(), t, rng)
        if d.to is None:
            sites[at].arrive(job, t)
            continue
        assert own > 2 and sites[d.to].load() < 2 and d.to != at and job.transfers < max_transfers
        seq += 1
        heapq.heappush(ev, (d.arrive_at, seq, d.to, replace(job, transfers=job.transfers + 1)))
    runs = [r for s in sites for r in [*s.queue, *(r for _, _, r in s.running), *s.finished]]
    assert len(runs) == 1500 and sum(r.job.transfers for r in runs) == p.transfers > 100
    assert max(r.job.transfers for r in runs) == max_transfers  # reached, never passed
