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

from schedlab.actors.engines import ray_engine  # first: it sets Ray's auth mode before Ray is imported

import ray  # noqa: E402

from schedlab.actors.analysis.kept_runs import keep_if_bad, violated  # noqa: E402
from schedlab.actors.run import run_scenario  # noqa: E402
from schedlab.schedulers.scenario.parse import parse_scenario  # noqa: E402


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


def bench_scenario(machines: int, per_actor: int, schedulers: int, duration: float, batch: float = 0.05) -> dict:
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
        "substrate": {"batch_interval": batch},
    }


def placements_per_s(machines: int, per_actor: int, schedulers: int, duration: float, batch: float) -> tuple[float, dict]:
    """One placement run in a temporary directory, deleted unless the run
    broke an invariant: then it is kept (actors.kept_runs) and its path is
    in the summary as ``kept``."""
    sc = parse_scenario(bench_scenario(machines, per_actor, schedulers, duration, batch), "bench")
    with tempfile.TemporaryDirectory() as out:
        s = run_scenario(sc, out)
        kept = keep_if_bad(out, s["invariants"], f"bench-k{per_actor}-b{batch:g}")
    if kept is not None:
        s["kept"] = str(kept)
    placed = sum(x["claims"]["committed"] for x in s["schedulers"])
    return placed / s["wall_seconds"], s


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--machines", type=int, default=1000)
    p.add_argument("--per-actor", type=int, nargs="+", default=[50, 250], help="machines_per_actor values to measure")
    p.add_argument("--batch", type=float, nargs="+", default=[0.05, 0.2], help="substrate.batch_interval values (wall s)")
    p.add_argument("--schedulers", type=int, default=2)
    p.add_argument("--duration", type=float, default=10.0, help="wall seconds per placement run (time_scale 1)")
    args = p.parse_args()
    configs = [(k, b) for k in args.per_actor for b in args.batch]
    started = ray_engine.connect(None, namespace="schedlab-bench")
    raw: list[float] = []
    placed: dict[tuple[int, float], list[float]] = {c: [] for c in configs}
    rtt: dict[tuple[int, float], list[float]] = {c: [] for c in configs}
    try:
        for _ in range(args.repeats):
            raw.append(raw_calls_per_s())
            for k, b in configs:
                rate, s = placements_per_s(args.machines, k, args.schedulers, args.duration, b)
                bad = violated(s["invariants"])
                if bad:
                    raise SystemExit(f"invariants violated during bench: {bad}; run kept in {s['kept']}")
                placed[(k, b)].append(rate)
                rtt[(k, b)].append(statistics.median(x["commit_rtt_wall_ms_p50"] for x in s["schedulers"]))
    finally:
        if started:
            ray_engine.shutdown()
    r = statistics.median(raw)
    print(f"{args.machines} machines, {args.schedulers} Omega schedulers with zero think time, {args.repeats} repeats (medians)")
    print(f"raw Ray actor calls/s (pipelined, one actor): {r:.0f}   runs: {', '.join(f'{x:.0f}' for x in raw)}")
    print()
    print("| machines_per_actor | host actors | batch_interval (s) | placements/s | ratio to raw calls/s | commit RTT p50 (ms) |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    best = 0.0
    for k, b in configs:
        pl = statistics.median(placed[(k, b)])
        best = max(best, pl)
        hosts = -(-args.machines // k)
        print(f"| {k} | {hosts} | {b:g} | {pl:.0f} | {pl / r:.2f} | {statistics.median(rtt[(k, b)]):.1f} |")
    print()
    print(f"target >= 2000 placements/s: {'met' if best >= 2000 else 'NOT met'} (best {best:.0f})")


if __name__ == "__main__":
    main()
