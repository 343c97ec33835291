"""YARN's report plots: each leaf queue's memory share against its
entitlement over time (queue elasticity), preemptions per queue, and the
locality of task containers. Extraction is pure (from events and the
summary, the window ``summary.py`` averages over); drawing needs
matplotlib, imported when a plot is drawn."""
from __future__ import annotations

import collections
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from schedlab.actors.analysis import plots
from schedlab.actors.analysis.report_parts import Events, PlotSpec, Skip
from schedlab.schedulers.archs.yarn.events import CONTAINER_ALLOCATED, QUEUE_USAGE
from schedlab.schedulers.archs.yarn.queues import ROOT
from schedlab.schedulers.archs.yarn.spec import MEM
from schedlab.schedulers.events.shared import PREEMPTED

LEVELS = ("node_local", "rack_local", "off_switch")
LEVEL_COLORS = {"node_local": "tab:green", "rack_local": "tab:olive", "off_switch": "tab:red"}
ALL = "all queues"


def _in_run(summary: dict, events: Iterable[dict]) -> list[dict]:
    """Events up to the run's end (the summary's window: samples taken
    while the run was stopping would otherwise add a tail it ignores)."""
    end = float(summary["emulated_seconds"])
    return [e for e in events if e["t"] <= end + 1e-6]


def leaves(names: Iterable[str]) -> list[str]:
    """The leaf queues among ``names`` (full dotted names), sorted: a queue
    no other name extends. Sorted, so every plot gives a queue one colour."""
    names = set(names)
    return sorted(q for q in names if not any(n.startswith(q + ".") for n in names))


def queue_data(summary: dict, ev: Events) -> Any:
    """Per leaf queue, memory used and entitled as shares of the cell at
    each ``queue_usage`` sample: {"t": [s], "queues": {leaf: {"used": [...],
    "entitlement": [...]}}}. The cell is the root queue's entitlement (its
    whole capacity, under Capacity and Fair alike), as the RM saw it then;
    a sample without a root or with an empty cell is left out, and a queue
    missing from a sample is NaN there."""
    samples = []
    for e in _in_run(summary, ev.get(QUEUE_USAGE, [])):
        by_q = {q["queue"]: q for q in e["queues"]}
        cell = by_q[ROOT]["entitlement"][MEM] if ROOT in by_q else 0.0
        if cell > 0:
            samples.append((e["t"], by_q, cell))
    if not samples:
        return Skip("no queue_usage samples with a non-empty cell")
    qs = leaves(q for _, by_q, _ in samples for q in by_q)
    out: dict[str, dict[str, list[float]]] = {q: {"used": [], "entitlement": []} for q in qs}
    for _, by_q, cell in samples:
        for q in qs:
            s = by_q.get(q)
            for key in ("used", "entitlement"):
                out[q][key].append(s[key][MEM] / cell if s is not None else math.nan)
    return {"t": [t for t, _, _ in samples], "queues": out}


def preemption_data(summary: dict, ev: Events) -> Any:
    """Times of the ``preempted`` containers per leaf queue, sorted, and
    how many of them were AM containers: {"end": s, "queues": {leaf: [t]},
    "am": {leaf: n}}. Every leaf sampled appears (a flat line at 0 says
    the queue lost nothing); taken from the events, not the samples'
    counters, which restart with a restarted RM."""
    pre = _in_run(summary, ev.get(PREEMPTED, []))
    if not pre:
        return Skip("no container was preempted (no preempted events)")
    qs = leaves([q["queue"] for e in ev.get(QUEUE_USAGE, []) for q in e["queues"]] + [p["queue"] for p in pre])
    times: dict[str, list[float]] = {q: [] for q in qs}
    am: dict[str, int] = dict.fromkeys(qs, 0)
    for p in pre:
        times[p["queue"]].append(p["t"])
        am[p["queue"]] += bool(p.get("am"))
    return {"end": float(summary["emulated_seconds"]), "queues": {q: sorted(ts) for q, ts in times.items()}, "am": am}


def locality_data(summary: dict, ev: Events) -> Any:
    """Task containers allocated at each locality level, per leaf queue and
    over all: {row: {level: n}}, an ``all queues`` row first when there are
    several queues; the total's shares are the summary's ``yarn.locality``.
    Skipped when none was node- or rack-local: a task without preferred
    nodes is off-switch everywhere, so such a run recorded no preferences."""
    allocs = _in_run(summary, ev.get(CONTAINER_ALLOCATED, []))
    if not any(a["locality"] != "off_switch" for a in allocs):
        return Skip(f"all {len(allocs)} task containers were off-switch: no task preferred a node "
                    "(the queues' data_replicas = 0)")
    rows: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for a in allocs:
        rows[ALL][a["locality"]] += 1
        rows[a["queue"]][a["locality"]] += 1
    queues = sorted(q for q in rows if q != ALL)
    order = [ALL] + queues if len(queues) > 1 else queues  # one queue: its row is the total
    return {r: {lvl: rows[r][lvl] for lvl in LEVELS} for r in order}


def _color(i: int) -> str:
    """One colour per queue in sorted order, the same in every YARN plot."""
    return f"C{i % 10}"


def _time_axes(ax: Any, ylabel: str, title: str, legend_loc: str) -> None:
    """Labels, grid and legend shared by the two plots over emulated time."""
    ax.set(xlabel="emulated time (s)", ylabel=ylabel, title=title)
    ax.grid(alpha=0.3)
    plots.legend(ax, loc=legend_loc, fontsize="small")


def queue_usage(data: dict[str, Any], path: Path) -> None:
    """Solid: used memory share; dashed, same colour: entitlement."""
    fig, axs = plots.figure(size=(9.0, 4.6))
    ax = axs[0][0]
    t = data["t"]
    for i, (q, d) in enumerate(data["queues"].items()):
        ax.plot(t, d["used"], color=_color(i), lw=1.4, label=f"{q} used")
        ax.plot(t, d["entitlement"], color=_color(i), lw=1.1, ls="--", label=f"{q} entitlement")
    ax.set_ylim(0, 1.05)
    plots.percent_axis(ax)
    _time_axes(ax, "memory, share of the cell", "Queue usage against entitlement (memory)", "upper right")
    plots.save(fig, path)


def preemptions(data: dict[str, Any], path: Path) -> None:
    """Cumulative preempted containers per queue, as steps to the run's end."""
    from matplotlib.ticker import MaxNLocator

    fig, axs = plots.figure()
    ax = axs[0][0]
    for i, (q, ts) in enumerate(data["queues"].items()):
        xs = [0.0] + ts + [data["end"]]  # ts are within the run: none is past its end
        ys = list(range(len(ts) + 1)) + [len(ts)]
        ax.step(xs, ys, where="post", color=_color(i), lw=1.4, label=f"{q}: {len(ts)} ({data['am'][q]} AM)")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    _time_axes(ax, "containers preempted so far", "Preemptions per queue", "upper left")
    plots.save(fig, path)


def locality(data: dict[str, dict[str, int]], path: Path) -> None:
    """One horizontal bar per row, stacked by level as shares of its containers."""
    rows = list(data)
    fig, axs = plots.figure(size=(8.0, 2.2 + 0.5 * len(rows)))
    ax = axs[0][0]
    left = [0.0] * len(rows)
    for lvl in LEVELS:
        share = [data[r][lvl] / max(sum(data[r].values()), 1) for r in rows]
        ax.barh(rows, share, left=left, color=LEVEL_COLORS[lvl], label=lvl.replace("_", "-"))
        left = [a + b for a, b in zip(left, share)]
    for y, r in enumerate(rows):
        ax.annotate(f"n = {sum(data[r].values())}", (1.0, y), xytext=(4, 0), textcoords="offset points",
                    va="center", fontsize="small")
    ax.invert_yaxis()  # rows top-down in their order: "all queues" on top
    ax.set(xlim=(0, 1), xlabel="share of task containers (count at the right)", title="Locality of task containers")
    plots.percent_axis(ax, "x")
    fig.legend(loc="outside lower center", ncols=3, fontsize="small")  # clear of the bars whatever the row count
    plots.save(fig, path)


PLOTS = (
    PlotSpec("queue_usage", "Queue usage over time",
             "Each leaf queue's memory in use as a share of the cell (solid) against its entitlement (dashed, same colour: "
             "its Capacity guarantee, or the Fair scheduler's instantaneous fair share); solid above dashed is a queue "
             "running elastically on capacity others leave idle, which preemption may take back when they need it.",
             queue_data, queue_usage),
    PlotSpec("preemptions", "Preemptions per queue",
             "Containers the RM has preempted from each leaf queue so far (the legend gives the total and how many were "
             "AM containers); a rise is the RM reclaiming capacity for a queue below its entitlement.",
             preemption_data, preemptions),
    PlotSpec("locality", "Container locality",
             "Per leaf queue and over all, the share of task containers allocated on a node holding the task's data "
             "(node-local), in its rack (rack-local) or elsewhere (off-switch); a task run again counts again, AM "
             "containers are left out.",
             locality_data, locality),
)
