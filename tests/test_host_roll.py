"""A single head's roll of its machine hosts (schedulers.model.host_roll):
who is known, who is written off, and which reported ends a registration
already told, so that a stale report never ends a task's new copy."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.model.host_roll import HostRoll


def test_a_new_head_asks_every_host_to_register_and_is_whole_once_each_did_or_was_written_off() -> None:
    roll = HostRoll.of(3, trusted=False)
    assert roll.greet(0) == {"register": True} and not roll.complete()
    roll.register(0, [])
    roll.register(1, [])
    assert roll.greet(0) is None and not roll.complete()
    assert roll.write_off(2) and roll.complete()
    assert HostRoll.of(3, trusted=True).complete() and HostRoll.of(3, trusted=True).greet(2) is None


def test_a_written_off_host_is_told_to_reset_once_and_is_known_again() -> None:
    roll = HostRoll.of(2, trusted=True)
    assert roll.write_off(1) and not roll.write_off(1)  # a second write-off changes nothing
    assert roll.greet(1) == {"reset": True, "launches": []}
    assert roll.greet(1) is None and 1 in roll.registered and not roll.down


def test_the_ends_a_registration_told_are_dropped_once_when_the_polls_repeat_them() -> None:
    roll = HostRoll.of(1, trusted=False)
    roll.register(0, [(9, 0), (9, 1), (9, 0)])  # (9, 0) ended twice: two copies, both undelivered
    assert roll.news(0, [(9, 0, False), (4, 2, True)]) == [1]
    assert roll.news(0, [(9, 1, False), (9, 0, False), (9, 0, False)]) == [2]  # the third (9, 0) is a new copy's end
    assert roll.told == {} and roll.news(0, [(9, 1, False)]) == [0]  # every repeat arrived: later ends are news


def test_what_a_host_told_dies_with_its_write_off_or_its_restart() -> None:
    for gone in (HostRoll.write_off, HostRoll.back):
        roll = HostRoll.of(1, trusted=False)
        roll.register(0, [(1, 0)])
        gone(roll, 0)
        roll.greet(0)  # a written-off host resets at its poll: what it reported before is void
        assert roll.news(0, [(1, 0, False)]) == [0]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=12),
       st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2)), max_size=12))
def test_news_are_the_polls_ends_less_what_was_told_counted_with_multiplicity(told: list, polled: list) -> None:
    roll = HostRoll.of(1, trusted=False)
    roll.register(0, told)
    kept = [polled[i] for i in roll.news(0, [(j, t, False) for j, t in polled])]
    remaining = list(told)
    expected = []
    for key in polled:
        if key in remaining:
            remaining.remove(key)
        else:
            expected.append(key)
    assert kept == expected


def test_a_machine_host_registers_the_ends_it_has_not_delivered() -> None:
    """The host's side: what its failed poll kept (``_unsent``) and what
    ended since (not packed yet), finished or killed, in the order its next
    polls will repeat them."""
    import numpy as np

    from schedlab.actors.common.machine_host import MachineHost
    from schedlab.schedulers.model.wire import pack_release, task_key
    from tests.test_shell import WallRuntime

    host = MachineHost(WallRuntime(), 0, 0, np.full((2, 2), 4.0), None, None, 0.01)
    host._unsent = pack_release(np.asarray([0]), np.asarray([[1.0, 1.0]]), np.asarray([task_key(9, 0)]))
    host.done_keys = [task_key(9, 1, killed=True), task_key(-3, 2)]
    assert host.agent_report()["unreported"] == [[9, 0, False], [9, 1, True], [-3, 2, False]]
    host._unsent, host.done_keys = b"", []
    assert host.agent_report()["unreported"] == []
