"""Where a scenario comes from: a path, or the name of one shipped with
schedlab (package data under ``schedlab/scenarios``), read as TOML with the
command line's ``--set`` overrides applied.

Every command that takes a scenario (run, compare, sweep, soak) reads it
through ``load_data``, so ``schedlab run quickstart`` works from any
directory and a path always wins over a shipped name.
"""
from __future__ import annotations

import argparse
import dataclasses
import shutil
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import schedlab
from schedlab.actors.engines.limits import local_limits
from schedlab.schedulers.scenario.include import included, merge
from schedlab.schedulers.scenario.parse import Scenario, ScenarioError, parse_scenario
from schedlab.schedulers.scenario.limits import Limits
from schedlab.schedulers.scenario.toml_table import read_toml

SHIPPED = Path(schedlab.__file__).resolve().parent / "scenarios"
SCHEMA_FILE = "schedlab.schema.json"  # scenario files' JSON Schema, shipped beside them (`schedlab schema`)


@dataclass(frozen=True)
class Shipped:
    name: str  # relative to the scenarios folder, no suffix: "quickstart", "paper/raft_election"
    path: Path
    description: str


def shipped() -> list[Shipped]:
    """Every shipped scenario file (and the example script), sorted by name."""
    out = []
    for p in sorted(SHIPPED.rglob("*")):
        if p.suffix in (".toml", ".py") and p.name != "__init__.py" and "__pycache__" not in p.parts:
            name = p.relative_to(SHIPPED).with_suffix("").as_posix()
            out.append(Shipped(name, p, describe(p)))
    return out


def describe(path: Path) -> str:
    """A scenario's one line: its ``description`` key, else the first line of
    its header comment (``# name: what it is``), else of a script's docstring."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        try:
            d = tomllib.loads(text).get("description")
        except tomllib.TOMLDecodeError:
            d = None
        if isinstance(d, str) and d.strip():
            return d.strip().splitlines()[0]
    # The header's first paragraph (a TOML comment, or a script's docstring), to its first full stop.
    para: list[str] = []
    for line in text.splitlines():
        line = line.strip().lstrip("#").strip().strip('"').strip()
        if not line:
            if para:
                break
            continue
        para.append(line)
    first = " ".join(para)
    head, sep, rest = first.partition(": ")
    first = rest if sep and " " not in head else first
    end = first.find(". ")
    return first if end < 0 else first[: end + 1]


def resolve(arg: str | Path) -> Path:
    """``arg`` as a file: an existing path as given, else a shipped scenario
    by name (``quickstart``, ``quickstart.toml``, ``paper/raft_election``).
    ScenarioError when it is neither."""
    p = Path(arg)
    if p.exists():
        return p
    name = p.as_posix().removesuffix(".toml")
    for s in shipped():
        if s.name == name and s.path.suffix == ".toml":
            return s.path
    raise ScenarioError(f"{arg}: no such file, nor a scenario shipped with schedlab (`schedlab scenarios` lists them)")


def copy_shipped(dest: Path, force: bool = False) -> list[Path]:
    """Copy every shipped scenario (keeping ``paper/``) into ``dest`` for
    editing, with the scenario files' JSON Schema beside them
    (``schedlab.schema.json``: an editor that reads ``#:schema`` completes
    and checks keys); ScenarioError before copying anything when a file
    would be overwritten and ``force`` is not given."""
    plan = [(s.path, dest / s.path.relative_to(SHIPPED)) for s in shipped()]
    plan.append((SHIPPED / SCHEMA_FILE, dest / SCHEMA_FILE))
    clash = [d for _, d in plan if d.exists()]
    if clash and not force:
        raise ScenarioError(f"{clash[0]}: exists (and {len(clash) - 1} more); pass --force to overwrite")
    for src, d in plan:
        d.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, d)
    return [d for _, d in plan]


def toml_value(raw: str) -> Any:
    """A ``--set`` value as TOML reads it (30 a number, "x" a string, true a
    bool); a bare word is a string."""
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


def apply_set(data: dict, assignment: str) -> None:
    """``workload.classes.0.interarrival=2``: set one value in the raw TOML data, the
    value parsed as TOML (so 30 is a number, "x" a string, true a bool)."""
    path, sep, raw = assignment.partition("=")
    if not sep or not path:
        raise ScenarioError(f"--set {assignment}: expected KEY=VALUE")
    set_value(data, path, toml_value(raw))


def set_value(data: dict, path: str, value: object, what: str = "--set") -> None:
    """Set the value at the dotted ``path`` (arrays by index) in the raw TOML
    data, making missing tables; ScenarioError naming ``what`` and the path
    where a part cannot be followed (an index past an array's end, a key
    under a value that is no table)."""
    node: object = data
    parts = path.split(".")
    for i, part in enumerate(parts[:-1]):
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict):
            node = node.setdefault(part, {})
        else:
            raise ScenarioError(f"{what} {path}: no such key ({'.'.join(parts[: i + 1])})")
    last = parts[-1]
    if isinstance(node, list) and last.isdigit() and int(last) < len(node):
        node[int(last)] = value
    elif isinstance(node, dict):
        node[last] = value
    else:
        raise ScenarioError(f"{what} {path}: no such key")


def load_data(arg: str | Path, sets: list[str] | None) -> dict:
    """The scenario's raw TOML data, its ``include`` files merged in
    (``schedulers.scenario.include``; names relative to the scenario's
    folder), then ``--set`` overrides applied; ScenarioError (one line) for
    a file that cannot be found or read as TOML, or an include that clashes."""
    path = resolve(arg)
    data = read_toml(path, "scenario")
    for name in included(data, str(path)):
        fragment = path.parent / name
        data = merge(data, read_toml(fragment, "included file"), str(path), str(fragment))
    data.pop("include", None)
    for assignment in sets or []:
        apply_set(data, assignment)
    return data


def load_scenario(arg: str | Path, sets: list[str] | None = None, limits: Limits | None = None) -> Scenario:
    """Read and validate a scenario; ScenarioError names file, key, problem.
    ``limits``: how big a run may be (default: this machine's)."""
    return parse_scenario(load_data(arg, sets), str(resolve(arg)), limits or local_limits())


def override(sc: Scenario, args: argparse.Namespace) -> Scenario:
    """``--seed`` and ``--time-scale`` from the command line, checked."""
    changes = {}
    if args.seed is not None:
        if args.seed < 0:
            raise ScenarioError(f"--seed: must be >= 0 (got {args.seed})")
        changes["seed"] = args.seed
    if args.time_scale is not None:
        if not args.time_scale > 0:
            raise ScenarioError(f"--time-scale: must be > 0 (got {args.time_scale})")
        changes["time_scale"] = args.time_scale
    if getattr(args, "engine", None) is not None:
        from schedlab.actors import engines

        if args.engine not in engines.names():
            raise ScenarioError(f"--engine: must be one of {', '.join(engines.names())} (got {args.engine!r})")
        changes["engine"] = args.engine
    out = dataclasses.replace(sc, **changes) if changes else sc
    if out.engine != sc.engine:  # parsed for one engine, to run on another: its actor bound is the other's
        from schedlab.actors.engines.limits import limits_for
        from schedlab.schedulers.scenario.limits import check_actors

        check_actors(out, limits_for(getattr(args, "address", None)))
    return out
