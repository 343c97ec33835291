"""The experiments and benchmarks as ``schedlab`` subcommands: ``schedlab
soak``, ``schedlab reproduce``, ``schedlab bench sim`` and the rest. Each
tool keeps its own argument parser (its ``main(argv)``); the command passes
it everything after the tool's name, so ``schedlab soak --help`` is the
tool's own help.

Why a table and not a subparser each: a tool's options are its own, read by
its ``main``; repeating them here would let the two drift apart.
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from typing import Any

from schedlab.cli.command import EXIT_BAD_INPUT, error


@dataclass(frozen=True)
class Tool:
    name: str  # the subcommand
    module: str  # its main(argv) -> exit code
    help: str


TOOLS: tuple[Tool, ...] = (
    Tool("soak", "schedlab.experiments.soak", "each architecture under the chaos monkey for a while, live or on sim"),
    Tool("reproduce", "schedlab.experiments.reproduce", "reproduce published scheduler findings; write the Fidelity table"),
    Tool("crosscheck", "schedlab.experiments.crosscheck", "the same scenarios live and on sim: do the engines agree"),
    Tool("css-compare", "schedlab.experiments.css_compare", "the Omega paper simulator's (CSS) default experiment on sim"),
    Tool("binpack", "schedlab.experiments.binpack", "bin-packing algorithms' approximation ratios on random items"),
    Tool("compaction", "schedlab.experiments.compaction", "the smallest cell each Borg scoring policy needs"),
)
# The benchmarks (the project's speed targets) stay scripts (scripts/bench*.py): `schedlab bench NAME`.
BENCHES: tuple[Tool, ...] = (
    Tool("placements", "schedlab.scripts.bench", "placements per second live on Ray, beside raw actor calls"),
    Tool("sim", "schedlab.scripts.bench_sim", "the sim engine's speed per architecture, beside live"),
    Tool("k8s", "schedlab.scripts.bench_k8s", "Kubernetes in scheduler_perf's SchedulingBasic shape"),
    Tool("k8s-cycle", "schedlab.scripts.bench_k8s_cycle", "the pure Kubernetes scheduling cycle alone"),
    Tool("borg", "schedlab.scripts.bench_borg", "Borg placement: equivalence classes and relaxed randomization"),
)
BENCH = Tool("bench", "", "a benchmark by name: " + ", ".join(b.name for b in BENCHES))


def names() -> tuple[str, ...]:
    return (*(t.name for t in TOOLS), BENCH.name)


def add_parsers(sub: Any) -> None:
    """List the tools in ``schedlab --help`` (their options are their own)."""
    for t in (*TOOLS, BENCH):
        sub.add_parser(t.name, help=t.help, add_help=False)


def run(name: str, argv: list[str]) -> int:
    """Run the tool ``name`` (one of ``names()``) with ``argv``; a bench
    takes its benchmark's name first."""
    if name == BENCH.name:
        which = {b.name: b for b in BENCHES}
        if not argv or argv[0] not in which:
            if argv and argv[0] in ("-h", "--help"):
                print("usage: schedlab bench NAME [options]  (schedlab bench NAME --help: its options)\n")
                print("\n".join(f"  {b.name:<11} {b.help}" for b in BENCHES))
                return 0
            error(f"bench: {argv[0] if argv else 'no benchmark named'}: not a benchmark (one of {', '.join(which)})")
            return EXIT_BAD_INPUT
        tool, prog, argv = which[argv[0]], f"schedlab bench {argv[0]}", argv[1:]
    else:
        tool, prog = next(t for t in TOOLS if t.name == name), f"schedlab {name}"
    main = importlib.import_module(tool.module).main
    saved = sys.argv[0]
    sys.argv[0] = prog  # a tool's parser names itself after it (usage and errors)
    try:
        return int(main(argv) or 0)
    finally:
        sys.argv[0] = saved
