"""The cell's utilization samples (``cell_sample``) where no cell state
holds the whole cell's usage: per-host service actors (a sampling
scheduler's node monitors, a web server's processes) each know their own
machines, so one of them asks all of them every sample interval and logs
the sum."""
from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import numpy as np
from schedlab.schedulers.events.shared import CELL_SAMPLE
from schedlab.schedulers.model.resources import sample_fields, used_shares


async def sample_usage_loop(shell: Any, names: Sequence[str], total: Sequence[float], interval: float) -> None:
    """Until ``shell`` stops: every ``interval`` emulated s, ask each actor
    of ``names`` for ``usage()`` (per resource, what its machines run) and
    log the cell's shares of ``total``, per resource. An actor that does not
    answer counts as running nothing (its host is down or restarting)."""
    cap = np.asarray(total, dtype=np.float64)
    while await shell.nap(interval):
        handles = [h for h in (shell.rt.lookup(n) for n in names) if h is not None]
        got = await asyncio.gather(*(shell.rt.call(h, "usage") for h in handles), return_exceptions=True)
        used = np.zeros_like(cap)
        for g in got:
            if not isinstance(g, BaseException):
                used += np.asarray(g, dtype=np.float64)
        shell.log.emit(CELL_SAMPLE, **sample_fields(used_shares(used, cap)), version=0)
