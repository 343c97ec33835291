"""Exit codes and the one-line error every command prints.

2: bad input (a malformed file, an unknown actor, no cluster at the address),
refused before any actor starts; 3: a run broke an invariant; 130: stopped
by Ctrl-C."""
from __future__ import annotations

import argparse
import contextlib
import functools
import sys
from collections.abc import Iterator
from typing import Any, Callable

EXIT_BAD_INPUT = 2
EXIT_INVARIANT = 3
EXIT_INTERRUPTED = 130
# What every exit code means, for every command (the reference page lists these).
EXIT_CODES = {
    0: "Done: the run (or every run) ended with every invariant holding; a tool did what it was asked.",
    1: "A tool's own verdict: a finding outside its tolerance (reproduce), a fault the run skipped (chaos), "
       "a benchmark or check that failed.",
    EXIT_BAD_INPUT: "Bad input, said in one line naming the file, key or line and the problem, before any actor "
                    "started (a malformed scenario or trace, an unknown actor, no cluster at the given address).",
    EXIT_INVARIANT: "A run ended with an invariant violated (overcommit, double placement, lost jobs or commits, "
                    "split brain, ...) or a job lost (soak).",
    EXIT_INTERRUPTED: "Interrupted (Ctrl-C): what was started is stopped and torn down.",
}


def error(message: str) -> None:
    """Plain print, not rich: an error is one unwrapped line a script can grep."""
    print(f"error: {message}", file=sys.stderr)


def interruptible(cmd: Callable[[Any], int]) -> Callable[[Any], int]:
    """A command that runs scenarios on Ray: Ctrl-C stops it at the next
    safe point (schedlab.actors.interrupt), its actors are killed and its
    Ray shut down on the way out, and it exits 130 with one line. Also
    applies ``-v`` (actors' output and Ray's logs to the terminal)."""
    @functools.wraps(cmd)
    def run(args: Any) -> int:
        from schedlab.actors import interrupt
        from schedlab.actors.engines.verbosity import set_verbose

        set_verbose(bool(getattr(args, "verbose", False)))
        with interrupt.deferred():
            try:
                return cmd(args)
            except interrupt.Interrupted:
                error("interrupted (Ctrl-C): the run's actors were stopped; what it logged so far is in its OUT")
                return EXIT_INTERRUPTED
    return run


def verbosity(sp: argparse.ArgumentParser) -> None:
    """-q and -v, for every command that runs scenarios."""
    g = sp.add_mutually_exclusive_group()
    g.add_argument("-q", "--quiet", action="store_true", help="no banner, progress or table: errors only (the exit code tells)")
    g.add_argument("-v", "--verbose", action="store_true",
                   help="actors' output and Ray's logs to the terminal (a print in your own policy shows up)")


@contextlib.contextmanager
def live_ray(address: str | None, namespace: str) -> Iterator[Any]:
    """The live (Ray) engine, connected through its one connect function
    (joined to ``address``, else an embedded local Ray) and current
    (``engines.use``) for the block; shut down afterwards only if this
    started it. Raises ``engines.ClusterUnreachable`` (bad input: the
    caller says so in one line) before the block runs."""
    from schedlab.actors import engines

    eng = engines.engine_class("ray")()
    with engines.use(eng):
        started = eng.connect(address, namespace)
        try:
            yield eng
        finally:
            if started:
                eng.shutdown()
