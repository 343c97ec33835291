"""Matplotlib drawing for ``schedlab report``: each function takes plain data
(already extracted from events and summaries by ``api.report``) and writes
one PNG. matplotlib is imported here lazily, so the rest of schedlab runs
without the ``plot`` extra."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

INSTALL_HINT = "schedlab report needs matplotlib: pip install 'schedlab[plot]'"
WAIT_FLOOR_S = 1e-3  # log axis: a zero wait is drawn at this floor
# marker and colour per fault kind (chaos and soak fault plans use these kinds)
FAULT_STYLE = {"kill": ("X", "tab:red"), "kill_leader": ("X", "darkred"), "restart": ("^", "tab:green"),
               "pause": ("s", "tab:orange"), "partition": ("D", "tab:purple"), "slow": ("v", "tab:brown")}


LINESTYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v")


class MatplotlibMissing(ImportError):
    """matplotlib is not installed; the message says how to get it."""


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (reports are written on headless
    machines; an interactive backend would need a display)."""
    try:
        import matplotlib
    except ImportError as e:
        raise MatplotlibMissing(INSTALL_HINT) from e
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def figure(nrows: int = 1, ncols: int = 1, size: tuple[float, float] = (8.0, 4.2), **kw: Any) -> tuple[Any, Any]:
    return pyplot().subplots(nrows, ncols, figsize=size, layout="constrained", squeeze=False, **kw)


def save(fig: Any, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    pyplot().close(fig)


def legend(ax: Any, **kw: Any) -> None:
    # pytest runs with warnings as errors; an empty legend warns.
    if ax.get_legend_handles_labels()[0]:
        ax.legend(**kw)


def percent_axis(ax: Any, axis: str = "y") -> None:
    """Label ``axis`` ("x" or "y") of shares (0..1) as percentages."""
    from matplotlib.ticker import PercentFormatter

    getattr(ax, f"{axis}axis").set_major_formatter(PercentFormatter(1.0))


def utilization(data: dict[str, Any], path: Path) -> None:
    fig, axs = figure()
    ax = axs[0][0]
    colors = ("tab:blue", "tab:purple", "tab:green", "tab:orange", "tab:red", "tab:brown")
    for i, (key, series) in enumerate(data["series"].items()):
        color = colors[i % len(colors)]
        ax.plot(data["t"], series, color=color, lw=1.2, label=f"{key} allocated")
        if data["mean"].get(key) is not None:
            ax.axhline(data["mean"][key], color=color, ls="--", lw=0.9, label=f"{key} mean {data['mean'][key]:.1%}")
    ax.set(xlabel="emulated time (s)", ylabel="share of cell capacity", ylim=(0, 1.05), title="Cell utilization")
    percent_axis(ax)
    ax.grid(alpha=0.3)
    legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=4, fontsize="small")
    save(fig, path)


def devices(data: dict[str, Any], path: Path) -> None:
    """Left: each model's share of devices allocated; right: the cell's
    unallocated devices and, of those, the fragmented."""
    fig, axs = figure(1, 2, size=(10.0, 4.2))
    left, right = axs[0]
    for model, share in data["allocated"].items():
        left.plot(data["t"], share, lw=1.2, label=model)
    left.set(xlabel="emulated time (s)", ylabel="share of its devices", ylim=(0, 1.05), title="Devices allocated, per model")
    percent_axis(left)
    right.plot(data["t"], data["unallocated"], color="tab:gray", lw=1.2, label="unallocated")
    right.fill_between(data["t"], data["fragmented"], color="tab:red", alpha=0.4, label="fragmented")
    right.set(xlabel="emulated time (s)", ylabel="devices", title="Unallocated and fragmented devices")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        legend(ax, loc="best", fontsize="small")
    save(fig, path)


def wait_cdf(data: dict[str, dict[str, Any]], path: Path, title: str = "Wait to first scheduling attempt") -> None:
    """``data``: label -> {"waits": [s], "submitted": n}. The curve is a share of
    *submitted* jobs, so it levels off below 100% when jobs were never tried."""
    import numpy as np

    fig, axs = figure()
    ax = axs[0][0]
    waits = {k: np.sort(np.maximum(np.asarray(d["waits"], dtype=float), WAIT_FLOOR_S)) for k, d in data.items()}
    # Start the axis just left of the shortest wait rather than at the floor.
    left = min((w[0] for w in waits.values() if w.size), default=1.0) / 1.5
    for label, d in data.items():
        w = waits[label]
        y = np.arange(1, w.size + 1) / max(d["submitted"], 1)
        ax.step(np.r_[left, w], np.r_[0.0, y], where="post", lw=1.4, label=f"{label} ({w.size}/{d['submitted']} tried)")
    ax.set_xscale("log")
    ax.set(xlabel="wait from submission to first attempt (emulated s, log scale)",
           ylabel="share of submitted jobs", ylim=(0, 1.02), xlim=(left, None), title=title)
    percent_axis(ax)
    ax.grid(alpha=0.3)
    legend(ax, loc="upper left")
    save(fig, path)


def schedulers(data: list[dict[str, Any]], path: Path) -> None:
    import numpy as np

    names = [s["name"] for s in data]
    x = np.arange(len(names))
    fig, axs = figure(1, 2, size=(10.0, 4.2))
    left, right = axs[0]
    left.bar(x - 0.2, [s["busyness"] for s in data], 0.4, label="busyness (thinking)", color="tab:blue")
    left.bar(x + 0.2, [s.get("occupancy") or 0.0 for s in data], 0.4, label="occupancy (+ sync/commit)", color="tab:cyan")
    left.set(ylabel="share of the run", title="Busyness per scheduler", ylim=(0, 1.05))
    percent_axis(left)
    legend(left, loc="upper right", fontsize="small")
    # None: every transaction conflicted (no successes to divide by); drawn as an empty bar.
    bars = right.bar(x, [s["conflict_fraction"] or 0.0 for s in data], 0.6, color="tab:red")
    for bar, s in zip(bars, data):
        t = s.get("transactions", {})
        right.annotate(f"{t.get('conflicted', 0)}/{t.get('committed', 0)}", (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                       ha="center", va="bottom", fontsize="small")
    right.set(ylabel="conflicted / committed transactions", title="Conflict fraction per scheduler")
    right.margins(y=0.15)
    for ax in (left, right):
        ax.set_xticks(x, names, rotation=20, ha="right")
        ax.grid(alpha=0.3, axis="y")
    save(fig, path)


def _shade_failovers(axes: Sequence[Any], failovers: list[dict[str, Any]]) -> None:
    top = axes[0]
    for i, f in enumerate(failovers):
        down = f.get("downtime_emulated_s")
        # Spans of a few seconds vanish on an hour-long axis: label each above the plot.
        top.annotate("?" if down is None else f"{down:.0f} s", (f["killed_at_s"], 1.0), xycoords=top.get_xaxis_transform(),
                     ha="center", va="bottom", fontsize="x-small", color="tab:red")
        for j, ax in enumerate(axes):
            first = i == 0 and j == 0
            if down is not None:
                ax.axvspan(f["killed_at_s"], f["killed_at_s"] + down, color="tab:red", alpha=0.18, lw=0,
                           label="failover downtime" if first else None)
            else:
                ax.axvline(f["killed_at_s"], color="tab:red", ls=":", lw=1.2,
                           label="failover, downtime not measured" if first else None)


def _fault_rows(ax: Any, faults: list[dict[str, Any]]) -> None:
    rows = sorted({f["target"] for f in faults})
    seen: set[str] = set()
    for f in faults:
        y = rows.index(f["target"])
        if f.get("duration_s"):
            ax.hlines(y, f["at_s"], f["at_s"] + f["duration_s"], color="0.55", lw=5, alpha=0.6)
        marker, color = FAULT_STYLE.get(f["kind"], ("o", "tab:gray"))
        ax.plot(f["at_s"], y, marker, ms=7, color=color, label=f["kind"] if f["kind"] not in seen else None)
        seen.add(f["kind"])
    ax.set_yticks(range(len(rows)), rows, fontsize="small")
    ax.set_ylim(-0.7, len(rows) - 0.3)
    ax.set_title("Faults (bar = how long the fault lasted) and failovers (red: downtime)", pad=14)


def _leader_row(ax: Any, label: str, changes: list[tuple[float, str]], end: float) -> None:
    names = sorted({n for _, n in changes})
    ts = [t for t, _ in changes] + [max(end, changes[-1][0])]
    ys = [names.index(n) for _, n in changes]
    ax.step(ts, ys + ys[-1:], where="post", color="tab:blue", lw=1.5)
    ax.plot(ts[:-1], ys, "o", color="tab:blue", ms=4)
    ax.set_yticks(range(len(names)), names, fontsize="small")
    ax.set_ylim(-0.5, len(names) - 0.5)
    ax.set_ylabel(label, fontsize="small")


def timeline(data: dict[str, Any], path: Path) -> None:
    """Fault markers per target, failover downtime shaded across all rows,
    and one row per leader kind showing who led when."""
    leaders = data["leaders"]
    n_targets = len({f["target"] for f in data["faults"]})
    heights = [max(1.5, 0.32 * n_targets)] + [0.3 + 0.3 * len({n for _, n in c}) for c in leaders.values()]
    fig, axs = figure(len(heights), 1, size=(10.0, 1.2 + sum(heights)), sharex=True,
                       gridspec_kw={"height_ratios": heights})
    axes = list(axs[:, 0])
    if data["faults"]:
        _fault_rows(axes[0], data["faults"])
    else:
        axes[0].set_yticks([])
        axes[0].set_title("Failovers (no faults recorded; red: downtime)", pad=14)
    for ax, (label, changes) in zip(axes[1:], leaders.items()):
        _leader_row(ax, label, changes, data["end"])
    _shade_failovers(axes, data["failovers"])
    for ax in axes:
        ax.grid(alpha=0.3, axis="x")
    legend(axes[0], loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")
    axes[-1].set_xlabel("emulated time (s)")
    save(fig, path)


def sweep_metric(series: dict[tuple[str, str], list[tuple[float, float, float]]], path: Path, *, title: str,
                 xlabel: str, ylabel: str, categories: list[str] | None = None, percent: bool = False) -> None:
    """``series``: (line, second-key value or "") -> [(x, median, mad)]. One
    colour per line and one dash/marker per second-key value, error bars = MAD.
    With ``categories`` x is a category index, nudged apart per series so
    overlapping error bars stay visible."""
    bases = list(dict.fromkeys(b for b, _ in series))
    seconds = list(dict.fromkeys(v for _, v in series))
    fig, axs = figure(size=(9.0, 5.0))
    ax = axs[0][0]
    step = 0.25 / max(len(series) - 1, 1) if categories else 0.0  # all series within ±0.125 of the tick
    for i, ((base, second), pts) in enumerate(series.items()):
        pts = sorted(pts)
        dx = (i - (len(series) - 1) / 2) * step
        k = seconds.index(second)
        ax.errorbar([p[0] + dx for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts], color=f"C{bases.index(base) % 10}",
                    ls=LINESTYLES[k % len(LINESTYLES)], marker=MARKERS[k % len(MARKERS)], ms=5, capsize=3, lw=1.3,
                    label=f"{base}, {second}" if second else base)
    if categories:
        ax.set_xticks(range(len(categories)), categories)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if percent:
        percent_axis(ax)
    ax.grid(alpha=0.3)
    # As many columns as fit the figure's width: a legend wider than the figure
    # collapses the layout and is dropped (labels pair a line with a second key).
    labels = [f"{base}, {second}" if second else base for base, second in series]
    ncols = max(1, min(len(series), 110 // (max(map(len, labels), default=1) + 8)))
    legend(ax, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncols=ncols, fontsize="small")
    save(fig, path)
