"""Benchmark: raw Ray actor calls per second vs schedlab placements per second.

Both are measured in one run on one Ray, and their ratio printed, so the
number survives a noisy shared machine better than either alone. Medians over
``--repeats``.

    python scripts/bench.py [--repeats 3] [--machines 1000] [--per-actor 50]
"""
from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import ray

from actors.run import run_scenario
from schedulers.scenario import parse_scenario


@ray.remote(num_cpus=0)
class Echo:
    async def ping(self, x: int) -> int:
        return x


def raw_calls_per_s(n: int = 4000) -> float:
    """Pipelined calls to one async actor: submit n, then wait for all."""
    echo = Echo.remote()
    ray.get(echo.ping.remote(0))
    t0 = time.perf_counter()
    ray.get([echo.ping.remote(i) for i in range(n)])
    rate = n / (time.perf_counter() - t0)
    ray.kill(echo)
    return rate


def bench_scenario(machines: int, per_actor: int, schedulers: int, duration: float) -> dict:
    """A cell that never fills, schedulers with no think time, and more offered
    load than they can place: what is measured is the commit path itself
    (sync, place, commit, launch) on the substrate."""
    return {
        "name": "bench",
        "seed": 1,
        "time_scale": 1.0,
        "duration": duration,
        "cell": {"machines_per_actor": per_actor,
                 "machine_classes": [{"name": "m", "count": machines, "cpu": 16.0, "mem": 64.0, "racks": 20}]},
        "workload": {"classes": [{
            "name": "batch", "kind": "batch", "interarrival": 0.01, "tasks": 40.0,
            "duration": {"dist": "exponential", "mean": 3.0}, "cpu": 0.1, "mem": 0.2,
        }]},
        "omega": {"schedulers": [{"name": "batch", "classes": ["batch"], "count": schedulers, "t_job": 0.0, "t_task": 0.0}]},
        "metrics": {"sample_interval": 1.0},
    }


def placements_per_s(args: argparse.Namespace) -> tuple[float, dict]:
    sc = parse_scenario(bench_scenario(args.machines, args.per_actor, args.schedulers, args.duration), "bench")
    with tempfile.TemporaryDirectory() as out:
        s = run_scenario(sc, out)
    placed = sum(x["claims"]["committed"] for x in s["schedulers"])
    return placed / s["wall_seconds"], s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--machines", type=int, default=1000)
    p.add_argument("--per-actor", type=int, default=50)
    p.add_argument("--schedulers", type=int, default=4)
    p.add_argument("--duration", type=float, default=10.0, help="wall seconds per placement run (time_scale 1)")
    args = p.parse_args()
    ray.init(include_dashboard=False, logging_level="ERROR", log_to_driver=False, namespace="schedlab-bench")
    try:
        raw, placed, conflicts = [], [], []
        for _ in range(args.repeats):
            raw.append(raw_calls_per_s())
            rate, s = placements_per_s(args)
            placed.append(rate)
            conflicts.append(sum(x["transactions"]["conflicted"] for x in s["schedulers"]))
            assert not any(s["invariants"].values()), s["invariants"]
    finally:
        ray.shutdown()
    r, pl = statistics.median(raw), statistics.median(placed)
    print(f"machines {args.machines}, machines_per_actor {args.per_actor}, schedulers {args.schedulers}, repeats {args.repeats}")
    print(f"{'raw Ray actor calls/s (pipelined, one actor)':<52} {r:10.0f}   runs: {', '.join(f'{x:.0f}' for x in raw)}")
    print(f"{'schedlab placements/s (Omega commit path)':<52} {pl:10.0f}   runs: {', '.join(f'{x:.0f}' for x in placed)}")
    print(f"{'ratio placements / raw calls':<52} {pl / r:10.2f}")
    print(f"{'conflicted transactions per run (median)':<52} {statistics.median(conflicts):10.0f}")
    print(f"target >= 2000 placements/s: {'met' if pl >= 2000 else 'NOT met'}")


if __name__ == "__main__":
    main()
