"""Whether a run's actors talk to the terminal (``-v``), set by the command
before any engine is imported (importing the live engine imports Ray, and a
command must refuse bad input before Ray is ever loaded)."""
from __future__ import annotations

verbose = False


def set_verbose(on: bool) -> None:
    global verbose
    verbose = on
