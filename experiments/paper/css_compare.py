"""CSS side by side: the default experiment of the Omega paper's simulator
(google/cluster-scheduler-simulator, "CSS") on schedlab's sim engine.

    schedlab css-compare                          # 10,000 machines, one day (CSS's own size)
    schedlab css-compare --machines 1000 --hours 2 --out runs/css

CSS sweeps t_job over 0.1, 1 and 10 s (t_task 5 ms) for one scheduler per
set-up (its ``Simulation.scala``): the monolithic scheduler on a single path
(every job), the monolithic service path (batch keeps its own 10 + 5 ms),
Mesos' service framework, and Omega's batch scheduler. Here those are Borg
with ``multi_path`` false and true, Mesos and Omega, on
``scenarios/paper/css_example.toml`` (CSS's example inputs, read by
``[workload.css]``). Each set-up is an ordinary ``schedlab sweep`` (the same
planning, run directories, ``sweep.csv`` and, with ``--parallel``, one
process per point) in ``OUT/<set-up>/``; this script only chooses the keys
and prints one table (Markdown, as in the README) of what CSS reports per
set-up: the swept and the other scheduler's busyness, the batch and service
wait to first attempt (mean and p90), conflict fraction, and the jobs left
unscheduled at the end. ``OUT/timing.json`` keeps the CPU seconds spent
(each run's too, when they run inline), ``OUT/table.md`` the table.
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from schedlab.cli.sweep import Sweep, finish, plan_sweep, run_dir, run_inline
from schedlab.schedulers import arch as registry
from schedlab.schedulers.arch import CssSetup

TOOL_HELP = "the Omega paper simulator's (CSS) default experiment on sim"  # one line in `schedlab --help` (cli.tools)

SCENARIO = str(Path(__file__).resolve().parents[2] / "scenarios" / "paper" / "css_example.toml")
T_JOB = ("0.1", "1", "10")  # CSS's constantRange
T_TASK = "0.005"  # CSS's perTaskThinkTimeRange
CLASSES = ("batch", "service")


@dataclass(frozen=True)
class Setup(CssSetup):
    """One of CSS's set-ups (``arch.CssSetup``) with the architecture that declares it."""

    architecture: str = ""

    def overrides(self, t_jobs: tuple[str, ...], machines: int, hours: float) -> list[str]:
        """``--set`` arguments: this architecture only, CSS's sweep, the size."""
        return [f'architectures=["{self.architecture}"]', *self.sets,
                f"{self.key}.t_job={','.join(t_jobs)}", f"{self.key}.t_task={T_TASK}",
                f"cell.machine_classes.0.count={machines}", f"duration={hours * 3600:g}"]


# Every registered architecture's CSS set-ups, in the registry's order.
SETUPS = tuple(Setup(**asdict(css), architecture=name) for name, spec in registry.registry().items() for css in spec.css_setups)


def waits(run: Path) -> dict[str, list[float]]:
    """Per job class, each attempted job's wait to first attempt (s), from
    the run's per-job table (jobs never attempted have none: they are
    counted as unscheduled instead)."""
    from schedlab.api.runs import load

    out: dict[str, list[float]] = {c: [] for c in CLASSES}
    for r in load(run).jobs():
        if r["first_attempt_s"] is not None:
            out.setdefault(r["job_class"], []).append(r["first_attempt_s"] - r["submit_s"])
    return out


def run_metrics(summary: dict[str, Any], class_waits: dict[str, list[float]], swept: str) -> dict[str, Any]:
    """One run's numbers for the table (pure: a summary and its waits in)."""
    by_name = {s["name"]: s for s in summary["schedulers"]}
    if swept not in by_name:
        raise KeyError(f"no scheduler {swept!r} in {sorted(by_name)}")
    others = [s for n, s in by_name.items() if n != swept]
    jobs = summary["jobs"]
    out: dict[str, Any] = {
        "busyness": by_name[swept]["busyness"],
        "busyness_other": max((s["busyness"] for s in others), default=None),
        "conflict_fraction": by_name[swept]["conflict_fraction"],
        "conflict_fraction_other": max((s["conflict_fraction"] or 0.0 for s in others), default=None),
        "submitted": jobs["submitted"],
        "unscheduled": jobs["submitted"] - jobs["scheduled"],
    }
    for c in CLASSES:
        w = sorted(class_waits.get(c, []))
        out[f"{c}_wait_mean"] = statistics.fmean(w) if w else None
        out[f"{c}_wait_p90"] = summary["wait_time_s"]["by_class"].get(c, {}).get("first_attempt", {}).get("p90")
    return out


def median_of(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Key by key, the median over seeds (None where any run has none)."""
    out: dict[str, Any] = {}
    for k in runs[0]:
        vals = [r[k] for r in runs]
        out[k] = None if any(v is None for v in vals) else statistics.median(vals)
    return out


def _num(v: float | None, digits: int = 3) -> str:
    if v is None:
        return "-"
    return f"{v:.{digits}g}" if abs(v) < 10 ** digits else f"{v:,.0f}"


def markdown(rows: list[dict[str, Any]]) -> str:
    """The README table: one row per set-up and t_job."""
    head = ("| set-up | swept scheduler | t_job (s) | busyness: swept / other | batch wait mean / p90 (s) "
            "| service wait mean / p90 (s) | conflict fraction: swept / other | unscheduled / submitted |")
    lines = [head, "| " + " | ".join(["---"] * 8) + " |"]
    for r in rows:
        m = r["metrics"]
        lines.append(
            f"| {r['label']} | {r['swept']} | {r['t_job']} | {_num(m['busyness'])} / {_num(m['busyness_other'])} "
            f"| {_num(m['batch_wait_mean'])} / {_num(m['batch_wait_p90'])} "
            f"| {_num(m['service_wait_mean'])} / {_num(m['service_wait_p90'])} "
            f"| {_num(m['conflict_fraction'])} / {_num(m['conflict_fraction_other'])} "
            f"| {m['unscheduled']:,.0f} / {m['submitted']:,.0f} |")
    return "\n".join(lines)


def run_setup(setup: Setup, sweep: Sweep, out: Path, args: argparse.Namespace, timing: dict[str, float]) -> list[dict]:
    """Run one set-up's sweep (inline, or ``--parallel`` processes through
    the sweep's own runner) and return finish()'s rows."""
    from schedlab.cli import sweep as sweep_cmd

    clock = {"cpu": time.process_time(), "wall": time.perf_counter()}

    def advance(rel: str) -> None:
        now_cpu, now_wall = time.process_time(), time.perf_counter()
        if args.parallel == 1:  # runs in this process: its CPU time is theirs
            timing[f"{setup.name}/{rel}"] = round(now_cpu - clock["cpu"], 2)
        clock.update(cpu=now_cpu, wall=now_wall)
        print(f"  done {setup.name}/{rel}", flush=True)

    if args.parallel > 1:
        ns = argparse.Namespace(engine="sim", time_scale=None)
        sweep_cmd._run_processes(sweep, out, None, args.parallel, ns, advance)
    else:
        run_inline(sweep, out, None, advance, keep_finished=args.resume)
    rows, bad = finish(sweep, out)
    if bad:
        print(f"  {setup.name}: {bad} run(s) failed or broke an invariant (see {out})", file=sys.stderr)
    return rows


def table_rows(setup: Setup, sweep: Sweep, out: Path, rows: list[dict]) -> list[dict[str, Any]]:
    """finish()'s rows as the table's: metrics per point, median over seeds."""
    key = f"{setup.key}.t_job"
    got = []
    for point, row in zip(sweep.points, rows):
        runs = [run_metrics(s, waits(out / run_dir(point, seed, setup.architecture)), setup.swept)
                for s, seed in zip(row["summaries"], sweep.seeds) if s is not None]
        if runs:
            got.append({"setup": setup.name, "label": setup.label, "swept": setup.swept,
                        "t_job": point.assignment[key], "metrics": median_of(runs)})
    return got


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--machines", type=int, default=10000, help="machines in the cell (CSS: 10,000)")
    ap.add_argument("--hours", type=float, default=24.0, help="emulated hours per run (CSS: 24)")
    ap.add_argument("--t-job", default=",".join(T_JOB), help="t_job values swept, comma-separated (CSS: 0.1,1,10)")
    ap.add_argument("--setups", default=",".join(s.name for s in SETUPS), help="which set-ups (default all)")
    ap.add_argument("--seeds", type=int, default=1, help="runs per point (median reported)")
    ap.add_argument("--seed", type=int, help="first seed (default: the scenario's)")
    ap.add_argument("--scenario", default=SCENARIO, help="the scenario (default scenarios/paper/css_example.toml)")
    ap.add_argument("--out", help="output directory (default runs/css_compare-<time>)")
    ap.add_argument("--parallel", type=int, default=1, help="runs at once, one process each (the sweep's runner)")
    ap.add_argument("--resume", action="store_true", help="keep runs that already have a summary.json (inline only)")
    args = ap.parse_args(argv)

    t_jobs = tuple(v.strip() for v in args.t_job.split(",") if v.strip())
    by_name = {s.name: s for s in SETUPS}
    chosen = [s.strip() for s in args.setups.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in by_name]
    if unknown or not chosen or args.machines < 1 or not args.hours > 0 or len(t_jobs) < 2:
        ap.error(f"--setups must name some of {', '.join(by_name)}; --machines >= 1, --hours > 0, "
                 f"--t-job at least two values" + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    out = Path(args.out or f"runs/css_compare-{time.strftime('%Y%m%d-%H%M%S')}")
    out.mkdir(parents=True, exist_ok=True)
    plans = [(by_name[n], plan_sweep(args.scenario, by_name[n].overrides(t_jobs, args.machines, args.hours),
                                     args.seeds, args.seed, None, engine="sim")) for n in chosen]
    print(f"css_compare: {len(plans)} set-ups x t_job {', '.join(t_jobs)} x {args.seeds} seed(s), "
          f"{args.machines:,} machines, {args.hours:g} emulated h each; out {out}", flush=True)
    timing: dict[str, float] = {}
    table: list[dict[str, Any]] = []
    started = time.perf_counter()
    for setup, sweep in plans:
        rows = run_setup(setup, sweep, out / setup.name, args, timing)
        table += table_rows(setup, sweep, out / setup.name, rows)
    wall = time.perf_counter() - started
    cpu = _cpu_seconds()
    runs = sum(sweep.total() for _, sweep in plans)
    (out / "timing.json").write_text(json.dumps({"cpu_s": round(cpu, 1), "wall_s": round(wall, 1), "runs": runs,
                                                 "cpu_s_per_run": timing, "machines": args.machines,
                                                 "hours": args.hours, "parallel": args.parallel}, indent=2) + "\n")
    text = markdown(table)
    (out / "table.md").write_text(text + "\n")
    (out / "table.json").write_text(json.dumps(table, indent=2) + "\n")
    print(text)
    print(f"\n{runs} runs of {args.hours:g} emulated h on {args.machines:,} machines: {cpu:.0f} CPU s "
          f"({cpu / runs / args.hours:.1f} per run per emulated hour, set-up included), {wall:.0f} wall s")
    return 0


def _cpu_seconds() -> float:
    """CPU seconds this process and its finished children (``--parallel``
    runs) used: what the experiment cost, whatever else shares the machine."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


if __name__ == "__main__":
    sys.exit(main())
