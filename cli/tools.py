"""The experiments and benchmarks as ``schedlab`` subcommands: ``schedlab
soak``, ``schedlab reproduce``, ``schedlab bench sim`` and the rest. Each
tool keeps its own argument parser (its ``main(argv)``); the command passes
it everything after the tool's name, so ``schedlab soak --help`` is the
tool's own help.

Why a table and not a subparser each: a tool's options are its own, read by
its ``main``; repeating them here would let the two drift apart.
"""
from __future__ import annotations

import ast
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from schedlab.cli.command import EXIT_BAD_INPUT, error


@dataclass(frozen=True)
class Tool:
    name: str  # the subcommand
    module: str  # its main(argv) -> exit code
    help: str


HERE = Path(__file__).resolve().parents[1]


def _declared(folder: str, pattern: str, strip: str = "") -> tuple[Tool, ...]:
    """The tools a folder's modules declare: each module with a ``main`` and a
    ``TOOL_HELP`` line (and, optionally, ``TOOL_NAME``; else its file name
    less ``strip``). Read from the source, not imported: ``schedlab --help``
    stays fast, and this list names no tool or architecture itself."""
    out = []
    for f in sorted((HERE / folder).glob(pattern)):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        consts = {t.id: n.value.value for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
                  for t in n.targets if isinstance(t, ast.Name)}
        if "TOOL_HELP" in consts and any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body):
            name = str(consts.get("TOOL_NAME") or f.stem.removeprefix(strip).replace("_", "-"))
            out.append(Tool(name, f"schedlab.{folder.replace('/', '.')}.{f.stem}", str(consts["TOOL_HELP"])))
    return tuple(out)


TOOLS: tuple[Tool, ...] = _declared("experiments", "*.py") + _declared("experiments/paper", "*.py")
# The benchmarks (the project's speed targets) stay scripts (scripts/bench*.py): `schedlab bench NAME`.
BENCHES: tuple[Tool, ...] = _declared("scripts", "bench*.py", strip="bench_")
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
