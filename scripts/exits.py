"""Exit codes and the one-line error every command prints.

2: bad input (a malformed file, an unknown actor, no cluster at the address),
refused before any actor starts; 3: a run broke an invariant; 130: stopped
by Ctrl-C."""
from __future__ import annotations

import sys

EXIT_BAD_INPUT = 2
EXIT_INVARIANT = 3
EXIT_INTERRUPTED = 130


def error(message: str) -> None:
    """Plain print, not rich: an error is one unwrapped line a script can grep."""
    print(f"error: {message}", file=sys.stderr)
