"""A scenario script: a sweep done from Python, on the sim engine, with a plot.

What it shows: the Python API (``schedlab.run`` and its per-job table) doing
what ``schedlab sweep`` does, in a loop you can change: omega_conflicts'
service scheduler think time t_job over several values and seeds, on the
virtual-clock engine (deterministic, no Ray, about a second a run), then
one plot of what the Omega paper shows (its figure 6): the slower the
service scheduler decides, the more of its claims conflict and the longer
its jobs wait.

What to look at: the printed table (a row per t_job: conflict fraction and
service jobs' mean wait to fully scheduled, median over seeds) and
``python_sweep.png`` (the same, with the spread over seeds as error bars).

    python -m schedlab.scenarios.python_sweep [--out runs/python_sweep] [--seeds 3]
        [--values 1,5,10,30,60] [--duration 1500]
"""
from __future__ import annotations

import argparse
import statistics
from pathlib import Path

import schedlab


def one_run(t_job: float, seed: int, duration: float | None) -> dict[str, float]:
    """One run, and the two numbers the plot wants from it."""
    settings = {"duration": duration} if duration is not None else {}
    run = schedlab.run("omega_conflicts", engine="sim", seed=seed, overrides={"omega.schedulers.1.t_job": t_job}, **settings)
    service = next(s for s in run.summary["schedulers"] if "service" in s["name"])
    # The per-job table: wait to fully scheduled of every service job that was.
    waits = [j["scheduled_s"] - j["submit_s"] for j in run.jobs() if j["kind"] == "service" and j["scheduled_s"] is not None]
    return {"conflict_fraction": service["conflict_fraction"] or 0.0, "service_wait_s": statistics.fmean(waits) if waits else 0.0}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="runs/python_sweep", help="directory for python_sweep.png")
    p.add_argument("--seeds", type=int, default=3, help="runs per value, seeds 11, 12, ... (default 3)")
    p.add_argument("--values", default="1,5,10,30,60", help="service t_job values, emulated seconds (default 1,5,10,30,60)")
    p.add_argument("--duration", type=float, help="emulated seconds per run (default: the scenario's, 1500)")
    args = p.parse_args()
    values = [float(v) for v in args.values.split(",")]
    seeds = [11 + i for i in range(args.seeds)]

    results = {v: [one_run(v, seed, args.duration) for seed in seeds] for v in values}

    print(f"{'service t_job':>13} {'conflict fr.':>12} {'service wait (s)':>16}   (median over seeds {seeds})")
    for v, runs in results.items():
        cf = statistics.median(r["conflict_fraction"] for r in runs)
        wait = statistics.median(r["service_wait_s"] for r in runs)
        print(f"{v:>13g} {cf:>12.3f} {wait:>16.1f}")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("no plot: matplotlib is not installed (pip install 'schedlab[plot]')")
        return
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.5))
    for ax, key, label in zip(axes, ("conflict_fraction", "service_wait_s"),
                              ("service conflict fraction", "service wait to fully scheduled (s)")):
        meds = [statistics.median(r[key] for r in results[v]) for v in values]
        lo = [m - min(r[key] for r in results[v]) for m, v in zip(meds, values)]
        hi = [max(r[key] for r in results[v]) - m for m, v in zip(meds, values)]
        ax.errorbar(values, meds, yerr=[lo, hi], marker="o", capsize=3)
        ax.set_xscale("log")
        ax.set_xlabel("service scheduler t_job (s)")
        ax.set_ylabel(label)
        ax.grid(alpha=0.3)
    fig.suptitle(f"omega_conflicts on the sim engine, {len(seeds)} seed(s) per point (median, min-max)")
    fig.tight_layout()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "python_sweep.png", dpi=100)
    print(f"wrote {out / 'python_sweep.png'}")


if __name__ == "__main__":
    main()
