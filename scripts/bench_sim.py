"""Benchmark of the sim engine: how fast a virtual clock emulates a cell,
per registered architecture, beside the live engine on the same scenario.

    python scripts/bench_sim.py [--machines 1000 10000] [--duration 600 120] [--repeats 1] [--per-actor 100 ...]
                                [--live-machines 1000] [--live-duration 120] [--no-live] [--css-seconds 600]
                                [--idle-seconds 1800] [--live-cell 10000] [--live-cell-duration 600]
                                [--arch NAME ...] [--json PATH] [--quick]

Printed, in one run:

* per cell size and architecture (the registry's, in its order): emulated
  seconds per wall second and task placements per wall second on the sim
  engine, and the CPU seconds this process spent (``time.process_time``: the
  sim engine runs every actor in this one process, so CPU time is its whole
  cost and, unlike wall time, is not inflated by other work on a shared
  machine);
* CPU seconds per simulated **cell-day**, extrapolated: the set-up's CPU
  (plan, actors, ready) once, plus the emulation's CPU per emulated second
  times 86,400; for the largest cell next to CSS's ~14 s of one core per
  10,000-machine cell-day (the Omega paper's simulator on its default
  experiment, measured on this machine: 21 cell-days in 150 s on 2 threads);
* the same for **CSS's default experiment itself** (``paper/css_example``:
  10,000 machines, CSS's example workload, its t_job 0.1 point) run for
  ``--css-seconds`` emulated per registered architecture (``--arch``
  narrows; one that CSS's file has no section for runs its registry example);
* **the idle clock**: CSS's cell and its prefill with no job arriving
  (``--idle-seconds`` emulated per registered architecture): what the substrate, the
  leaders and the samplers cost when nothing changes, per cell-day;
* **a live cell** (``--live-cell`` machines, ``--live-cell-duration``
  emulated s at time scale 50, 1,000 machines per host actor): every
  registered architecture on the live engine at that size, with the jobs it
  scheduled, its placements per wall second, its leader elections (events
  named ``*_elected``, and the coordinator group's Raft leader terms: with
  no fault in the run, each should be at most one) and its invariants;
* the ratio to the live engine: both engines on one **smaller, shorter**
  scenario (``--live-machines``, ``--live-duration``: a live run pays
  ~0.3 s of wall per actor started and runs at its time scale), emulated
  seconds and placements per wall second of the emulation phase (from the
  moment every actor has started to the end), sim over live.

**The scenario** (``bench_scenario``): machines of 4 cpu x 16 GB (CSS's),
100 per host actor, a 30% prefill, a batch class and a service class (or
the architecture's ``ArchSpec.bench_classes``: a web farm's pages) whose
arrival rates grow with the cell (the same load per machine at every size),
and each architecture's own ``ArchSpec.example`` section (the registry's
small valid set-up): generic code here names no architecture. Placements
are the tasks hosts launched (``tasks_launched`` events, prefill excluded),
counted the same way for every architecture.

Rates are medians over ``--repeats``. No speed target is asserted here or
in tests (tests/test_bench_sim.py runs ``--quick`` for shape only): the
targets of issue 27 are printed beside the numbers (``CSS_TARGETS``,
``IDLE_TARGET``: the only place this script names an architecture).
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from schedlab.schedulers import arch as registry
from schedlab.schedulers.events.shared import RAFT_ROLE, TASKS_LAUNCHED
from schedlab.scripts.options import parse_bench_args

TOOL_HELP = "the sim engine's speed per architecture, beside live"  # one line in `schedlab --help` (cli.tools)

CELL_DAY_S = 86400.0
CSS_CPU_S_PER_CELL_DAY = 14.0  # CSS's default experiment here: 21 cell-days of 10,000 machines, 150 s on 2 threads
CSS_MACHINES = 10000
PER_ACTOR = 100
TIME_SCALE = 50.0
CSS_SCENARIO = "paper/css_example"
# Issue 27's targets, CPU s per cell-day: CSS's experiment (CSS's own speed
# for the monolithic and shared-state schedulers, twice it for the two-level
# and replicated ones), and the idle clock for every architecture.
CSS_TARGETS = {"omega": 14.0, "dispatcher": 14.0, "mesos": 28.0, "borg": 28.0, "kubernetes": 28.0}
IDLE_TARGET = 2.0
LIVE_CELL_PER_ACTOR = 1000
QUICK = {"machines": [100, 300], "duration": [60.0, 30.0], "repeats": 1, "live": False, "css_seconds": 0.0, "idle_seconds": 0.0}


def bench_scenario(machines: int, duration: float, engine: str, arch: str, replicas: int,
                   per_actor: int = PER_ACTOR) -> dict[str, Any]:
    """The bench's scenario for ``arch`` (see the module doc). Per 1,000
    machines: a batch job every 2 s (10 tasks on average, 90 s each) and a
    service job every 30 s (5 tasks, running to the end), or the classes
    the architecture's ``ArchSpec.bench_classes`` offers instead (a web
    farm's pages)."""
    per_k = machines / 1000.0
    spec = registry.spec_of(arch)
    classes: list[dict[str, Any]] = spec.bench_classes(per_k) if spec.bench_classes is not None else [
        {"name": "batch", "kind": "batch", "interarrival": 2.0 / per_k, "tasks": {"dist": "exponential", "mean": 10.0},
         "duration": {"dist": "exponential", "mean": 90.0}, "cpu": 0.25, "mem": 0.5},
        {"name": "service", "kind": "service", "interarrival": 30.0 / per_k, "tasks": 5.0, "cpu": 0.5, "mem": 1.0},
    ]
    data: dict[str, Any] = {
        "name": f"bench-sim-{machines}",
        "architecture": arch,
        "engine": engine,
        "seed": 3,
        "time_scale": TIME_SCALE,
        "duration": duration,
        "cell": {"machines_per_actor": per_actor,
                 "machine_classes": [{"name": "m", "count": machines, "cpu": 4.0, "mem": 16.0, "racks": max(1, machines // 500)}]},
        "workload": {"prefill_utilization": 0.3, "classes": classes},
        "metrics": {"sample_interval": 10.0},
    }
    data[arch] = copy.deepcopy(spec.example(tuple(str(c["name"]) for c in classes)))
    data["coordinator"] = {"replicas": replicas}
    return data


def parse_bench(machines: int, duration: float, engine: str, arch: str, per_actor: int = PER_ACTOR) -> Any:
    """The bench scenario, parsed, with the architecture's default replica
    count, or 3 (the conformance suite's) when its example section needs
    a coordinator group (standby masters elect through one)."""
    from schedlab.actors.engines.limits import local_limits
    from schedlab.schedulers.scenario.parse import parse_scenario

    return with_replicas(arch, lambda n: parse_scenario(bench_scenario(machines, duration, engine, arch, n, per_actor),
                                                        "bench_sim", local_limits()))


def with_replicas(arch: str, parse: Callable[[int], Any]) -> Any:
    """``parse(replicas)`` with the architecture's default replica count, or
    3 (the conformance suite's) when its example section needs a coordinator
    group (standby masters elect through one) and the default is refused."""
    from schedlab.schedulers.scenario.toml_table import ScenarioError

    spec = registry.spec_of(arch)
    try:
        return parse(spec.default_replicas)
    except ScenarioError:
        return parse(min(3, spec.max_replicas))


@dataclass(frozen=True)
class Measured:
    """One run: wall and CPU seconds, in total and of the emulation phase
    (after every actor started), and the placements it made."""

    engine: str
    architecture: str
    machines: int
    emulated_s: float
    wall_s: float
    cpu_s: float
    emul_wall_s: float
    emul_cpu_s: float
    placements: int
    jobs_submitted: int
    jobs_scheduled: int
    invariants_ok: bool
    per_actor: int = PER_ACTOR
    elections: int = 0  # events named *_elected (a leader by lease, a Borgmaster)
    raft_terms: int = 0  # the coordinator group's terms that had a leader

    @property
    def emulated_per_wall(self) -> float:
        return self.emulated_s / self.emul_wall_s

    @property
    def placements_per_wall(self) -> float:
        return self.placements / self.emul_wall_s

    @property
    def cpu_per_cell_day(self) -> float:
        """Set-up CPU once, plus the emulation's CPU scaled to a day."""
        return (self.cpu_s - self.emul_cpu_s) + self.emul_cpu_s / self.emulated_s * CELL_DAY_S

    @property
    def emul_cpu_per_cell_day(self) -> float:
        """The emulation's CPU alone scaled to a day (set-up left out: what
        time passing costs)."""
        return self.emul_cpu_s / self.emulated_s * CELL_DAY_S


def tally(events: Path) -> tuple[int, int, int]:
    """(tasks hosts launched, prefill excluded; leader elections: events
    named ``*_elected``; Raft terms that had a leader). Only the lines that
    can match are parsed."""
    n, elected, terms = 0, 0, set()
    with events.open() as f:
        for line in f:
            if '"tasks_launched"' in line:
                e = json.loads(line)
                if e.get("event") == TASKS_LAUNCHED and not e.get("prefill"):
                    n += len(e["tasks"])
            elif '_elected"' in line or '"raft_role"' in line:
                e = json.loads(line)
                if e["event"].endswith("_elected"):
                    elected += 1
                elif e["event"] == RAFT_ROLE and e["role"] == "leader":
                    terms.add(e["term"])
    return n, elected, len(terms)


def measure(machines: int, duration: float, engine: str, arch: str, per_actor: int = PER_ACTOR) -> Measured:
    """Run the bench scenario once on ``engine`` and time it."""
    return measure_scenario(parse_bench(machines, duration, engine, arch, per_actor))


def measure_scenario(sc: Any) -> Measured:
    """Run a parsed scenario once on its engine and time it."""
    from schedlab.actors.run import run_scenario

    mark: dict[str, float] = {}

    def started(_namespace: str, _address: str) -> None:
        mark["wall"], mark["cpu"] = time.perf_counter(), time.process_time()

    with tempfile.TemporaryDirectory(prefix="bench-sim-") as out:
        w0, c0 = time.perf_counter(), time.process_time()
        s = run_scenario(sc, out, on_started=started)
        w1, c1 = time.perf_counter(), time.process_time()
        placed, elected, terms = tally(Path(out) / "events.jsonl")
    inv = s["invariants"]
    ok = all(not v for k, v in inv.items() if isinstance(v, (int, float)))
    machines = sum(mc.count for mc in sc.cell.machine_classes)
    return Measured(sc.engine, sc.architecture, machines, sc.duration, w1 - w0, c1 - c0, w1 - mark["wall"],
                    c1 - mark["cpu"], placed, s["jobs"]["submitted"], s["jobs"]["scheduled"], ok, sc.cell.machines_per_actor,
                    elected, terms)


def css_scenario(arch: str, seconds: float) -> Any:
    """CSS's default experiment (``paper/css_example``: 10,000 machines, its
    example workload; the t_job 0.1 point) for ``seconds`` emulated, run by
    ``arch``. An architecture CSS's file has no section for runs its
    registry example (``with_replicas``: as the bench scenario does)."""
    from schedlab.api.scenario_files import load_data
    from schedlab.schedulers.scenario.parse import parse_comparison

    data = load_data(CSS_SCENARIO, None)
    d = {**data, "architectures": [arch], "engine": "sim", "duration": seconds}
    d.setdefault(arch, copy.deepcopy(registry.spec_of(arch).example(("batch", "service"))))  # CSS's job classes
    if "coordinator" in d:  # the file's own set-up
        return parse_comparison(d, CSS_SCENARIO)[0]
    return with_replicas(arch, lambda n: parse_comparison({**d, "coordinator": {"replicas": n}}, CSS_SCENARIO)[0])


def css_runs(seconds: float, only: list[str] | None = None) -> list[Measured]:
    """CSS's default experiment for ``seconds`` emulated, once per
    registered architecture (``css_scenario``)."""
    return [measure_scenario(css_scenario(a, seconds)) for a in registry.names() if only is None or a in only]


def idle_runs(seconds: float, only: list[str] | None = None) -> list[Measured]:
    """CSS's cell with its prefill and no job arriving, for ``seconds``
    emulated, for every registered architecture (``css_scenario``): the
    cost of time passing alone (host heartbeats, leases, health checks,
    samplers), which a cost that grows with work keeps near zero."""
    runs = []
    for a in registry.names():
        if only is None or a in only:
            sc = css_scenario(a, seconds)
            runs.append(measure_scenario(dataclasses.replace(sc, workload=dataclasses.replace(sc.workload, classes=()))))
    return runs


def live_cell_runs(machines: int, duration: float, only: list[str] | None = None) -> tuple[list[Measured], list[str]]:
    """Every registered architecture on the live engine at ``machines``
    (the bench scenario, ``LIVE_CELL_PER_ACTOR`` machines per host actor),
    and what could not be measured (Ray failing to start on a loaded machine)."""
    runs, failed = [], []
    for a in registry.names():
        if only is not None and a not in only:
            continue
        try:
            runs.append(measure(machines, duration, "ray", a, LIVE_CELL_PER_ACTOR))
        except Exception as e:  # say so, keep the rest
            failed.append(f"live cell {a}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            log(failed[-1])
    return runs, failed


def median_run(machines: int, duration: float, engine: str, arch: str, repeats: int, per_actor: int = PER_ACTOR) -> Measured:
    """The repeat with the median emulation wall time (its numbers all from one run)."""
    runs = sorted((measure(machines, duration, engine, arch, per_actor) for _ in range(repeats)), key=lambda m: m.emul_wall_s)
    return runs[len(runs) // 2]


def log(msg: str) -> None:
    """Progress, on stderr: stdout is the results."""
    print(msg, file=sys.stderr, flush=True)


def _row(m: Measured) -> str:
    return (f"| {m.machines:,} | {m.per_actor} | {m.architecture} | {m.emulated_s:g} | {m.emul_wall_s:.2f} | {m.emul_cpu_s:.2f} | "
            f"{m.emulated_per_wall:,.0f} | {m.placements_per_wall:,.0f} | {m.cpu_per_cell_day:,.0f} | "
            f"{m.jobs_scheduled}/{m.jobs_submitted} | {'ok' if m.invariants_ok else 'VIOLATED'} |")


def _verdict(value: float, target: float | None) -> str:
    if target is None:
        return "-"
    return f"<= {target:g}: {'met' if value <= target else 'NOT met'}"


def report(sim: list[Measured], live: list[tuple[Measured, Measured]], css: list[Measured] | None = None,
           idle: list[Measured] | None = None, cell: list[Measured] | None = None) -> str:
    """The results as markdown tables (what docs/results/performance.md shows)."""
    out = ["sim engine (emulation phase: wall and CPU after every actor started):", "",
           "| machines | per host actor | architecture | emulated s | wall s | CPU s | emulated s / wall s | placements / wall s "
           "| CPU s per cell-day | jobs scheduled/submitted | invariants |",
           "| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |"]
    out += [_row(m) for m in sim]
    big = [m for m in sim if m.machines == max(x.machines for x in sim)] if sim else []
    if big:
        out += ["", f"CPU s per simulated {big[0].machines:,}-machine cell-day (extrapolated), "
                    f"next to CSS's ~{CSS_CPU_S_PER_CELL_DAY:g} s per {CSS_MACHINES:,}-machine cell-day:"]
        out += [f"  {m.architecture} ({m.per_actor} machines per host actor): {m.cpu_per_cell_day:,.0f} s "
                f"({m.cpu_per_cell_day / CSS_CPU_S_PER_CELL_DAY:.1f}x CSS)" for m in big]
    if css:
        out += ["", f"CSS's default experiment ({CSS_SCENARIO}, {css[0].machines:,} machines, t_job 0.1 point, "
                    f"{css[0].emulated_s:g} emulated s per run), CPU s per cell-day extrapolated, next to CSS's "
                    f"~{CSS_CPU_S_PER_CELL_DAY:g} s:", "",
                "| architecture | emulated s / wall s | emulation CPU s | CPU s per cell-day | x CSS | target | "
                "jobs scheduled/submitted | invariants |",
                "| --- | ---: | ---: | ---: | ---: | --- | --- | --- |"]
        out += [f"| {m.architecture} | {m.emulated_per_wall:,.0f} | {m.emul_cpu_s:.2f} | {m.cpu_per_cell_day:,.0f} | "
                f"{m.cpu_per_cell_day / CSS_CPU_S_PER_CELL_DAY:.0f} | {_verdict(m.cpu_per_cell_day, CSS_TARGETS.get(m.architecture))} | "
                f"{m.jobs_scheduled}/{m.jobs_submitted} | {'ok' if m.invariants_ok else 'VIOLATED'} |" for m in css]
    if idle:
        out += ["", f"The idle clock: CSS's cell and prefill, no job arriving ({idle[0].emulated_s:g} emulated s per run), "
                    "the emulation's CPU s per cell-day extrapolated (set-up left out):", "",
                "| architecture | emulated s / wall s | emulation CPU s | emulation CPU s per cell-day | target |",
                "| --- | ---: | ---: | ---: | --- |"]
        out += [f"| {m.architecture} | {m.emulated_per_wall:,.0f} | {m.emul_cpu_s:.2f} | {m.emul_cpu_per_cell_day:,.1f} | "
                f"{_verdict(m.emul_cpu_per_cell_day, IDLE_TARGET)} |" for m in idle]
    if cell:
        c0 = cell[0]
        out += ["", f"The live engine on a {c0.machines:,}-machine cell ({c0.per_actor:,} machines per host actor, "
                    f"{c0.emulated_s:g} emulated s at time scale {TIME_SCALE:g}, no fault; emulation phase):", "",
                "| architecture | emulated s / wall s | placements / wall s | jobs scheduled/submitted | elections "
                "| Raft leader terms | invariants |",
                "| --- | ---: | ---: | --- | ---: | ---: | --- |"]
        out += [f"| {m.architecture} | {m.emulated_per_wall:,.1f} | {m.placements_per_wall:,.0f} | "
                f"{m.jobs_scheduled}/{m.jobs_submitted} | {m.elections} | {m.raft_terms} | "
                f"{'ok' if m.invariants_ok else 'VIOLATED'} |" for m in cell]
    if live:
        s0, l0 = live[0]
        out += ["", f"sim vs live on one smaller scenario ({l0.machines:,} machines, {l0.emulated_s:g} emulated s, "
                    f"live at time_scale {TIME_SCALE:g}; emulation phase only):", "",
                "| architecture | live emulated s / wall s | sim emulated s / wall s | ratio | live placements / wall s "
                "| sim placements / wall s | ratio |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for s, lv in live:
            out.append(f"| {s.architecture} | {lv.emulated_per_wall:,.1f} | {s.emulated_per_wall:,.0f} | "
                       f"{s.emulated_per_wall / lv.emulated_per_wall:,.0f}x | {lv.placements_per_wall:,.0f} | "
                       f"{s.placements_per_wall:,.0f} | {s.placements_per_wall / max(lv.placements_per_wall, 1e-9):,.0f}x |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--machines", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--duration", type=float, nargs="+", default=[600.0, 120.0],
                    help="emulated seconds per cell size (one value, or one per --machines)")
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--per-actor", type=int, nargs="+", default=[PER_ACTOR],
                    help="machines per host actor (each value for every sim cell size; the live comparison uses the first)")
    ap.add_argument("--live-machines", type=int, default=1000)
    ap.add_argument("--live-duration", type=float, default=120.0)
    ap.add_argument("--no-live", dest="live", action="store_false")
    ap.add_argument("--css-seconds", type=float, default=600.0,
                    help="emulated seconds of CSS's default experiment per architecture (0: skip it)")
    ap.add_argument("--idle-seconds", type=float, default=1800.0,
                    help="emulated seconds of CSS's cell with no jobs per architecture (0: skip it)")
    ap.add_argument("--live-cell", type=int, default=0,
                    help="machines of a live cell run by every architecture (0: skip; issue 27's is 10000)")
    ap.add_argument("--live-cell-duration", type=float, default=600.0, help="emulated seconds of each live cell run")
    ap.add_argument("--arch", nargs="+", default=None, help="these registered architectures only (default: all)")
    args = parse_bench_args(ap, argv, QUICK, "small cells, short runs, sim only: for tests")
    if len(args.duration) == 1:
        args.duration = args.duration * len(args.machines)
    if len(args.duration) != len(args.machines):
        ap.error("--duration: one value, or one per --machines")
    archs = list(args.arch or registry.names())
    sim: list[Measured] = []
    for machines, duration in zip(args.machines, args.duration):
        for k in args.per_actor:
            for a in archs:
                m = median_run(machines, duration, "sim", a, args.repeats, k)
                log(f"sim {machines} k={k} {a}: {m.emulated_per_wall:,.0f} emulated s/wall s, emulation CPU {m.emul_cpu_s:.1f} s")
                sim.append(m)
    css = css_runs(args.css_seconds, args.arch) if args.css_seconds > 0 else []
    for m in css:
        log(f"css {m.architecture}: {m.cpu_per_cell_day:,.0f} CPU s per cell-day")
    idle = idle_runs(args.idle_seconds, args.arch) if args.idle_seconds > 0 else []
    for m in idle:
        log(f"idle {m.architecture}: {m.emul_cpu_per_cell_day:,.1f} CPU s per cell-day")
    live: list[tuple[Measured, Measured]] = []
    cell, failed = live_cell_runs(args.live_cell, args.live_cell_duration, args.arch) if args.live_cell > 0 else ([], [])
    for m in cell:
        log(f"live cell {m.machines} {m.architecture}: {m.jobs_scheduled}/{m.jobs_submitted} jobs, {m.elections} elections")
    if args.live:
        for a in archs:
            s = median_run(args.live_machines, args.live_duration, "sim", a, args.repeats, args.per_actor[0])
            try:
                lv = median_run(args.live_machines, args.live_duration, "ray", a, 1, args.per_actor[0])
            except Exception as e:  # a live run on a loaded machine can fail to start Ray: say so, keep the rest
                failed.append(f"live {a}: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                log(failed[-1])
                continue
            log(f"live {args.live_machines} {a}: {lv.emulated_per_wall:,.1f} emulated s/wall s")
            live.append((s, lv))
    print(report(sim, live, css, idle, cell))
    for f in failed:
        print(f"not measured: {f}")
    bad = [m for m in sim + css + idle + cell + [x for pair in live for x in pair] if not m.invariants_ok]
    if args.json is not None:
        args.json.write_text(json.dumps({"sim": [asdict(m) for m in sim], "css": [asdict(m) for m in css],
                                         "idle": [asdict(m) for m in idle], "live_cell": [asdict(m) for m in cell],
                                         "live": [{"sim": asdict(s), "live": asdict(lv)} for s, lv in live]}, indent=2) + "\n")
    if bad:
        print(f"invariants violated in: {', '.join(f'{m.engine} {m.architecture} {m.machines}' for m in bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
