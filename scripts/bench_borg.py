"""How much Borg's two placement speed-ups buy: equivalence classes (one
feasibility and scoring pass per job, not per task) and relaxed
randomization (score a random sample of feasible machines).

    python -m schedlab.scripts.bench_borg [--machines 10000] [--tasks 200] [--repeats 5]

Prints median wall time per job placement and the speed-up over the
textbook loop (every task scores every machine), all measured in this run.
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from rich.console import Console
from rich.table import Table

from schedlab.schedulers.archs.borg.placement import PlacementParams, place_job, place_job_naive

TOOL_HELP = "Borg placement: equivalence classes and relaxed randomization"  # one line in `schedlab --help` (cli.tools)


def _cell(machines: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    cap = np.tile([16.0, 64.0], (machines, 1))
    used = rng.uniform(0.0, 0.8, size=cap.shape) * cap  # a half-full cell
    return cap, cap - used


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_borg")
    p.add_argument("--machines", type=int, default=10_000)
    p.add_argument("--tasks", type=int, default=200)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--policy", default="hybrid")
    args = p.parse_args(argv)
    req = np.array([1.0, 4.0])
    variants = {
        "textbook (per task, whole cell)": lambda cap, free, rng: place_job_naive(free, cap, req, args.tasks, args.policy),
        "equivalence classes": lambda cap, free, rng: place_job(free, cap, req, args.tasks, PlacementParams(args.policy), rng),
        "+ relaxed randomization (1000)": lambda cap, free, rng: place_job(free, cap, req, args.tasks, PlacementParams(args.policy, 1000), rng),
        "+ relaxed randomization (250)": lambda cap, free, rng: place_job(free, cap, req, args.tasks, PlacementParams(args.policy, 250), rng),
    }
    times: dict[str, list[float]] = {k: [] for k in variants}
    for r in range(args.repeats):
        for name, fn in variants.items():  # interleaved, so machine noise hits every variant alike
            rng = np.random.default_rng(r)
            cap, free = _cell(args.machines, rng)
            t0 = time.perf_counter()
            placed = fn(cap, free, rng)
            times[name].append(time.perf_counter() - t0)
            assert (placed >= 0).all(), name
    base = statistics.median(times["textbook (per task, whole cell)"])
    t = Table(title=f"placing one {args.tasks}-task job on {args.machines} machines ({args.policy}), median of {args.repeats}")
    for col in ("variant", "ms per job", "speed-up"):
        t.add_column(col, justify="right")
    for name, ts in times.items():
        m = statistics.median(ts)
        t.add_row(name, f"{m * 1e3:.1f}", f"{base / m:.1f}x")
    Console().print(t)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
