"""How fast the pure Kubernetes scheduling cycle is: ``schedule_one`` with
the default profile on a scheduler_perf "SchedulingBasic"-shaped cell
(nodes of 4 cpu / 32 GiB, pods of 0.1 cpu / 0.5 GiB, no affinity or
spread), each pod assumed on its node so the next cycle sees it.

    python -m schedlab.scripts.bench_k8s_cycle [--nodes 5000] [--pods 50000] [--batch 1000]

Prints the median pods/s over batches of ``--batch`` pods, beside the
upstream CI threshold for 5,000 nodes / 50,000 pods (810 pods/s). This is
the decision alone: no queue, no API store, no engine (scripts/bench_k8s.py
measures the whole architecture).
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from schedlab.schedulers.archs.kubernetes.cluster_view import ClusterView
from schedlab.schedulers.archs.kubernetes.framework import schedule_one
from schedlab.schedulers.archs.kubernetes.objects import HOSTNAME, ZONE, Node, Pod, labels
from schedlab.schedulers.archs.kubernetes.registry import default_profile

TOOL_HELP = "the pure Kubernetes scheduling cycle alone"  # one line in `schedlab --help` (cli.tools)

UPSTREAM_THRESHOLD = 810  # pods/s, SchedulingBasic 5000 nodes / 50000 pods


def cell(n: int) -> ClusterView:
    return ClusterView([Node(i, f"node-{i}", (4.0, 32.0), labels({HOSTNAME: f"node-{i}", ZONE: f"zone-{i % 3}"})) for i in range(n)])


def run(nodes: int, pods: int, batch: int, seed: int = 0) -> list[float]:
    """pods/s of each full batch of cycles."""
    view, prof, rng = cell(nodes), default_profile(), np.random.default_rng(seed)
    start, rates, unscheduled = 0, [], 0
    for b0 in range(0, pods - batch + 1, batch):
        t0 = time.perf_counter()
        for j in range(b0, b0 + batch):
            r = schedule_one(prof, Pod((0, j), (0.1, 0.5)), view, start_index=start, rng=rng)
            start = r.next_start_index
            unscheduled += r.node is None
        rates.append(batch / (time.perf_counter() - t0))
    if unscheduled:
        raise SystemExit(f"{unscheduled} pods found no node: the cell is too small for --pods")
    return rates


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench_k8s_cycle")
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=50000)
    p.add_argument("--batch", type=int, default=1000)
    args = p.parse_args(argv)
    rates = run(args.nodes, args.pods, min(args.batch, args.pods))
    med = statistics.median(rates)
    print(f"schedule_one, default profile, {args.nodes} nodes, {args.pods} pods: "
          f"median {med:,.0f} pods/s (min {min(rates):,.0f}, max {max(rates):,.0f}) "
          f"vs upstream threshold {UPSTREAM_THRESHOLD} pods/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
