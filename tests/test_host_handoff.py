"""The hand-over of a per-host service's launches to its machine host
(actors/common/host_handoff.py)."""
from __future__ import annotations

import numpy as np

from schedlab.actors.common.host_handoff import HostHandoff
from schedlab.schedulers.model.wire import pack_release, task_key


def _finished(rows: list[tuple[int, int, int]]) -> bytes:
    return pack_release(np.asarray([m for _j, _t, m in rows], dtype=np.int64), np.ones((len(rows), 2)),
                        np.asarray([task_key(j, t, False) for j, t, _m in rows], dtype=np.int64))


def test_launches_wait_for_the_hosts_room_and_leave_its_books_when_reported_ended() -> None:
    h = HostHandoff([0, 1])
    for t in range(3):
        h.hold(0, [7, t, 0, [1.0, 1.0], 5.0, 0.0])
    assert [r[1] for r in h.hand_out(lambda m: 2)] == [0, 1]  # two slots: the third waits
    assert h.hand_out(lambda m: 2) == []
    assert h.returned(_finished([(7, 0, 0), (-1, 0, 1)])) == [(7, 0, 0), (-1, 0, 1)]  # standing ends go back too
    assert [r[1] for r in h.hand_out(lambda m: 2)] == [2]
    assert h.running(0) == {(7, 1), (7, 2)}


def test_a_restarted_host_loses_what_it_ran_and_never_got_what_it_did_not_pull() -> None:
    h = HostHandoff([0])
    for t in range(3):
        h.hold(0, [9, t, 0, [1.0, 1.0], 5.0, 0.0])
    h.hand_out(lambda m: 1)
    assert h.drop(0) == ([[9, 0]], [[9, 1], [9, 2]])
    assert h.never_pulled() == [] and h.running(0) == set()
    h.hold(0, [9, 5, 0, [1.0, 1.0], 5.0, 0.0])
    assert h.never_pulled() == [[9, 5]]
