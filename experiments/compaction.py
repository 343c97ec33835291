"""Cell compaction: the smallest cell each Borg scoring policy needs.

    schedlab compaction SCENARIO.toml [--seeds 11] [--policies best_fit,worst_fit,hybrid] [--sample N]
    schedlab compaction --trace CONVERTED.npz [--at SECONDS] [...]

The workload snapshot is the scenario's standing load (prefill) plus every
job arriving in its first ``duration`` seconds, all running at once; or,
from a converted trace (``schedlab trace convert``), the machines present
at ``--at`` seconds (default: the middle of its window) and the tasks
running on them then, as the Borg paper built its snapshots of Google's
cells (section 5.1). For each
seed, machines are removed in a random order until the workload no longer
fits; the table shows, per policy, the median and range of the smallest cell
as a number of machines and as a fraction of the original.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys

import numpy as np
from rich.console import Console
from rich.table import Table

from schedlab.schedulers.archs.borg.compaction import SnapshotJob, smallest_cell
from schedlab.schedulers.archs.borg.placement import SCORING, PlacementParams
from schedlab.schedulers.model.cluster import build_cell
from schedlab.schedulers.scenario.parse import ScenarioError
from schedlab.schedulers.model.workload import generate_jobs, prefill
from schedlab.api.scenario_files import load_scenario
from schedlab.cli.command import error
from schedlab.schedulers.traces.form import TraceError

TOOL_HELP = "the smallest cell each Borg scoring policy needs"  # one line in `schedlab --help` (cli.tools)


def trace_snapshot(path: str, at: float | None) -> tuple[np.ndarray, list[SnapshotJob], str]:
    """(capacity, jobs, a title) of a converted trace's cell at ``at`` (None: mid-window); TraceError if unreadable."""
    from schedlab.schedulers.traces.form import Trace
    from schedlab.schedulers.traces.snapshot import snapshot as at_instant

    trace = Trace.load(path)
    when = trace.span / 2 if at is None else at
    capacity, running = at_instant(trace, when)
    return capacity, [SnapshotJob(r.request, r.tasks, r.priority) for r in running], f"{path} at {when:,.0f} s"


def snapshot(sc) -> list[SnapshotJob]:
    cell = build_cell(sc.cell.machine_classes, sc.cell.resources)
    pre = prefill(cell, sc.workload.classes, sc.workload.prefill_utilization, sc.seed)
    jobs = [*pre.jobs, *generate_jobs(sc.workload.classes, sc.duration, sc.seed)]
    return [SnapshotJob(j.request_vector(), j.tasks, j.priority) for j in jobs]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="schedlab compaction", description=__doc__.split("\n\n")[0])
    p.add_argument("scenario", nargs="?", help="a scenario file (or give --trace)")
    p.add_argument("--trace", help="a converted trace (schedlab trace convert): its cell at --at")
    p.add_argument("--at", type=float, help="with --trace: seconds into its window (default: the middle)")
    p.add_argument("--seeds", type=int, default=11)
    p.add_argument("--policies", default=",".join(SCORING))
    p.add_argument("--sample", type=int, default=0, help="relaxed randomization: score at most N feasible machines")
    p.add_argument("--duration", type=float, help="snapshot this many emulated seconds of arrivals (default: the scenario's)")
    args = p.parse_args(argv)
    if (args.scenario is None) == (args.trace is None):
        error("give a scenario file or --trace, not both")
        return 2
    try:
        policies = args.policies.split(",")
        bad = [x for x in policies if x not in SCORING]
        if bad:
            raise ScenarioError(f"--policies: unknown scoring policy {bad[0]!r}; known: {', '.join(SCORING)}")
        if args.trace is not None:
            capacity, jobs, name = trace_snapshot(args.trace, args.at)
        else:
            sc = load_scenario(args.scenario)
            if args.duration:
                sc = dataclasses.replace(sc, duration=args.duration)
            capacity, jobs, name = build_cell(sc.cell.machine_classes, sc.cell.resources).capacity, snapshot(sc), sc.name
    except (ScenarioError, TraceError) as e:
        error(str(e))
        return 2
    size = capacity.shape[0]
    console = Console()
    t = Table(title=f"cell compaction: {name}, {size} machines, {sum(j.tasks for j in jobs)} tasks, {args.seeds} seeds")
    for col in ("policy", "smallest cell p50", "min-max", "fraction of cell"):
        t.add_column(col, justify="right")
    for policy in policies:
        sizes = np.array([smallest_cell(capacity, jobs, PlacementParams(policy, args.sample or None), seed)
                          for seed in range(args.seeds)])
        if (sizes > size).any():
            t.add_row(policy, "does not fit", f"in {int((sizes > size).sum())} of {args.seeds} seeds", "-")
            continue
        t.add_row(policy, f"{np.median(sizes):g}", f"{sizes.min()}-{sizes.max()}", f"{np.median(sizes) / size:.2f}")
    console.print(t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
