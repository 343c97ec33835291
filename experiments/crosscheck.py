"""Cross-check the engines: shipped scenarios live on Ray and on the sim
engine (with this machine's calibrated latency), over the same seeds.

    schedlab crosscheck             # each architecture's showcase scenario x 3 seeds
    schedlab crosscheck --quick     # quickstart, 1 seed, 200 emulated s (CI size, ~20 s)
    schedlab crosscheck --scenarios omega_conflicts,mesos_failover --seeds 5

Steps: start Ray (or join --address); measure its one-way message latency
(``schedlab calibrate``'s probes, --messages); run every scenario live
over the seeds (the sweep machinery: ``cli.sweep``); shut Ray down;
run each again on the sim engine with ``[substrate] latency`` = the
measured one-way table in that scenario's emulated seconds (wall x its
time_scale); print per scenario and metric live against sim, median
[range over seeds], with a verdict against the tolerance stated in
``experiments.crosscheck_table``. docs/concepts/engines-and-time.md says what differs and why.

Writes OUT/crosscheck.md (the table), OUT/crosscheck.json (every value,
the calibration's spread and table), OUT/calibration.json (the pooled
samples, wall seconds) and OUT/<scenario>/{live,sim}/ (ordinary sweep
directories; --resume keeps the finished live ones). Exits 0 when every metric agrees, 1 when one differs, 2 on
bad arguments, 3 when a run failed or broke an invariant.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Callable

from schedlab.schedulers import arch as registry
from schedlab.schedulers.scenario.calibration import dist_toml, empirical, spread as latency_spread, to_emulated
from schedlab.schedulers.scenario.parse import ScenarioError
from schedlab.cli.calibrate import stall_warning
from schedlab.cli.command import EXIT_BAD_INPUT, EXIT_INVARIANT, error, interruptible, live_ray, verbosity
from schedlab.experiments.crosscheck_table import TOLERANCES, Row, compare, pair, render
from schedlab.cli.sweep import Sweep, finish, plan_sweep, run_dir, run_inline

TOOL_HELP = "the same scenarios live and on sim: do the engines agree"  # one line in `schedlab --help` (cli.tools)


def default_scenarios() -> tuple[str, ...]:
    """Each registered architecture's showcase scenario (``ArchSpec.showcase``),
    in the registry's order; ``uncovered`` names an architecture none of
    the chosen scenarios runs."""
    return tuple(dict.fromkeys(s for a in registry.names() if (s := registry.spec_of(a).showcase)))


DEFAULT_SEEDS = 3
DEFAULT_MESSAGES = 1000
QUICK = {"scenarios": ("quickstart",), "seeds": 1, "set": ["duration=200"], "messages": 200}
EXIT_DIFFER = 1


def plan(args: argparse.Namespace, engine: str, latency: list[float] | None = None) -> dict[str, Sweep]:
    """Every scenario's sweep on ``engine``; with ``latency`` (one-way wall
    seconds), the sim's [substrate] latency set from it at each scenario's scale."""
    out = {}
    for name in args.scenarios:
        sweep = plan_sweep(name, args.set, args.seeds, args.seed, None, engine=engine)
        if latency is not None:
            sets = []
            for scale in {sc.time_scale for p in sweep.points for sc in p.scenarios}:
                sets.append(f"substrate.latency={dist_toml(empirical(to_emulated(latency, scale)))}")
            if len(sets) > 1:
                raise ScenarioError(f"{name}: its architectures run at different time scales; cross-check them one by one")
            sweep = plan_sweep(name, [*args.set, *sets], args.seeds, args.seed, None, engine=engine)
        out[name] = sweep
    return out


def uncovered(sweeps: dict[str, Sweep]) -> list[str]:
    """Registered architectures that none of these sweeps runs."""

    ran = {sc.architecture for s in sweeps.values() for p in s.points for sc in p.scenarios}
    return [name for name in registry.names() if name not in ran]


def live_seconds(sweeps: dict[str, Sweep]) -> float:
    return sum(sc.duration / sc.time_scale * len(s.seeds) for s in sweeps.values() for p in s.points for sc in p.scenarios)


def run_all(sweeps: dict[str, Sweep], out: Path, engine: str, address: str | None, say: Any,
            after_each: Callable[[], None] = lambda: None, resume: bool = False) -> dict[str, tuple[list, int]]:
    """Each scenario's sweep into OUT/<scenario>/<engine>/; ``after_each``
    after every run that ran (``resume``: a finished one is kept, not run)."""
    done = {}
    for name, sweep in sweeps.items():
        where = out / name.replace("/", "-") / engine
        where.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        kept = {rel for p, seed in sweep.jobs() for sc in p.scenarios
                if resume and (where / (rel := run_dir(p, seed, sc.architecture)) / "summary.json").is_file()}
        run_inline(sweep, where, address, lambda rel: None if rel in kept else after_each(), keep_finished=resume)
        done[name] = finish(sweep, where)
        say(f"  {name} on {engine}: {sweep.total() - len(kept)} runs in {time.monotonic() - t0:.0f} s"
            + (f" ({len(kept)} kept from before)" if kept else ""))
    return done


def to_run(sweeps: dict[str, Sweep], out: Path, engine: str) -> int:
    """Runs of these sweeps without a summary.json in OUT yet."""
    return sum(not (out / name.replace("/", "-") / engine / run_dir(p, seed, sc.architecture) / "summary.json").is_file()
               for name, sweep in sweeps.items() for p, seed in sweep.jobs() for sc in p.scenarios)


def rows_of(live: dict[str, tuple[list, int]], sim: dict[str, tuple[list, int]],
            seeds: dict[str, list[int]]) -> tuple[list[Row], list[str]]:
    """The table's rows, and a note for every seed left out of it."""
    rows: list[Row] = []
    notes: list[str] = []
    for name, (live_rows, _) in live.items():
        sim_rows = {(r["point"], r["architecture"]): r for r in sim[name][0]}
        points = len({r["point"] for r in live_rows}) > 1
        archs = len({r["architecture"] for r in live_rows}) > 1
        for lr in live_rows:
            label = name + (f" {lr['point']}" if points else "") + (f" [{lr['architecture']}]" if archs else "")
            p = pair(seeds[name], lr["summaries"], sim_rows[(lr["point"], lr["architecture"])]["summaries"])
            rows += compare(label, p.live, p.sim)
            notes += [f"{label} seed {seed} left out: {why}" for seed, why in p.left_out.items()]
            if not p.live:
                notes.append(f"{label}: no seed ran clean on both engines; nothing compared")
    return rows, notes


@interruptible
def crosscheck(args: argparse.Namespace) -> int:
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    try:
        if args.seeds < 1:
            raise ScenarioError(f"--seeds: must be >= 1 (got {args.seeds})")
        if not 1 <= args.messages <= 100_000:
            raise ScenarioError(f"--messages: must be between 1 and 100,000 (got {args.messages})")
        live_plan = plan(args, "ray")
        plan(args, "sim")  # a scenario the sim engine refuses fails now, not after the live runs
    except ScenarioError as e:
        error(str(e))
        return EXIT_BAD_INPUT
    from schedlab.actors import engines
    from schedlab.actors.calibrate import measure

    out = Path(args.out or f"runs/crosscheck-{time.strftime('%Y%m%d-%H%M%S')}")
    out.mkdir(parents=True, exist_ok=True)
    say(f"crosscheck: {', '.join(f'{n} (seeds {s.seeds[0]}-{s.seeds[-1]})' for n, s in live_plan.items())}; "
        f"live runs take ~{live_seconds(live_plan) / 60:.1f} wall minutes; out {out}")
    if missing := uncovered(live_plan):
        say(f"note: no scenario here runs {', '.join(missing)}; add one with --scenarios to cross-check it")
    # The calibration is pooled from probes before the first live run and
    # after each: it samples the machine over the minutes the live runs saw,
    # not the seconds one probe takes (a passing stall there would be
    # spread over every sim message). --resume reads back what was pooled.
    saved = out / "calibration.json"
    pooled = json.loads(saved.read_text()) if args.resume and saved.is_file() else {"one_way_wall_s": [], "round_trip_wall_s": []}
    one_way, round_trip = pooled["one_way_wall_s"], pooled["round_trip_wall_s"]
    runs = to_run(live_plan, out, "live") if args.resume else sum(s.total() for s in live_plan.values())
    chunk = max(20, -(-args.messages // (runs + 1)))

    def calibrate() -> None:
        m = measure(chunk)
        one_way.extend(m.one_way)
        round_trip.extend(m.round_trip)
        saved.write_text(json.dumps(pooled) + "\n")

    if runs or not one_way:
        try:
            with live_ray(args.address, "schedlab-crosscheck"):
                say(f"calibrating: {chunk} one-way messages and round trips before the first live run and after each")
                calibrate()
                live = run_all(live_plan, out, "live", args.address, say, calibrate, args.resume)
        except engines.ClusterUnreachable as e:
            error(str(e))
            return EXIT_BAD_INPUT
    else:
        live = run_all(live_plan, out, "live", None, say, resume=True)
    one, rtt = latency_spread(one_way).scaled(1e3), latency_spread(round_trip).scaled(1e3)
    say(f"calibrated ({one.n} messages): one-way wall ms p50 {one.p50:.3g} p90 {one.p90:.3g} p99 {one.p99:.3g} "
        f"mean {one.mean:.3g}; round trip p50 {rtt.p50:.3g} p90 {rtt.p90:.3g} p99 {rtt.p99:.3g}")
    if stall_warning(one):
        print(stall_warning(one), file=sys.stderr)
    sim = run_all(plan(args, "sim", one_way), out, "sim", None, say)
    rows, notes = rows_of(live, sim, {name: sweep.seeds for name, sweep in live_plan.items()})
    table = render(rows)
    tolerances = "; ".join(f"{k} {t.text()}" for k, t in TOLERANCES.items())
    footer = "".join(f"\n{n}" for n in notes) + f"\nTolerances (|sim - live| <= abs + rel x |live|, medians): {tolerances}\n"
    (out / "crosscheck.md").write_text(table + footer)
    table_wall = empirical(one_way)
    (out / "crosscheck.json").write_text(json.dumps({
        "scenarios": list(args.scenarios), "seeds": next(iter(live_plan.values())).seeds, "set": args.set,
        "calibration_wall_ms": {"one_way": one.__dict__, "round_trip": rtt.__dict__},
        "one_way_wall_s": {"values": table_wall.values, "weights": table_wall.weights},
        "left_out": notes,
        "rows": [{"scenario": r.scenario, "metric": r.metric, "live": r.live, "sim": r.sim,
                  "tolerance": r.tolerance.__dict__, "verdict": r.verdict} for r in rows],
    }, indent=2) + "\n")
    if not args.quiet:
        print(table + footer)
        print(f"wrote {out / 'crosscheck.md'} and {out / 'crosscheck.json'}")
    bad = sum(n for _rows, n in [*live.values(), *sim.values()])
    if bad:
        error(f"{bad} runs failed or broke an invariant; see {out}/<scenario>/<engine>/")
        return EXIT_INVARIANT
    differ = [f"{r.scenario}: {r.metric}" for r in rows if r.verdict == "DIFFER"]
    if differ:
        error(f"{len(differ)} of {len(rows)} metrics differ beyond tolerance: {'; '.join(differ)}")
        return EXIT_DIFFER
    return 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="schedlab crosscheck", description=__doc__.split("\n\n")[0])
    p.add_argument("--scenarios", help="comma-separated shipped names or files (default: each architecture's showcase scenario)")
    p.add_argument("--seeds", type=int, help=f"runs per scenario and engine, seeds SEED, SEED+1, ... (default {DEFAULT_SEEDS})")
    p.add_argument("--seed", type=int, help="first seed (default: each scenario's)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", help="override a value in every scenario (repeatable)")
    p.add_argument("--messages", type=int, help=f"calibration messages (default {DEFAULT_MESSAGES})")
    p.add_argument("--quick", action="store_true", help="CI size: quickstart, 1 seed, 200 emulated s, 200 messages")
    p.add_argument("--out", help="output directory (default runs/crosscheck-<time>)")
    p.add_argument("--resume", action="store_true",
                   help="keep the live runs already finished in --out and the calibration pooled there; run the rest")
    p.add_argument("--address", help="join the Ray cluster at this address (default: embedded local Ray)")
    verbosity(p)
    args = p.parse_args(argv)
    quick: dict[str, Any] = QUICK if args.quick else {}
    args.scenarios = (tuple(s for s in args.scenarios.split(",") if s) if args.scenarios
                      else quick.get("scenarios", default_scenarios()))
    args.seeds = args.seeds if args.seeds is not None else quick.get("seeds", DEFAULT_SEEDS)
    mine = {a.partition("=")[0].strip() for a in args.set or []}  # the user's --set wins over --quick's
    args.set = [*(a for a in quick.get("set", []) if a.partition("=")[0] not in mine), *(args.set or [])]
    args.messages = args.messages if args.messages is not None else quick.get("messages", DEFAULT_MESSAGES)
    if not args.scenarios:
        error("--scenarios: name at least one scenario")
        return EXIT_BAD_INPUT
    return crosscheck(args)


if __name__ == "__main__":
    sys.exit(main())
