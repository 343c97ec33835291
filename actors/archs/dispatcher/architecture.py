"""The central dispatcher's live registration: its build and its summary
section (the queue and head-of-line blocking)."""
from __future__ import annotations

from typing import Any

from schedlab.actors.analysis.run_info import RunInfo
from schedlab.actors.arch import Architecture
from schedlab.actors.archs.dispatcher.build import build
from schedlab.schedulers.archs.dispatcher.events import HEAD_BLOCKED, QUEUE_SAMPLE


def head_of_line(ev: dict[str, list[dict]], info: RunInfo, out: dict[str, Any]) -> dict[str, Any]:
    """How long the head blocked jobs that would have fit behind it, and
    how long the queue grew."""
    end = float(out["emulated_seconds"])
    blocked, since = 0.0, None
    for e in sorted(ev.get(HEAD_BLOCKED, []), key=lambda e: e["t"]):
        if e["on"] and since is None:
            since = e["t"]
        elif not e["on"] and since is not None:
            blocked += min(e["t"], end) - since
            since = None
    if since is not None:
        blocked += max(0.0, end - since)
    samples = [e for e in ev.get(QUEUE_SAMPLE, []) if e["t"] <= end + 1e-6]
    return {
        "head_of_line_blocked_s": round(blocked, 3),
        "head_of_line_blocked_fraction": round(blocked / end, 6) if end else None,
        "blocking_episodes": sum(1 for e in ev.get(HEAD_BLOCKED, []) if e["on"]),
        "queue_max": max((e["queued"] for e in samples), default=0),
        "queue_mean": round(sum(e["queued"] for e in samples) / len(samples), 3) if samples else None,
    }


def _rows(summary: dict) -> list[tuple[str, str]]:
    d = summary["dispatcher"]
    return [("queue", f"max {d['queue_max']}  mean {d['queue_mean']}  head-of-line blocked "
                      f"{d['head_of_line_blocked_s']:g}s ({d['blocking_episodes']} episodes)")]


ARCHITECTURE = Architecture(
    name="dispatcher",
    build=build,
    summary=head_of_line,
    table_rows=_rows,
    refused_means="none: one head node decides alone, so nothing conflicts",
)
