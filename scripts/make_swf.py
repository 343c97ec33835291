"""Write a synthetic Standard Workload Format (SWF) log: rigid parallel jobs
whose users over-estimate their run times (schedulers.model.swf).

    python scripts/make_swf.py OUT.swf [--jobs 2000] [--seed 1] [--nodes 64] [--max-size 16] [--interarrival 120]
"""
from __future__ import annotations

import argparse
from pathlib import Path

from schedlab.schedulers.model.swf import synthetic_swf


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("out", help="the SWF file to write")
    p.add_argument("--jobs", type=int, default=2000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--nodes", type=int, default=64)
    p.add_argument("--max-size", type=int, default=None, help="the widest job, in nodes (default: --nodes)")
    p.add_argument("--interarrival", type=float, default=120.0, help="mean seconds between submissions")
    a = p.parse_args()
    Path(a.out).write_text(synthetic_swf(a.jobs, a.seed, nodes=a.nodes, max_size=a.max_size,
                                                 mean_interarrival=a.interarrival))
    print(f"wrote {a.out}: {a.jobs} jobs on {a.nodes} nodes (seed {a.seed})")


if __name__ == "__main__":
    main()
