"""Reproduce published scheduler findings and write the Fidelity table.

    schedlab reproduce                      # every finding, full size (~14 wall minutes here)
    schedlab reproduce --only drf_example,raft_election
    schedlab reproduce --update-docs        # also replace the table in docs/concepts/fidelity.md
    schedlab reproduce --smoke              # shortened runs: checks the pipeline (CI)
    schedlab reproduce --engine ray         # every finding live (default: each finding's own engine)

Each finding runs on its own engine unless --engine says otherwise: the
sim engine where the finding is about scheduling (longer, larger runs
than live affords), live Ray where the substrate is the point (failover
timings). Writes OUT/fidelity.md (the table), OUT/fidelity.json (every measured
number) and OUT/<finding>/ (the sweeps behind each row). Exits 1 when any
finding falls outside its tolerance or fails to run, 2 on bad arguments.
In --smoke runs only the exact (non-emulated) findings are judged: runs
shortened to seconds measure the pipeline, not the papers.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
import traceback
from pathlib import Path

from schedlab.experiments.fidelity import Context, Finding, Result, render, update_table
from schedlab.experiments.paper.findings import FINDINGS
from schedlab.cli.command import error

TOOL_HELP = "reproduce published scheduler findings; write the Fidelity table"  # one line in `schedlab --help` (cli.tools)


def engine_of(f: Finding, override: str | None) -> str | None:
    """The engine a finding's runs use: ``override`` for any finding that runs
    something, its own otherwise; None for a pure computation."""
    return None if f.engine is None else override or f.engine


def run_findings(findings: list[Finding], ctx: Context, engine: str | None = None) -> list[tuple[Finding, Result | None, str, str | None]]:
    out = []
    for f in findings:
        used = engine_of(f, engine)
        ctx = dataclasses.replace(ctx, engine=used or ctx.engine)
        ctx.log(f"{f.key}: {f.claim}" + (f" [{used}]" if used else ""))
        t0 = time.monotonic()
        try:
            r: Result | None = f.measure(ctx)
            error = ""
        except Exception as e:  # a finding that cannot run is a row saying so, not a lost table
            r, error = None, f"{type(e).__name__}: {e}"
            traceback.print_exc()
        if r is not None and ctx.smoke and used:
            r.ok = True  # shortened runs are not judged
            r.note = ("smoke run, not judged. " + r.note).strip()
        ctx.log(f"  -> {'error: ' + error if r is None else r.measured} ({time.monotonic() - t0:.0f} s)")
        out.append((f, r, error, used))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="schedlab reproduce", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="", help="comma-separated finding keys: " + ", ".join(f.key for f in FINDINGS))
    p.add_argument("--smoke", action="store_true", help="shortened runs, for CI")
    p.add_argument("--out", default=f"runs/reproduce-{time.strftime('%Y%m%d-%H%M%S')}")
    p.add_argument("--engine", choices=["ray", "sim"], help="run every finding on this engine (default: each finding's own)")
    p.add_argument("--address", help="a Ray cluster for the live findings (default: embedded local Ray)")
    p.add_argument("--update-docs", action="store_true", help="replace the Fidelity table in docs/concepts/fidelity.md")
    p.add_argument("--resume", action="store_true",
                   help="reuse every run already finished in --out (has summary.json): judge again without running it")
    args = p.parse_args(argv)
    keys = [k for k in args.only.split(",") if k]
    unknown = [k for k in keys if k not in {f.key for f in FINDINGS}]
    if unknown:
        error(f"--only: unknown finding {unknown[0]!r}; known: {', '.join(f.key for f in FINDINGS)}")
        return 2
    chosen = [f for f in FINDINGS if not keys or f.key in keys]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ctx = Context(out, args.smoke, args.address, resume=args.resume)
    started = False
    if any(engine_of(f, args.engine) == "ray" for f in chosen):
        from schedlab.actors.engines import ray_engine

        try:
            started = ray_engine.connect(args.address, "schedlab-reproduce")
        except ray_engine.ClusterUnreachable as e:
            error(str(e))
            return 2
    try:
        rows = run_findings(chosen, ctx, args.engine)
    finally:
        if started:
            ray_engine.shutdown()
    table = render(rows)
    (out / "fidelity.md").write_text(table)
    (out / "fidelity.json").write_text(json.dumps(
        [{"finding": f.key, "source": f.source, "published": f.published, "tolerance": f.tolerance, "smoke": args.smoke,
          "engine": used, "measured": r.measured if r else None, "ok": bool(r and r.ok), "error": e,
          "numbers": r.numbers if r else None}
         for f, r, e, used in rows], indent=2, default=float) + "\n")
    print(table)
    print(f"wrote {out / 'fidelity.md'} and {out / 'fidelity.json'}")
    if args.update_docs:
        if args.smoke or keys:
            print("error: --update-docs needs a full run of every finding (no --smoke, no --only)", file=sys.stderr)
            return 2
        update_table(table)
        print("updated the Fidelity table in docs/concepts/fidelity.md")
    bad = [f.key for f, r, _e, _used in rows if r is None or not r.ok]
    if bad:
        error(f"outside tolerance or failed: {', '.join(bad)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
