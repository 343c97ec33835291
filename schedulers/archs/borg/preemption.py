"""Borg's preemption choice: when nothing fits, which lower-priority tasks to
evict, and on which machine.

On each eligible machine, victims are taken lowest priority first (then
largest first) until the task fits; a machine's cost is (highest victim
priority, number of victims, resources evicted), and the cheapest machine
wins. ``may_preempt`` forbids prod evicting prod.
"""
from __future__ import annotations

from typing import Hashable, Mapping, Sequence, TypeVar

import numpy as np

from schedlab.schedulers.archs.borg.priority import may_preempt
from schedlab.schedulers.model.resources import EPS

K = TypeVar("K", bound=Hashable)  # a task's key: the caller's, handed back in the victims
Victim = tuple[K, int, np.ndarray]  # (task key, priority, request)


def victims_on(free: np.ndarray, request: np.ndarray, priority: int, running: Sequence[Victim[K]]) -> list[Victim[K]] | None:
    """The victims that make ``request`` fit on one machine, or None."""
    need = request - free
    if np.all(need <= EPS):
        return []
    allowed = sorted((v for v in running if may_preempt(priority, v[1])), key=lambda v: (v[1], -float(np.sum(v[2]))))
    chosen: list[Victim[K]] = []
    freed = np.zeros_like(request)
    for v in allowed:
        chosen.append(v)
        freed = freed + v[2]
        if np.all(need - freed <= EPS):
            return chosen
    return None


def choose_preemption(free: np.ndarray, request: np.ndarray, priority: int, running: Mapping[int, Sequence[Victim[K]]],
                      eligible: np.ndarray | None = None) -> tuple[int, list[Victim[K]]] | None:
    """(machine, victims) with the cheapest eviction, or None if no machine
    can make room. ``running`` maps machine -> its tasks."""
    best: tuple[tuple[int, int, float], int, list[Victim[K]]] | None = None
    for m, tasks in running.items():
        if eligible is not None and not eligible[m]:
            continue
        vs = victims_on(free[m], request, priority, tasks)
        if not vs:
            continue  # None: impossible here; []: it fits, not a preemption
        cost = (max(v[1] for v in vs), len(vs), float(sum(np.sum(v[2]) for v in vs)))
        if best is None or cost < best[0]:
            best = (cost, m, vs)
    return None if best is None else (best[1], best[2])
