"""A web server replica: FIFO queue in front of a fixed number of workers,
speed-scaled service, a bounded queue that drops, the state-transfer cost
of cookie requests, load snapshots, crashes."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.webfarm.server import LoadReport, Server


def test_workers_limit_concurrency_and_the_queue_is_fifo() -> None:
    s = Server(0, workers=2)
    recs = [s.arrive(i, d, 0.0) for i, d in enumerate([4.0, 2.0, 1.0, 0.5])]
    assert [r.start for r in recs] == [0.0, 0.0, None, None]
    assert s.busy() == 2 and s.load() == 4
    assert s.next_event() == 2.0
    done, started = s.complete(2.0)
    # The short request 3 arrived after 2: FIFO, not shortest-first.
    assert [r.rid for r in done] == [1] and [r.rid for r in started] == [2]
    done, started = s.complete(3.0)
    assert [r.rid for r in done] == [2] and [r.rid for r in started] == [3]
    assert recs[3].start == 3.0
    done, _ = s.complete(math.inf)
    assert [(r.rid, r.finish) for r in done] == [(3, 3.5), (0, 4.0)]
    assert [r.latency for r in recs] == [4.0, 2.0, 3.0, 3.5]
    assert s.load() == 0 and s.next_event() == math.inf


def test_a_late_complete_starts_queued_requests_at_their_true_times() -> None:
    s = Server(0, workers=1)
    _, b, c = (s.arrive(i, 1.0, 0.0) for i in range(3))
    done, started = s.complete(10.0)  # called long after everything ended
    assert [r.rid for r in done] == [0, 1, 2] and [r.rid for r in started] == [1, 2]
    assert (b.start, b.finish, c.start, c.finish) == (1.0, 2.0, 2.0, 3.0)
    assert s.busy_time == 3.0 and s.served == 3


def test_service_time_is_demand_over_speed() -> None:
    fast, slow = Server(0, 1, speed=2.0), Server(1, 1, speed=0.5)
    f, sl = fast.arrive(0, 3.0, 1.0), slow.arrive(0, 3.0, 1.0)
    fast.complete(math.inf)
    slow.complete(math.inf)
    assert f.finish == 2.5 and sl.finish == 7.0


def test_a_full_queue_drops_and_counts() -> None:
    s = Server(0, workers=1, max_queue=1)
    r0, r1, r2 = (s.arrive(i, 1.0, 0.0) for i in range(3))
    assert r0.start == 0.0 and r1.start is None and not r1.dropped
    assert r2.dropped and r2.start is None and s.dropped == 1
    s.complete(1.0)  # r1 starts: the queue has room again
    assert not s.arrive(3, 1.0, 1.0).dropped
    assert s.arrive(4, 1.0, 1.0).dropped and s.dropped == 2
    s.complete(math.inf)
    assert s.served == 3 and r2.finish is None

    zero = Server(1, workers=2, max_queue=0)  # no waiting room: busy means refused
    assert [zero.arrive(i, 1.0, 0.0).dropped for i in range(3)] == [False, False, True]


def test_state_transfer_cost_is_paid_per_cookie_request_and_not_scaled_by_speed() -> None:
    s = Server(0, workers=1, speed=2.0, transfer_cost=0.25)
    plain = s.arrive(0, 1.0, 0.0)
    cookie = s.arrive(1, 1.0, 0.0, carries_state=True)
    assert plain.service == 0.5 and cookie.service == 0.75
    s.complete(math.inf)
    assert cookie.finish == 1.25 and s.transfers == 1


def test_load_report_is_a_snapshot_that_goes_stale() -> None:
    s = Server(3, workers=1)
    s.arrive(0, 1.0, 0.0)
    s.arrive(1, 1.0, 0.0)
    rep = s.report(0.0)
    assert rep == LoadReport(3, 2, 0.0)
    s.complete(2.0)
    assert s.load() == 0 and rep.load == 2  # the report did not follow


def test_busy_until_counts_the_elapsed_part_of_running_requests() -> None:
    s = Server(0, workers=2)
    s.arrive(0, 4.0, 0.0)
    s.arrive(1, 1.0, 0.0)
    s.complete(2.0)
    assert s.busy_time == 1.0 and s.busy_until(2.0) == 3.0


def test_a_crash_loses_running_and_queued_requests_and_refuses_until_restart() -> None:
    s = Server(0, workers=1)
    a, b = s.arrive(0, 4.0, 0.0), s.arrive(1, 1.0, 0.0)
    lost = s.crash(1.0)
    assert lost == [a, b] and a.lost and b.lost and s.lost == 2
    assert s.load() == 0 and s.busy_time == 1.0 and s.next_event() == math.inf
    assert s.arrive(2, 1.0, 1.5).dropped
    s.restart()
    assert s.arrive(3, 1.0, 2.0).start == 2.0


@pytest.mark.parametrize(("kw", "msg"), [
    ({"workers": 0}, "workers must be >= 1"),
    ({"workers": 1, "speed": 0.0}, "speed must be positive"),
    ({"workers": 1, "max_queue": -1}, "max queue length must be >= 0"),
    ({"workers": 1, "transfer_cost": -0.1}, "state-transfer cost must be >= 0"),
])
def test_bad_server_configs_are_refused(kw: dict, msg: str) -> None:
    with pytest.raises(ValueError, match=msg):
        Server(0, **kw)


def test_a_negative_demand_is_refused() -> None:
    with pytest.raises(ValueError, match="demand must be >= 0"):
        Server(0, 1).arrive(0, -1.0, 0.0)


@settings(max_examples=60, deadline=None)
@given(workers=st.integers(1, 3), speed=st.sampled_from([0.5, 1.0, 3.0]),
       reqs=st.lists(st.tuples(st.floats(0, 5), st.floats(0.01, 3)), min_size=1, max_size=25))
def test_any_arrival_pattern_keeps_fifo_and_the_worker_bound(workers: int, speed: float,
                                                              reqs: list[tuple[float, float]]) -> None:
    s = Server(0, workers, speed)
    recs = []
    for i, (gap, demand) in enumerate(sorted(reqs)):
        s.complete(gap)
        recs.append(s.arrive(i, demand, gap))
    s.complete(math.inf)
    starts = [r.start for r in recs]
    assert all(x is not None for x in starts)
    assert starts == sorted(starts)  # FIFO: started in arrival order
    for r in recs:
        assert r.start >= r.arrival and r.finish == pytest.approx(r.start + r.service)
        running = sum(1 for o in recs if o.start <= r.start < o.finish)  # type: ignore[operator]
        assert running <= workers
    assert s.busy_time == pytest.approx(sum(r.service for r in recs))


def test_resize_starts_queued_requests_on_new_workers_and_a_shrunk_server_takes_nothing_more() -> None:
    s = Server(0, workers=1)
    s.arrive(1, 10.0, 0.0)
    s.arrive(2, 10.0, 0.0)
    s.arrive(3, 10.0, 0.0)
    started = s.resize(2, 4.0)
    assert [r.rid for r in started] == [2] and started[0].start == 4.0
    s.resize(0, 5.0)
    finished, started = s.complete(20.0)
    assert [r.rid for r in finished] == [1, 2] and started == []  # request 3 waits: no worker left
    assert s.resize(1, 21.0)[0].rid == 3
    with pytest.raises(ValueError, match="workers must be >= 0"):
        s.resize(-1, 22.0)
