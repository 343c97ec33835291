"""Mesos' report plots: offers over time by outcome, and the frameworks'
DRF dominant shares. Extraction is pure (from events and the summary);
drawing needs matplotlib, imported when a plot is drawn."""
from __future__ import annotations

import collections
from pathlib import Path
from typing import Any

import numpy as np

from schedlab.actors.analysis import plots
from schedlab.actors.analysis.report_parts import Events, PlotSpec, Skip
from schedlab.schedulers.archs.mesos.events import OFFERS_CLOSED, OFFERS_MADE

OFFER_BINS = 40
OUTCOME_COLORS = {"accepted": "tab:green", "declined": "tab:orange", "rescinded": "tab:red"}


def offer_data(summary: dict, ev: Events) -> Any:
    made, closed = ev.get(OFFERS_MADE, []), ev.get(OFFERS_CLOSED, [])
    if not made and not closed:
        return Skip("no offers_made / offers_closed events")
    times: dict[str, dict[str, list[float]]] = collections.defaultdict(lambda: collections.defaultdict(list))
    for e in made:
        for _oid, fw, *_rest in e["offers"]:
            times[fw]["made"].append(e["t"])
    for e in closed:
        for _oid, fw, outcome, *_rest in e["offers"]:
            times[fw][outcome].append(e["t"])
    edges = np.linspace(0.0, float(summary["emulated_seconds"]), OFFER_BINS + 1)
    counts = {fw: {k: np.histogram(ts, bins=edges)[0] for k, ts in by_kind.items()} for fw, by_kind in sorted(times.items())}
    for c in counts.values():
        c.setdefault("made", np.zeros(OFFER_BINS, dtype=int))
    return {"edges": edges, "frameworks": counts}


def share_data(summary: dict, ev: Events) -> Any:
    fws = summary.get("mesos", {}).get("frameworks", {})
    series = {fw: d["dominant_share"] for fw, d in sorted(fws.items()) if d.get("dominant_share")}
    return series or Skip("summary.json has no mesos.frameworks.*.dominant_share series")


def offers(data: dict[str, Any], path: Path) -> None:
    """Per framework: offers closed per bin, stacked by outcome, and offers made."""
    import numpy as np
    from matplotlib.ticker import MaxNLocator

    edges = np.asarray(data["edges"])
    mid, width = (edges[:-1] + edges[1:]) / 2, np.diff(edges)
    fws = data["frameworks"]
    fig, axs = plots.figure(len(fws), 1, size=(8.0, 1.0 + 2.4 * len(fws)), sharex=True)
    for ax, (fw, counts) in zip(axs[:, 0], fws.items()):
        bottom = np.zeros(mid.size)
        for outcome, color in OUTCOME_COLORS.items():
            c = np.asarray(counts.get(outcome, np.zeros(mid.size)))
            ax.bar(mid, c, width * 0.9, bottom=bottom, color=color, label=f"closed: {outcome}")
            bottom += c
        ax.step(edges, np.r_[counts["made"], counts["made"][-1:]], where="post", color="black", lw=1.0, label="made")
        ax.set(ylabel="offers per bin", title=fw)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3, axis="y")
    plots.legend(axs[0][0], loc="lower center", bbox_to_anchor=(0.5, 1.15), fontsize="small", ncols=4)
    axs[-1][0].set_xlabel(f"emulated time (s), bins of {width[0]:.0f} s")
    plots.save(fig, path)


def dominant_share(data: dict[str, list[list[float]]], path: Path) -> None:
    fig, axs = plots.figure()
    ax = axs[0][0]
    for fw, series in data.items():
        ax.plot([p[0] for p in series], [p[1] for p in series], lw=1.3, marker=".", ms=3, label=fw)
    ax.set(xlabel="emulated time (s)", ylabel="dominant share (max of cpu, mem share)", ylim=(0, 1.05),
           title="DRF dominant share per framework")
    plots.percent_axis(ax)
    ax.grid(alpha=0.3)
    plots.legend(ax, loc="upper right")
    plots.save(fig, path)


PLOTS = (
    PlotSpec("offers", "Resource offers over time",
             "Per framework and time bin: offers closed, stacked by outcome (accepted, declined, rescinded on timeout); "
             "the black line counts offers made.",
             offer_data, offers),
    PlotSpec("dominant_share", "Dominant share over time",
             "Each framework's DRF dominant share (the larger of its cpu and memory share of the cell) as the master sampled it; "
             "DRF tries to keep these equal.",
             share_data, dominant_share),
)
