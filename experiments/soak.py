"""Soak: each architecture runs for a while under the chaos monkey.

    schedlab soak [SCENARIO.toml] [--arch NAME,NAME] [--minutes 10] [--every 5] [--seed 0]
    schedlab soak --engine sim [--hours 24] [--every 5] [--seed 0]

Live (the default): for each architecture the scenario runs here (embedded
Ray, or --address), ``schedlab chaos --run OUT monkey`` runs as a separate
process against it, one fault every ``--every`` wall seconds on average
across every role. On the sim engine the same monkey draws its faults ahead
into the scenario's fault timeline, one every ``--every`` emulated seconds
for ``--hours`` emulated hours (written to OUT/<architecture>/plan.json); the
run is deterministic, so the same ``--seed`` replays a failure exactly.
Prints one row per architecture (faults by kind, jobs, invariants) and
writes OUT/<architecture>/soak.json; exits 3 when any invariant is violated
or a job was lost, 2 on bad input.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.actors.analysis.kept_runs import violated
from schedlab.actors.common.event_files import EVENT_FILES
from schedlab.actors.engines.limits import local_limits
from schedlab.schedulers.scenario.parse import Scenario, ScenarioError, parse_comparison
from schedlab.cli.command import EXIT_BAD_INPUT, EXIT_INVARIANT, error
from schedlab.api.scenario_files import load_data, resolve

TOOL_HELP = "each architecture under the chaos monkey for a while, live or on sim"  # one line in `schedlab --help` (cli.tools)

# The live monkey's defaults (schedlab chaos monkey), in wall seconds.
MONKEY_LASTING_WALL_S = 2.0
MONKEY_BACK_AFTER_WALL_S = 1.0
MONKEY_DELAY_WALL_S = 0.02
SIM_WARMUP_S = 10.0  # emulated seconds before the first drawn fault


def soak_one(sc: Scenario, out: Path, every: float, seed: int, address: str | None) -> dict[str, Any]:
    from schedlab.actors.run import run_scenario

    result: dict[str, Any] = {}
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("run.json", *EVENT_FILES.values()):  # an earlier run's: the monkey must not attach to it
        (out / stale).unlink(missing_ok=True)

    def run() -> None:
        try:
            result["summary"] = run_scenario(sc, out, address=address)
        except BaseException as e:  # reported below, after the monkey stops
            result["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    # The monkey attaches once the run has published itself (run.json) and started.
    while t.is_alive() and not _started(out):
        time.sleep(0.2)
    monkey = subprocess.Popen([sys.executable, "-m", "schedlab", "chaos", "--run", str(out), "monkey",
                               "--every", str(every), "--seed", str(seed)],
                              stdout=(out / "monkey.jsonl").open("w"), stderr=subprocess.PIPE, text=True)
    t.join()
    try:
        _, err = monkey.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        monkey.kill()
        _, err = monkey.communicate()
    if "error" in result:
        raise result["error"]
    return _row(sc, result["summary"], "chaos", monkey.returncode,
                (err or "").strip().splitlines()[-1:] if monkey.returncode else [])


def soak_sim(sc: Scenario, out: Path, every: float, seed: int) -> dict[str, Any]:
    """The monkey's faults drawn ahead (schedulers.faults.plan.monkey_plan)
    with the live monkey's defaults, its wall seconds turned into emulated
    ones at the scenario's time scale, then one run on the virtual clock."""
    from schedlab.actors.run import run_scenario
    from schedlab.schedulers.arch import all_roles
    from schedlab.schedulers.faults.plan import Monkey, monkey_plan
    from schedlab.schedulers.scenario.parse import roster_for

    out.mkdir(parents=True, exist_ok=True)
    roster = roster_for(sc)
    monkey = Monkey(roster, tuple(r for r in roster.members if roster.members[r]), np.random.default_rng(seed),
                    lasting=MONKEY_LASTING_WALL_S * sc.time_scale, back_after=MONKEY_BACK_AFTER_WALL_S * sc.time_scale,
                    delay=MONKEY_DELAY_WALL_S * sc.time_scale, known=tuple(all_roles()))
    # Faults begin once the cell has settled and stop a little before the end,
    # so every kill's restart lands inside the run.
    plan = monkey_plan(monkey, SIM_WARMUP_S, sc.duration - 2 * monkey.back_after, every)
    (out / "plan.json").write_text(json.dumps([dataclasses.asdict(f) for f in plan]) + "\n")
    s = run_scenario(dataclasses.replace(sc, faults=tuple(plan) + sc.faults), out)
    return _row(sc, s, "scenario", 0, [])


def _row(sc: Scenario, s: dict[str, Any], source: str, monkey_exit: int, monkey_error: list[str]) -> dict[str, Any]:
    kinds = collections.Counter(f["kind"] for f in s["faults"] if f.get("source") == source and not f.get("skipped"))
    skipped = sum(1 for f in s["faults"] if f.get("skipped"))
    return {"architecture": sc.architecture, "engine": sc.engine, "emulated_s": s["emulated_seconds"],
            "wall_s": round(s["wall_seconds"], 1), "faults": sum(kinds.values()), "by_kind": dict(sorted(kinds.items())),
            "skipped": skipped, "jobs": s["jobs"], "invariants": s["invariants"],
            "monkey_exit": monkey_exit, "monkey_error": monkey_error}


def _started(out: Path) -> bool:
    return (out / "run.json").exists() and any(
        (out / name).exists() and (out / name).stat().st_size > 0 for name in EVENT_FILES.values())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", nargs="?", default="soak", help="a scenario file or shipped name (default: soak)")
    p.add_argument("--arch", default="", help="comma-separated architectures (default: the file's)")
    p.add_argument("--engine", choices=("ray", "sim"), default="ray", help="live Ray (default) or the virtual clock")
    p.add_argument("--minutes", type=float, default=10.0, help="live: wall minutes per architecture (default 10)")
    p.add_argument("--hours", type=float, default=24.0, help="sim: emulated hours per architecture (default 24)")
    p.add_argument("--every", type=float, default=5.0,
                   help="mean seconds between faults, wall (live) or emulated (sim) (default 5)")
    p.add_argument("--seed", type=int, default=0, help="the monkey's seed")
    p.add_argument("--out", default=f"runs/soak-{time.strftime('%Y%m%d-%H%M%S')}")
    p.add_argument("--address", help="a Ray cluster to run on (default: embedded local Ray)")
    args = p.parse_args(argv)
    try:
        data = load_data(args.scenario, None)
        if args.arch:
            data["architectures"] = [a for a in args.arch.split(",") if a]
        if not args.minutes > 0 or not args.every > 0 or not args.hours > 0:
            raise ScenarioError("--minutes, --hours and --every must be > 0")
        data["engine"] = args.engine
        scenarios = parse_comparison(data, str(resolve(args.scenario)), local_limits())
    except ScenarioError as e:
        error(str(e))
        return EXIT_BAD_INPUT
    rows = []
    for sc in scenarios:
        out = Path(args.out) / sc.architecture
        if args.engine == "sim":
            sc = dataclasses.replace(sc, duration=args.hours * 3600)
            print(f"soak {sc.architecture}: {args.hours:g} emulated hours (sim), a fault every ~{args.every:g} emulated s",
                  flush=True)
            row = soak_sim(sc, out, args.every, args.seed)
        else:
            sc = dataclasses.replace(sc, duration=args.minutes * 60 * sc.time_scale)
            print(f"soak {sc.architecture}: {args.minutes:g} wall minutes, a fault every ~{args.every:g} s", flush=True)
            row = soak_one(sc, out, args.every, args.seed, args.address)
        (out / "soak.json").write_text(json.dumps(row, indent=2) + "\n")
        rows.append(row)
        print(json.dumps({k: row[k] for k in ("architecture", "faults", "by_kind", "skipped", "jobs", "invariants")}), flush=True)
    bad = [r["architecture"] for r in rows if violated(r["invariants"]) or r["monkey_exit"] != 0]
    print(f"wrote {args.out}/<architecture>/soak.json")
    if bad:
        # Each architecture ran in its own directory under --out, never deleted: name them.
        kept = ", ".join(str(Path(args.out) / a) for a in bad)
        error(f"invariants violated or the monkey failed in {', '.join(bad)}; runs kept in {kept}")
        return EXIT_INVARIANT
    return 0


if __name__ == "__main__":
    sys.exit(main())
