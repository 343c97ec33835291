"""The host watch's rules (schedulers.faults.liveness): who is written off, and
when a watcher must not judge (its own stall, a new leader's blind spot,
a disruption that silences most of the cell at once)."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.faults.liveness import HostWatch, LivenessSpec

NO_DISRUPTION = LivenessSpec(disruption_share=1.0, disruption_min_hosts=1000)


def test_silent_hosts_are_those_not_heard_within_the_timeout_and_not_already_down() -> None:
    hw = HostWatch(hosts=3, timeout=10)
    hw.grace(0)
    assert hw.silent(5, set()) == []
    assert hw.silent(11, set()) == [0, 1, 2]
    hw.heard(1, 8)
    assert hw.silent(15, set()) == [0, 2]  # host 1: 15 - 8 = 7 <= 10
    assert hw.silent(15, {0}) == [2]
    assert hw.silent(18, set()) == [0, 2]  # exactly the timeout is not yet silent
    hw.grace(20)  # a fresh clock for everyone
    assert hw.silent(25, set()) == []


def test_a_watcher_that_stalled_itself_writes_off_nobody() -> None:
    # A paused cell state or master wakes to find every host "silent": it
    # must grant a new grace period, not write off the whole cell.
    w = HostWatch(hosts=3, timeout=10, spec=NO_DISRUPTION)
    w.grace(0)
    assert w.check(5, set()).down == []
    w.heard(0, 8)
    assert w.check(14, set()).down == [1, 2]  # awake all along: 1 and 2 really are silent
    assert w.check(40, set()).down == []  # 26 s since its own last check: it was away
    assert w.check(45, set()).down == []
    assert w.check(51, set()).down == [0, 1, 2]


def test_a_new_leader_starts_every_clock_when_a_host_could_have_reached_it() -> None:
    # Hosts may be stuck on the old leader for up to give_up after the
    # election: the timeout counts from then, not from the election.
    w = HostWatch(hosts=2, timeout=10, spec=NO_DISRUPTION, give_up=5)
    w.grace(100, give_up=True)
    for t in (102, 106, 110, 114):
        assert w.check(t, set()).down == []
    assert w.check(115.5, set()).down == [0, 1]
    w.heard(0, 113)  # heard early: its own clock, never earlier than the grace's
    assert w.silent(115.5, set()) == [1]
    # A plain grace (a run's start, a watcher's own stall) has no give-up.
    w.grace(200)
    assert w.check(205, set()).down == []
    assert w.check(210.5, set()).down == [0, 1]


def test_most_of_the_cell_silent_at_once_is_a_disruption_not_dead_machines() -> None:
    w = HostWatch(hosts=10, timeout=10, spec=LivenessSpec(disruption_share=0.55, disruption_min_hosts=2))
    w.grace(0)
    for h in range(4):
        w.heard(h, 9)
    w.check(6, set())
    v = w.check(12, set())  # 6 of 10 silent: >= 55% -> nobody written off
    assert (v.down, v.disrupted, v.changed, v.silent, v.live) == ([], True, True, 6, 10)
    v = w.check(13, set())
    assert (v.down, v.disrupted, v.changed) == ([], True, False)
    # Four of them come back; the two still silent are written off at once.
    for h in range(4, 8):
        w.heard(h, 14)
    v = w.check(15, set())
    assert (v.down, v.disrupted, v.changed) == ([8, 9], False, True)
    # Hosts already down do not count as live: 2 of the 8 live is 25%.
    w.heard(0, 15)
    assert w.check(16, {8, 9}).down == []


def test_one_dead_machine_in_a_small_cell_is_still_written_off() -> None:
    w = HostWatch(hosts=3, timeout=10)  # default spec: 55%, at least 2 hosts
    w.grace(0)
    for t in (4, 8, 12):
        w.heard(0, t)
        w.heard(1, t)
        w.check(t, set())
    assert w.check(12.5, set()).down == [2]
    # Two of three silent together (or both live ones, one being down): disruption.
    w2 = HostWatch(hosts=3, timeout=10)
    w2.grace(0)
    w2.heard(0, 9)
    w2.check(5, set())
    assert w2.check(11, set()).disrupted
    assert w2.check(11.5, {0}).disrupted  # the last two live hosts silent: all of them
    # A share of 1 and a minimum of 1 host: only a wholly silent cell is a disruption.
    w3 = HostWatch(hosts=3, timeout=10, spec=LivenessSpec(disruption_share=1.0, disruption_min_hosts=1))
    w3.grace(0)
    w3.heard(0, 9)
    w3.check(5, set())
    assert w3.check(11, set()).down == [1, 2]


@settings(max_examples=200, deadline=None)
@given(hosts=st.integers(1, 12), timeout=st.floats(1, 20), share=st.floats(0.05, 1.0), min_hosts=st.integers(1, 5),
       give_up=st.floats(0, 10),
       steps=st.lists(st.tuples(st.floats(0.1, 8), st.lists(st.integers(0, 11), max_size=12)), min_size=1, max_size=30))
def test_watch_properties(hosts: int, timeout: float, share: float, min_hosts: int, give_up: float,
                          steps: list[tuple[float, list[int]]]) -> None:
    """Whatever the timing: a host heard within the timeout is never written
    off; nobody is written off within timeout + give_up of a new leader's
    grace; a check that writes off hosts was not in disruption mode."""
    w = HostWatch(hosts, timeout, LivenessSpec(share, min_hosts), give_up)
    now, down = 0.0, set()
    w.grace(now, give_up=True)
    last = {h: now + give_up for h in range(hosts)}
    for dt, heard in steps:
        now += dt
        for h in heard:
            if h < hosts:
                w.heard(h, now)
                last[h] = max(last[h], now)
        v = w.check(now, down)
        assert not (v.disrupted and v.down)
        for h in v.down:
            assert h not in down and now - last[h] > timeout
        if now <= give_up + timeout:
            assert v.down == []
        if v.down:
            assert len(v.down) < min_hosts or len(v.down) < share * (hosts - len(down))
        down |= set(v.down)


def test_a_stopped_watch_writes_off_nobody() -> None:
    # At a run's end the hosts stop first: their silence is not a failure.
    w = HostWatch(hosts=2, timeout=10, spec=NO_DISRUPTION)
    w.grace(0)
    w.check(5, set())
    w.stop()
    assert w.check(9, set()).down == [] and w.check(30, set()).down == [] and w.check(60, set()).down == []
