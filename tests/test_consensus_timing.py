"""``[coordinator]`` timing in emulated ms turned into the Raft core's ticks,
and the wall floor that keeps a live run's timers above Ray's round trips."""
from __future__ import annotations

from schedlab.schedulers.consensus.timing import raft_timing


def test_etcd_defaults_where_the_floor_allows_them() -> None:
    t = raft_timing(100.0, 1000.0, time_scale=1.0)
    assert (t.heartbeat_ticks, t.election_ticks, t.raised) == (100, (1000, 1999), None)  # etcd: [x, 2x)


def test_a_range_is_taken_as_given() -> None:
    t = raft_timing(900.0, (3000.0, 3100.0), time_scale=20.0)  # the Raft paper's 150-155 ms at 20x
    assert (t.heartbeat_ticks, t.election_ticks, t.raised) == (900, (3000, 3100), None)


def test_the_wall_floor_raises_heartbeat_and_election_and_says_so() -> None:
    t = raft_timing(100.0, 1000.0, time_scale=50.0)  # 2 and 20 wall ms: below Ray's reach
    assert t.heartbeat_ticks == 500  # 10 wall ms
    assert t.election_ticks == (5000, 9999)  # 100 wall ms, still [x, 2x)
    assert t.raised is not None and "heartbeat_ms 100 -> 500" in t.raised and "election_ms 1000-2000 -> 5000-10000" in t.raised


def test_a_range_raised_by_the_floor_keeps_its_ratio() -> None:
    t = raft_timing(900.0, (3000.0, 3300.0), time_scale=40.0)
    assert t.heartbeat_ticks == 900 and t.election_ticks == (4000, 4400)
