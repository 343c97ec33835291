"""Benchmark: how many placements per second schedlab sustains (the knee of
its offered-load ladder), beside raw Ray actor calls per second.

    python scripts/bench.py [--repeats 3] [--machines 1000] [--per-actor 50 250] [--batch 0.05 0.2]
                            [--schedulers 2] [--duration 3] [--loads 2000 4000 ...] [--tasks-per-job 40]
                            [--ladder] [--json PATH] [--quick]

Both numbers are measured in one run on one Ray, and their ratio printed, so
the result survives a noisy shared machine better than either alone.

**What is offered.** One batch job class of ``--tasks-per-job`` tasks per job (40; 1 measures the per-commit path at one task a commit),
arriving at a fixed interarrival, to Omega schedulers with zero think time.
The offered load (tasks/s) is tasks per job / interarrival; the ladder raises
it by shrinking the interarrival only, so every step offers the same jobs
(one job is one commit: growing jobs instead would amortise the per-commit
cost and measure a different system at each step).

**The ladder.** For each configuration (machines_per_actor x batch_interval)
the bench runs placement at each offered load of the ladder in turn (default
2,000, 4,000, 8,000, 16,000, 32,000 tasks/s), ``--repeats`` runs per step, and
takes the **median over the repeats of each step** (placements/s and commit
RTT p50). A step's placement rate is the claims committed in the steady
window [warm-up, duration] of emulated time (time_scale 1: wall seconds) over
its length: under load, placements trail arrivals by a constant lag, so the
window counts as many as were offered; at saturation it counts the capacity.

**The knee** of a ladder of medians (offered_i, placed_i), offered rising, is
the first step i at which

* ``placed_i < SATURATED * offered_i`` (placed below 90% of offered: the
  scheduler no longer keeps up), or
* ``i > 0`` and ``placed_i < (1 + MIN_RISE) * placed_{i-1}`` (placed rose by
  less than 10% over the previous step: more offered, no more placed).

The capacity is placed_i at the knee (a saturated run places what it can),
and the bench stops climbing that configuration's ladder there. If no step
saturates, the knee is "not reached": it is reported at the last step, whose
placement rate is a lower bound on the capacity. Ladder steps must rise by at
least ``MIN_STEP`` (25%) each, so the 10% rule cannot fire on a step that
merely offered a little more.

**The cell never fills**: a full cell measures the cell, not the scheduler.
Tasks are small (``TASK_CPU`` cpu, ``TASK_MEM`` mem on 16-cpu, 64-mem machines:
320 per machine) and short (exponential, mean ``TASK_MEAN_S``), and the bench
refuses a ladder whose top load would keep more than ``MAX_CELL_SHARE`` (25%)
of the cell's task slots busy in steady state (offered x mean duration, an
upper bound on the expected tasks running).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypedDict

from schedlab.actors.engines import ray_engine  # first: it sets Ray's auth mode before Ray is imported

import ray  # noqa: E402

from schedlab.actors.analysis.kept_runs import keep_if_bad, violated  # noqa: E402
from schedlab.actors.engines.limits import local_limits  # noqa: E402
from schedlab.actors.run import run_scenario  # noqa: E402
from schedlab.schedulers.events.shared import JOB_SUBMITTED, TXN
from schedlab.schedulers.scenario.limits import MAX_JOBS, MAX_TASKS  # noqa: E402
from schedlab.schedulers.scenario.parse import parse_scenario  # noqa: E402

TOOL_NAME = "placements"  # its `schedlab` subcommand (default: the file name)
TOOL_HELP = "placements per second live on Ray, beside raw actor calls"  # one line in `schedlab --help` (cli.tools)

# The scenario's shape (printed with the results, so they can be reproduced).
TASKS_PER_JOB = 40  # the default: fixed across runs so results compare; a job's message (40 durations) stays cheap; one job is one commit
# Issue 27's live targets, placements per wall second at the knee, by tasks per job.
KNEE_TARGETS = {40: 25000.0, 1: 10000.0}
MACHINE_CPU, MACHINE_MEM = 16.0, 64.0
TASK_CPU, TASK_MEM = 0.05, 0.1  # 320 tasks per machine (cpu-bound): 320,000 slots on 1,000 machines
TASK_MEAN_S = 2.0  # exponential: most tasks end within a step, so hosts also release at steady state
MAX_CELL_SHARE = 0.25  # steady-state tasks running / task slots, at most

# The knee (see the module docstring).
SATURATED = 0.9
MIN_RISE = 0.10
MIN_STEP = 1.25

DEFAULT_LOADS = (2000, 4000, 8000, 16000, 32000)


class Defaults(TypedDict):
    """What an option left out takes (its name as argparse keeps it)."""

    per_actor: list[int]
    batch: list[float]
    repeats: int
    duration: float
    loads: list[float]


QUICK: Defaults = {"per_actor": [250], "batch": [0.05], "repeats": 1, "duration": 2.0, "loads": [2000, 8000, 32000]}


class Echo:
    async def ping(self, x: int) -> int:
        return x


# Ray's actor class: its .remote() is invisible to mypy through the decorator (Any, as in ray_engine).
EchoActor: Any = ray.remote(num_cpus=0)(Echo)


def raw_calls_per_s(n: int = 4000) -> float:
    """Pipelined calls to one async actor: submit n, then wait for all."""
    echo = EchoActor.remote()
    ray.get(echo.ping.remote(0))
    t0 = time.perf_counter()
    ray.get([echo.ping.remote(i) for i in range(n)])
    rate = n / (time.perf_counter() - t0)
    ray.kill(echo)
    return rate


@dataclass(frozen=True)
class Knee:
    """Where a ladder saturates: ``index`` into the ladder, its offered load
    and placement rate (the capacity), whether a step saturated at all
    (``reached``; when not, the last step, a lower bound), and why."""

    index: int
    offered: float
    placed: float
    reached: bool
    reason: str


def saturated(points: list[tuple[float, float]], i: int, saturated_below: float = SATURATED, min_rise: float = MIN_RISE) -> str | None:
    """Why step ``i`` of ``points`` [(offered, placed)] is saturated, or None."""
    offered, placed = points[i]
    if placed < saturated_below * offered:
        return f"placed < {saturated_below:.0%} of offered"
    if i > 0 and placed < (1 + min_rise) * points[i - 1][1]:
        return f"placed rose < {min_rise:.0%} over the previous step"
    return None


def find_knee(points: list[tuple[float, float]], saturated_below: float = SATURATED, min_rise: float = MIN_RISE) -> Knee:
    """The knee of a ladder [(offered, placed)], offered rising: the first
    saturated step (module docstring), else the last step, not reached."""
    if not points:
        raise ValueError("an empty ladder has no knee")
    if any(b[0] <= a[0] for a, b in zip(points, points[1:])):
        raise ValueError("the ladder's offered loads must rise")
    for i in range(len(points)):
        why = saturated(points, i, saturated_below, min_rise)
        if why is not None:
            return Knee(i, points[i][0], points[i][1], True, why)
    return Knee(len(points) - 1, points[-1][0], points[-1][1], False, "not reached")


def cell_slots(machines: int) -> int:
    """Tasks of the bench's size that fit in the cell at once."""
    return machines * int(min(MACHINE_CPU / TASK_CPU, MACHINE_MEM / TASK_MEM) + 1e-9)


def expected_running(load: float) -> float:
    """Steady-state tasks running at ``load`` tasks/s placed (Little's law):
    an upper bound on the expected count at any time of a run."""
    return load * TASK_MEAN_S


def warmup(duration: float) -> float:
    """Emulated seconds at the start of a step left out of its rate."""
    return min(1.0, 0.25 * duration)


def bench_scenario(machines: int, per_actor: int, schedulers: int, duration: float, batch: float, load: float,
                   tasks_per_job: int = TASKS_PER_JOB) -> dict:
    """A cell that never fills, schedulers with no think time, and ``load``
    tasks/s offered: what is measured is the commit path itself (sync,
    place, commit, launch) on the substrate, up to its capacity."""
    return {
        "name": "bench",
        "seed": 1,
        "time_scale": 1.0,
        "duration": duration,
        "cell": {"machines_per_actor": per_actor,
                 "machine_classes": [{"name": "m", "count": machines, "cpu": MACHINE_CPU, "mem": MACHINE_MEM, "racks": 20}]},
        "workload": {"classes": [{
            "name": "batch", "kind": "batch", "interarrival": tasks_per_job / load, "interarrival_mode": "fixed",
            "tasks": float(tasks_per_job), "duration": {"dist": "exponential", "mean": TASK_MEAN_S},
            "cpu": TASK_CPU, "mem": TASK_MEM,
        }]},
        "omega": {"schedulers": [{"name": "batch", "classes": ["batch"], "count": schedulers, "t_job": 0.0, "t_task": 0.0}]},
        "metrics": {"sample_interval": 1.0},
        "substrate": {"batch_interval": batch},
    }


def window_rates(events: Path, t0: float, t1: float) -> tuple[float, float]:
    """(placed, released) tasks/s in emulated [t0, t1): claims committed by
    the schedulers and tasks the submitter released. Only the txn and
    job_submitted lines are parsed."""
    placed = released = 0
    with events.open() as f:
        for line in f:
            if '"txn"' in line:
                e = json.loads(line)
                if e.get("event") == TXN and t0 <= e["t"] < t1:
                    placed += e["committed"]
            elif '"job_submitted"' in line:
                e = json.loads(line)
                if e.get("event") == JOB_SUBMITTED and t0 <= e["t"] < t1:
                    released += e["tasks"]
    return placed / (t1 - t0), released / (t1 - t0)


def run_step(machines: int, per_actor: int, schedulers: int, duration: float, batch: float, load: float,
             tasks_per_job: int = TASKS_PER_JOB) -> dict:
    """One placement run at ``load`` tasks/s offered, in a temporary
    directory deleted unless the run broke an invariant: then it is kept
    (actors.analysis.kept_runs) and its path is in the result as ``kept``."""
    w0 = time.perf_counter()
    sc = parse_scenario(bench_scenario(machines, per_actor, schedulers, duration, batch, load, tasks_per_job), "bench",
                        local_limits())
    with tempfile.TemporaryDirectory() as out:
        s = run_scenario(sc, out)
        placed, released = window_rates(Path(out) / "events.jsonl", warmup(duration), duration)
        kept = keep_if_bad(out, s["invariants"], f"bench-k{per_actor}-b{batch:g}-l{load:g}")
    rtts = [x["commit_rtt_wall_ms_p50"] for x in s["schedulers"] if x["commit_rtt_wall_ms_p50"] is not None]
    return {"placed": placed, "released": released, "rtt_ms": statistics.median(rtts) if rtts else None,
            "bad": violated(s["invariants"]), "kept": str(kept) if kept is not None else None,
            "wall_s": time.perf_counter() - w0}


def _median_or_none(xs: list[float | None]) -> float | None:
    got = [x for x in xs if x is not None]
    return statistics.median(got) if got else None


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def log(msg: str) -> None:
    """Progress, on stderr: stdout is the results."""
    print(msg, file=sys.stderr, flush=True)


def climb(args: argparse.Namespace, per_actor: int, batch: float) -> dict:
    """One configuration's ladder, up to its knee: medians over the repeats
    of each step."""
    steps: list[dict] = []
    for load in args.loads:
        runs = [run_step(args.machines, per_actor, args.schedulers, args.duration, batch, load, args.tasks_per_job)
                for _ in range(args.repeats)]
        for r in runs:
            if r["bad"]:
                raise SystemExit(f"invariants violated during bench: {r['bad']}; run kept in {r['kept']}")
        steps.append({
            "offered": float(load),
            "placed": statistics.median(r["placed"] for r in runs),
            "released": statistics.median(r["released"] for r in runs),
            "commit_rtt_ms_p50": _median_or_none([r["rtt_ms"] for r in runs]),
            "runs": [round(r["placed"], 1) for r in runs],
            "wall_s": round(sum(r["wall_s"] for r in runs), 2),
        })
        st = steps[-1]
        log(f"  k={per_actor} b={batch:g}: offered {load:.0f} -> placed {st['placed']:.0f}/s "
            f"(released {st['released']:.0f}/s, RTT p50 {_ms(st['commit_rtt_ms_p50'])} ms, {st['wall_s']:.0f} s)")
        knee = find_knee([(x["offered"], x["placed"]) for x in steps])
        if knee.reached:
            break  # past the knee: higher loads would only measure the same capacity, slower
    return {"machines_per_actor": per_actor, "host_actors": -(-args.machines // per_actor), "batch_interval": batch,
            "knee": asdict(knee), "ladder": steps}


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=None, help="runs per ladder step; the step's median counts (default 3)")
    p.add_argument("--machines", type=int, default=1000)
    p.add_argument("--per-actor", type=int, nargs="+", default=None, help="machines_per_actor values (default 50 250)")
    p.add_argument("--batch", type=float, nargs="+", default=None, help="substrate.batch_interval values, wall s (default 0.05 0.2)")
    p.add_argument("--schedulers", type=int, default=2)
    p.add_argument("--duration", type=float, default=None, help="wall seconds per ladder step run (time_scale 1; default 3)")
    p.add_argument("--loads", type=float, nargs="+", default=None,
                   help=f"the offered-load ladder, tasks/s, rising by >= {MIN_STEP:g}x a step "
                        f"(default {' '.join(str(x) for x in DEFAULT_LOADS)})")
    p.add_argument("--tasks-per-job", type=int, default=TASKS_PER_JOB,
                   help=f"tasks per job (default {TASKS_PER_JOB}; 1: one task per commit)")
    p.add_argument("--ladder", action="store_true", help="print every step of every ladder")
    p.add_argument("--json", type=Path, default=None, metavar="PATH", help="also write the results as JSON to PATH")
    p.add_argument("--quick", action="store_true",
                   help=f"smoke test, under a minute: one config (per-actor {QUICK['per_actor'][0]}, batch {QUICK['batch'][0]}), "
                        f"{QUICK['duration']:g} s steps, 1 repeat, loads {' '.join(str(x) for x in QUICK['loads'])}; "
                        "explicit options still win")
    args = p.parse_args(argv)
    defaults: Defaults = QUICK if args.quick else {"per_actor": [50, 250], "batch": [0.05, 0.2], "repeats": 3, "duration": 3.0,
                                         "loads": list(DEFAULT_LOADS)}
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    if args.machines < 1 or args.schedulers < 1 or min(args.per_actor) < 1 or min(args.batch) <= 0:
        p.error("--machines, --schedulers and --per-actor must be positive, --batch > 0")
    if args.duration < 1.0:
        p.error("--duration must be at least 1 wall second (a step's first quarter is warm-up)")
    if min(args.loads) <= 0 or any(b < MIN_STEP * a for a, b in zip(args.loads, args.loads[1:])):
        p.error(f"--loads must be positive and rise by at least {MIN_STEP:g}x per step (else the {MIN_RISE:.0%} rule "
                "reads a small step as saturation)")
    slots = cell_slots(args.machines)
    top = max(args.loads)
    if expected_running(top) > MAX_CELL_SHARE * slots:
        p.error(f"--loads up to {top:g} tasks/s would keep ~{expected_running(top):,.0f} tasks running, over "
                f"{MAX_CELL_SHARE:.0%} of the {slots:,} task slots of {args.machines} machines: the cell would measure "
                f"itself. Offer at most {MAX_CELL_SHARE * slots / TASK_MEAN_S:,.0f} tasks/s or raise --machines")
    if args.tasks_per_job < 1:
        p.error("--tasks-per-job must be at least 1")
    jobs = top / args.tasks_per_job * args.duration + 1
    if jobs > MAX_JOBS or jobs * args.tasks_per_job > MAX_TASKS:
        p.error(f"a step at {top:g} tasks/s for {args.duration:g} s is {jobs:,.0f} jobs of {args.tasks_per_job} tasks: over "
                f"the scenario limits ({MAX_JOBS:,} jobs, {MAX_TASKS:,} tasks per run)")
    return args


def shape(args: argparse.Namespace) -> str:
    slots = cell_slots(args.machines)
    top = max(args.loads)
    return (f"scenario: {args.machines} machines ({MACHINE_CPU:g} cpu, {MACHINE_MEM:g} mem), {args.schedulers} Omega "
            f"schedulers with zero think time, time_scale 1; jobs of {args.tasks_per_job} tasks ({TASK_CPU:g} cpu, "
            f"{TASK_MEM:g} mem, exponential duration mean {TASK_MEAN_S:g} s) at a fixed interarrival of {args.tasks_per_job}/load\n"
            f"cell: {slots:,} task slots; at the top load ({top:g} tasks/s) ~{expected_running(top):,.0f} running "
            f"({expected_running(top) / slots:.0%}, limit {MAX_CELL_SHARE:.0%}): the cell never fills\n"
            f"ladder (tasks/s offered): {', '.join(f'{x:g}' for x in args.loads)}; {args.duration:g} s steps "
            f"(rate over [{warmup(args.duration):g}, {args.duration:g}] s), median of {args.repeats} run(s) per step; "
            f"knee: first step placing < {SATURATED:.0%} of offered or < {MIN_RISE:.0%} more than the step before")


def render(result: dict, show_ladder: bool) -> str:
    r = result["raw_calls_per_s"]
    lines = [result["shape"],
             f"raw Ray actor calls/s (pipelined, one actor): {r:.0f}   runs: {', '.join(f'{x:.0f}' for x in result['raw_runs'])}",
             "",
             "| machines_per_actor | host actors | batch_interval (s) | knee: offered (tasks/s) | placements/s at knee "
             "| ratio to raw calls/s | commit RTT p50 at knee (ms) |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c in result["configs"]:
        k = c["knee"]
        at = c["ladder"][k["index"]]
        offered = f"{k['offered']:.0f}" if k["reached"] else f"not reached (> {k['offered']:.0f})"
        placed = f"{k['placed']:.0f}" if k["reached"] else f">= {k['placed']:.0f}"
        lines.append(f"| {c['machines_per_actor']} | {c['host_actors']} | {c['batch_interval']:g} | {offered} | {placed} "
                     f"| {k['placed'] / r:.2f} | {_ms(at['commit_rtt_ms_p50'])} |")
    if show_ladder:
        lines += ["", "| machines_per_actor | batch_interval (s) | offered (tasks/s) | placed/s | placed / offered "
                      "| released/s | commit RTT p50 (ms) | runs (placed/s) | wall (s) |",
                  "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | :--- | ---: |"]
        for c in result["configs"]:
            for i, st in enumerate(c["ladder"]):
                mark = " (knee)" if c["knee"]["reached"] and i == c["knee"]["index"] else ""
                lines.append(f"| {c['machines_per_actor']} | {c['batch_interval']:g} | {st['offered']:.0f}{mark} | {st['placed']:.0f} "
                             f"| {st['placed'] / st['offered']:.2f} | {st['released']:.0f} | {_ms(st['commit_rtt_ms_p50'])} "
                             f"| {', '.join(f'{x:.0f}' for x in st['runs'])} | {st['wall_s']:.0f} |")
    b = result["best"]
    k = b["knee"]
    where = f"at {k['offered']:.0f} offered" if k["reached"] else f"knee not reached by {k['offered']:.0f} offered"
    lines += ["", f"best knee: machines_per_actor {b['machines_per_actor']}, batch_interval {b['batch_interval']:g} s: "
                  f"{k['placed']:.0f} placements/s {where} ({k['placed'] / r:.2f}x raw calls/s); "
                  f"{_target(result['scenario']['tasks_per_job'], k['placed'])}"]
    return "\n".join(lines)


def _target(tasks_per_job: int, placed: float) -> str:
    target = KNEE_TARGETS.get(tasks_per_job)
    if target is None:
        return f"no target for jobs of {tasks_per_job} tasks"
    return f"target >= {target:,.0f} placements/s with jobs of {tasks_per_job} tasks: {'met' if placed >= target else 'NOT met'}"


def main(argv: list[str] | None = None) -> int:
    args = _parse(argv)
    t0 = time.perf_counter()
    started = ray_engine.connect(None, namespace="schedlab-bench")
    raw: list[float] = []
    configs = []
    try:
        # Raw calls/s before each configuration's ladder and once after the
        # last: the median spans the whole bench, as the noise does.
        for k in args.per_actor:
            for b in args.batch:
                raw.append(raw_calls_per_s())
                configs.append(climb(args, k, b))
        raw.append(raw_calls_per_s())
    finally:
        if started:
            ray_engine.shutdown()
    r = statistics.median(raw)
    for c in configs:
        c["knee"]["ratio_to_raw"] = c["knee"]["placed"] / r
        c["knee"]["commit_rtt_ms_p50"] = c["ladder"][c["knee"]["index"]]["commit_rtt_ms_p50"]
    result = {
        "shape": shape(args),
        "scenario": {"machines": args.machines, "schedulers": args.schedulers, "tasks_per_job": args.tasks_per_job,
                     "task_cpu": TASK_CPU, "task_mem": TASK_MEM, "task_mean_s": TASK_MEAN_S, "machine_cpu": MACHINE_CPU,
                     "machine_mem": MACHINE_MEM, "cell_slots": cell_slots(args.machines), "duration_s": args.duration,
                     "warmup_s": warmup(args.duration), "repeats": args.repeats, "loads": list(args.loads)},
        "knee_rule": {"saturated_below": SATURATED, "min_rise": MIN_RISE},
        "raw_calls_per_s": r, "raw_runs": raw,
        "configs": configs,
        "best": max(configs, key=lambda c: c["knee"]["placed"]),
    }
    result["elapsed_s"] = round(time.perf_counter() - t0, 1)
    print(render(result, args.ladder))
    log(f"bench took {result['elapsed_s']:.0f} s")
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
