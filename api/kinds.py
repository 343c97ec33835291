"""What kind of run a scenario file or an OUT directory is, and who handles
each kind: the one table the command line (run, compare, check, report) and
the Python API look up, instead of asking a file for its keys themselves.

Three kinds: a **cell** (one architecture, one cell: the default), a
**comparison** (one cell, workload and seed on several architectures:
``architectures = [...]``) and a **federation** (several cells of any
architectures joined by a meta-scheduler, a board or peers: ``[[sites]]``).
A file's kind is the first row whose ``marker`` key it has; an OUT
directory's, the first row whose ``is_out`` holds. A new kind is one row
here and the functions it names.

Handlers are ``"module:function"`` strings, imported on first use (like an
architecture's live half, ``schedulers.arch.ArchSpec.live``): looking a
kind up imports neither Ray nor the command line.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from schedlab.actors.common.event_files import has_events
from schedlab.actors.analysis.saved_run import NotARun
from schedlab.schedulers.scenario.limits import Limits
from schedlab.schedulers.scenario.parse import ScenarioError


@dataclass(frozen=True)
class RunKind:
    """One kind of run. ``marker``: the top-level key that makes a file this
    kind (None: any file, the last row). ``commands``: the ``schedlab``
    subcommands that take such a file, the first the one an error suggests.
    The handlers (``"module:function"``; None where the kind has none):

    * ``is_out(path) -> bool``: ``path`` is a run of this kind (what check
      and report read);
    * ``parse(data, source, limits)``: the checked run, or ScenarioError;
    * ``execute(spec, out, *, address) -> summary``: run it (the API);
    * ``cli(data, args, console) -> exit code``: ``schedlab run`` on it;
    * ``check(path) -> {invariant: count}``: recomputed from the files;
    * ``report(path) -> str``: report.md's text (plots written beside it).
    """

    name: str
    what: str
    marker: str | None
    commands: tuple[str, ...]
    is_out: str
    parse: str
    execute: str | None
    cli: str | None
    check: str
    report: str

    def fn(self, handler: str) -> Callable[..., Any]:
        """The handler named ``handler`` (a field), imported."""
        target = getattr(self, handler)
        if target is None:
            raise ValueError(f"a {self.name} run has no {handler} handler")
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)


KINDS: tuple[RunKind, ...] = (
    RunKind("federation", "a federation of sites", "sites", ("run",),
            is_out="schedlab.actors.federation.saved_run:is_federation_dir",
            parse="schedlab.api.kinds:parse_federation",
            execute="schedlab.actors.federation.run:run_federation",
            cli="schedlab.cli.main:run_federation_file",
            check="schedlab.actors.federation.saved_run:check_saved",
            report="schedlab.api.report:federation_report"),
    RunKind("comparison", "a comparison of architectures", "architectures", ("compare", "sweep"),
            is_out="schedlab.api.kinds:is_comparison_dir",
            parse="schedlab.schedulers.scenario.parse:parse_comparison",
            execute=None,  # several runs: `schedlab compare`, or the API with architecture=NAME (one of them)
            cli=None,
            check="schedlab.api.kinds:check_comparison",
            report="schedlab.api.report:comparison_report"),
    RunKind("cell", "one cell", None, ("run", "compare", "sweep"),
            is_out="schedlab.api.kinds:is_cell_dir",
            parse="schedlab.schedulers.scenario.parse:parse_scenario",
            execute="schedlab.actors.run:run_scenario",
            cli="schedlab.cli.main:run_cell_file",
            check="schedlab.actors.analysis.saved_run:check_saved",
            report="schedlab.api.report:run_report"),
)


def kind(name: str) -> RunKind:
    for k in KINDS:
        if k.name == name:
            return k
    raise KeyError(f"no run kind {name!r} (one of {', '.join(k.name for k in KINDS)})")


def of_data(data: dict, source: str, command: str | None = None) -> RunKind:
    """The kind of the scenario file ``data`` (read from ``source``); with
    ``command``, ScenarioError (one line naming the file and the key) when
    that subcommand does not take files of this kind."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: <top level>: must be a table")
    found = next(k for k in KINDS if k.marker is None or k.marker in data)
    if command is not None and command not in found.commands:
        raise ScenarioError(f"{source}: {found.marker or 'architecture'}: this file is {found.what}: "
                            f"run it with `schedlab {found.commands[0]}`")
    return found


def of_out(path: str | Path) -> RunKind:
    """The kind of the finished run in directory ``path``; NotARun (one
    line) when it is none of them."""
    d = Path(path)
    for k in KINDS:
        if k.fn("is_out")(d):
            return k
    raise NotARun(f"{d}: not a schedlab run directory (no run.json and events.jsonl; "
                  f"not {' nor '.join(k.what for k in KINDS if k.marker)} either)")


def is_cell_dir(path: Path) -> bool:
    """One cell's OUT: its events, and its set-up (run.json, written as it
    starts: enough to check) or its summary (written as it ends: enough to
    report)."""
    return has_events(path) and ((path / "run.json").is_file() or (path / "summary.json").is_file())


def comparison_runs(path: str | Path) -> list[Path]:
    """A comparison's runs: its subdirectories that are runs, by name."""
    path = Path(path)
    return sorted(p for p in path.iterdir() if p.is_dir() and is_cell_dir(p)) if path.is_dir() else []


def is_comparison_dir(path: Path) -> bool:
    return not (path / "summary.json").exists() and bool(comparison_runs(path))


def check_comparison(path: str | Path) -> dict[str, int]:
    """Every run's invariants recomputed, summed (a count per invariant)."""
    total: dict[str, int] = {}
    for run in comparison_runs(path):
        for name, count in kind("cell").fn("check")(run).items():
            total[name] = total.get(name, 0) + int(count)
    return total


def parse_federation(data: dict, source: str, limits: Limits | None = None) -> Any:
    """The federation's own parser; each site is checked against ``limits``
    (where the run will happen: ``actors.engines.limits.limits_for``)."""
    from schedlab.schedulers.federation.spec import parse_federation as parse

    return parse(data, source, limits)
