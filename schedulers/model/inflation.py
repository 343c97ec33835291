"""Workload inflation as a scenario's workload ([workload.inflate]): tasks
drawn from the job classes arrive one at a time and never leave, until the
amount of one resource they asked for reaches a chosen multiple of the
cell's (Weng et al., ATC 2023, section 6; Google's packing measure,
"Evaluating job packing in warehouse-scale computing", CLUSTER 2014).
Any architecture runs it as any workload; what it measures is how much of
the resource is allocated as the arrived demand grows
(``actors.analysis.inflation``).

Each arrival is a one-task job of a class drawn by its share of the tasks
the workload would bring (rate times mean tasks per job), shaped as that
class's task would be: a trace class's recorded request (one of its jobs,
drawn), a drawn class's request drawn from its distributions. Seeded: one
generator for the whole stream, so the same seed gives the same arrivals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from schedlab.schedulers.model.jobs import Job, JobKind
from schedlab.schedulers.model.seeding import rng_for
from schedlab.schedulers.model.workload import JobClass, task_rate

MAX_ARRIVALS = 200_000  # a typo in ``until`` must not build millions of jobs


@dataclass(frozen=True)
class Inflation:
    """``resource``: whose demand is counted (its index in the cell's
    resources); ``until``: stop once the arrived demand is this many times
    the cell's total of it; ``gap``: emulated seconds between arrivals (time
    for the architecture to place one before the next)."""

    resource: int
    until: float = 1.3
    gap: float = 1.0


def _weights(classes: tuple[JobClass, ...]) -> np.ndarray:
    w = np.array([task_rate(c) for c in classes], dtype=np.float64)
    return w / w.sum()


def inflation_jobs(classes: tuple[JobClass, ...], total: float, spec: Inflation, seed: int) -> list[Job]:
    """The arrivals, in order (ids 0, 1, ...), until their demand for the
    resource reaches ``spec.until * total`` (or MAX_ARRIVALS, or no class
    asks any of it: then one pass of MAX_ARRIVALS would be pointless and
    none are made)."""
    if total <= 0 or not classes:
        return []
    if not any(c.request[spec.resource].maximum() > 0 for c in classes):
        return []  # (a trace class's request distributions hold the values its jobs ask)
    rng = rng_for(seed, "inflation")
    p = _weights(classes)
    out: list[Job] = []
    arrived = 0.0
    while arrived < spec.until * total and len(out) < MAX_ARRIVALS:
        jc = classes[int(rng.choice(len(classes), p=p))]
        if jc.trace and jc.trace[0].request is not None:
            tj = jc.trace[int(rng.integers(len(jc.trace)))]
            request, models = tuple(tj.request or ()), tj.models
        else:
            request = tuple(float(max(0.0, d.sample(rng, 1)[0])) for d in jc.request)
            models = jc.models
        arrived += request[spec.resource]
        out.append(Job(len(out), jc.name, JobKind.SERVICE, jc.priority, len(out) * spec.gap, request, (math.inf,),
                       models=models))
    return out
