"""``schedlab calibrate``: measure this machine's Ray as the sim engine's latency.

Starts an embedded Ray (or joins ``--address``), has two schedlab probe
actors exchange ``--messages`` one-way messages and as many calls
(``actors.calibrate``), prints the percentiles and writes the one-way
delays as a scenario's ``[substrate] latency`` table
(``schedulers.scenario.calibration``), in emulated seconds for
``--time-scale``. Bad input: one line, exit 2, before Ray starts.
"""
from __future__ import annotations

import argparse
import math
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from schedlab.schedulers.scenario.calibration import Spread, empirical, latency_toml, spread, stalled, to_emulated
from schedlab.cli.command import EXIT_BAD_INPUT, error, interruptible, live_ray, verbosity

MAX_MESSAGES = 100_000


class BadInput(ValueError):
    """One line for the user: the option and the problem."""


def check(args: argparse.Namespace) -> Path | None:
    """The options, checked before anything starts; the output file's path."""
    if not (math.isfinite(args.time_scale) and args.time_scale > 0):
        raise BadInput(f"--time-scale: must be a finite number > 0 (got {args.time_scale:g})")
    if not 1 <= args.messages <= MAX_MESSAGES:
        raise BadInput(f"--messages: must be between 1 and {MAX_MESSAGES:,} (got {args.messages})")
    if args.out is None:
        return None
    out = Path(args.out)
    if out.is_dir():
        raise BadInput(f"--out: {out} is a directory; give a file name (e.g. {out / 'latency.toml'})")
    parent = out.parent if str(out.parent) else Path(".")
    if not parent.is_dir():
        raise BadInput(f"--out: no such directory {parent}")
    if not os.access(parent, os.W_OK) or (out.exists() and not os.access(out, os.W_OK)):
        raise BadInput(f"--out: cannot write {out}")
    return out


def describe(name: str, s: Spread) -> str:
    return (f"{name}: p50 {s.p50:.3g}  p90 {s.p90:.3g}  p99 {s.p99:.3g}  p99.9 {s.p999:.3g}  max {s.max:.3g}  "
            f"(mean {s.mean:.3g}, n {s.n})")


def stall_warning(one_way_ms: Spread) -> str | None:
    """A line for the user when a stall carries the measurement (``stalled``)."""
    if not stalled(one_way_ms):
        return None
    return (f"warning: the one-way mean ({one_way_ms.mean:.3g} ms) is {one_way_ms.mean / one_way_ms.p50:.0f}x its median: "
            "a stall during the measuring (other load on this machine?) carries the table, and the sim would apply it "
            "to messages independently, all run long; rerun when the machine is quieter, or with more --messages")


def comment(m: Any, one: Spread, rtt: Spread, time_scale: float, where: str) -> list[str]:
    return [
        f"schedlab calibrate: the live Ray substrate's message latency, {where}.",
        "One-way delay of a schedlab actor's send: stamped by the sender, read on arrival by the receiver",
        f"(one machine, one clock); {one.n} messages, one every {m.gap_s * 1e3:g} ms, {m.payload}-task batches.",
        f"Values in EMULATED seconds for time_scale = {time_scale:g}: emulated = wall x time_scale. A scenario",
        "uses it with include = [\"<this file>\"] (refused at another time_scale: the wall delay it models",
        "would change by the ratio) and --engine sim: that run's messages then take what they took on this Ray.",
        "The sim engine draws one delay per message; a call is two messages (request, reply), so its round",
        "trip is the sum of two draws.",
        f"Measured, wall ms: {describe('one-way', one)}",
        f"                   {describe('round trip', rtt)}",
        f"                   2 x one-way p50 = {2 * one.p50:.3g} ms, against a measured round-trip p50 of {rtt.p50:.3g} ms",
        *filter(None, [stall_warning(one)]),
    ]


@interruptible
def cmd_calibrate(args: argparse.Namespace) -> int:
    try:
        out = check(args)
    except BadInput as e:
        error(str(e))
        return EXIT_BAD_INPUT
    from schedlab.actors import engines
    from schedlab.actors.calibrate import measure

    t0 = time.monotonic()
    try:
        with live_ray(args.address, "schedlab-calibrate"):
            if not args.quiet:
                print(f"schedlab: calibrating Ray ({'joined ' + args.address if args.address else 'embedded'}), "
                      f"{args.messages} one-way messages and {args.messages} round trips ...", flush=True)
            m = measure(args.messages)
    except engines.ClusterUnreachable as e:
        error(str(e))
        return EXIT_BAD_INPUT
    one, rtt = spread(m.one_way), spread(m.round_trip)
    where = f"{'cluster at ' + args.address if args.address else socket.gethostname()}, {time.strftime('%Y-%m-%d %H:%M')}"
    text = latency_toml(empirical(to_emulated(m.one_way, args.time_scale)),
                        comment(m, one.scaled(1e3), rtt.scaled(1e3), args.time_scale, where), args.time_scale)
    if not args.quiet:
        print(describe("one-way, wall ms", one.scaled(1e3)))
        print(describe("round trip, wall ms", rtt.scaled(1e3)))
        print(f"(in {time.monotonic() - t0:.1f} s; emulated = wall x time_scale {args.time_scale:g}: "
              f"one-way p50 {one.p50 * args.time_scale:.3g} emulated s)")
    warning = stall_warning(one.scaled(1e3))
    if warning:
        print(warning, file=sys.stderr)
    if out is None:
        print(text, end="")
    else:
        out.write_text(text)
        if not args.quiet:
            print(f"wrote {out}: [substrate] latency for time_scale {args.time_scale:g}")
    return 0


def add_parser(sub: Any) -> None:
    c = sub.add_parser(
        "calibrate", help="measure the live Ray substrate's message latency and write it as a sim [substrate] latency",
        description="Measure this machine's Ray (or the cluster at --address): the one-way delay and round trip of "
                    "schedlab actors' messages. Writes the one-way delays as [substrate] latency = { dist = "
                    "\"empirical\", ... } in EMULATED seconds for --time-scale (emulated = wall x time_scale), with that "
                    "time_scale, so a scenario that includes the file (include = [\"FILE\"]) models 'Ray on this "
                    "machine' when run with --engine sim. The sim engine draws one delay per message; "
                    "a call is a request and a reply, two draws. Takes ~10-20 s.")
    c.add_argument("--time-scale", type=float, required=True,
                   help="emulated seconds per wall second of the scenarios the table is for (values = wall x this)")
    c.add_argument("--messages", type=int, default=1000, help="one-way messages, and as many round trips (default 1000)")
    c.add_argument("--out", help="write the TOML fragment here (default: print it)")
    c.add_argument("--address", help="join the Ray cluster at this address (default: RAY_ADDRESS, else embedded local Ray)")
    verbosity(c)
    c.set_defaults(fn=cmd_calibrate)
