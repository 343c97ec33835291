"""The sim engine's kernel (actors/engines/virtual_loop.py): asyncio's
interface on a discrete-event core. Timers run by due time, then in the
order they were set; callbacks by asyncio's turns; cancelled ones never;
asyncio's own sleep, wait_for, timeout, gather and Event keep their meaning
on the virtual clock; an exception in a callback goes to the loop's handler;
a loop that can never move again raises Deadlock; and where asyncio's order
is defined (no two timers due at the same moment) it is asyncio's, checked
against ``ReferenceLoop`` (asyncio's own loop on the same clock)."""
from __future__ import annotations

import asyncio
import contextvars
from typing import Any, Callable

import numpy as np
import pytest

from schedlab.actors.engines.reference_loop import ReferenceLoop
from schedlab.actors.engines.sim_engine import SimEngine
from schedlab.actors.engines.virtual_loop import COMPACT_MIN, MIN_STEP_S, NOT_CANCELLABLE, Deadlock, VirtualLoop
from schedlab.schedulers.model.workload import Dist


def run(loop: asyncio.AbstractEventLoop, main: Callable[[], Any]) -> Any:
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


def test_timers_run_by_due_time_then_in_the_order_they_were_set() -> None:
    loop = VirtualLoop()
    seen: list[tuple[float, int]] = []
    dues = [3.0, 1.0, 2.0, 1.0, 3.0, 1.0, 2.0, 1.0]
    for i, due in enumerate(dues):
        loop.call_at(due, lambda i=i: seen.append((loop.time(), i)))
    loop.call_at(4.0, loop.stop)
    loop.run_forever()
    loop.close()
    assert seen == sorted(((due, i) for i, due in enumerate(dues)))  # ties: first set, first run
    assert [t for t, _ in seen] == [1.0] * 4 + [2.0] * 2 + [3.0] * 2  # the clock lands on each due time exactly


def test_call_soon_is_first_in_first_out_and_timers_due_now_join_the_next_turn() -> None:
    """asyncio's turn: what is ready runs; a callback scheduled meanwhile,
    and a timer that fell due meanwhile, run next turn, in that order."""
    def program(loop: asyncio.AbstractEventLoop) -> list[str]:
        seen: list[str] = []

        def a() -> None:
            seen.append("a")
            loop.call_soon(lambda: seen.append("c"))
            loop.call_later(0, lambda: seen.append("t"))
        loop.call_soon(a)
        loop.call_soon(lambda: seen.append("b"))
        loop.call_later(1.0, loop.stop)
        loop.run_forever()
        loop.close()
        return seen

    assert program(VirtualLoop()) == program(ReferenceLoop()) == ["a", "b", "c", "t"]


def test_a_cancelled_callback_never_runs_and_cancel_after_it_ran_is_harmless() -> None:
    loop = VirtualLoop()
    seen: list[str] = []
    t = loop.call_later(1.0, seen.append, "timer")
    s = loop.call_soon(seen.append, "soon")
    late = loop.call_later(0.5, seen.append, "ran")
    t.cancel()
    s.cancel()
    assert t.cancelled() and s.cancelled() and not late.cancelled() and t.when() == 1.0
    loop.call_later(2.0, loop.stop)
    loop.run_forever()
    late.cancel()  # it ran: no timer left to count
    assert seen == ["ran"] and loop._cancelled_timers == 0
    assert NOT_CANCELLABLE.cancelled() is False
    with pytest.raises(RuntimeError):
        NOT_CANCELLABLE.cancel()
    loop.close()


def test_cancelled_timers_are_compacted_away_and_the_rest_keep_their_order() -> None:
    loop = VirtualLoop()
    seen: list[int] = []
    n = 4 * COMPACT_MIN
    handles = [loop.call_at(1.0 + (i % 10), seen.append, i) for i in range(n)]
    for i, h in enumerate(handles):
        if i % 4:
            h.cancel()
    assert loop._cancelled_timers == n - n // 4
    loop.call_at(100.0, loop.stop)
    loop.run_forever()
    assert seen == sorted(range(0, n, 4), key=lambda i: (1.0 + (i % 10), i))
    assert loop._cancelled_timers == 0 and len(loop._scheduled) == 0
    loop.close()


def test_sleep_wait_for_timeout_gather_and_event_keep_their_meaning() -> None:
    loop = VirtualLoop()
    seen: list[tuple[str, float]] = []

    async def setter(ev: asyncio.Event) -> str:
        await asyncio.sleep(2.5)
        ev.set()
        return "set"

    async def waiter(ev: asyncio.Event) -> str:
        await ev.wait()
        seen.append(("woken", loop.time()))
        return "woken"

    async def main() -> None:
        ev = asyncio.Event()
        assert await asyncio.gather(waiter(ev), setter(ev), asyncio.sleep(1.0, result="slept")) == ["woken", "set", "slept"]
        assert loop.time() == 2.5
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.sleep(10.0), 3.0)
        seen.append(("wait_for", loop.time()))
        assert await asyncio.wait_for(asyncio.sleep(1.0, result=7), 3.0) == 7
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.25):
                await asyncio.Event().wait()
        seen.append(("timeout", loop.time()))
        async with asyncio.timeout(5.0) as cm:  # moved, then not reached: its timer is cancelled
            cm.reschedule(loop.time() + 6.0)
            await asyncio.sleep(0)
        await asyncio.sleep(0)  # a zero sleep yields without moving the clock
        seen.append(("end", loop.time()))

    run(loop, main)
    assert seen == [("woken", 2.5), ("wait_for", 5.5), ("timeout", 6.75), ("end", 6.75)]


def test_an_exception_in_a_callback_goes_to_the_handler_and_the_loop_goes_on() -> None:
    loop = VirtualLoop()
    caught: list[BaseException] = []
    loop.set_exception_handler(lambda _loop, context: caught.append(context["exception"]))

    def boom() -> None:
        raise ValueError("boom")
    seen: list[str] = []
    loop.call_soon(boom)
    loop.call_later(1.0, boom)
    loop.call_later(2.0, seen.append, "after")
    loop.call_later(3.0, loop.stop)
    loop.run_forever()
    loop.close()
    assert [str(e) for e in caught] == ["boom", "boom"] and seen == ["after"]


def test_a_task_that_raises_gives_its_exception_to_whoever_awaits_it() -> None:
    async def fails() -> None:
        await asyncio.sleep(1.0)
        raise KeyError("k")

    async def main() -> str:
        try:
            await asyncio.create_task(fails())
        except KeyError:
            return "caught"
        return "missed"

    assert run(VirtualLoop(), main) == "caught"


def test_nothing_ready_and_no_live_timer_is_a_deadlock() -> None:
    loop = VirtualLoop()

    async def forever() -> None:
        await asyncio.Event().wait()

    with pytest.raises(Deadlock):
        loop.run_until_complete(forever())
    loop.call_later(5.0, print).cancel()  # only a cancelled timer: still nothing will ever happen
    with pytest.raises(Deadlock):
        loop.run_until_complete(forever())
    assert loop.time() == 0.0
    loop.close()


@pytest.mark.parametrize("make", [VirtualLoop, ReferenceLoop])
def test_a_timer_in_the_future_moves_the_clock_to_it_and_at_least_one_step(make: Callable[..., Any]) -> None:
    """As asyncio's loop on the virtual clock does (a positive select
    timeout moves the clock at least one step): a timer due less than a
    step ahead still runs at a time not before it is due."""
    loop = make(start=10.0)
    seen: list[float] = []
    loop.call_at(10.0 + MIN_STEP_S / 2, lambda: seen.append(loop.time()))
    loop.call_at(10.0 + 2 * MIN_STEP_S, lambda: seen.append(loop.time()))
    loop.call_at(11.0, loop.stop)
    loop.run_forever()
    loop.close()
    assert seen == pytest.approx([10.0 + MIN_STEP_S, 10.0 + 2 * MIN_STEP_S], abs=1e-13)


@pytest.mark.parametrize("make", [VirtualLoop, ReferenceLoop])
def test_a_task_sleeping_to_a_deadline_under_one_step_away_gets_there(make: Callable[..., Any]) -> None:
    """A task that sleeps until ``time() >= deadline`` must get there: with
    the clock left where it was when the timer ran, it slept again and
    again without end (a Sparrow/omniscient comparison spun on it)."""
    loop = make(start=10.0)
    deadline = 10.0 + MIN_STEP_S / 3

    async def main() -> int:
        naps = 0
        while loop.time() < deadline and naps < 100:
            naps += 1
            await asyncio.sleep(deadline - loop.time())
        return naps

    assert run(loop, main) == 1


def test_callbacks_see_the_context_of_the_code_that_scheduled_them() -> None:
    """What the sim engine tags an actor's tasks by: a callback a task
    schedules (timer or not) runs with that task's context variables."""
    var: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="driver")
    loop = VirtualLoop()
    seen: list[tuple[str, str]] = []

    async def actor(name: str) -> None:
        var.set(name)
        loop.call_soon(lambda: seen.append(("soon", var.get())))
        loop.call_later(1.0, lambda: seen.append(("later", var.get())))
        await asyncio.sleep(2.0)

    async def main() -> None:
        await asyncio.gather(actor("a"), actor("b"))
    loop.call_soon(lambda: seen.append(("driver", var.get())))
    run(loop, main)
    assert seen == [("driver", "driver"), ("soon", "a"), ("soon", "b"), ("later", "a"), ("later", "b")]


def _program(loop: asyncio.AbstractEventLoop, seed: int, distinct: bool) -> list[tuple[float, int, int]]:
    """Tasks that sleep, spawn, set events and cancel timers, from a seeded
    generator: the trace of who ran when. ``distinct``: no two timers due at
    the same moment (periods are distinct primes' fractions)."""
    rng = np.random.default_rng(seed)
    trace: list[tuple[float, int, int]] = []
    primes = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37]

    async def worker(k: int, ev: asyncio.Event) -> None:
        for step in range(int(rng.integers(5, 15))):
            d = (primes[k % len(primes)] / 97.0) * (1 + step) ** 0.5 if distinct else float(rng.integers(1, 4))
            await asyncio.sleep(d)
            trace.append((round(loop.time(), 12), k, step))
            if step == 3:
                ev.set()
            if rng.random() < 0.3:
                loop.call_later(50.0, trace.append, (-1.0, k, step)).cancel()
            if rng.random() < 0.2:
                await asyncio.sleep(0)

    async def main() -> None:
        ev = asyncio.Event()
        tasks = [asyncio.ensure_future(worker(k, ev)) for k in range(10)]
        await ev.wait()
        trace.append((round(loop.time(), 12), -1, 0))
        await asyncio.gather(*tasks)

    loop.run_until_complete(main())
    loop.close()
    return trace


def test_the_same_program_runs_the_same_way_every_time() -> None:
    assert _program(VirtualLoop(), 5, distinct=False) == _program(VirtualLoop(), 5, distinct=False)
    assert _program(VirtualLoop(), 5, distinct=False) != _program(VirtualLoop(), 6, distinct=False)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_where_asyncio_defines_the_order_the_kernel_keeps_it(seed: int) -> None:
    assert _program(VirtualLoop(), seed, distinct=True) == _program(ReferenceLoop(), seed, distinct=True)


class Holder:
    """An actor whose plain callback (no task) starts a task."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt
        self.ticks = 0

    def arm(self) -> None:
        asyncio.get_running_loop().call_soon(self._start)

    def _start(self) -> None:
        asyncio.get_running_loop().create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            await asyncio.sleep(1.0)
            self.ticks += 1


def test_a_task_started_from_an_actors_callback_dies_with_the_actor() -> None:
    eng = SimEngine(scale=1.0, latency=Dist("constant", value=0.001), seed=1)
    eng.connect(None, "t")
    h = eng.spawn(Holder, "holder", "t", eng.runtime(1.0, "t"))
    eng.gather([eng.call(h, "arm")])
    eng.sleep(3.5)
    actor = h.actor
    assert actor.ticks == 3
    eng.kill_all([h])
    eng.sleep(3.0)
    assert actor.ticks == 3
    eng.shutdown()


def test_messages_on_one_channel_due_at_the_same_moment_arrive_in_order() -> None:
    """Zero latency: every message of a burst is due at once; one channel
    keeps them in the order sent, a frozen receiver included."""
    class Log:
        def __init__(self, rt: Any) -> None:
            self.rt = rt
            self.got: list[int] = []

        def take(self, x: int) -> None:
            self.got.append(x)

        def pause(self, seconds: float) -> None:
            self.rt.freeze(seconds)

    eng = SimEngine(scale=1.0, latency=Dist("constant", value=0.0), seed=1)
    eng.connect(None, "t")
    h = eng.spawn(Log, "log", "t", eng.runtime(1.0, "t"))
    eng.gather([eng.call(h, "take", i) for i in range(50)])
    eng.gather([eng.call(h, "pause", 1.0)])
    eng.gather([eng.call(h, "take", i) for i in range(50, 100)])
    assert h.actor.got == list(range(100))
    eng.shutdown()


def test_the_debug_flag_reads_back_as_set() -> None:
    loop = VirtualLoop()
    assert loop.get_debug() is False
    loop.set_debug(True)
    assert loop.get_debug() is True
    loop.set_debug(False)
    assert loop.get_debug() is False
    loop.close()
