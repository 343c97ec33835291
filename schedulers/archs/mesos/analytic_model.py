"""The Mesos paper's analytic model of framework ramp-up, job completion
and utilization (Hindman et al., NSDI 2011, §4.2, Table 2), and the
measurement of the same quantities from a run's events. Pure.

The model: a framework wants k slots of a cell full of other tasks; slot j
comes free at r_j, the residual life of the task on it (uniform on [0, T]
for constant task durations T, exponential with mean T for exponential
ones). An elastic framework uses every slot from r_j on; a rigid one starts
its job, beta*T long on k slots, once it holds all k.
"""
from __future__ import annotations

import collections
import math
from dataclasses import dataclass

import numpy as np
from schedlab.schedulers.events.shared import JOB_SUBMITTED, TASKS_COMPLETED, TASKS_LAUNCHED

DISTS = ("constant", "exponential")
MODES = ("elastic", "rigid")


def paper(mode: str, dist: str, k: int, beta: float) -> dict[str, float]:
    """Table 2, in units of T: ramp-up, completion, utilization."""
    lk = math.log(k)
    if dist == "constant":
        ramp = 1.0
        completion = 0.5 + beta if mode == "elastic" else 1.0 + beta
        util = 1.0 if mode == "elastic" else beta / (0.5 + beta)
    else:
        ramp = lk
        completion = 1.0 + beta if mode == "elastic" else lk + beta
        util = 1.0 if mode == "elastic" else beta / (lk - 1.0 + beta)
    return {"ramp_up": ramp, "completion": completion, "utilization": util}


def harmonic(k: int) -> float:
    return float(np.sum(1.0 / np.arange(1, k + 1)))


def exact(mode: str, dist: str, k: int, beta: float, task: float | None = None) -> dict[str, float]:
    """The same model's expectations at this finite k, in units of T. The
    paper's formulas are their large-k forms: the last of k uniform slots
    comes at k/(k+1) T, the last of k exponential ones at H_k T (the
    harmonic number, ln k + 0.577 + ...), and an elastic job on exponential
    slots finishes at c T with c - 1 + e^-c = beta (the paper's 1 + beta
    drops e^-c). ``task``: an elastic job's work comes in tasks this long
    (units of T) rather than infinitely divisible, as any real framework's
    does; computed by simulation (``elastic_tasks``)."""
    last = k / (k + 1) if dist == "constant" else harmonic(k)
    mean_release = 0.5 if dist == "constant" else 1.0
    if mode == "rigid":
        completion = last + beta
        # Work over slot-time held: sum over slots of (completion - r_j).
        return {"ramp_up": last, "completion": completion, "utilization": beta / (completion - mean_release)}
    if task is not None:
        return elastic_tasks(dist, k, beta, task)
    if dist == "constant":
        completion = 0.5 + beta  # exact once completion >= T, which beta >= 0.5 ensures
    else:
        c = 1.0 + beta
        for _ in range(50):  # Newton on f(c) = c - 1 + e^-c - beta
            c -= (c - 1.0 + math.exp(-c) - beta) / (1.0 - math.exp(-c))
        completion = c
    return {"ramp_up": last, "completion": completion, "utilization": 1.0}


def elastic_tasks(dist: str, k: int, beta: float, task: float, draws: int = 4000, seed: int = 0) -> dict[str, float]:
    """An elastic job of beta*k/task tasks, each started the moment a slot
    is free (list scheduling), over ``draws`` random slot releases: mean
    ramp-up and completion, and work over slot-time (units of T)."""
    rng = np.random.default_rng(seed)
    r = rng.uniform(0.0, 1.0, (draws, k)) if dist == "constant" else rng.exponential(1.0, (draws, k))
    avail = r.copy()
    used = np.zeros_like(r, dtype=bool)
    rows = np.arange(draws)
    n = int(round(beta * k / task))
    for _ in range(n):
        j = avail.argmin(axis=1)
        avail[rows, j] += task
        used[rows, j] = True
    completion = np.where(used, avail, -np.inf).max(axis=1)
    held = np.clip(completion[:, None] - r, 0.0, None).sum()
    return {"ramp_up": float(r.max(axis=1).mean()), "completion": float(completion.mean()), "utilization": n * task * draws / float(held)}


@dataclass(frozen=True)
class Trial:
    origin: float  # the test job waiting and the cell full of background tasks
    ramp_up: float  # until every slot had come free and (if the job still ran) been used
    completion: float  # until the job's last task ended
    work: float  # slot-seconds its tasks ran
    held: float  # slot-seconds from each slot's release to the job's end
    ideal_ramp_up: float  # the same, had every slot been used the moment it came free
    ideal_completion: float

    @property
    def utilization(self) -> float:
        return self.work / self.held if self.held > 0 else float("nan")


def utilization(trials: list[Trial]) -> float:
    """Long-run utilization, as the model means it: total work over total
    slot-time held (a ratio of sums, not a mean of per-trial ratios)."""
    held = sum(t.held for t in trials)
    return sum(t.work for t in trials) / held if held > 0 else float("nan")


def _ideal_completion(mode: str, release: np.ndarray, work: float, job_length: float) -> float:
    """When the job would end with no scheduling delay at all, given when
    each slot came free (relative to the origin)."""
    if mode == "rigid":
        return float(release.max()) + job_length
    # Elastic: the smallest C with sum over slots of (C - r_j)+ = work.
    r = np.sort(release)
    for i in range(len(r)):
        c = (work + r[: i + 1].sum()) / (i + 1)
        if i + 1 == len(r) or c <= r[i + 1]:
            return float(c)
    return float("nan")


def trials(ev: dict[str, list[dict]], background: str, test: str, mode: str) -> tuple[list[Trial], int]:
    """One trial per test job: its origin is the later of its arrival and
    the moment its background job had a task on every machine (they start
    together, in one offer). Returns the trials and how many test jobs did
    not qualify (the background job did not fill the cell first, or the
    test job did not finish)."""
    submitted = sorted((e for e in ev.get(JOB_SUBMITTED, []) if e["job_class"] in (background, test)), key=lambda e: e["t"])
    starts: dict[tuple[int, int], tuple[int, float]] = {}
    for e in ev.get(TASKS_LAUNCHED, []):
        for t in e["tasks"]:
            starts[(int(t[0]), int(t[1]))] = (int(t[2]), float(t[-1]))
    ends: dict[tuple[int, int], float] = {}
    for e in ev.get(TASKS_COMPLETED, []):
        for j, task, _m, end in e["tasks"]:
            ends[(int(j), int(task))] = float(end)
    by_job: dict[int, list[tuple[int, int]]] = collections.defaultdict(list)
    for key in starts:
        by_job[key[0]].append(key)
    machines = sorted({m for m, _ in starts.values()})
    out: list[Trial] = []
    skipped = 0
    last_bg: dict | None = None
    for e in submitted:
        if e["job_class"] == background:
            last_bg = e
            continue
        job = int(e["job_id"])
        bg = by_job.get(int(last_bg["job_id"]), []) if last_bg else []
        mine = by_job.get(job, [])
        if not bg or {starts[k][0] for k in bg} != set(machines) or len(mine) < e["tasks"] \
                or any(k not in ends for k in bg + mine):
            skipped += 1
            continue
        origin = max(float(e["t"]), max(starts[k][1] for k in bg))
        if min(starts[k][1] for k in mine) < origin - 1e-9:  # it got a slot before the background job filled the cell
            skipped += 1
            continue
        release = {starts[k][0]: max(0.0, ends[k] - origin) for k in bg}
        first_use: dict[int, float] = {}
        for k in mine:
            m, s = starts[k]
            first_use[m] = min(first_use.get(m, math.inf), s - origin)
        end = max(ends[k] for k in mine) - origin
        work = sum(ends[k] - starts[k][1] for k in mine)
        r = np.array([release[m] for m in machines])
        # A slot that came free after the job ended was never needed: it counts at its release.
        ramp = max(first_use.get(m, release[m]) for m in machines)
        held = float(np.clip(end - r, 0.0, None).sum())
        length = work / len(machines) if mode == "rigid" else 0.0
        out.append(Trial(origin, ramp, end, work, held, float(r.max()), _ideal_completion(mode, r, work, length)))
    return out, skipped


def judge(measured: float, expected: float, spread: float, n: int, rel: float) -> bool:
    """Within ``rel`` of the expectation, widened by two standard errors of
    the trials' mean (the model is a mean over random slot releases)."""
    se = spread / math.sqrt(max(n, 1))
    return abs(measured - expected) <= rel * abs(expected) + 2.0 * se
