"""Machines over a window of a converted trace: which ones are ever there,
the capacity each has when it first is, and when each is present, so a
replay can start a cell with every machine it will need and have machines
join and leave when the trace says.

Pure: the scenario layer turns ``presence`` into the run's machine events
(``schedulers.scenario.trace_workload``)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.traces import form
from schedlab.schedulers.traces.form import Trace


@dataclass(frozen=True)
class Presence:
    """``ids``: the trace's machines (dense ids) present at some time in the
    window, in id order; ``capacity`` [n, R]: each one's when it first is;
    ``intervals``: per machine, the (from, to) seconds from the window's
    start it is present (to = inf: still at the end); ``resized``: updates
    that changed a present machine's capacity (not replayed)."""

    ids: np.ndarray
    capacity: np.ndarray
    intervals: tuple[tuple[tuple[float, float], ...], ...]
    resized: int


def presence(trace: Trace, start: float, end: float) -> Presence:
    R = len(trace.resources)
    ids0, caps0 = trace.machines_at(start)
    state: dict[int, np.ndarray | None] = dict(zip(ids0.tolist(), caps0))  # machine -> its capacity now (None: absent)
    first: dict[int, np.ndarray] = dict(state)  # type: ignore[arg-type]  # (none is None at the start)
    spans: dict[int, list[list[float]]] = {m: [[0.0, math.inf]] for m in state}
    resized = 0
    inside = (trace.machine_time > start) & (trace.machine_time <= end)
    for t, m, ev, cap in zip(trace.machine_time[inside].tolist(), trace.machine_id[inside].tolist(),
                             trace.machine_event[inside].tolist(), trace.machine_capacity[inside].astype(np.float64)):
        at = t - start
        was = state.get(m)
        now = None if ev == form.REMOVE else cap
        if was is None and now is not None:
            first.setdefault(m, now)
            spans.setdefault(m, []).append([at, math.inf])
        elif was is not None and now is None:
            spans[m][-1][1] = at
        elif was is not None and now is not None and not np.allclose(was, now):
            resized += 1
        state[m] = now
    ids = np.asarray(sorted(first), dtype=np.int64)
    return Presence(ids, np.asarray([first[m] for m in ids.tolist()], dtype=np.float64).reshape(ids.size, R),
                    tuple(tuple((a, b) for a, b in spans[m]) for m in ids.tolist()), resized)
