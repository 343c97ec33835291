"""The Standard Workload Format (SWF) of the Parallel Workloads Archive,
pure: reading its 18 fields into jobs, and writing a synthetic sample
(rigid parallel jobs whose users over-estimate their run times, as studies
of real HPC logs report) so the repository ships a workload it generated
itself rather than a downloaded log.

A line is 18 whitespace-separated numbers; ``;`` starts a comment (the
header); -1 means unknown. The fields, 1-based: job number, submit time,
wait time, run time, allocated processors, average CPU time, used memory,
requested processors, requested time, requested memory, status, user,
group, executable, queue, partition, preceding job, think time.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

FIELDS = ("job", "submit", "wait", "run", "procs", "avg_cpu", "used_mem", "req_procs", "req_time", "req_mem",
          "status", "user", "group", "executable", "queue", "partition", "preceding", "think")


class SwfError(ValueError):
    """A malformed SWF line; str() names the line and field."""


@dataclass(frozen=True)
class SwfJob:
    """What the scheduler needs of an SWF job: its size (requested
    processors, else allocated), when it was submitted, how long it really
    ran, and the limit its user asked for (else its run time)."""

    job: int
    submit: float
    run: float
    procs: int
    req_time: float
    user: int
    queue: int
    partition: int


def read_swf(text: str, source: str = "<swf>") -> list[SwfJob]:
    """Every job of an SWF text, in file order. Jobs with no size or no run
    time (cancelled before they ran: -1 or 0) are skipped, as trace studies
    do; a line that is not 18 numbers is an SwfError naming it."""
    out: list[SwfJob] = []
    for n, line in enumerate(text.splitlines(), start=1):
        body = line.split(";", 1)[0].strip()
        if not body:
            continue
        parts = body.split()
        if len(parts) != len(FIELDS):
            raise SwfError(f"{source}: line {n}: {len(parts)} fields, an SWF line has {len(FIELDS)}")
        try:
            v = [float(x) for x in parts]
        except ValueError:
            bad = next(i for i, x in enumerate(parts) if not _number(x))
            raise SwfError(f"{source}: line {n}: field {bad + 1} ({FIELDS[bad]}): not a number: {parts[bad]!r}") from None
        f = dict(zip(FIELDS, v))
        procs = int(f["req_procs"]) if f["req_procs"] > 0 else int(f["procs"])
        if procs <= 0 or f["run"] <= 0:
            continue
        if f["submit"] < 0:
            raise SwfError(f"{source}: line {n}: field 2 (submit): must be >= 0, got {f['submit']:g}")
        req = f["req_time"] if f["req_time"] > 0 else f["run"]
        out.append(SwfJob(int(f["job"]), f["submit"], f["run"], procs, req, int(f["user"]), int(f["queue"]),
                          int(f["partition"])))
    return out


def _number(x: str) -> bool:
    try:
        float(x)
    except ValueError:
        return False
    return True


def synthetic_swf(jobs: int, seed: int, *, nodes: int = 64, max_size: int | None = None, mean_interarrival: float = 120.0,
                  runtime_median: float = 600.0, runtime_sigma: float = 1.5,
                  overestimate: tuple[float, float] = (1.0, 5.0), max_time: float = 86_400.0,
                  users: int = 12) -> str:
    """An SWF text of ``jobs`` rigid jobs for a machine of ``nodes``: Poisson
    arrivals, sizes powers of two up to ``max_size`` (default ``nodes``;
    small jobs most common), lognormal run times, and
    requested times the run time times a factor drawn uniformly from
    ``overestimate`` (users over-estimate), rounded up to whole minutes and
    capped at ``max_time`` (a job still running at its limit is killed: its
    run time is capped too). Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(mean_interarrival, jobs))
    max_pow = int(np.log2(max_size or nodes))
    sizes = 2 ** np.minimum(rng.geometric(0.45, jobs) - 1, max_pow)
    run = np.minimum(np.maximum(rng.lognormal(np.log(runtime_median), runtime_sigma, jobs), 1.0), max_time)
    factor = rng.uniform(overestimate[0], overestimate[1], jobs)
    req = np.minimum(np.ceil(run * factor / 60.0) * 60.0, max_time)
    run = np.minimum(run, req)
    user = rng.integers(1, users + 1, jobs)
    lines = ["; synthetic SWF written by schedlab (schedulers/model/swf.py: synthetic_swf)",
             f"; seed {seed}, {jobs} jobs, {nodes} nodes, requested time = run time x U{overestimate}",
             f"; MaxNodes: {nodes}", f"; MaxProcs: {nodes}"]
    for i in range(jobs):
        row = [i + 1, round(float(submit[i])), -1, round(float(run[i])), int(sizes[i]), -1, -1, int(sizes[i]),
               int(req[i]), -1, 1, int(user[i]), 1, -1, 1, 1, -1, -1]
        lines.append(" ".join(str(x) for x in row))
    return "\n".join(lines) + "\n"
