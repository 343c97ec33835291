"""``schedlab compare``: the same cell, workload and seed on each architecture,
one after the other, in one table.

``compare_row`` turns a run's summary into the comparable numbers (pure, so
tests and reports can use it on saved summaries)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

from schedlab.actors.arch import conflicted, of_summary
from schedlab.schedulers.model.resources import BASE

ROWS = (
    ("jobs submitted / scheduled", "jobs"),
    ("abandoned / pending / rejected", "unfinished"),
    ("wait to first attempt p50 / p90 (s)", "wait_first"),
    ("wait to fully scheduled p50 / p90 (s)", "wait_full"),
    ("busiest scheduler's busyness", "busyness"),
    ("conflicts / offer rejections", "conflicts"),
    ("cpu utilization", "utilization"),
    ("failover downtime (wall s)", "downtime"),
    ("invariants", "invariants"),
    ("wall seconds", "wall"),
)


def _pp(d: dict) -> str:
    return " / ".join("-" if d.get(k) is None else f"{d[k]:.3g}" for k in ("p50", "p90"))


def conflicts(summary: dict) -> tuple[str, float | None]:
    """What 'the scheduler's work was refused' means in the summary's
    architecture (its registration says: conflicted transactions, declined
    offers, refused placements), as text and a ratio."""
    arch = of_summary(summary)
    return (arch.refused if arch is not None else conflicted)(summary)


def compare_row(summary: dict) -> dict[str, Any]:
    j = summary["jobs"]
    w = summary["wait_time_s"]
    downs = [f["downtime_wall_s"] for f in summary.get("failovers", []) if f.get("downtime_wall_s") is not None]
    bad = {k: v for k, v in summary["invariants"].items() if v}
    text, _ratio = conflicts(summary)
    cpu = summary["utilization"]["cpu_mean"]
    return {
        "jobs": f"{j['submitted']} / {j['scheduled']}",
        "unfinished": f"{j['abandoned']} / {j['pending']} / {j.get('rejected', 0)}",
        "wait_first": _pp(w["first_attempt"]),
        "wait_full": _pp(w["fully_scheduled"]),
        "busyness": f"{max((s['busyness'] for s in summary['schedulers']), default=0.0):.3f}",
        "conflicts": text,
        "utilization": "-" if cpu is None else f"{cpu:.1%}",
        "downtime": f"{sum(downs):.2f} ({len(downs)} failovers)" if downs else "-",
        "invariants": "all hold" if not bad else "VIOLATED " + ", ".join(f"{k}={v}" for k, v in bad.items()),
        "wall": f"{summary['wall_seconds']:.0f}",
    }


def headline(summaries: list[dict], also: Sequence[str] = ()) -> list[list[str]]:
    """The comparison's rows, [label, one value per summary]: ``ROWS``, with
    the mean utilization of ``also`` (of cpu and mem) and of every further
    resource the cells declare after cpu's."""
    rows = [compare_row(s) for s in summaries]
    out = [[label, *(r[key] for r in rows)] for label, key in ROWS]
    at = 1 + next(i for i, (_label, key) in enumerate(ROWS) if key == "utilization")
    further = dict.fromkeys(r for s in summaries for r in s["cell"].get("resources", BASE) if r not in BASE)
    for i, r in enumerate([*also, *further]):
        out.insert(at + i, [f"{'memory' if r == 'mem' else r} utilization",
                            *(_share(s["utilization"].get("by_resource", {}).get(r, s["utilization"].get(f"{r}_mean")))
                              for s in summaries)])
    # The optional blocks' headline numbers, where some run has the block.
    for block, label, value in OPTIONAL_ROWS:
        if any(s.get(block) for s in summaries):
            out.insert(len(out) - 2, [label, *(value(s[block]) if s.get(block) else "-" for s in summaries)])
    return out


OPTIONAL_ROWS: tuple[tuple[str, str, Any], ...] = (
    ("devices", "devices allocated / fragmented",
     lambda d: f"{_share(d['allocated_mean'])} / {d['fragmented_mean']:.3g}"),
    ("gangs", "gangs started whole / waiting / releases",
     lambda g: f"{g['scheduled']} / {g['pending']} / {g['releases']}"),
    ("inflation", "unallocated at 100% / at the end",
     lambda i: f"{_share(i['unallocated_at_full'])} / {_share(i['unallocated_at_end'])}"),
    ("trace", "tasks on the trace's machine", lambda t: _share(t["same_machine"])),
)


def _share(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def compare_table(summaries: list[dict]) -> Table:
    first = summaries[0]
    t = Table(title=f"{first['scenario']}: same cell, workload and seed ({first['seed']}) on each architecture")
    t.add_column("")
    for s in summaries:
        t.add_column(s["architecture"], justify="right")
    for row in headline(summaries):
        t.add_row(*row)
    return t
