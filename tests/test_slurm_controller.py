"""slurmctld's pure core: partitions (overlapping, tiered), time limits
killed, fair-share charged, and never a node given to two jobs."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.slurm.controller import Partition, SlurmCore
from schedlab.schedulers.archs.slurm.priority import FairShare, Weights

SHORT = Partition("short", tuple(range(0, 4)), max_time=3600.0, default_time=600.0, tier=2)
LONG = Partition("long", tuple(range(2, 8)), max_time=86_400.0, default_time=3600.0, tier=1)


def core() -> SlurmCore:
    return SlurmCore((SHORT, LONG), 8, Weights(), FairShare({"a": 1.0, "b": 1.0}))


def test_submission_is_refused_for_unknown_partitions_big_jobs_and_long_limits() -> None:
    c = core()
    assert c.submit(1, "gpu", 1, None, "a", 0.0) == "no partition 'gpu'"
    assert "partition short holds 4" in c.submit(2, "short", 5, None, "a", 0.0)
    assert "over partition short's maximum 3600" in c.submit(3, "short", 1, 7200.0, "a", 0.0)
    assert c.submit(4, "short", 1, None, "a", 0.0) == "" and c.jobs[4].limit == 600.0  # the default time


def test_the_higher_tier_takes_shared_nodes_first_and_a_job_past_its_limit_is_killed() -> None:
    c = core()
    c.submit(1, "long", 6, 3600.0, "a", 0.0)   # wants all of long's nodes, 2-3 shared with short
    c.submit(2, "short", 4, 600.0, "b", 0.0)   # wants all of short's
    started = c.schedule(1.0)
    # short (tier 2) goes first and takes nodes 0-3; long cannot fit 6 of its 6 then.
    assert [(s.job_id, s.nodes) for s in started] == [(2, (0, 1, 2, 3))]
    assert c.expired(600.0) == [] and c.expired(601.0) == [2]
    c.finish(2, 601.0)
    assert [(s.job_id, s.nodes) for s in c.schedule(601.0)] == [(1, (2, 3, 4, 5, 6, 7))]
    assert c.fairshare is not None and c.fairshare.usage["b"] == 4 * 600.0


def test_fair_share_orders_a_partitions_queue() -> None:
    c = SlurmCore((LONG,), 8, Weights(age=0, job_size=0, partition=0, fairshare=10_000), FairShare({"a": 1.0, "b": 1.0}))
    c.fairshare.charge("a", 10_000.0, 0.0)  # a used a lot lately
    c.submit(1, "long", 6, 100.0, "a", 0.0)
    c.submit(2, "long", 6, 100.0, "b", 1.0)
    assert [s.job_id for s in c.schedule(2.0)] == [2]  # b first, though a submitted first


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["short", "long"]), st.integers(1, 4), st.integers(60, 3600),
                          st.sampled_from(["a", "b"])), min_size=1, max_size=25))
def test_no_node_is_ever_given_to_two_jobs(subs: list) -> None:
    c = core()
    now = 0.0
    for i, (part, n, lim, acct) in enumerate(subs):
        c.submit(i, part, n, float(lim), acct, now)
        for s in c.schedule(now):
            assert len(s.nodes) == c.jobs[s.job_id].nodes
            assert set(s.nodes) <= set((SHORT if c.jobs[s.job_id].partition == "short" else LONG).nodes)
        running = [j for j in c.jobs.values() if j.started is not None]
        on = [n for j in running for n in j.on]
        assert len(on) == len(set(on))  # whole nodes: each node has at most one job's one task
        assert c.used.sum() == len(on) and c.used.max() <= 1.0
        now += 300.0
        for jid in c.expired(now):
            c.finish(jid, now)
