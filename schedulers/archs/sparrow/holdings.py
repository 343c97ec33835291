"""What a restarted Sparrow or Hawk scheduler learns from the node
monitors, and what it decides from it, pure. The shells gather one
``owned`` reply per node monitor (``NodeMonitor.owned``) and act on the
decisions here: which tasks to place again, how many reservations to add,
how much long work each worker still has ahead."""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Holdings:
    """Everything the node monitors hold of one scheduler: started and
    queued task indices per job, reservations (waiting or asking) per job,
    and running tasks as [machine, job, task]."""

    started: dict[int, set[int]] = field(default_factory=dict)
    queued: dict[int, set[int]] = field(default_factory=dict)
    reservations: dict[int, int] = field(default_factory=dict)
    running: list = field(default_factory=list)


def merge_holdings(replies: Iterable[Mapping]) -> Holdings:
    """One Holdings from node monitors' ``owned`` replies."""
    out = Holdings()
    for rep in replies:
        for j, t in rep["started"]:
            out.started.setdefault(int(j), set()).add(int(t))
        for j, ts in rep["queued"].items():
            out.queued.setdefault(int(j), set()).update(int(t) for t in ts)
        for j, n in rep["reservations"].items():
            out.reservations[int(j)] = out.reservations.get(int(j), 0) + int(n)
        out.running += rep["running"]
    return out


def not_started(tasks: int, started: Iterable[int]) -> list[int]:
    """A job's task indices no node monitor has started, in order."""
    done = set(started)
    return [i for i in range(tasks) if i not in done]


def missing(tasks: int, started: Iterable[int], queued: Iterable[int]) -> list[int]:
    """Task indices neither started nor queued anywhere: lost with the old
    incarnation, to be placed again."""
    held = set(started) | set(queued)
    return [i for i in range(tasks) if i not in held]


def reservations_to_add(d: int, left: int, have: int) -> int:
    """Late binding: reservations a recovered job needs besides the ``have``
    still out, for ``left`` tasks not started (``d`` per task missing its
    reservation, as a fresh placement would probe)."""
    return d * (left - have) if left > have else 0


def add_long_work(waiting: np.ndarray, general: Sequence[int], running: Iterable[Sequence[int]],
                  estimate: Mapping[int, float]) -> None:
    """Add to ``waiting`` (per general worker, in ``general``'s order) the
    estimated long work still running there ([machine, job, task] entries),
    for a restarted central scheduler's least-waiting placement. Jobs
    without a finite estimate, and workers outside ``general``, add nothing."""
    index = {w: i for i, w in enumerate(general)}
    for m, j, _t in running:
        est = estimate.get(int(j), math.inf)
        if int(m) in index and math.isfinite(est):
            waiting[index[int(m)]] += est
