"""``schedlab sweep``: one scenario over a grid of settings and seeds.

Layout of OUT: ``sweep.json`` (the grid and where each run went),
``sweep.csv`` (one row per point and architecture, median and MAD over
seeds of every summary number), ``sweep_tidy.csv`` (the same numbers
unaggregated: one row per point, seed and architecture), and ``<point>/seed-<n>/<architecture>/``
per run, each an ordinary run directory (``schedlab check`` and
``schedlab report`` work on it).

Runs go one after another on one Ray, or ``--parallel N`` at a time as
separate ``schedlab run`` processes attached to the same cluster (each run
has its own namespace), which pays off only when the cluster has cores to
spare: on a 2-core laptop parallel runs slow each other down and perturb
what they measure.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from schedlab.actors.analysis.kept_runs import violated
from schedlab.actors.engines.limits import local_limits
from schedlab.schedulers.scenario.parse import Scenario, ScenarioError, parse_comparison, parse_scenario
from schedlab.cli.command import interruptible, verbosity
from schedlab.cli.sweep_grid import aggregate, expand, parse_sets, point_name, write_csv, write_tidy_csv


@dataclass
class Point:
    name: str
    assignment: dict[str, str]
    scenarios: list[Scenario]  # one per architecture
    sets: list[str]  # the --set arguments that rebuild it
    comparison: bool  # several architectures (``architectures = [...]``)


@dataclass
class Sweep:
    source: str
    keys: list[str]
    values: dict[str, list[str]]
    seeds: list[int]
    points: list[Point]

    def jobs(self) -> list[tuple[Point, int]]:
        return [(p, s) for p in self.points for s in self.seeds]

    def total(self) -> int:
        """Runs in the sweep: points x seeds x architectures."""
        return sum(len(p.scenarios) for p in self.points) * len(self.seeds)

    def runs(self, point: Point, arch: str) -> list[str]:
        return [run_dir(point, s, arch) for s in self.seeds]

    def describe(self) -> dict[str, Any]:
        return {"scenario": self.source, "keys": self.keys, "values": self.values, "seeds": self.seeds,
                "points": [{"point": p.name, "set": p.assignment,
                            "runs": {sc.architecture: self.runs(p, sc.architecture) for sc in p.scenarios}}
                           for p in self.points]}


def plan_sweep(path: str, sets: list[str], seeds: int, seed: int | None, time_scale: float | None,
               engine: str | None = None) -> Sweep:
    """Build and validate every point before anything starts: a typo in the
    last value fails now, not an hour into the sweep."""
    from schedlab.api.scenario_files import apply_set, load_data

    if seeds < 1:
        raise ScenarioError(f"--seeds: must be >= 1 (got {seeds})")
    fixed, swept = parse_sets(sets)
    if "seed" in swept:
        raise ScenarioError("--set seed: vary seeds with --seeds N (and --seed for the first)")
    base = load_data(path, fixed)
    points = []
    for i, assignment in enumerate(expand(swept)):
        data = copy.deepcopy(base)
        point_sets = [f"{k}={v}" for k, v in assignment.items()]
        for s in point_sets:
            apply_set(data, s)
        label = f"{path} [{', '.join(point_sets)}]" if point_sets else path
        limits = local_limits()
        scs = parse_comparison(data, label, limits) if "architectures" in data else [parse_scenario(data, label, limits)]
        if time_scale is not None:
            if not time_scale > 0:
                raise ScenarioError(f"--time-scale: must be > 0 (got {time_scale})")
            scs = [dataclasses.replace(sc, time_scale=time_scale) for sc in scs]
        if engine is not None:
            from schedlab.actors import engines

            if engine not in engines.names():
                raise ScenarioError(f"--engine: must be one of {', '.join(engines.names())} (got {engine!r})")
            scs = [dataclasses.replace(sc, engine=engine) for sc in scs]
        points.append(Point(point_name(i, assignment), assignment, scs, fixed + point_sets, "architectures" in data))
    first = seed if seed is not None else points[0].scenarios[0].seed
    if first < 0:
        raise ScenarioError(f"--seed: must be >= 0 (got {first})")
    return Sweep(path, list(swept), swept, [first + i for i in range(seeds)], points)


def run_dir(point: Point, seed: int, arch: str) -> str:
    return f"{point.name}/seed-{seed}/{arch}"


def run_inline(sweep: Sweep, out: Path, address: str | None, advance: Callable[[str], None], keep_finished: bool = False) -> None:
    """Every run, one after the other, in this process. ``keep_finished``:
    a run whose directory already has its summary.json is not run again."""
    from schedlab.actors.run import run_scenario

    for point, seed in sweep.jobs():
        for sc in point.scenarios:
            rel = run_dir(point, seed, sc.architecture)
            if keep_finished and (out / rel / "summary.json").is_file():
                advance(rel)
                continue
            try:
                run_scenario(dataclasses.replace(sc, seed=seed), out / rel, address=address)
            except Exception as e:  # one failed point must not lose the others
                (out / rel).mkdir(parents=True, exist_ok=True)
                (out / rel / "error.txt").write_text(f"{type(e).__name__}: {e}\n")
            advance(rel)


def _run_processes(sweep: Sweep, out: Path, address: str | None, parallel: int, args: argparse.Namespace,
                   advance: Callable[[str], None]) -> None:
    """Each (point, seed) as its own ``schedlab run`` (or ``compare``, for
    several architectures) process: joined to ``address`` (live: isolated
    drivers on one Ray, so runs truly overlap), or on its own (sim: one
    process per point, across the cores)."""
    env = None
    if address is not None:
        from schedlab.actors.engines import ray_engine

        env = {**os.environ, ray_engine.LOOPBACK_ENV: "1"} if ray_engine.is_loopback_only() else None
    def one(point: Point, seed: int) -> list[str]:
        rels = [run_dir(point, seed, sc.architecture) for sc in point.scenarios]
        if point.comparison:
            where, verb = out / point.name / f"seed-{seed}", "compare"
        else:
            where, verb = out / rels[0], "run"
        cmd = [sys.executable, "-m", "schedlab", verb, sweep.source, "--out", str(where), "--seed", str(seed)]
        cmd += ["--address", address] if address is not None else []
        cmd += ["--no-progress"] if verb == "run" else []
        cmd += ["--engine", args.engine] if args.engine else []
        for s in point.sets:
            cmd += ["--set", s]
        if args.time_scale is not None:
            cmd += ["--time-scale", str(args.time_scale)]
        where.mkdir(parents=True, exist_ok=True)
        with (where / f"{verb}.log").open("w") as log:
            code = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=env).returncode
        for rel in rels:
            if not (out / rel / "summary.json").exists():
                (out / rel).mkdir(parents=True, exist_ok=True)
                (out / rel / "error.txt").write_text(f"schedlab {verb} exited {code}; see {where / (verb + '.log')}\n")
        return rels

    with ThreadPoolExecutor(parallel) as pool:
        pending: set[Future] = set()
        for point, seed in sweep.jobs():
            if len(pending) >= parallel:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    for rel in f.result():
                        advance(rel)
            pending.add(pool.submit(one, point, seed))
        for f in pending:
            for rel in f.result():
                advance(rel)


def finish(sweep: Sweep, out: Path) -> tuple[list[dict[str, Any]], int]:
    """Write sweep.csv, sweep_tidy.csv and sweep.json; return the rows (each with its runs'
    ``summaries`` and their directories under ``out``, ``runs``, too, and
    ``bad_runs``: the directories of runs that failed or broke an invariant,
    kept with their events for a post-mortem) and how many runs those are."""
    rows, runs, bad = [], [], 0
    for point in sweep.points:
        for sc in point.scenarios:
            arch = sc.architecture
            summaries, violations, bad_runs = [], 0, []
            for seed, rel in zip(sweep.seeds, sweep.runs(point, arch)):
                f = out / rel / "summary.json"
                run = {"point": point.name, "seed": seed, "architecture": arch, "set": point.assignment, "run": rel,
                       "status": "failed", "summary": None}
                runs.append(run)
                if not f.exists():
                    bad += 1
                    bad_runs.append(out / rel)
                    continue
                s = json.loads(f.read_text())
                summaries.append(s)
                run.update(summary=s, status="ok")
                if violated(s["invariants"]):
                    violations += 1
                    bad_runs.append(out / rel)
                    run["status"] = "violated"
            bad += violations
            rows.append({"point": point.name, "architecture": arch, "seeds": len(sweep.seeds), "ok_runs": len(summaries),
                         "violations": violations, "set": point.assignment, "metrics": aggregate(summaries),
                         "summaries": summaries, "runs": [out / rel for rel in sweep.runs(point, arch)], "bad_runs": bad_runs})
    write_csv(out / "sweep.csv", sweep.keys, rows)
    write_tidy_csv(out / "sweep_tidy.csv", sweep.keys, runs)
    (out / "sweep.json").write_text(json.dumps(sweep.describe(), indent=2) + "\n")
    return rows, bad


@interruptible
def cmd_sweep(args: argparse.Namespace) -> int:
    from schedlab.cli.command import EXIT_BAD_INPUT, EXIT_INVARIANT, error as _error

    console = Console(quiet=args.quiet)
    try:
        sweep = plan_sweep(args.scenario, args.set or [], args.seeds, args.seed, args.time_scale, args.engine)
        if args.parallel < 1:
            raise ScenarioError(f"--parallel: must be >= 1 (got {args.parallel})")
    except ScenarioError as e:
        _error(str(e))
        return EXIT_BAD_INPUT
    from schedlab.actors.engines import ClusterUnreachable, engine_class

    name = sweep.points[0].scenarios[0].name
    out = Path(args.out or f"runs/{name}-sweep-{time.strftime('%Y%m%d-%H%M%S')}")
    total = sweep.total()
    grid = " x ".join(f"{k} ({len(v)})" for k, v in sweep.values.items()) or "no swept key"
    console.print(f"schedlab: sweeping [bold]{name}[/] over {grid}, seeds {sweep.seeds}: {total} runs, out {out}")
    # One Ray for every live run; sim runs need none.
    live = engine_class("ray")() if any(sc.engine == "ray" for p in sweep.points for sc in p.scenarios) else None
    try:
        started = live.connect(args.address, "schedlab-sweep") if live else False
    except ClusterUnreachable as e:
        _error(str(e))
        return EXIT_BAD_INPUT
    out.mkdir(parents=True, exist_ok=True)
    quiet = args.no_progress or args.quiet or not console.is_terminal
    progress = Progress(TextColumn("[bold]runs[/]"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[last]}"),
                        TimeElapsedColumn(), console=console, disable=quiet)
    try:
        with progress:
            task = progress.add_task("sweep", total=total, last="")

            def advance(rel: str) -> None:
                progress.update(task, advance=1, last=rel)
                if quiet and not args.quiet:
                    print(f"  done {rel}", flush=True)

            if args.parallel > 1:
                _run_processes(sweep, out, live.gcs_address() if live else None, args.parallel, args, advance)
            else:
                run_inline(sweep, out, args.address, advance)
    finally:
        if started:
            live.shutdown()
    rows, bad = finish(sweep, out)
    console.print(f"wrote {out / 'sweep.csv'} ({len(rows)} rows), {out / 'sweep_tidy.csv'} (a row per run) and {out / 'sweep.json'}")
    if args.report:
        from schedlab.api.report import write_report

        console.print(f"wrote {write_report(out)}")
    if bad:
        where = [str(d) for r in rows for d in r["bad_runs"]]
        more = f" and {len(where) - 5} more" if len(where) > 5 else ""
        _error(f"{bad} of {total} runs failed or violated an invariant; kept in {', '.join(where[:5])}{more} "
               "(error.txt / summary.json / events.jsonl)")
        return EXIT_INVARIANT
    return 0


def add_parser(sub: Any) -> None:
    s = sub.add_parser("sweep", help="run a scenario over a grid of settings and seeds")
    s.add_argument("scenario", help="scenario TOML file, or the name of a shipped one (schedlab scenarios)")
    s.add_argument("--set", action="append", metavar="KEY=V1,V2,...",
                   help="sweep a key over values (TOML literals; commas inside [..] or quotes kept), "
                        "or fix it with one value (repeatable; the grid is every combination)")
    s.add_argument("--seeds", type=int, default=1, help="runs per point, seeds SEED, SEED+1, ... (default 1)")
    s.add_argument("--seed", type=int, help="first seed (default: the scenario's)")
    s.add_argument("--time-scale", type=float, help="override emulated seconds per wall second")
    s.add_argument("--out", help="output directory (default runs/<name>-sweep-<time>)")
    s.add_argument("--address", help="join the Ray cluster at this address (default: RAY_ADDRESS, else embedded local Ray)")
    s.add_argument("--engine", help="ray (live) or sim (virtual clock): overrides the scenario's")
    s.add_argument("--parallel", type=int, default=1, help="runs at once, as separate processes on the cluster (default 1)")
    s.add_argument("--report", action="store_true", help="write report.md with plots at the end (needs the plot extra)")
    s.add_argument("--no-progress", action="store_true", help="print one line per finished run instead of a bar")
    verbosity(s)
    s.set_defaults(fn=cmd_sweep)
