"""Benchmark of the sim engine's kernel alone: its cost per event, beside
asyncio's own loop on the same virtual clock, in one run.

    python scripts/bench_kernel.py [--timers 200000] [--soon 200000] [--messages 20000] [--repeats 5]
                                   [--json PATH] [--quick]

Workloads, each run on ``ReferenceLoop`` (asyncio's ``SelectorEventLoop``
with a selector that never waits: what the sim engine ran on before) and on
``VirtualLoop`` (the discrete-event kernel):

* **timer**: 100 tasks each ``asyncio.sleep`` in turn, periods of 1 to 7 ms
  (a timer set, fired, and the task woken);
* **call_soon**: 100 chains of plain callbacks, each scheduling the next;
* **task step**: 100 tasks each ``await asyncio.sleep(0)`` in turn (a C
  task's step, scheduled with its context);
* **round trip**: 10 caller actors of a ``SimEngine`` each ``rt.call`` an
  echo actor in turn (the message there, the method's task, the reply back);
* **send**: the same callers ``rt.send`` one-way messages to a plain method.

Printed per workload: CPU ns per operation on each loop (``time.process_time``:
CPU, not wall, so other work on a shared machine inflates it less), their
ratio new/old, the loop callbacks one operation schedules (counted in a
separate, untimed pass), and loop events (callbacks) per CPU second. Numbers
are medians over ``--repeats``, the two loops alternating within a repeat.
No speed target is asserted here or in tests (tests/test_bench_kernel.py
runs ``--quick`` for shape only).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

from schedlab.actors.engines.reference_loop import ReferenceLoop
from schedlab.actors.engines.sim_engine import SimEngine
from schedlab.actors.engines.virtual_loop import VirtualLoop
from schedlab.schedulers.model.workload import Dist
from schedlab.scripts.options import parse_bench_args

TOOL_HELP = "the sim kernel's cost per timer, callback and message, beside asyncio's loop"  # `schedlab bench kernel`

WIDTH = 100  # tasks or chains running side by side
CALLERS = 10
QUICK = {"timers": 2000, "soon": 2000, "messages": 200, "repeats": 1}
LOOPS: dict[str, type[VirtualLoop] | type[ReferenceLoop]] = {"old": ReferenceLoop, "new": VirtualLoop}
# The methods through which each loop's callbacks enter it (ReferenceLoop's
# call_later and post_at go through its call_at).
ENTRIES = {ReferenceLoop: ("call_soon", "call_at"), VirtualLoop: ("call_soon", "call_at", "call_later", "post_at")}

Loop = VirtualLoop | ReferenceLoop


def timers(loop: Loop, n: int) -> int:
    """``n`` sleeps over ``WIDTH`` tasks; returns the operations done."""
    per = max(1, n // WIDTH)

    async def sleeper(i: int) -> None:
        period = 0.001 * (1 + i % 7)
        for _ in range(per):
            await asyncio.sleep(period)

    async def main() -> None:
        await asyncio.gather(*(sleeper(i) for i in range(WIDTH)))

    loop.run_until_complete(main())
    return per * WIDTH


def soon(loop: Loop, n: int) -> int:
    """``n`` plain callbacks over ``WIDTH`` chains."""
    per = max(1, n // WIDTH)
    left = [per] * WIDTH
    done = loop.create_future()
    running = [WIDTH]

    def step(i: int) -> None:
        left[i] -= 1
        if left[i]:
            loop.call_soon(step, i)
            return
        running[0] -= 1
        if not running[0]:
            done.set_result(None)

    for i in range(WIDTH):
        loop.call_soon(step, i)
    loop.run_until_complete(done)
    return per * WIDTH


def steps(loop: Loop, n: int) -> int:
    """``n`` task steps (``await asyncio.sleep(0)``) over ``WIDTH`` tasks."""
    per = max(1, n // WIDTH)

    async def yielder() -> None:
        for _ in range(per):
            await asyncio.sleep(0)

    async def main() -> None:
        await asyncio.gather(*(yielder() for _ in range(WIDTH)))

    loop.run_until_complete(main())
    return per * WIDTH


class Echo:
    """The callee: an async method (a task per call) and a plain one."""

    def __init__(self, rt: Any) -> None:
        self.rt = rt
        self.got = 0

    async def echo(self, x: int) -> int:
        return x

    def poke(self, x: int) -> None:
        self.got += 1


class Caller:
    def __init__(self, rt: Any) -> None:
        self.rt = rt

    async def calls(self, target: Any, n: int) -> int:
        for i in range(n):
            assert await self.rt.call(target, "echo", i) == i
        return n

    async def sends(self, target: Any, n: int) -> int:
        for i in range(n):
            self.rt.send(target, "poke", i)
        await self.rt.sleep_wall(1.0)  # every message has landed
        return n


def _messages(loop: Loop, n: int, method: str) -> tuple[int, float]:
    """``n`` messages from ``CALLERS`` callers to one echo actor by
    ``method``; returns (operations, CPU seconds of the exchange only)."""
    eng = SimEngine(scale=1.0, latency=Dist("constant", value=0.0005), seed=1, loop=loop)
    eng.connect(None, "bench")
    try:
        echo = eng.spawn(Echo, "echo", "bench", eng.runtime(1.0, "bench"))
        callers = [eng.spawn(Caller, f"caller-{i}", "bench", eng.runtime(1.0, "bench")) for i in range(CALLERS)]
        per = max(1, n // CALLERS)
        c0 = time.process_time()
        done = eng.gather([eng.call(c, method, echo, per) for c in callers], timeout=None)
        cpu = time.process_time() - c0
        assert sum(done) == per * CALLERS and (method != "sends" or echo.actor.got == per * CALLERS)
        return per * CALLERS, cpu
    finally:
        eng.shutdown()


def round_trips(loop: Loop, n: int) -> tuple[int, float]:
    return _messages(loop, n, "calls")


def sends(loop: Loop, n: int) -> tuple[int, float]:
    return _messages(loop, n, "sends")


Workload = Callable[[Loop, int], Any]
WORKLOADS: dict[str, tuple[Workload, str]] = {
    "timer": (timers, "timers"), "call_soon": (soon, "soon"), "task step": (steps, "soon"),
    "round trip": (round_trips, "messages"), "send": (sends, "messages"),
}


def _run(workload: Workload, cls: type[Loop], n: int) -> tuple[int, float]:
    """One timed run on a fresh loop: (operations, CPU seconds)."""
    loop = cls()
    asyncio.set_event_loop(loop)
    try:
        c0 = time.process_time()
        out = workload(loop, n)
        cpu = time.process_time() - c0
    finally:
        if not loop.is_closed():
            loop.close()
        asyncio.set_event_loop(None)
    return out if isinstance(out, tuple) else (out, cpu)


def callbacks_per_op(workload: Workload, cls: type[Loop], n: int) -> float:
    """Loop callbacks scheduled per operation (an untimed pass on a loop
    that counts what enters it)."""
    seen = [0]

    def counted(name: str) -> Any:
        inner = getattr(cls, name)

        def entry(self: Any, *args: Any, **kwargs: Any) -> Any:
            seen[0] += 1
            return inner(self, *args, **kwargs)
        return entry

    counting = type(f"Counting{cls.__name__}", (cls,), {name: counted(name) for name in ENTRIES[cls]})
    ops, _ = _run(workload, counting, n)
    return seen[0] / ops


@dataclass(frozen=True)
class Row:
    """One workload on both loops: CPU ns per operation (median) and loop
    callbacks per operation."""

    workload: str
    ops: int
    old_ns: float
    new_ns: float
    old_callbacks: float
    new_callbacks: float

    @property
    def ratio(self) -> float:
        return self.new_ns / self.old_ns

    def events_per_cpu_s(self, which: str) -> float:
        ns, callbacks = (self.old_ns, self.old_callbacks) if which == "old" else (self.new_ns, self.new_callbacks)
        return callbacks / ns * 1e9


def measure(name: str, n: int, repeats: int) -> Row:
    workload = WORKLOADS[name][0]
    ns: dict[str, list[float]] = {k: [] for k in LOOPS}
    ops = 0
    for _ in range(repeats):
        for key, cls in LOOPS.items():
            ops, cpu = _run(workload, cls, n)
            ns[key].append(cpu / ops * 1e9)
    return Row(name, ops, statistics.median(ns["old"]), statistics.median(ns["new"]),
               callbacks_per_op(workload, ReferenceLoop, n), callbacks_per_op(workload, VirtualLoop, n))


def report(rows: list[Row]) -> str:
    out = ["| workload | operations | old ns/op | new ns/op | new/old | callbacks/op old | new | "
           "events/CPU s old | new |",
           "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    out += [f"| {r.workload} | {r.ops:,} | {r.old_ns:,.0f} | {r.new_ns:,.0f} | {r.ratio:.2f} | {r.old_callbacks:.2f} | "
            f"{r.new_callbacks:.2f} | {r.events_per_cpu_s('old'):,.0f} | {r.events_per_cpu_s('new'):,.0f} |" for r in rows]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--timers", type=int, default=200_000, help="sleeps (timer workload)")
    ap.add_argument("--soon", type=int, default=200_000, help="callbacks and task steps")
    ap.add_argument("--messages", type=int, default=20_000, help="round trips, and one-way sends")
    ap.add_argument("--repeats", type=int, default=5)
    args = parse_bench_args(ap, argv, QUICK, "tiny sizes, one repeat: for tests")
    rows = []
    for name, (_, size) in WORKLOADS.items():
        rows.append(measure(name, getattr(args, size), args.repeats))
        print(f"{name}: old {rows[-1].old_ns:,.0f} ns, new {rows[-1].new_ns:,.0f} ns", file=sys.stderr, flush=True)
    print(f"CPU ns per operation, median of {args.repeats} (old: asyncio's SelectorEventLoop on the virtual clock; "
          "new: the discrete-event kernel):\n")
    print(report(rows))
    if args.json is not None:
        args.json.write_text(json.dumps([{**asdict(r), "ratio": r.ratio} for r in rows], indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
