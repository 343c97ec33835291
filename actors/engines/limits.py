"""The size limits of a run started here: read from this machine and the
environment, handed to the pure scenario parser as a value
(``parse_scenario(..., limits=...)``), which never looks at the machine
itself (``schedulers.scenario.limits`` holds the arithmetic and says why
each bound is what it is)."""
from __future__ import annotations

import os

from schedlab.schedulers.scenario.limits import CLUSTER, Limits, memory_limits


def local_limits() -> Limits:
    """Actors that fit in this machine's memory at ~55 MB each, capped by
    Ray's envelope. Depends on the machine, which is the point: it is the
    machine the embedded Ray runs on."""
    return memory_limits(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def limits_for(address: str | None) -> Limits:
    """The limits of a run started with ``--address address``: a cluster's
    when an address is given or RAY_ADDRESS is set (as
    ``actors.engines.ray_engine.connect`` decides), else this machine's."""
    return CLUSTER if address or os.environ.get("RAY_ADDRESS") else local_limits()
