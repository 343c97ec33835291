"""``schedlab trace convert`` and ``schedlab trace info``: a production
trace as users download it, into schedlab's canonical form
(``schedulers.traces``), and what a converted one holds."""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from schedlab.cli.command import EXIT_BAD_INPUT, error


def add_parser(sub: Any) -> None:
    from schedlab.schedulers.traces.readers import FORMATS

    t = sub.add_parser("trace", help="convert a production trace (Google, Alibaba, Azure, SWF, CSS) for replay, or describe one")
    acts = t.add_subparsers(dest="action", required=True)
    c = acts.add_parser("convert", help="read a trace as downloaded and write schedlab's canonical form (.npz)")
    c.add_argument("src", help="the trace: a folder of its tables (or its one file: SWF, Azure's SQLite)")
    c.add_argument("--format", required=True, choices=FORMATS, help="which trace it is")
    c.add_argument("--out", required=True, help="the converted trace to write (.npz)")
    c.add_argument("--window", nargs=2, type=float, metavar=("START", "END"),
                   help="keep [START, END) seconds of the trace's own clock (and the tasks running at START)")
    c.add_argument("--scale", type=float, default=1.0,
                   help="keep this fraction of machines and of jobs (chosen by id): a smaller cell, the same load per machine")
    c.add_argument("--max-jobs", type=int, help="keep only the first N jobs submitted in the window")
    c.add_argument("--seed", type=int, default=0, help="seeds --scale's choice (and CSS's draws)")
    c.add_argument("--horizon", type=float, default=86_400.0, help="css: seconds of jobs to draw (default a day)")
    c.add_argument("--machines", type=int, help="swf, css, azure2020: machines when the trace does not say")
    c.add_argument("--cpus", type=float, help="swf: processors per node when the log's header does not say")
    c.set_defaults(fn=cmd_convert)
    i = acts.add_parser("info", help="span, machines, jobs and tasks per tier, load over time of a converted trace")
    i.add_argument("file", help="a converted trace (.npz)")
    i.add_argument("--json", action="store_true", help="print JSON instead of text")
    i.add_argument("--plot", metavar="PNG", help="also draw the load over time (needs matplotlib)")
    i.set_defaults(fn=cmd_info)


def cmd_convert(args: argparse.Namespace) -> int:
    from schedlab.schedulers.traces.builder import Select
    from schedlab.schedulers.traces.form import TraceError
    from schedlab.schedulers.traces.readers import ReadOptions, convert

    if not 0 < args.scale <= 1:
        error(f"--scale: must be in (0, 1], got {args.scale:g}")
        return EXIT_BAD_INPUT
    if args.window and not 0 <= args.window[0] < args.window[1]:
        error(f"--window: must be START END with 0 <= START < END, got {args.window[0]:g} {args.window[1]:g}")
        return EXIT_BAD_INPUT
    out = Path(args.out)
    if not out.parent.is_dir():
        error(f"--out: no folder {str(out.parent)!r}")
        return EXIT_BAD_INPUT
    began = time.process_time()
    try:
        trace = convert(args.src, args.format,
                        Select(tuple(args.window) if args.window else None, args.scale, args.max_jobs, args.seed),
                        ReadOptions(seed=args.seed, horizon=args.horizon, machines=args.machines, cpus=args.cpus))
    except TraceError as e:
        error(str(e))
        return EXIT_BAD_INPUT
    partial = out.with_name(out.name + ".partial")
    trace.save(partial)
    partial.replace(out)  # never a half-written trace under the name asked for
    print(f"wrote {out}: {trace.machines} machines, {trace.jobs} jobs, {trace.tasks} tasks over {trace.span:,.0f} s "
          f"({time.process_time() - began:.1f} CPU s)")
    return 0


def cmd_info(args: argparse.Namespace) -> int:
    from schedlab.schedulers.traces.form import Trace, TraceError
    from schedlab.schedulers.traces.info import describe, plot

    try:
        trace = Trace.load(args.file)
    except TraceError as e:
        error(str(e))
        return EXIT_BAD_INPUT
    facts = describe(trace)
    if args.plot:
        try:
            plot(trace, args.plot)
        except ImportError:
            error("--plot needs matplotlib: pip install 'schedlab[plot]'")
            return EXIT_BAD_INPUT
    if args.json:
        json.dump(facts, sys.stdout, indent=1)
        print()
        return 0
    print(_text(facts))
    return 0


def _text(f: dict[str, Any]) -> str:
    m = f["machines"]
    lines = [f"{f['format']} trace from {', '.join(f['sources'])}",
             f"span        {f['span_s']:,.0f} s ({f['span_s'] / 3600:.1f} h) from {f['origin_s']:,.0f} s of the trace's clock",
             f"machines    {m['at_start']} at the start; {m['added']} added, {m['removed']} removed, {m['updated']} resized",
             f"jobs        {f['jobs']} ({f['standing_jobs']} standing at the start), tasks {f['tasks']}"
             f" ({f['never_ran']} never ran)",
             "tiers       " + "; ".join(f"{k} {v['jobs']} jobs {v['tasks']} tasks{' (service)' if v['service'] else ''}"
                                        for k, v in f["tiers"].items()),
             "ended       " + ", ".join(f"{k} {v}" for k, v in f["tasks_ended"].items() if v),
             "units       " + "; ".join(f"{r}: {u}" for r, u in f["resources"].items()),
             f"recorded    {'start times and machines of the real run (a reference for a replay)' if f['recorded'] else 'no real scheduling'}"]
    load = f["load"]
    if load:
        lines.append(f"load        requested / capacity per {load['bin_s']:,.0f} s: " + "; ".join(
            f"{r} mean {v['mean']:.0%} peak {v['peak']:.0%}" for r, v in load.items() if isinstance(v, dict) and v["mean"] is not None))
    for k, v in f["notes"].items():
        lines.append(f"note        {k}: {v}")
    return "\n".join(lines)
