"""Benchmark of production traces at a production cell's size: writing a
synthetic trace in a format's exact schema, converting it, loading and
describing the converted form, and replaying it on the sim engine.

    python scripts/bench_traces.py [--format google2019] [--machines 12000] [--jobs 200000] [--hours 24]
                                   [--replay-hours 1] [--arch omega] [--dir DIR] [--json PATH] [--quick]

The size the issue asks to design for is a one-day window of a 12,000-
machine Google cell: millions of task events. Each step runs in a fresh
Python process, so its peak memory (``getrusage``'s maximum resident set)
is its own; CPU seconds are ``time.process_time`` (CPU, not wall: other
work on a shared machine inflates them less).

* **write**: the format's sample writer (``schedulers.traces.samples``),
  gzipped, streaming to disk;
* **convert**: ``schedlab trace convert`` (the reader, the fold, the builder);
* **load**: ``Trace.load`` of the converted file;
* **info**: ``schedlab trace info``'s facts (load over time included);
* **replay**: ``--replay-hours`` of the converted trace (from
  ``--replay-start``) as a
  scenario (``[workload.trace]``: the trace's cell, its tiers mapped onto
  the architecture's example batch and service classes) on the sim engine:
  parse, plan, run, summary. With machines joining and leaving as the
  trace says, each machine on a host actor of its own (the default), or,
  with ``--static-cell``, the machines at the start on one host actor.

No speed target is asserted in tests (tests/test_bench_traces.py runs
``--quick`` for shape only); the numbers and the load they were taken under
go in docs/results/traces.md.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from schedlab.scripts.options import parse_bench_args

TOOL_HELP = "trace conversion and replay at a production cell's size: CPU and peak memory per step"

QUICK = {"machines": 60, "jobs": 400, "hours": 2.0, "replay_hours": 0.5}
STEPS = ("write", "convert", "load", "info", "replay")
SERVICE_TIERS = {"google2019": ("production", "monitoring"), "google2011": ("production", "monitoring"),
                 "alibaba2018": ("online",), "azure2020": ()}


def _measure(fn: Any) -> dict[str, Any]:
    wall, cpu = time.perf_counter(), time.process_time()
    facts = fn()
    return {"cpu_s": round(time.process_time() - cpu, 3), "wall_s": round(time.perf_counter() - wall, 3),
            "peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1), **facts}


def step(name: str, a: dict[str, Any]) -> dict[str, Any]:
    """One step, in this process (the bench runs each in its own)."""
    from schedlab.schedulers.traces.form import Trace

    src, npz = Path(a["dir"]) / "src", Path(a["dir"]) / "trace.npz"
    if name == "write":
        import importlib
        writer = importlib.import_module(f"schedlab.schedulers.traces.samples.{a['format']}")
        return _measure(lambda: (writer.write(src, machines=a["machines"], jobs=a["jobs"], hours=a["hours"], seed=1,
                                              gz=True), {"on_disk_mb": _size_mb(src)})[1])
    if name == "convert":
        from schedlab.schedulers.traces.readers import convert

        def run() -> dict[str, Any]:
            t = convert(src, a["format"])
            t.save(npz)
            return {"machines": t.machines, "jobs": t.jobs, "tasks": t.tasks,
                    "task_events": t.meta.get("task_events"), "npz_mb": _size_mb(npz)}
        return _measure(run)
    if name == "load":
        return _measure(lambda: {"tasks": Trace.load(npz).tasks})
    if name == "info":
        from schedlab.schedulers.traces.info import describe
        return _measure(lambda: {"load": describe(Trace.load(npz))["load"]})
    return _measure(lambda: _replay(npz, a))


def _replay(npz: Path, a: dict[str, Any]) -> dict[str, Any]:
    from schedlab.actors.run import run_scenario
    from schedlab.schedulers import arch as registry
    from schedlab.schedulers.scenario.parse import parse_scenario
    from schedlab.schedulers.traces.form import Trace

    trace = Trace.load(npz)
    service = SERVICE_TIERS.get(a["format"], ())
    span = a["replay_hours"] * 3600.0
    start = a.get("replay_start", 0.0) * 3600.0
    data = {"name": f"bench-{a['format']}", "architecture": a["arch"], "engine": "sim", "duration": span, "seed": 1,
            "cell": {"machines_per_actor": trace.machines if a["static_cell"] else 1},
            "workload": {"trace": {"file": str(npz), "window": [start, start + span], "machine_events": not a["static_cell"],
                                   "classes": {t: "service" if t in service else "batch" for t in trace.tiers}}},
            a["arch"]: registry.spec_of(a["arch"]).example(("batch", "service"))}
    with tempfile.TemporaryDirectory() as out:
        s = run_scenario(parse_scenario(data, "<bench>"), Path(out))
    return {"emulated_s": span, "host_actors": s["cell"]["host_actors"], "machine_faults": len(s["faults"]),
            "jobs_submitted": s["jobs"]["submitted"], "jobs_scheduled": s["jobs"]["scheduled"],
            "invariants_hold": not any(s["invariants"].values()), "cpu_utilization": s["utilization"]["cpu_mean"]}


def _size_mb(p: Path) -> float:
    files = [p] if p.is_file() else [f for f in p.rglob("*") if f.is_file()]
    return round(sum(f.stat().st_size for f in files) / 2**20, 1)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--format", default="google2019", choices=tuple(SERVICE_TIERS))
    ap.add_argument("--machines", type=int, default=12_000)
    ap.add_argument("--jobs", type=int, default=200_000)
    ap.add_argument("--hours", type=float, default=24.0)
    ap.add_argument("--replay-hours", type=float, default=1.0, help="the window replayed (hours)")
    ap.add_argument("--replay-start", type=float, default=0.0, help="where the replayed window starts (hours into the trace)")
    ap.add_argument("--arch", default="omega", help="the architecture replaying it (its registry example section)")
    ap.add_argument("--static-cell", action="store_true",
                    help="replay on the machines at the start, one host actor for the cell (no machines joining or leaving)")
    ap.add_argument("--dir", help="keep the trace here (default: a temporary folder)")
    ap.add_argument("--steps", default=",".join(STEPS),
                    help="which steps, comma-separated (default all; later steps reuse what --dir holds)")
    ap.add_argument("--step", choices=STEPS, help=argparse.SUPPRESS)  # one step, in this process
    ap.add_argument("--args", help=argparse.SUPPRESS)
    args = parse_bench_args(ap, argv, QUICK, "a small cell and a short window: for tests")
    if args.step:
        print(json.dumps(step(args.step, json.loads(args.args))))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        a = {"format": args.format, "machines": args.machines, "jobs": args.jobs, "hours": args.hours,
             "replay_hours": args.replay_hours, "replay_start": args.replay_start, "arch": args.arch,
             "dir": args.dir or tmp, "static_cell": args.static_cell}
        Path(a["dir"]).mkdir(parents=True, exist_ok=True)
        rows = []
        print(f"{args.format}: {args.machines} machines, {args.jobs} jobs, {args.hours:g} h; load average "
              f"{os.getloadavg()[0]:.2f} at the start")
        print("| step | CPU s | wall s | peak MB | facts |\n| --- | ---: | ---: | ---: | --- |")
        for name in [x for x in STEPS if x in args.steps.split(",")]:
            r = subprocess.run([sys.executable, "-m", "schedlab.scripts.bench_traces", "--step", name, "--args",
                                json.dumps(a)], capture_output=True, text=True)
            if r.returncode != 0:
                print(r.stderr, file=sys.stderr)
                return 1
            got = json.loads(r.stdout.strip().splitlines()[-1])
            rows.append({"step": name, **got})
            facts = ", ".join(f"{k} {v}" for k, v in got.items() if k not in ("cpu_s", "wall_s", "peak_mb"))
            print(f"| {name} | {got['cpu_s']:.2f} | {got['wall_s']:.2f} | {got['peak_mb']:.0f} | {facts} |", flush=True)
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)}, "steps": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
