"""Exit codes and the one-line error every command prints.

2: bad input (a malformed file, an unknown actor, no cluster at the address),
refused before any actor starts; 3: a run broke an invariant; 130: stopped
by Ctrl-C."""
from __future__ import annotations

import argparse
import functools
import sys
from typing import Any, Callable

EXIT_BAD_INPUT = 2
EXIT_INVARIANT = 3
EXIT_INTERRUPTED = 130


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
