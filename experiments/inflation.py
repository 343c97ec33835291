"""Workload inflation on a GPU cell: how much GPU capacity each placement
policy leaves unallocated as tasks pile up (Weng et al., "Beware of
Fragmentation", USENIX ATC 2023, section 6: their simulator's experiment).

    schedlab inflation [--trace openb|pai] [--nodes FILE] [--pods FILE] [--policies fgd,best_fit,...] [--seeds 3] [--until 1.3]

The cell is an openb node list (or PAI's machine spec), the tasks an openb
pod list (or PAI's task table, one task per instance): the shipped samples
by default; the real files are alibaba/clusterdata's
cluster-trace-gpu-v2023 and cluster-trace-gpu-v2020. Tasks are drawn from the pod list (with
replacement, seeded) and placed one at a time, never leaving, until the
GPUs they asked for reach ``--until`` times the cell's; a task that fits
nowhere is skipped (it counts as arrived, not allocated). The table shows,
per policy, the share of the cell's GPUs left unallocated when the arrived
GPU demand reached 100% of them (0 would be perfect packing), the GPU
fragmentation then (the paper's measure, against the pod list's task
shapes), and the unallocated share at the end (``--until``), when smaller
tasks have had their chance to fill the holes; means over seeds. FGD's target workload is the pod list's popular
shapes (those covering 95% of its pods), as the paper's simulator takes it.

Pure placement, no actors and no time: what the paper isolates is packing,
not scheduling delay. The same policies run inside an architecture, with
arrivals, departures and concurrent schedulers, in a scenario with
``[cell] devices`` (scenarios/openb_replay.toml; docs/concepts/devices.md).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from schedlab.cli.command import EXIT_BAD_INPUT, error
from schedlab.schedulers.model.alibaba_gpu import Node, Task, TraceError, openb_nodes, openb_tasks, pai_machines, pai_tasks
from schedlab.schedulers.model.devices import layout
from schedlab.schedulers.placement import device_policies as dp
from schedlab.schedulers.placement.fragmentation import DeviceCell, Shape, cell_fragmentation, typical, workload_of

TOOL_HELP = "workload inflation: GPUs each device placement policy leaves unallocated (FGD and baselines)"

SAMPLES = Path(__file__).resolve().parent.parent / "scenarios" / "workloads"
COLUMN = 2  # cpu, mem, then the GPUs
POLICY_NAMES = (*dp.POLICIES, "gpu_clustering")
# Each trace's readers (nodes, tasks) and its shipped samples.
TRACES = {
    "openb": (openb_nodes, openb_tasks, "openb_node_list_sample.csv", "openb_pod_list_sample.csv"),
    "pai": (pai_machines, pai_tasks, "pai_machine_spec_sample.csv", "pai_task_table_sample.csv"),
}


def cell_of(nodes: list[Node]) -> tuple[DeviceCell, dict[str, int]]:
    """The cell (cpu, mem, GPUs) and each GPU model's index."""
    models = {m: i for i, m in enumerate(sorted({n.model for n in nodes if n.model}))}
    cap = np.array([[n.cpu, n.mem, float(n.devices)] for n in nodes], dtype=np.float64).reshape(len(nodes), 3)
    model = np.array([models.get(n.model, -1) for n in nodes], dtype=np.int64)
    return DeviceCell(cap.copy(), cap, layout([n.devices for n in nodes]), model, COLUMN), models


def shape_of(t: Task, models: dict[str, int]) -> Shape:
    allowed = frozenset(models[m] for m in t.models if m in models) if t.models else None
    return Shape((t.cpu, t.mem, t.devices), allowed)


def inflate(cell: DeviceCell, shapes: list[Shape], policy: str, workload: list, seed: int,
            until: float = 1.3) -> list[tuple[float, float, float]]:
    """(arrived GPU demand, allocated GPUs, fragmented GPUs), each a share of
    the cell's GPUs, after every task, until arrived reaches ``until``."""
    rng = np.random.default_rng(seed)
    draw = np.random.default_rng([seed, 1])
    c = cell.copy()
    place = dp.clustering(np.zeros((c.devices.shape[0], dp.KINDS))) if policy == "gpu_clustering" else dp.POLICIES[policy]
    total = float(cell.capacity[:, COLUMN].sum())
    arrived = allocated = 0.0
    out = []
    while arrived < until * total:
        s = shapes[int(draw.integers(len(shapes)))]
        amount = s.request[COLUMN]
        arrived += amount
        machines, _ = place(c, s, 1, rng, workload)
        if machines[0] >= 0:
            allocated += amount
        if amount:
            out.append((arrived / total, allocated / total, cell_fragmentation(c, workload) / total))
    return out


def at(curve: list[tuple[float, float, float]], arrived: float) -> tuple[float, float]:
    """(unallocated, fragmented) shares when arrived demand first reached ``arrived``."""
    for a, alloc, frag in curve:
        if a >= arrived:
            return 1.0 - alloc, frag
    a, alloc, frag = curve[-1]
    return 1.0 - alloc, frag


def plot(curves: dict[str, list[list[tuple[float, float, float]]]], until: float, title: str, path: Path) -> None:
    """Unallocated GPUs against arrived GPU demand, per policy (its mean over
    seeds on a common grid), as the paper's figure draws them."""
    from schedlab.actors.analysis import plots

    grid = np.linspace(0.05, until, 60)
    fig, axs = plots.figure(size=(8.0, 4.6))
    ax = axs[0][0]
    for policy, runs in curves.items():
        un = np.mean([np.interp(grid, [a for a, _, _ in c], [1.0 - al for _, al, _ in c]) for c in runs], axis=0)
        ax.plot(grid, un, lw=1.4, label=policy)
    ax.axvline(1.0, color="grey", ls=":", lw=0.8)
    ax.set(xlabel="arrived GPU demand (share of the cell's GPUs)", ylabel="GPUs unallocated (share of the cell's)",
           title=title)
    plots.percent_axis(ax, "x")
    plots.percent_axis(ax, "y")
    ax.grid(alpha=0.3)
    plots.legend(ax, fontsize="small")
    plots.save(fig, path)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="schedlab inflation", description=TOOL_HELP)
    ap.add_argument("--trace", choices=sorted(TRACES), default="openb", help="which trace's files (default openb)")
    ap.add_argument("--nodes", type=Path, help="its node list (openb) or machine spec (pai); default: the shipped sample")
    ap.add_argument("--pods", type=Path, help="its pod list (openb) or task table (pai); default: the shipped sample")
    ap.add_argument("--policies", default="fgd,best_fit,dot_product,gpu_packing,gpu_clustering,random_fit")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--until", type=float, default=1.3, help="stop when the arrived GPU demand is this many times the cell's")
    ap.add_argument("--plot", type=Path, help="also draw unallocated GPUs against arrived demand per policy to this PNG")
    a = ap.parse_args(argv)
    policies = [p.strip() for p in a.policies.split(",") if p.strip()]
    bad = [p for p in policies if p not in POLICY_NAMES]
    if bad or not policies:
        error(f"--policies: {bad[0] if bad else '(none)'!r} is not one of {', '.join(POLICY_NAMES)}")
        return EXIT_BAD_INPUT
    if a.seeds < 1 or not 1.0 <= a.until <= 5.0:
        error("--seeds must be >= 1 and --until within [1, 5]")
        return EXIT_BAD_INPUT
    read_nodes, read_tasks, node_sample, task_sample = TRACES[a.trace]
    a.nodes, a.pods = a.nodes or SAMPLES / node_sample, a.pods or SAMPLES / task_sample
    try:
        nodes, tasks = list(read_nodes(a.nodes)), list(read_tasks(a.pods))
    except TraceError as e:
        error(str(e))
        return EXIT_BAD_INPUT
    if not tasks or not any(n.devices for n in nodes):
        error(f"{a.pods if not tasks else a.nodes}: no {'pods' if not tasks else 'GPUs'} to place")
        return EXIT_BAD_INPUT
    cell, models = cell_of(nodes)
    shapes = [shape_of(t, models) for t in tasks]
    if not any(s.request[COLUMN] > 0 for s in shapes):
        error(f"{a.pods}: no task asks for a GPU: nothing to inflate")
        return EXIT_BAD_INPUT
    workload = typical(workload_of([s.request for s in shapes], [s.models for s in shapes]), 0.95)
    table = Table(title=f"workload inflation ({a.trace}): {len(tasks)} tasks drawn onto {len(nodes)} nodes "
                        f"({int(cell.capacity[:, COLUMN].sum())} GPUs), {a.seeds} seeds; at 100% arrived")
    for col in ("policy", "unallocated GPUs", "fragmented GPUs", "range (unallocated)", f"unallocated at {a.until:.0%}", "cpu s"):
        table.add_column(col, justify="left" if col == "policy" else "right")
    drawn: dict[str, list] = {}
    for p in policies:
        t0 = time.process_time()
        curves = drawn[p] = [inflate(cell, shapes, p, workload, seed, a.until) for seed in range(a.seeds)]
        runs = [at(c, 1.0) for c in curves]
        un = [u for u, _ in runs]
        table.add_row(p, f"{np.mean(un):.1%}", f"{np.mean([f for _, f in runs]):.1%}", f"{min(un):.1%} - {max(un):.1%}",
                      f"{np.mean([1.0 - c[-1][1] for c in curves]):.1%}", f"{time.process_time() - t0:.1f}")
    Console(width=120).print(table)
    if a.plot is not None:
        plot(drawn, a.until, f"workload inflation ({a.trace}), {a.seeds} seeds", a.plot)
        print(f"wrote {a.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
