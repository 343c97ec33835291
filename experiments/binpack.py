"""Bin packing approximation ratios: how many unit bins each classic online
algorithm (next fit, next-k fit, first fit, best fit, worst fit, almost worst
fit) and offline first fit decreasing uses on random item lists.

    schedlab binpack [--items 1000] [--trials 20] [--seed 0] [--dist uniform|small|large|bimodal] [--k 3]

Each trial draws ``--items`` sizes from ``--dist`` (a seeded numpy
Generator, so a seed gives the same lists every time) and packs the same
list with every algorithm. The table shows, per algorithm, the bins used
(mean over trials), the lower bound ceil(sum of sizes) (mean), and the ratio
bins / lower bound (mean and max over trials), best first, beside the
algorithm's proven worst-case (asymptotic) ratio to the optimum. Random
lists sit far below the worst case; the lower bound is at most the optimum,
so a measured ratio overstates the ratio to the optimum, never understates
it. The placement policies of the same names (schedlab.schedulers.placement)
apply these rules to a cell's machines.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from schedlab.schedulers.placement.binpack import algorithms, lower_bound, n_bins
from schedlab.cli.command import EXIT_BAD_INPUT, error

TOOL_HELP = "bin-packing algorithms' approximation ratios on random items"  # one line in `schedlab --help` (cli.tools)

Draw = Callable[[np.random.Generator, int], np.ndarray]


def _uniform(lo: float, hi: float) -> Draw:
    """Sizes uniform on (lo, hi]: 1 - random() is in (0, 1], never 0."""
    return lambda rng, n: lo + (hi - lo) * (1.0 - rng.random(n))


def _bimodal(rng: np.random.Generator, n: int) -> np.ndarray:
    """Half big items in (0.4, 0.6], half small ones in (0, 0.1], shuffled:
    small items can fill the gaps big ones leave, if the algorithm looks back."""
    big = rng.random(n) < 0.5
    return np.where(big, _uniform(0.4, 0.6)(rng, n), _uniform(0.0, 0.1)(rng, n))


DISTRIBUTIONS: dict[str, tuple[Draw, str]] = {
    "uniform": (_uniform(0.0, 1.0), "uniform on (0, 1]"),
    "small": (_uniform(0.0, 0.25), "uniform on (0, 0.25]"),
    "large": (_uniform(0.25, 1.0), "uniform on (0.25, 1]"),
    "bimodal": (_bimodal, "half (0.4, 0.6], half (0, 0.1]"),
}


def worst_case(name: str, k: int) -> str:
    """The proven asymptotic worst-case ratio to OPT (see binpack's docstrings)."""
    if name.startswith("next_k_fit"):
        return "2" if k == 1 else f"{1.7 + 3 / (10 * (k - 1)):.3g}"
    return {"next_fit": "2", "worst_fit": "2", "first_fit": "1.7", "best_fit": "1.7",
            "almost_worst_fit": "1.7", "first_fit_decreasing": "11/9"}[name]


@dataclass(frozen=True)
class Row:
    name: str
    bins: float  # mean over trials
    bound: float  # mean lower bound over trials
    ratio_mean: float
    ratio_max: float
    worst: str


def measure(items: int, trials: int, seed: int, dist: str, k: int) -> list[Row]:
    """Pack ``trials`` random lists with every algorithm; rows by mean ratio."""
    draw = DISTRIBUTIONS[dist][0]
    rng = np.random.default_rng(seed)
    packers = algorithms(k)
    bins: dict[str, list] = {name: [] for name in packers}
    bounds = []
    for _ in range(trials):
        sizes = draw(rng, items)
        bounds.append(lower_bound(sizes))
        for name, pack in packers.items():
            bins[name].append(n_bins(pack(sizes)))
    lb = np.asarray(bounds, dtype=np.float64)
    rows = []
    for name, used in bins.items():
        b = np.asarray(used, dtype=np.float64)
        rows.append(Row(name, float(b.mean()), float(lb.mean()), float((b / lb).mean()), float((b / lb).max()),
                        worst_case(name, k)))
    return sorted(rows, key=lambda r: (r.ratio_mean, r.name))


def render(rows: list[Row], header: str) -> str:
    """Plain fixed-width text: one line per algorithm, easy to grep and diff."""
    cols = ("algorithm", "bins", "lower bound", "ratio mean", "ratio max", "worst case")
    width = max(len(cols[0]), *(len(r.name) for r in rows))
    line = f"{{:<{width}}}  {{:>8}}  {{:>11}}  {{:>10}}  {{:>9}}  {{:>10}}"
    out = [header, line.format(*cols)]
    out += [line.format(r.name, f"{r.bins:.1f}", f"{r.bound:.1f}", f"{r.ratio_mean:.3f}", f"{r.ratio_max:.3f}", r.worst)
            for r in rows]
    return "\n".join(out)


class _BadArgs(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse's own: usage plus a line; ours: one line
        raise _BadArgs(message)


def _parse(argv: list[str] | None) -> argparse.Namespace:
    p = _Parser(prog="binpack", description=__doc__.split("\n\n")[0])
    p.add_argument("--items", type=int, default=1000, help="items per list (>= 1)")
    p.add_argument("--trials", type=int, default=20, help="random lists per algorithm (>= 1)")
    p.add_argument("--seed", type=int, default=0, help="seed of the numpy Generator (>= 0)")
    p.add_argument("--dist", default="uniform", help=f"item sizes: {', '.join(f'{n} ({d})' for n, (_, d) in DISTRIBUTIONS.items())}")
    p.add_argument("--k", type=int, default=3, help="open bins of next-k fit (>= 1)")
    args = p.parse_args(argv)
    for name in ("items", "trials", "k"):
        if getattr(args, name) < 1:
            raise _BadArgs(f"--{name}: must be >= 1 (got {getattr(args, name)})")
    if args.seed < 0:
        raise _BadArgs(f"--seed: must be >= 0 (got {args.seed})")
    if args.dist not in DISTRIBUTIONS:
        raise _BadArgs(f"--dist: unknown distribution {args.dist!r}; known: {', '.join(DISTRIBUTIONS)}")
    return args


def main(argv: list[str] | None = None) -> int:
    try:
        args = _parse(argv)
    except _BadArgs as e:
        error(str(e))
        return EXIT_BAD_INPUT
    rows = measure(args.items, args.trials, args.seed, args.dist, args.k)
    header = (f"bin packing: {args.trials} lists of {args.items} items, sizes {DISTRIBUTIONS[args.dist][1]} "
              f"(--dist {args.dist}), seed {args.seed}; ratio = bins / ceil(sum of sizes)")
    print(render(rows, header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
