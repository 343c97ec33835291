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
    # Four of them come back: the disruption is over, and the two still
    # silent get one fresh timeout from now, not a write-off at once.
    for h in range(4, 8):
        w.heard(h, 14)
    v = w.check(15, set())
    assert (v.down, v.disrupted, v.changed, v.silent) == ([], False, True, 2)
    for h in range(9):  # host 8 was only late; host 9 stays silent
        w.heard(h, 24)
    assert w.check(24.5, set()).down == []
    v = w.check(25.5, set())
    assert (v.down, v.disrupted, v.changed) == ([9], False, False)
    # Hosts already down do not count as live: 1 of the 9 live is 11%.
    assert w.check(26, {9}).down == []


def test_a_disruption_that_silences_hosts_one_by_one_is_still_one() -> None:
    """Hosts cut off a moment apart: the first suspect waits ``confirm``,
    long enough for the others to join it, and nobody is written off."""
    def cut_one_by_one(w: HostWatch) -> None:
        w.grace(0)
        for t in (3, 6):
            w.heard(1, t - 1)
            w.heard(2, t)
            assert w.check(t, set()).down == []

    w = HostWatch(hosts=3, timeout=10, confirm=5)
    cut_one_by_one(w)
    v = w.check(10.5, set())  # host 0 silent past the timeout: a suspect only
    assert (v.down, v.silent, v.disrupted) == ([], 1, False)
    v = w.check(15.5, set())  # host 1 joins it: a disruption, 2 of 3
    assert (v.down, v.silent, v.disrupted) == ([], 2, True)
    # Without the wait, host 0 would have been written off alone at 10.5.
    w0 = HostWatch(hosts=3, timeout=10)
    cut_one_by_one(w0)
    assert w0.check(10.5, set()).down == [0]
    # A real death is still written off, ``confirm`` after it became a suspect.
    w1 = HostWatch(hosts=3, timeout=10, confirm=5)
    w1.grace(0)
    for t in (4, 8, 12, 14):
        w1.heard(1, t)
        w1.heard(2, t)
        assert w1.check(t, set()).down == []
    assert w1.check(15.5, set()).down == [0]


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
       give_up=st.floats(0, 10), confirm=st.sampled_from([0.0, 0.5, 3.0]),
       steps=st.lists(st.tuples(st.floats(0.1, 8), st.lists(st.integers(0, 11), max_size=12)), min_size=1, max_size=30))
def test_watch_properties(hosts: int, timeout: float, share: float, min_hosts: int, give_up: float, confirm: float,
                          steps: list[tuple[float, list[int]]]) -> None:
    """Whatever the timing: a host heard within the timeout (plus the
    suspect's wait) is never written off; nobody is written off within timeout + give_up of a new leader's
    grace; a check that writes off hosts was not in disruption mode, nor
    within a timeout of one ending."""
    w = HostWatch(hosts, timeout, LivenessSpec(share, min_hosts), give_up, confirm)
    now, down = 0.0, set()
    w.grace(now, give_up=True)
    last = {h: now + give_up for h in range(hosts)}  # the rules' clocks, kept independently
    for dt, heard in steps:
        now += dt
        for h in heard:
            if h < hosts:
                w.heard(h, now)
                last[h] = max(last[h], now)
        if dt > timeout:  # the watch's own stall: everyone's clock restarts
            last = {h: max(t, now) for h, t in last.items()}
        v = w.check(now, down)
        assert not (v.disrupted and v.down)
        if v.changed and not v.disrupted:  # recovered: the stragglers' clocks restart
            assert v.down == []
            last.update((h, now) for h, t in last.items() if now - t > timeout and h not in down)
        for h in v.down:
            assert h not in down and now - last[h] > timeout + confirm
        if now <= give_up + timeout + confirm:
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
