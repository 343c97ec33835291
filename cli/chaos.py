"""``schedlab chaos``: break a running emulation from another terminal.

Attaches to the run's Ray (``--address`` and ``--namespace``, or ``--run
OUT``, whose run.json holds both), reads the run's roster from its chaos
inbox, checks the fault against it and posts it; the run's driver carries it
out and logs it. Nothing is injected unless every fault given checks out.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.actors.analysis.run_info import RunSetup
from schedlab.actors.chaos.inbox import cluster_dir
from schedlab.schedulers.arch import all_roles
from schedlab.schedulers.faults.plan import FaultError, FaultSpec, Monkey, Roster, check, parse_plan
from schedlab.schedulers.scenario.toml_table import ScenarioError, read_toml
from schedlab.cli.command import EXIT_BAD_INPUT, error

OUTCOME_WAIT_S = 30.0


class ChaosError(Exception):
    """Bad input: one line for the user, exit 2, nothing injected."""


def _target(args: argparse.Namespace) -> tuple[str, str, bool]:
    """(Ray address, namespace, whether it is a run's embedded Ray) from the
    flags or the run's run.json."""
    address, namespace, embedded = args.address, args.namespace, False
    if args.run:
        try:
            setup = RunSetup.read(Path(args.run) / "run.json")
        except (ScenarioError, ValueError, KeyError, TypeError):
            raise ChaosError(f"{args.run}: not a schedlab run directory (no readable run.json)") from None
        if setup.engine != "ray":
            raise ChaosError(f"{args.run}: a run on the {setup.engine} engine lives inside its own process: nothing "
                             "outside can reach it. Break it with [[faults]] in its scenario, or run it live (--engine ray)")
        embedded = setup.embedded and not address
        address = address or setup.address
        namespace = namespace or setup.namespace
    address = address or os.environ.get("RAY_ADDRESS")
    if not address:
        raise ChaosError("no Ray address: give --address HOST:PORT or --run OUT (the running run's directory)")
    if not args.run:
        # A bare address is a scripts/cluster.sh cluster when its port is the
        # one cluster.sh recorded; otherwise a run's embedded Ray.
        port_file = cluster_dir() / "port"
        cluster_port = port_file.read_text().strip() if port_file.is_file() else None
        embedded = address.rpartition(":")[2] != cluster_port
    if not namespace:
        raise ChaosError("no namespace: give --namespace schedlab-<id> (printed by schedlab run) or --run OUT")
    return address, namespace, embedded


class Attached:
    """The chaos script's view of one running emulation."""

    def __init__(self, address: str, namespace: str, embedded: bool) -> None:
        from schedlab.actors.engines import ray_engine
        from schedlab.actors.chaos.inbox import INBOX_NAME

        self.rt = ray_engine
        try:
            ray_engine.connect(address, namespace, loopback_only=embedded)
        except ray_engine.ClusterUnreachable as e:
            raise ChaosError(str(e)) from None
        self.inbox = ray_engine.lookup(INBOX_NAME, namespace)
        if self.inbox is None:
            ray_engine.shutdown()
            raise ChaosError(f"no schedlab run in namespace {namespace!r} at {address} (finished, or a wrong namespace?)")
        self.about = self._call("about")
        self.roster = Roster.from_wire(self.about["roster"])
        self.scale = float(self.about["time_scale"])

    def _call(self, method: str, *args: Any) -> Any:
        return self.rt.gather([self.rt.call(self.inbox, method, *args)], timeout=10)[0]

    def now(self) -> float:
        return float(self._call("about")["now_s"] or 0.0)

    def post(self, f: FaultSpec) -> int:
        return int(self._call("post", f.to_wire()))

    def outcome(self, ticket: int, timeout: float = OUTCOME_WAIT_S) -> dict:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                got = self._call("outcome", ticket)
            except Exception:  # the run ended and took its inbox with it
                return {"skipped": "the run ended"}
            if got is not None:
                return got
            time.sleep(0.1)
        return {"skipped": f"no outcome within {timeout:g}s (is the run's driver alive?)"}

    def close(self) -> None:
        self.rt.shutdown()


def _print(outcome: dict, f: FaultSpec) -> None:
    print(json.dumps({"fault": f.action, **outcome}), flush=True)


def _one_shot(args: argparse.Namespace) -> FaultSpec:
    a = args.action
    if a == "kill" or a.replace("-", "_") in _leader_kills():
        return FaultSpec(0.0, a.replace("-", "_"), getattr(args, "target", ""), restart_after=args.restart_after)
    if a == "restart":
        return FaultSpec(0.0, "restart", args.target)
    if a == "kill-node":
        return FaultSpec(0.0, "kill_node", args.node)
    if a == "pause":
        return FaultSpec(0.0, "pause", args.target, duration=args.for_s)
    if a == "slow":
        return FaultSpec(0.0, "slow", args.target, duration=args.for_s, delay=args.delay)
    return FaultSpec(0.0, "partition", args.target, peer=args.peer, duration=args.for_s)


def run_chaos(args: argparse.Namespace) -> int:
    """Returns the exit code: 0 when every fault was carried out, 1 when
    one was skipped by the run (no leader at that moment, say), 2 on bad input."""
    try:
        plan_data = None
        if args.action == "plan":
            try:
                plan_data = read_toml(args.file, "plan")
            except ScenarioError as e:
                raise ChaosError(str(e)) from None
        if args.action == "monkey":
            roles = all_roles()
            bad = [r for r in args.roles if r not in roles]
            if bad:
                raise ChaosError(f"--roles: unknown role {bad[0]!r} (one of {', '.join(roles)})")
            if not args.every > 0:
                raise ChaosError(f"--every: must be > 0 wall seconds (got {args.every:g})")
        address, namespace, embedded = _target(args)
        run = Attached(address, namespace, embedded)
    except ChaosError as e:
        error(str(e))
        return EXIT_BAD_INPUT
    try:
        if args.action == "roster":
            print(json.dumps({"namespace": namespace, **run.about}))
            return 0
        if args.action == "monkey":
            return _monkey(run, args)
        try:
            if plan_data is not None:
                faults = parse_plan(plan_data, args.file, run.roster)
            else:
                faults = [_one_shot(args)]
                check(faults[0], run.roster)
        except (FaultError, ScenarioError) as e:
            error(str(e))
            return EXIT_BAD_INPUT
        start = run.now() if plan_data is not None else 0.0
        tickets = [(run.post(FaultSpec(**{**f.__dict__, "at": start + f.at})), f) for f in faults]
        skipped = 0
        for ticket, f in tickets:
            wait = OUTCOME_WAIT_S + max(0.0, f.at) / run.scale
            outcome = run.outcome(ticket, wait)
            skipped += "skipped" in outcome
            _print(outcome, f)
        return 1 if skipped else 0
    finally:
        run.close()


def _monkey(run: Attached, args: argparse.Namespace) -> int:
    """Random faults, one every ``--every`` wall seconds on average (seeded),
    until ``--for`` wall seconds pass or the run ends."""
    try:
        monkey = Monkey(run.roster, tuple(args.roles or [r for r in run.roster.members if run.roster.members[r]]),
                        np.random.default_rng(args.seed), lasting=args.lasting * run.scale,
                        back_after=args.back_after * run.scale, delay=args.delay_ms / 1e3 * run.scale,
                        known=tuple(all_roles()))
    except FaultError as e:
        error(str(e))
        return EXIT_BAD_INPUT
    end = time.monotonic() + (args.for_s if args.for_s else float("inf"))
    n = 0
    stopped = "--for elapsed"
    # Ray's driver answers SIGTERM with a crash report; a monkey told to stop
    # (by `kill` or a supervisor) should stop like one interrupted by Ctrl-C.
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        while True:
            time.sleep(min(float(monkey.rng.exponential(args.every)), max(0.0, end - time.monotonic())))
            if time.monotonic() >= end:
                break
            try:
                outcome = None
                if not run._call("about")["finished"]:
                    f = monkey.draw(0.0)
                    outcome = run.outcome(run.post(f), 10.0)
            except Exception:  # the run ended and its inbox with it
                pass
            if outcome is None:
                stopped = "the run ended"
                break
            n += 1
            _print(outcome, f)
    except KeyboardInterrupt:
        stopped = "interrupted"
    print(json.dumps({"monkey": "done", "faults": n, "stopped": stopped}), flush=True)
    return 0


def _leader_kills() -> dict[str, str]:
    """Every registered leader-kill action -> the role whose leader it kills."""
    return {r.kill_leader: name for name, r in all_roles().items() if r.kill_leader}


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def add_parser(sub: Any) -> None:
    c = sub.add_parser("chaos", help="inject faults into a running emulation (from another terminal)",
                       description="Durations (--for, --restart-after, --delay, plan files) are emulated seconds, "
                                   "as in scenario files; monkey rates are wall seconds.")
    c.add_argument("--run", help="the running run's OUT directory (its run.json has the address and namespace)")
    c.add_argument("--address", help="the run's Ray address (printed by schedlab run)")
    c.add_argument("--namespace", help="the run's namespace, schedlab-<id> (printed by schedlab run)")
    acts = c.add_subparsers(dest="action", required=True)
    acts.add_parser("roster", help="list the run's actors by role")
    kills = [("kill", "kill an actor (a name, or a role: a random live one)")]
    kills += [(action.replace("_", "-"), f"kill the current {role} leader ({all_roles()[role].about})")
              for action, role in _leader_kills().items()]
    for name, helptext in kills:
        k = acts.add_parser(name, help=helptext)
        if name == "kill":
            k.add_argument("target")
        k.add_argument("--restart-after", type=float, default=None, help="bring it back this many emulated seconds later")
    acts.add_parser("restart", help="bring back a killed actor").add_argument("target")
    acts.add_parser("kill-node", help="kill a whole worker node of a cluster.sh cluster (a rack failure)").add_argument("node")
    p = acts.add_parser("pause", help="freeze an actor (no answers, no timers)")
    p.add_argument("target")
    p.add_argument("--for", dest="for_s", type=float, required=True)
    s = acts.add_parser("slow", help="delay every message to or from an actor")
    s.add_argument("target")
    s.add_argument("--delay", type=float, required=True, help="emulated seconds added to each message")
    s.add_argument("--for", dest="for_s", type=float, required=True)
    q = acts.add_parser("partition", help="drop messages between two actors or roles, then heal")
    q.add_argument("target")
    q.add_argument("peer")
    q.add_argument("--for", dest="for_s", type=float, required=True)
    acts.add_parser("plan", help="a TOML fault plan: [[faults]] with at (emulated s from now), action, target, ...").add_argument("file")
    m = acts.add_parser("monkey", help="random faults at a rate, seeded")
    m.add_argument("--every", type=float, default=5.0, help="mean wall seconds between faults (default 5)")
    m.add_argument("--roles", type=lambda v: [r for r in v.split(",") if r], default=[], help="comma-separated roles (default: all)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--for", dest="for_s", type=float, default=None, help="stop after this many wall seconds (default: the run's end)")
    m.add_argument("--lasting", type=float, default=2.0, help="wall seconds a pause/slow/partition lasts at most (default 2)")
    m.add_argument("--back-after", type=float, default=1.0, help="wall seconds before a killed actor restarts (default 1)")
    m.add_argument("--delay-ms", type=float, default=20.0, help="wall milliseconds a slow link adds (default 20)")
    c.set_defaults(fn=run_chaos)
