"""A Sparrow worker: one FIFO queue of tasks and reservations served by
``slots`` slots; a reservation at the head asks its scheduler and holds its
slot until the answer; a cancel frees the slot for the next entry."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schedlab.schedulers.archs.sparrow.worker import GetTask, Reservation, Task, Worker


def t(job: int, i: int, dur: float = 10.0, long: bool = False) -> Task:
    return Task(job, i, dur, long)


def test_tasks_start_in_fifo_order_no_more_than_the_slots_at_once() -> None:
    w = Worker(0, slots=2)
    out = w.enqueue([t(1, 0, 5.0), t(1, 1, 7.0), t(2, 0, 1.0), t(3, 0, 2.0)], 0.0)
    assert [(s.task.key, s.start, s.end) for s in out.started] == [((1, 0), 0.0, 5.0), ((1, 1), 0.0, 7.0)]
    assert w.free_slots() == 0 and w.queue_length() == 4
    out = w.complete((1, 0), 5.0)
    assert [(s.task.key, s.end) for s in out.started] == [((2, 0), 6.0)]
    out = w.complete((2, 0), 6.0)
    assert [(s.task.key, s.end) for s in out.started] == [((3, 0), 8.0)]
    assert w.complete((1, 1), 7.0).started == [] and w.free_slots() == 1


def test_a_reservation_at_the_head_asks_its_scheduler_and_holds_its_slot() -> None:
    w = Worker(4, slots=1)
    out = w.enqueue([Reservation(9, scheduler=2), t(5, 0)], 1.0)
    assert out.started == [] and out.messages == [GetTask(4, 0, 9, 2)]
    assert w.free_slots() == 0 and w.queue_length() == 2  # task 5/0 waits behind the held slot
    out = w.answer(0, t(9, 3, 4.0), 2.0)
    assert [(s.task.key, s.start, s.end) for s in out.started] == [((9, 3), 2.0, 6.0)]
    assert [s.task.key for s in w.complete((9, 3), 6.0).started] == [(5, 0)]


def test_a_cancel_frees_the_slot_for_the_next_entry() -> None:
    w = Worker(0)
    w.enqueue([Reservation(1, 0), Reservation(2, 0), t(3, 0)], 0.0)
    out = w.answer(0, None, 0.5)
    assert out.started == [] and out.messages == [GetTask(0, 1, 2, 0)]
    out = w.answer(1, None, 0.7)
    assert [s.task.key for s in out.started] == [(3, 0)] and out.started[0].start == 0.7


def test_protocol_errors_are_refused() -> None:
    w = Worker(0)
    w.enqueue([Reservation(1, 0)], 0.0)
    with pytest.raises(ValueError, match="was for job 1"):
        w.answer(0, t(2, 0), 0.0)
    with pytest.raises(ValueError, match="no GetTask 5"):
        w.answer(5, None, 0.0)
    w.answer(0, t(1, 0, 3.0), 0.0)
    with pytest.raises(ValueError, match="ends at 3.0"):
        w.complete((1, 0), 2.0)
    with pytest.raises(ValueError, match="not running"):
        w.complete((1, 1), 5.0)
    with pytest.raises(ValueError, match="slots"):
        Worker(1, slots=0)


def test_probe_numbers_count_service_and_known_work() -> None:
    w = Worker(0, slots=2)
    w.enqueue([t(1, 0, 10.0), Reservation(2, 0), t(3, 0, 4.0), Reservation(4, 0)], 0.0)
    # running 1/0 (10 s), asking for job 2, waiting: 3/0 and a reservation
    assert w.queue_length() == 4
    assert w.estimated_work(2.0) == 8.0 + 4.0
    assert w.estimated_work(2.0, reservation_estimate=1.5) == 8.0 + 4.0 + 2 * 1.5
    v = w.view()
    assert (v.busy, v.running_long, v.entries, v.idle) == (2, 0, (t(3, 0, 4.0), Reservation(4, 0)), False)


def test_remove_takes_only_entries_still_waiting() -> None:
    w = Worker(0)
    w.enqueue([t(1, 0), Reservation(2, 0), Reservation(2, 0), t(3, 0)], 0.0)
    assert w.remove([t(1, 0), Reservation(2, 0), t(3, 0), t(3, 0)]) == [Reservation(2, 0), t(3, 0)]
    assert list(w.queue) == [Reservation(2, 0)]


@settings(max_examples=80, deadline=None)
@given(slots=st.integers(1, 3), data=st.data())
def test_work_conserving_fifo_within_slots(slots: int, data: st.DataObject) -> None:
    """Against a model: entries are served in enqueue order, never more
    than ``slots`` at once, and no slot idles while an entry waits."""
    w = Worker(0, slots)
    now, seq = 0.0, 0
    enqueued: list[object] = []
    served: list[object] = []
    asking: dict[int, Reservation] = {}
    for _ in range(data.draw(st.integers(1, 30))):
        ops = ["enqueue"] + (["complete"] if w.running else []) + (["answer"] if asking else [])
        op = data.draw(st.sampled_from(ops))
        now += data.draw(st.floats(0.0, 3.0))
        if op == "enqueue":
            seq += 1
            e = Reservation(seq, 0) if data.draw(st.booleans()) else t(seq, 0, data.draw(st.floats(0.1, 5.0)))
            enqueued.append(e)
            out = w.enqueue([e], now)
        elif op == "complete":
            s = min(w.running.values(), key=lambda s: (s.end, s.task.key))
            now = max(now, s.end)
            out = w.complete(s.task.key, now)
        else:
            req = data.draw(st.sampled_from(sorted(asking)))
            res = asking.pop(req)
            out = w.answer(req, t(res.job_id, 0, 1.0) if data.draw(st.booleans()) else None, now)
        for m in out.messages:
            asking[m.request] = Reservation(m.job_id, m.scheduler)
        # What this call served from the queue (answers start no queued entry);
        # one call serves a contiguous block, so its order inside is by id.
        served.extend(sorted([m.job_id for m in out.messages]
                             + [s.task.job_id for s in out.started if isinstance(enqueued[s.task.job_id - 1], Task)]))
        assert len(w.running) + len(w.asking) <= slots
        assert not (w.queue and w.free_slots() > 0), "a slot idles while an entry waits"
    # Job ids are enqueue order, so FIFO service means ids served ascending.
    assert served == sorted(served) and served == [e.job_id for e in enqueued[:len(served)]]
