"""The pure half of ``experiments/crosscheck.py``: which numbers of a summary
are compared, how close live and sim must be, and the table.

Runs are paired by seed (one seed, one workload, on both engines); a seed
whose run failed or broke an invariant on either engine is left out of
the comparison on both, and named under the table. Per scenario and
metric: the live runs' values and the sim runs', each engine's median with
its range over seeds, and a verdict: **agree** when the medians are within the metric's tolerance,
``|sim - live| <= abs + rel x |live|``; **DIFFER** when not; **n/a** when
an engine has no value (no failover happened, say). Tolerances are stated
here, once, and printed with the table.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tolerance:
    rel: float  # of the live median
    abs: float  # in the metric's unit

    def allows(self, live: float, sim: float) -> bool:
        return abs(sim - live) <= self.abs + self.rel * abs(live) + 1e-12

    def text(self) -> str:
        return f"±{self.rel:.0%} + {self.abs:g}"


# By metric (a scheduler's own busyness and conflict fraction go by their kind).
# Emulated seconds for waits and downtimes; fractions for the rest.
TOLERANCES: dict[str, Tolerance] = {
    "jobs scheduled": Tolerance(0.05, 2),           # a run's few last-second jobs may fall either side of its end
    "wait p50 (s)": Tolerance(0.25, 0.25),          # 0.25 emulated s: a few message latencies at these scales
    "wait p90 (s)": Tolerance(0.25, 0.5),
    "busyness": Tolerance(0.20, 0.03),
    "conflict fraction": Tolerance(0.25, 0.03),
    "utilization (cpu)": Tolerance(0.0, 0.03),      # 3 points of the cell's cpu
    "failover downtime (s)": Tolerance(0.30, 0.5),
    # Not a scheduling outcome: how long a scheduler's commits took inside the
    # run (request, the receiver's work and queue, reply), against what the
    # latency model holds (two draws: the sim charges no time for the work).
    "commit round trip (wall ms)": Tolerance(0.50, 0.5),
}


def tolerance(metric: str) -> Tolerance:
    return TOLERANCES.get(metric) or TOLERANCES[metric.split(" [")[0]]


def metrics(summary: dict) -> dict[str, float]:
    """The compared numbers of one run's summary.json, by metric name (a
    scheduler's as ``busyness [name]``); a metric the run has no value for
    (no failover; no wait measured) is left out."""
    out: dict[str, float] = {"jobs scheduled": float(summary["jobs"]["scheduled"])}
    wait = summary["wait_time_s"]["first_attempt"]
    for q in ("p50", "p90"):
        if wait.get(q) is not None:
            out[f"wait {q} (s)"] = float(wait[q])
    for s in summary.get("schedulers", []):
        out[f"busyness [{s['name']}]"] = float(s["busyness"])
        out[f"conflict fraction [{s['name']}]"] = float(s["conflict_fraction"])
        if s.get("commit_rtt_wall_ms_p50"):  # 0 or absent: the architecture does not time its commits
            out[f"commit round trip (wall ms) [{s['name']}]"] = float(s["commit_rtt_wall_ms_p50"])
    out["utilization (cpu)"] = float(summary["utilization"]["cpu_mean"])
    downs = [f["downtime_emulated_s"] for f in summary.get("failovers", []) if f.get("downtime_emulated_s") is not None]
    if downs:
        out["failover downtime (s)"] = float(np.mean(downs))
    return out


@dataclass(frozen=True)
class Row:
    scenario: str
    metric: str
    live: tuple[float, ...]  # one per seed that has the metric
    sim: tuple[float, ...]

    @property
    def tolerance(self) -> Tolerance:
        return tolerance(self.metric)

    @property
    def verdict(self) -> str:
        if not self.live or not self.sim:
            return "n/a"
        return "agree" if self.tolerance.allows(median(self.live), median(self.sim)) else "DIFFER"


@dataclass(frozen=True)
class Paired:
    """The runs compared (same seeds, same order) and the seeds left out."""

    live: list[dict]
    sim: list[dict]
    left_out: dict[int, str]  # seed -> why


def pair(seeds: list[int], live: list[dict], sim: list[dict]) -> Paired:
    """Summaries (each with its ``seed`` and ``invariants``) paired by seed:
    a seed is compared only if its run finished and kept every invariant on
    both engines."""
    by = ({s["seed"]: s for s in live}, {s["seed"]: s for s in sim})
    kept, left_out = [], {}
    for seed in seeds:
        why = []
        for engine, runs in zip(("live", "sim"), by):
            if seed not in runs:
                why.append(f"failed on {engine}")
            elif broken := {k: v for k, v in runs[seed]["invariants"].items() if v}:
                why.append(f"broke {', '.join(f'{k} ({v})' for k, v in broken.items())} on {engine}")
        if why:
            left_out[seed] = "; ".join(why)
        else:
            kept.append(seed)
    return Paired([by[0][s] for s in kept], [by[1][s] for s in kept], left_out)


def median(values: Iterable[float]) -> float:
    return float(np.median(np.asarray(list(values), dtype=np.float64)))


def compare(scenario: str, live: list[dict], sim: list[dict]) -> list[Row]:
    """One row per metric either engine's summaries have, in the order they
    first appear (live first)."""
    per = ([metrics(s) for s in live], [metrics(s) for s in sim])
    names = list(dict.fromkeys(k for runs in per for m in runs for k in m))
    return [Row(scenario, k, tuple(m[k] for m in per[0] if k in m), tuple(m[k] for m in per[1] if k in m)) for k in names]


def _num(x: float) -> str:
    return f"{x:.3g}" if abs(x) < 1000 else f"{x:.0f}"


def spread(values: tuple[float, ...]) -> str:
    """``median [min–max]`` over seeds (``-`` when there are none)."""
    if not values:
        return "-"
    if len(values) == 1:
        return _num(values[0])
    return f"{_num(median(values))} [{_num(min(values))}–{_num(max(values))}]"


def render(rows: list[Row]) -> str:
    """A Markdown table: scenario, metric, live and sim (median [range]), tolerance, verdict."""
    lines = ["| scenario | metric | live | sim (calibrated) | tolerance | verdict |",
             "|---|---|---|---|---|---|"]
    last = None
    for r in rows:
        name = r.scenario if r.scenario != last else ""
        last = r.scenario
        lines.append(f"| {name} | {r.metric} | {spread(r.live)} | {spread(r.sim)} | {r.tolerance.text()} | {r.verdict} |")
    return "\n".join(lines) + "\n"
