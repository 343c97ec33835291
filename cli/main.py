"""The ``schedlab`` command."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from rich.console import Console

from schedlab.actors.common.event_files import EVENT_FILES, events_file
from schedlab.api import kinds
from schedlab.schedulers.scenario.parse import ScenarioError, parse_comparison, parse_scenario
from schedlab.actors.engines.limits import limits_for
from schedlab.cli.command import EXIT_BAD_INPUT, EXIT_INVARIANT, error as _error, interruptible, verbosity
from schedlab.api.scenario_files import load_data, override as _override, resolve


@interruptible
def cmd_run(args: argparse.Namespace) -> int:
    """``schedlab run FILE``: what runs it is the file's kind's (``api.kinds``)."""
    console = Console(stderr=False, quiet=args.quiet)
    try:
        data = load_data(args.scenario, args.set)
        return int(kinds.of_data(data, str(resolve(args.scenario)), "run").fn("cli")(data, args, console))
    except ScenarioError as e:
        _error(str(e))
        return EXIT_BAD_INPUT


def run_cell_file(data: dict, args: argparse.Namespace, console: Console) -> int:
    """``schedlab run`` on one cell's file: a live progress line, the
    summary's table, exit 3 when an invariant broke. ScenarioError for bad
    input, before anything starts."""
    sc = _override(parse_scenario(data, str(resolve(args.scenario)), limits_for(args.address)), args)
    # Imported here so a bad scenario fails fast, before Ray is even loaded.
    from schedlab.actors.engines import ClusterUnreachable
    from schedlab.actors.run import run_scenario
    from schedlab.actors.analysis.summary import violations
    from schedlab.cli.display import RunProgress, summary_table

    out = Path(args.out or f"runs/{sc.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    console.print(f"schedlab: running [bold]{sc.name}[/] ({sc.architecture}), seed {sc.seed}, time_scale {sc.time_scale:g}, out {out}")

    def started(namespace: str, address: str) -> None:
        if sc.engine != "ray":
            return  # nothing outside the process reaches a sim run's actors
        console.print(f"namespace {namespace} at {address}; break it from another terminal: "
                      f"[bold]schedlab chaos --run {out} roster[/] (then kill, pause, slow, partition, plan, monkey)",
                      soft_wrap=True)

    try:
        if args.no_progress or args.quiet or not console.is_terminal:
            summary = run_scenario(sc, out, address=args.address, on_started=started)
        else:
            with RunProgress(sc.duration, console) as prog:
                summary = run_scenario(sc, out, address=args.address, on_progress=prog.update, on_started=started)
    except ClusterUnreachable as e:
        _error(str(e))
        return EXIT_BAD_INPUT
    console.print(f"namespace {summary['namespace']}")
    console.print(summary_table(summary))
    console.print(f"wrote {out / 'summary.json'} and {events_file(out)}")
    if args.report and not _report(out):
        return EXIT_BAD_INPUT
    bad = violations(summary)
    if bad:
        _error(f"invariants violated: {bad}")
        return EXIT_INVARIANT
    return 0


def run_federation_file(data: dict, args: argparse.Namespace, console: Console) -> int:
    """``schedlab run`` on a federation file (``[[sites]]``): every site a
    cell of its own architecture, joined as its ``[multicluster]`` says."""
    from schedlab.schedulers.federation.spec import parse_federation

    for flag, key, ok in (("seed", "seed", lambda v: v >= 0), ("time_scale", "time_scale", lambda v: v > 0)):
        value = getattr(args, flag, None)
        if value is not None:
            if not ok(value):
                raise ScenarioError(f"--{flag.replace('_', '-')}: out of range (got {value})")
            data[key] = value
    if getattr(args, "engine", None) is not None:
        data["engine"] = args.engine
    fed = parse_federation(data, str(resolve(args.scenario)), limits_for(getattr(args, "address", None)))
    from schedlab.actors.federation.run import run_federation
    from schedlab.actors.engines import ClusterUnreachable
    from schedlab.cli.display import federation_table

    out = Path(args.out or f"runs/{fed.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    console.print(f"schedlab: running [bold]{fed.name}[/] (federation of {len(fed.sites)} sites, {fed.join.mode}), "
                  f"seed {fed.seed}, time_scale {fed.time_scale:g}, out {out}")
    try:
        summary = run_federation(fed, out, address=args.address)
    except ClusterUnreachable as e:
        _error(str(e))
        return EXIT_BAD_INPUT
    console.print(federation_table(summary))
    console.print(f"wrote {out / 'summary.json'}, {out / 'events.jsonl'} and {out}/sites/<site>/")
    bad = {k: v for k, v in summary["invariants"].items() if v}
    if bad:
        _error(f"invariants violated: {bad}")
        return EXIT_INVARIANT
    return 0


@interruptible
def cmd_compare(args: argparse.Namespace) -> int:
    console = Console(stderr=False, quiet=args.quiet)
    try:
        data, source = load_data(args.scenario, args.set), str(resolve(args.scenario))
        kinds.of_data(data, source, "compare")  # a federation is refused in one line
        scenarios = [_override(sc, args) for sc in parse_comparison(data, source, limits_for(args.address))]
    except ScenarioError as e:
        _error(str(e))
        return EXIT_BAD_INPUT
    from schedlab.actors.engines import ClusterUnreachable, engine_class
    from schedlab.actors.run import run_scenario
    from schedlab.actors.analysis.summary import violations
    from schedlab.api.compare import compare_table

    out = Path(args.out or f"runs/{scenarios[0].name}-compare-{time.strftime('%Y%m%d-%H%M%S')}")
    archs = ", ".join(sc.architecture for sc in scenarios)
    console.print(f"schedlab: comparing [bold]{scenarios[0].name}[/] on {archs}, seed {scenarios[0].seed}, out {out}")
    summaries = []
    live = engine_class("ray")() if any(sc.engine == "ray" for sc in scenarios) else None
    try:
        # One Ray for every live run (each run still has its own namespace).
        started = live.connect(args.address, "schedlab-compare") if live else False
    except ClusterUnreachable as e:
        _error(str(e))
        return EXIT_BAD_INPUT
    try:
        for sc in scenarios:
            console.print(f"  {sc.architecture}: {sc.duration:g} emulated s at x{sc.time_scale:g} ({sc.engine}) ...")
            summaries.append(run_scenario(sc, out / sc.architecture, address=args.address))
    finally:
        if started and live is not None:
            live.shutdown()
    table = compare_table(summaries)
    if not console.is_terminal:  # a file or a pipe: the table at its own width, not squeezed into 80 columns
        console.width = max(console.width, console.measure(table, options=console.options.update_width(1000)).maximum)
    console.print(table)
    console.print(f"wrote {out}/<architecture>/summary.json and {EVENT_FILES[scenarios[0].metrics.events]}")
    if args.report and not _report(out):
        return EXIT_BAD_INPUT
    bad = {s["architecture"]: violations(s) for s in summaries if violations(s)}
    if bad:
        _error(f"invariants violated: {bad}")
        return EXIT_INVARIANT
    return 0


def _report(path: Path) -> bool:
    """Write path/report.md with plots; False (after a one-line error) if it cannot."""
    from schedlab.api.report import ReportError, write_report

    try:
        print(f"wrote {write_report(path)}")
    except ReportError as e:
        _error(str(e))
        return False
    return True


def cmd_report(args: argparse.Namespace) -> int:
    return 0 if _report(Path(args.dir)) else EXIT_BAD_INPUT


def cmd_check(args: argparse.Namespace) -> int:
    """Recompute a saved run's invariants: a cell's, a comparison's runs'
    (summed) or a federation's (its sites' and its own), by its kind."""
    from schedlab.actors.analysis.saved_run import NotARun

    try:
        inv = kinds.of_out(args.run).fn("check")(args.run)
    except NotARun as e:
        _error(str(e))
        return EXIT_BAD_INPUT
    bad = {k: v for k, v in inv.items() if v}
    print(json.dumps({"run": str(args.run), "invariants": inv}))
    if bad:
        _error(f"invariants violated: {bad}")
        return EXIT_INVARIANT
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """A run's tables (jobs, tasks, samples, events) as CSV or Parquet files,
    or its events as plain JSON lines."""
    from schedlab.actors.analysis.tables import need
    from schedlab.api.runs import TABLES, NotARun, Run

    which = tuple(t.strip() for t in args.tables.split(",")) if args.tables else TABLES
    unknown = [t for t in which if t not in TABLES]
    if unknown or not which:
        _error(f"--tables: {', '.join(unknown) or 'empty'}: not a table (any of {', '.join(TABLES)})")
        return EXIT_BAD_INPUT
    try:
        run = Run.open(args.run)
        if args.format == "parquet":
            need("pyarrow.parquet")
        paths = run.export(args.out, args.format, which)
    except NotARun as e:
        _error(str(e))
        return EXIT_BAD_INPUT
    except ImportError as e:
        _error(f"--format parquet: {e}")
        return EXIT_BAD_INPUT
    except OSError as e:
        _error(f"{args.out or args.run}: cannot write there ({type(e).__name__}: {e.strerror or e})")
        return EXIT_BAD_INPUT
    print(f"wrote {', '.join(str(p) for p in paths)}")
    return 0


def cmd_schema(args: argparse.Namespace) -> int:
    """The scenario files' JSON Schema, generated from the parsers' field tables."""
    from schedlab.schedulers.scenario.schema import schema_text

    if not args.out:
        sys.stdout.write(schema_text())
        return 0
    try:
        Path(args.out).write_text(schema_text())
    except OSError as e:
        _error(f"{args.out}: cannot write there ({type(e).__name__}: {e.strerror or e})")
        return EXIT_BAD_INPUT
    print(f"wrote {args.out}")
    return 0


def cmd_scenarios(args: argparse.Namespace) -> int:
    """List the shipped scenarios, or copy them out for editing."""
    from schedlab.api.scenario_files import copy_shipped, shipped

    if args.action == "copy":
        if not args.dir:
            _error("scenarios copy: give the directory to copy them into")
            return EXIT_BAD_INPUT
        try:
            copied = copy_shipped(Path(args.dir), args.force)
        except ScenarioError as e:
            _error(str(e))
            return EXIT_BAD_INPUT
        print(f"copied {len(copied)} files into {args.dir}; run one with: schedlab run {Path(args.dir) / 'quickstart.toml'}")
        return 0
    items = shipped()
    width = max(len(s.name) for s in items)
    for s in items:
        script = f" (a Python script: python -m schedlab.scenarios.{s.name.replace('/', '.')})"
        what = s.description + (script if s.path.suffix == ".py" else "")
        print(f"{s.name:<{width}}  {what}")
    return 0


def _common(sp: argparse.ArgumentParser, out_help: str) -> None:
    sp.add_argument("--out", help=out_help)
    sp.add_argument("--seed", type=int, help="override the scenario's seed")
    sp.add_argument("--time-scale", type=float, help="override emulated seconds per wall second")
    sp.add_argument("--address", help="join the Ray cluster at this address (default: RAY_ADDRESS, else embedded local Ray)")
    sp.add_argument("--engine", help="ray (live, the default) or sim (one process, virtual clock, deterministic); "
                                     "overrides the scenario's engine")
    sp.add_argument("--set", action="append", metavar="KEY=VALUE",
                    help="override one scenario value, e.g. workload.classes.0.interarrival=2 (repeatable)")
    sp.add_argument("--report", action="store_true", help="write report.md with plots at the end (needs the plot extra)")
    verbosity(sp)



def build_parser() -> argparse.ArgumentParser:
    from schedlab import __version__

    p = argparse.ArgumentParser(prog="schedlab", description="Emulate cluster-scheduler architectures live on Ray.")
    p.add_argument("--version", action="version", version=f"schedlab {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run one scenario file")
    r.add_argument("scenario", help="scenario TOML file, or the name of a shipped one (schedlab scenarios)")
    _common(r, "output directory (default runs/<name>-<time>)")
    r.add_argument("--no-progress", action="store_true", help="no live progress display")
    r.set_defaults(fn=cmd_run)
    c = sub.add_parser("compare", help="run one scenario on several architectures and compare them")
    c.add_argument("scenario", help="scenario TOML file (or shipped name) with a section per architecture (or `architectures = [...]`)")
    _common(c, "output directory (default runs/<name>-compare-<time>); one subdirectory per architecture")
    c.set_defaults(fn=cmd_compare)
    from schedlab.cli.calibrate import add_parser as add_calibrate
    from schedlab.cli.chaos import add_parser as add_chaos
    from schedlab.cli.sweep import add_parser as add_sweep
    from schedlab.cli.trace import add_parser as add_trace

    from schedlab.cli.tools import add_parsers as add_tools

    add_chaos(sub)
    add_sweep(sub)
    add_calibrate(sub)
    add_trace(sub)
    add_tools(sub)
    rp = sub.add_parser("report", help="write report.md with plots for a run, comparison or sweep directory")
    rp.add_argument("dir", help="a run's, comparison's or sweep's OUT directory")
    rp.set_defaults(fn=cmd_report)
    k = sub.add_parser("check", help="recompute a saved run's invariants from its OUT directory")
    k.add_argument("run", help="a run's OUT directory (run.json, events.jsonl, coordinator/)")
    k.set_defaults(fn=cmd_check)
    x = sub.add_parser("export", help="write a run's tables (jobs, tasks, samples, events) as CSV or Parquet, "
                                      "or its events as plain JSON lines")
    x.add_argument("run", help="a run's OUT directory (run.json, events.jsonl or events.jsonl.gz, summary.json)")
    x.add_argument("--format", choices=["csv", "parquet", "jsonl"], default="csv",
                   help="csv (default), parquet (needs the analysis extra: pip install 'schedlab[analysis]'), or "
                        "jsonl: the events alone as events.jsonl (a compressed run's, decompressed)")
    x.add_argument("--out", help="directory to write <table>.<format> into (default: the run directory)")
    x.add_argument("--tables", metavar="LIST", help="comma-separated subset of jobs,tasks,samples,events (default: all)")
    x.set_defaults(fn=cmd_export)
    sm = sub.add_parser("schema", help="print the JSON Schema of scenario files (for editors: Even Better TOML / taplo)")
    sm.add_argument("--out", help="write it to this file instead")
    sm.set_defaults(fn=cmd_schema)
    sc = sub.add_parser("scenarios", help="list the scenarios shipped with schedlab, or copy them out for editing")
    sc.add_argument("action", nargs="?", choices=["list", "copy"], default="list")
    sc.add_argument("dir", nargs="?", help="copy: the directory to copy them into")
    sc.add_argument("--force", action="store_true", help="copy: overwrite files that exist")
    sc.set_defaults(fn=cmd_scenarios)
    return p


def main(argv: list[str] | None = None) -> int:
    from schedlab.cli import tools

    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in tools.names():  # a tool reads its own options
        return tools.run(argv[0], argv[1:])
    args = build_parser().parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
