"""A scenario script: your own placement policy against the built-in ones.

What it shows: how to plug a policy of your own into schedlab. It defines
``tightest_cpu`` (each task on the machine with the least free cpu that
still fits it: pack by cpu alone), registers it, builds the quick-start
scenario in code, and runs it twice on the same workload and seed: once with
the built-in worst_fit and once with the new policy.

What to look at: the two summaries' wait times and conflict fractions, side
by side at the end.

    python scenarios/custom_policy.py [--engine sim] [--out runs/custom]
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import numpy as np

from schedlab.actors.run import run_scenario
from schedlab.schedulers.placement.policies import register_policy, slots
from schedlab.api.scenario_files import load_scenario


# --8<-- [start:policy]
def tightest_cpu(free: np.ndarray, request: np.ndarray, n_tasks: int, rng: np.random.Generator) -> np.ndarray:
    """Same contract as the built-ins: subtract what is placed from ``free``,
    return a machine per task or -1. Packs the least-free-cpu machines first."""
    out = np.full(n_tasks, -1, dtype=np.int64)
    for t in range(n_tasks):
        s = slots(free, request)
        ok = np.flatnonzero(s)
        if ok.size == 0:
            break
        m = int(ok[np.argmin(free[ok, 0])])
        free[m] -= request
        out[t] = m
    return out
# --8<-- [end:policy]


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default="runs/custom_policy")
    p.add_argument("--duration", type=float, default=600.0)
    p.add_argument("--engine", default="ray", choices=("ray", "sim"), help="live Ray (default) or the virtual clock")
    args = p.parse_args()
    register_policy("tightest_cpu", tightest_cpu)
    base = load_scenario(Path(__file__).with_name("quickstart.toml"), [f"duration={args.duration}", f'engine="{args.engine}"'])
    results = {}
    for policy in ("worst_fit", "tightest_cpu"):
        scheds = tuple(dataclasses.replace(s, policy=policy) for s in base.section.schedulers)
        sc = dataclasses.replace(base, name=f"quickstart-{policy}", section=dataclasses.replace(base.section, schedulers=scheds))
        results[policy] = run_scenario(sc, Path(args.out) / policy)
    print(f"{'policy':<14} {'scheduled':>9} {'wait p50':>9} {'wait p90':>9} {'conflict fr.':>12} {'cpu util':>9}")
    for policy, s in results.items():
        w = s["wait_time_s"]["fully_scheduled"]
        cf = max(x["conflict_fraction"] for x in s["schedulers"])
        print(f"{policy:<14} {s['jobs']['scheduled']:>9} {w['p50']:>9.2f} {w['p90']:>9.2f} {cf:>12.3f} {s['utilization']['cpu_mean']:>9.1%}")


if __name__ == "__main__":
    main()
